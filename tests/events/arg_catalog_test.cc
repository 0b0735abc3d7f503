#include "events/arg_catalog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace attune {
namespace {

// The data rows of the TSV file in the source tree, split into columns: what the compiled-in
// catalog must hold.
std::vector<std::vector<std::string>> read_table_rows() {
  std::ifstream file(std::string(ATTUNE_SOURCE_DIR) + "/events/data/megatron_args.tsv");
  EXPECT_TRUE(file.good());
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool header_seen = false;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (!header_seen) {
      header_seen = true;
      continue;
    }
    std::vector<std::string> columns;
    std::stringstream stream(line);
    std::string column;
    while (std::getline(stream, column, '\t')) columns.push_back(column);
    rows.push_back(columns);
  }
  return rows;
}

TEST(ArgCatalog, HoldsEveryRowOfTheTableInOrder) {
  const std::vector<std::vector<std::string>> rows = read_table_rows();
  const ArgCatalog& catalog = ArgCatalog::megatron();
  // 841 non-comment lines: the header line and 840 rows (reference/megatron_lm.md, section 5).
  EXPECT_EQ(rows.size(), 840u);
  ASSERT_EQ(catalog.all().size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ArgInfo& info = catalog.all()[i];
    const std::string first_spelling = rows[i][0].substr(0, rows[i][0].find('|'));
    EXPECT_EQ(info.canonical, first_spelling) << "row " << i;
    EXPECT_EQ(info.type_text, rows[i][1]) << info.canonical;
    EXPECT_EQ(info.default_text, rows[i][2]) << info.canonical;
    EXPECT_EQ(info.group, rows[i][3]) << info.canonical;
  }
}

TEST(ArgCatalog, ClassCountsMatchTheReference) {
  std::size_t counts[4] = {};
  for (const ArgInfo& info : ArgCatalog::megatron().all()) {
    ++counts[static_cast<int>(info.objective_class)];
  }
  EXPECT_EQ(counts[static_cast<int>(ObjectiveClass::kNumeric)], 389u);
  EXPECT_EQ(counts[static_cast<int>(ObjectiveClass::kOther)], 268u);
  EXPECT_EQ(counts[static_cast<int>(ObjectiveClass::kStructural)], 143u);
  EXPECT_EQ(counts[static_cast<int>(ObjectiveClass::kSameMath)], 40u);
}

TEST(ArgCatalog, ObjectiveClassesComeFromTheTable) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  ASSERT_NE(catalog.find("--grad-reduce-in-bf16"), nullptr);
  EXPECT_EQ(catalog.find("--grad-reduce-in-bf16")->objective_class, ObjectiveClass::kNumeric);
  ASSERT_NE(catalog.find("--tensor-model-parallel-size"), nullptr);
  EXPECT_EQ(catalog.find("--tensor-model-parallel-size")->objective_class,
            ObjectiveClass::kStructural);
  ASSERT_NE(catalog.find("--cross-entropy-loss-fusion"), nullptr);
  EXPECT_EQ(catalog.find("--cross-entropy-loss-fusion")->objective_class,
            ObjectiveClass::kSameMath);
  ASSERT_NE(catalog.find("--log-interval"), nullptr);
  EXPECT_EQ(catalog.find("--log-interval")->objective_class, ObjectiveClass::kOther);
}

TEST(ArgCatalog, FindsEverySpellingWithOrWithoutDashes) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  const ArgInfo* tp = catalog.find("--tensor-model-parallel-size");
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(catalog.find("tensor-model-parallel-size"), tp);
  EXPECT_EQ(catalog.find("-tensor-model-parallel-size"), tp);

  const ArgInfo* save = catalog.find("--persistent-save-interval");
  ASSERT_NE(save, nullptr);
  EXPECT_EQ(save->canonical, "--save-interval");
  EXPECT_EQ(save->spellings,
            (std::vector<std::string>{"--save-interval", "--persistent-save-interval"}));
  EXPECT_EQ(catalog.find("save-interval"), save);

  for (const ArgInfo& info : catalog.all()) {
    for (const std::string& spelling : info.spellings) {
      bool negated = true;
      EXPECT_EQ(catalog.find(spelling, &negated), &info) << spelling;
      EXPECT_FALSE(negated) << spelling;
    }
  }
}

TEST(ArgCatalog, UnknownSpellingsAreNotFound) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  bool negated = true;
  EXPECT_EQ(catalog.find("--no-such-flag", &negated), nullptr);
  EXPECT_FALSE(negated);
  EXPECT_EQ(catalog.find(""), nullptr);
  EXPECT_EQ(catalog.find("--"), nullptr);
  EXPECT_EQ(catalog.find("--tensor_model_parallel_size"), nullptr);  // argparse has no such alias
  EXPECT_EQ(catalog.find("--tensor-model-parallel"), nullptr);       // no abbreviations
}

TEST(ArgCatalog, BooleanOptionalNegationIsNotAnAlias) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  bool negated = false;
  const ArgInfo* info = catalog.find("--no-rl-partial-rollouts", &negated);
  ASSERT_NE(info, nullptr);
  EXPECT_TRUE(negated);
  EXPECT_EQ(info->canonical, "--rl-partial-rollouts");
  EXPECT_EQ(info->negation, "--no-rl-partial-rollouts");
  EXPECT_TRUE(info->negatable);
  EXPECT_EQ(info->spellings, std::vector<std::string>{"--rl-partial-rollouts"});
  EXPECT_EQ(catalog.find("rl-partial-rollouts", &negated), info);
  EXPECT_FALSE(negated);

  std::size_t negatable_rows = 0;
  for (const ArgInfo& row : catalog.all()) {
    EXPECT_EQ(row.negatable, !row.negation.empty()) << row.canonical;
    if (!row.negatable) continue;
    ++negatable_rows;
    EXPECT_EQ(row.negation, "--no-" + row.canonical.substr(2));
    EXPECT_EQ(catalog.find(row.negation, &negated), &row);
    EXPECT_TRUE(negated) << row.negation;
  }
  EXPECT_EQ(negatable_rows, 13u);
}

TEST(ArgCatalog, StoreFalseAliasesShareTheFirstSpelling) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  bool negated = true;
  const ArgInfo* info = catalog.find("--disable-tp-comm-bulk-wgrad", &negated);
  ASSERT_NE(info, nullptr);
  EXPECT_FALSE(negated);
  EXPECT_EQ(info->canonical, "--no-tp-comm-bulk-wgrad");
  EXPECT_FALSE(info->negatable);
  EXPECT_EQ(info->value_kind, ArgValueKind::kSwitch);
  EXPECT_EQ(info->dest, "tp_comm_bulk_wgrad");
}

TEST(ArgCatalog, ValueShapesFollowTheTypeColumn) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  const ArgInfo* tp = catalog.find("--tensor-model-parallel-size");
  EXPECT_EQ(tp->value_kind, ArgValueKind::kInt);
  EXPECT_TRUE(tp->takes_value);
  EXPECT_FALSE(tp->multi_value);
  EXPECT_EQ(tp->value_count_min, 1u);
  EXPECT_EQ(tp->value_count_max, 1u);
  EXPECT_TRUE(tp->choices.empty());

  const ArgInfo* lr = catalog.find("--lr");
  EXPECT_EQ(lr->value_kind, ArgValueKind::kFloat);

  const ArgInfo* bf16 = catalog.find("--bf16");
  EXPECT_EQ(bf16->value_kind, ArgValueKind::kSwitch);
  EXPECT_FALSE(bf16->takes_value);
  EXPECT_EQ(bf16->value_count_max, 0u);

  const ArgInfo* cp_comm = catalog.find("--cp-comm-type");
  EXPECT_EQ(cp_comm->value_kind, ArgValueKind::kText);
  EXPECT_TRUE(cp_comm->multi_value);
  EXPECT_EQ(cp_comm->value_count_min, 1u);
  EXPECT_EQ(cp_comm->value_count_max, ArgInfo::kValueCountUnbounded);

  const ArgInfo* data_path = catalog.find("--data-path");
  EXPECT_TRUE(data_path->multi_value);
  EXPECT_EQ(data_path->value_count_min, 0u);

  const ArgInfo* rampup = catalog.find("--rampup-batch-size");
  EXPECT_EQ(rampup->value_kind, ArgValueKind::kInt);
  EXPECT_EQ(rampup->value_count_min, 3u);
  EXPECT_EQ(rampup->value_count_max, 3u);

  const ArgInfo* granularity = catalog.find("--recompute-granularity");
  EXPECT_EQ(granularity->choices, (std::vector<std::string>{"full", "selective"}));
  EXPECT_FALSE(granularity->multi_value);

  const ArgInfo* balancing = catalog.find("--moe-router-load-balancing-type");
  EXPECT_TRUE(balancing->multi_value);
  EXPECT_EQ(balancing->choices.size(), 6u);
  EXPECT_EQ(balancing->choices.front(), "aux_loss");

  const ArgInfo* fa = catalog.find("--flash-attention-version");
  EXPECT_EQ(fa->value_kind, ArgValueKind::kInt);
  EXPECT_EQ(fa->choices, (std::vector<std::string>{"2", "3", "4"}));

  const ArgInfo* freq = catalog.find("--moe-layer-freq");
  EXPECT_EQ(freq->value_kind, ArgValueKind::kText);
  EXPECT_EQ(freq->default_text, "1");
}

TEST(ArgCatalog, DestComesFromTheNotesOrTheFlag) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  EXPECT_EQ(catalog.find("--tensor-model-parallel-size")->dest, "tensor_model_parallel_size");
  EXPECT_EQ(catalog.find("--no-initialization")->dest, "perform_initialization");
  EXPECT_EQ(catalog.find("--fp8-format")->dest, "fp8");
  EXPECT_EQ(catalog.find("--override-opt-param-scheduler")->dest, "override_opt_param_scheduler");
  EXPECT_EQ(catalog.find("--rl-partial-rollouts")->dest, "rl_partial_rollouts");

  const ArgInfo* init = catalog.find_by_dest("perform_initialization");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->canonical, "--no-initialization");
  const ArgInfo* norm = catalog.find_by_dest("layernorm_epsilon");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->canonical, "--norm-epsilon");
  EXPECT_EQ(catalog.find_by_dest("tensor_model_parallel_size"),
            catalog.find("--tensor-model-parallel-size"));
  EXPECT_EQ(catalog.find_by_dest("no_such_dest"), nullptr);
  EXPECT_EQ(catalog.find_by_dest("--no-initialization"), nullptr);  // a flag, not a dest
}

TEST(ArgCatalog, SharedDestFindsTheFirstRow) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  const ArgInfo* info = catalog.find_by_dest("yarn_correction_range_round_to_int");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->canonical, "--yarn-correction-range-round-to-int");
  EXPECT_EQ(catalog.find("--no-yarn-correction-range-round-to-int")->dest,
            "yarn_correction_range_round_to_int");
  for (const ArgInfo& row : catalog.all()) {
    const ArgInfo* found = catalog.find_by_dest(row.dest);
    ASSERT_NE(found, nullptr) << row.dest;
    EXPECT_EQ(found->dest, row.dest);
    EXPECT_LE(found, &row);
  }
}

TEST(ArgCatalog, ParsesOneRowTable) {
  const Result<ArgCatalog> catalog = ArgCatalog::parse(
      "# comment\n"
      "flag\ttype\tdefault\tgroup\tclass\tnotes\n"
      "--a|--b\tfloat nargs=+ choices=1|2\tNone\tg\tsame-math\tdest=alpha; more\n");
  ASSERT_TRUE(catalog.ok()) << catalog.error();
  ASSERT_EQ(catalog->all().size(), 1u);
  const ArgInfo& info = catalog->all()[0];
  EXPECT_EQ(info.spellings, (std::vector<std::string>{"--a", "--b"}));
  EXPECT_EQ(info.value_kind, ArgValueKind::kFloat);
  EXPECT_TRUE(info.multi_value);
  EXPECT_EQ(info.choices, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(info.objective_class, ObjectiveClass::kSameMath);
  EXPECT_EQ(info.dest, "alpha");
  EXPECT_EQ(catalog->find("b"), &info);
}

TEST(ArgCatalog, RejectsMalformedTables) {
  const std::string header = "flag\ttype\tdefault\tgroup\tclass\tnotes\n";
  const auto error_of = [](const std::string& tsv) {
    const Result<ArgCatalog> catalog = ArgCatalog::parse(tsv);
    return catalog.ok() ? std::string("ok") : catalog.error();
  };
  EXPECT_EQ(error_of(""), "line 1: expected the header, found an empty table");
  EXPECT_EQ(error_of("--a\tint\t1\tg\tnumeric\t\n"),
            "line 1: expected the header 'flag\ttype\tdefault\tgroup\tclass\tnotes'");
  EXPECT_EQ(error_of(header + "--a\tint\t1\tg\tnumeric\n"),
            "line 2: expected 6 tab-separated columns, found 5");
  EXPECT_EQ(error_of(header + "--a\tint\t1\tg\tfast\t\n"),
            "line 2: expected class structural, same-math, numeric or other, found 'fast'");
  EXPECT_EQ(error_of(header + "--a\tbool(--x/--no-x)\tFalse\tg\tother\t\n"),
            "line 2: expected '--x|--no-x' for a bool(--x/--no-x) row, found '--a'");
  EXPECT_EQ(error_of(header + "a\tint\t1\tg\tother\t\n"),
            "line 2: expected a flag spelling like --name, found 'a'");
  EXPECT_EQ(error_of(header + "--a\tint nargs=?\t1\tg\tother\t\n"),
            "line 2: unsupported nargs '?'");
  EXPECT_EQ(error_of(header + "--a\tbool(store_true) nargs=+\tFalse\tg\tother\t\n"),
            "line 2: unexpected 'nargs=+' in type 'bool(store_true) nargs=+'");
  EXPECT_EQ(error_of(header + "--a\tint\t1\tg\tother\t\n#\n--b|--a\tint\t1\tg\tother\t\n"),
            "line 4: --a is already a spelling of another row");
  EXPECT_EQ(error_of(header + "--no-b\tbool(store_true)\tF\tg\tother\t\n"
                              "--b|--no-b\tbool(--x/--no-x)\tF\tg\tother\t\n"),
            "line 3: --no-b is already a spelling of another row");
}

TEST(ArgCatalog, MegatronIsOneInstanceAcrossThreads) {
  std::vector<const ArgCatalog*> seen(4, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &ArgCatalog::megatron(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const ArgCatalog* catalog : seen) EXPECT_EQ(catalog, &ArgCatalog::megatron());
}

}  // namespace
}  // namespace attune
