#include "gate/resolved_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "events/arg_catalog.h"

namespace attune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr std::string_view kHeader = "------------------------ arguments ------------------------";
constexpr std::string_view kFooter = "-------------------- end of arguments ---------------------";

// One line as Megatron's _print_args formats it.
std::string arg_line(const std::string& dest, const std::string& value) {
  const std::size_t dots = dest.size() < 48 ? 48 - dest.size() : 0;
  return "  " + dest + " " + std::string(dots, '.') + " " + value;
}

using Args = std::vector<std::pair<std::string, std::string>>;

const Args kBaselineArgs = {
    {"accumulate_allreduce_grads_in_fp32", "True"},
    {"bf16", "True"},
    {"data_parallel_size", "4"},
    {"expert_model_parallel_size", "8"},
    {"expert_tensor_parallel_size", "1"},
    {"grad_reduce_in_bf16", "False"},
    {"lr", "1e-05"},
    {"micro_batch_size", "1"},
    {"recompute_modules", "['core_attn']"},
    {"tensor_model_parallel_size", "2"},
    {"tp_comm_overlap", "False"},
};

std::string log_of(const Args& args, const std::string& prefix = "") {
  std::string log =
      "using world size: 64, data-parallel size: 4\n" + prefix + std::string(kHeader) + "\n";
  for (const auto& [dest, value] : args) log += prefix + arg_line(dest, value) + "\n";
  log += prefix + std::string(kFooter) + "\n";
  log += " [2026-08-22 15:31:07.482913] iteration        1/     500 | consumed samples: 256 |\n";
  return log;
}

Args with(Args args, const std::string& dest, const std::string& value) {
  for (auto& [d, v] : args) {
    if (d == dest) {
      v = value;
      return args;
    }
  }
  args.emplace_back(dest, value);
  return args;
}

ResolvedArgs parsed(const std::string& log) {
  Result<ResolvedArgs> args = parse_resolved_args(log, "run.log");
  EXPECT_TRUE(args.ok()) << args.error();
  return args.ok() ? args.value() : ResolvedArgs{};
}

std::string error_of(const std::string& log) {
  Result<ResolvedArgs> args = parse_resolved_args(log, "run.log");
  EXPECT_FALSE(args.ok());
  if (args.ok()) return "";
  EXPECT_THAT(args.error(), Not(HasSubstr("\n")));
  return args.error();
}

constexpr std::string_view kRecipe = R"(CUDA_DEVICE_MAX_CONNECTIONS=1
python pretrain_gpt.py --tensor-model-parallel-size 2 --expert-model-parallel-size 8 \
  --expert-tensor-parallel-size 1 --micro-batch-size 1 --bf16 --lr 1e-5
)";

Recipe base_recipe() {
  Result<Recipe> recipe = parse_recipe(kRecipe, "recipe.sh");
  EXPECT_TRUE(recipe.ok()) << recipe.error();
  return recipe.ok() ? recipe.value() : Recipe{};
}

// The base recipe with `flag` set to `value`, as a candidate recipe changes it.
Recipe recipe_with(std::string_view flag, std::string_view value) {
  Recipe recipe = base_recipe();
  EXPECT_TRUE(set_flag(recipe, flag, value).ok());
  return recipe;
}

ResolvedRun run_of(const Args& args, Recipe recipe = base_recipe()) {
  return ResolvedRun{parsed(log_of(args)), std::move(recipe), std::nullopt};
}

Policy shipped(const std::string& name) {
  const std::string path = std::string(ATTUNE_SOURCE_DIR) + "/gate/policies/" + name + ".toml";
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  Result<Policy> policy = parse_policy(text.str(), path);
  EXPECT_TRUE(policy.ok()) << policy.error();
  return policy.ok() ? policy.value() : Policy{};
}

const ResolvedDifference* difference(const ResolvedComparison& result, std::string_view name) {
  for (const ResolvedDifference& d : result.differences) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

TEST(ResolvedArgsParse, ReadsTheBlockOutOfAWholeLog) {
  const ResolvedArgs args = parsed(log_of(kBaselineArgs));
  EXPECT_EQ(args.header_line, 2u);
  EXPECT_EQ(args.values.size(), kBaselineArgs.size());
  EXPECT_EQ(args.values.at("tensor_model_parallel_size"), "2");
  EXPECT_EQ(args.values.at("accumulate_allreduce_grads_in_fp32"), "True");
  EXPECT_EQ(args.values.at("recompute_modules"), "['core_attn']");
}

TEST(ResolvedArgsParse, APaddedVocabularyPrintedAsNoneIsTheTokenizersSize) {
  // Megatron prints padded_vocab_size as None when no flag pins it; build_tokenizer then pads the
  // vocabulary (a multiple of 128 x TP) and says so.
  const std::string block = std::string(kHeader) + "\n" + arg_line("padded_vocab_size", "None") +
                            "\n" + std::string(kFooter) + "\n";
  const std::string tokenizer =
      "0: [default0]:INFO:megatron.core.tokenizers.utils.build_tokenizer: > padded vocab (size: "
      "32769) with 127 dummy tokens (new size: 32896)\n";
  EXPECT_EQ(parsed(block + tokenizer).values.at("padded_vocab_size"), "32896");
  EXPECT_EQ(parsed(block).values.at("padded_vocab_size"), "None") << "no line, nothing known";
  const std::string pinned = std::string(kHeader) + "\n" + arg_line("padded_vocab_size", "151552") +
                             "\n" + std::string(kFooter) + "\n";
  EXPECT_EQ(parsed(pinned + tokenizer).values.at("padded_vocab_size"), "151552")
      << "a pinned size is what ran";
}

TEST(ResolvedArgsParse, ReadsTheExactLineFormat) {
  EXPECT_EQ(arg_line("micro_batch_size", "1"),
            "  micro_batch_size ................................ 1");
  const std::string log = std::string(kHeader) + "\r\n" + arg_line("micro_batch_size", "1") +
                          "\r\n" + arg_line("save", "") + "\r\n" +
                          arg_line("data_path", "['a b', 'c']") + "\r\n" +
                          arg_line(std::string(50, 'x'), "None") + "\r\n" + std::string(kFooter);
  const ResolvedArgs args = parsed(log);
  EXPECT_EQ(args.values.at("micro_batch_size"), "1");
  EXPECT_EQ(args.values.at("save"), "");
  EXPECT_EQ(args.values.at("data_path"), "['a b', 'c']");
  EXPECT_EQ(args.values.at(std::string(50, 'x')), "None") << "a long name gets no dots";
}

TEST(ResolvedArgsParse, StripsTheLaunchersPrefixAndSkipsOtherProcesses) {
  std::string log = log_of(kBaselineArgs, "0: ");
  // Another process writes into the middle of the block.
  const std::size_t at = log.find("0:   lr ");
  log.insert(at, "3: > initializing torch distributed ...\n");
  const ResolvedArgs args = parsed(log);
  EXPECT_EQ(args.values.size(), kBaselineArgs.size());
  EXPECT_EQ(args.values.at("lr"), "1e-05");
}

TEST(ResolvedArgsParse, ErrorsNameTheFileAndLine) {
  EXPECT_EQ(error_of("iteration 1\n"),
            "run.log: no arguments block (expected a line '" + std::string(kHeader) + "')");
  EXPECT_EQ(error_of("x\n" + std::string(kHeader) + "\n" + arg_line("lr", "1e-05") + "\n"),
            "run.log:2: the arguments block has no end line ('-------------------- end of "
            "arguments ---------------------')");
  EXPECT_EQ(error_of(std::string(kHeader) + "\n" + arg_line("lr", "1e-05") +
                     "\n  micro_batch_size .. 1\n" + std::string(kFooter) + "\n"),
            "run.log:3: expected '  NAME ..... VALUE' (two spaces, the name, a space, 48 - length "
            "dots, a space, the value) in the arguments block, found '  micro_batch_size .. 1'");
  EXPECT_EQ(error_of(std::string(kHeader) + "\n" + arg_line("lr", "1e-05") + "\n" +
                     arg_line("lr", "2e-05") + "\n" + std::string(kFooter) + "\n"),
            "run.log:3: lr is printed twice in the arguments block");
}

TEST(ResolvedArgsParse, ASecondBlockMustAgreeWithTheFirst) {
  const std::string same = log_of(kBaselineArgs) + log_of(kBaselineArgs);
  EXPECT_EQ(parsed(same).values.size(), kBaselineArgs.size());
  const std::string differing = log_of(kBaselineArgs) + log_of(with(kBaselineArgs, "lr", "2e-05"));
  EXPECT_EQ(error_of(differing), "run.log:" + std::to_string(2 + kBaselineArgs.size() + 2 + 2) +
                                     ": a second arguments block differs from the first (line 2)");
}

TEST(ResolvedArgsCompare, IdenticalBlocksPass) {
  const ResolvedComparison result =
      compare_resolved(default_policy(), run_of(kBaselineArgs), run_of(kBaselineArgs));
  EXPECT_TRUE(result.passed);
  EXPECT_THAT(result.differences, IsEmpty());
  EXPECT_FALSE(result.env_compared);
}

TEST(ResolvedArgsCompare, GradReduceInBf16SilentlyFlippingFp32AccumulationFailsAndIsNamed) {
  const Args candidate_args =
      with(with(kBaselineArgs, "accumulate_allreduce_grads_in_fp32", "False"),
           "grad_reduce_in_bf16", "True");
  const ResolvedComparison result =
      compare_resolved(default_policy(), run_of(kBaselineArgs),
                       run_of(candidate_args, recipe_with("--grad-reduce-in-bf16", "")));
  EXPECT_FALSE(result.passed);
  const ResolvedDifference* d = difference(result, "accumulate_allreduce_grads_in_fp32");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->flag, "--accumulate-allreduce-grads-in-fp32");
  EXPECT_EQ(d->before, "True");
  EXPECT_EQ(d->after, "False");
  EXPECT_EQ(d->objective_class, ObjectiveClass::kNumeric);
  EXPECT_EQ(d->verdict, CheckVerdict::kRefused);
  EXPECT_EQ(d->rule, CheckRule::kNumeric);
  EXPECT_THAT(d->implied_by, ElementsAre("--grad-reduce-in-bf16"));
  EXPECT_EQ(d->message,
            "accumulate_allreduce_grads_in_fp32 (--accumulate-allreduce-grads-in-fp32) (numeric): "
            "numeric: True -> False; implied by --grad-reduce-in-bf16: a numeric setting differs "
            "in the resolved run");
  const ResolvedDifference* own = difference(result, "grad_reduce_in_bf16");
  ASSERT_NE(own, nullptr);
  EXPECT_THAT(own->message, HasSubstr("False -> True; set by --grad-reduce-in-bf16: "));
  bool named = false;
  for (const ConfigRefusal& failure : result.failures) {
    if (failure.setting == "accumulate_allreduce_grads_in_fp32") {
      named = true;
      EXPECT_THAT(failure.message, HasSubstr("implied by --grad-reduce-in-bf16"));
    }
  }
  EXPECT_TRUE(named);
}

TEST(ResolvedArgsCompare, ADifferenceNoRecipeChangeExplainsIsASilentOverride) {
  const ResolvedComparison result =
      compare_resolved(default_policy(), run_of(kBaselineArgs),
                       run_of(with(kBaselineArgs, "accumulate_allreduce_grads_in_fp32", "False")));
  EXPECT_FALSE(result.passed);
  const ResolvedDifference* d = difference(result, "accumulate_allreduce_grads_in_fp32");
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(d->implied_by, IsEmpty());
  EXPECT_THAT(d->message, HasSubstr("a silent override"));
}

TEST(ResolvedArgsCompare, StructuralDifferencesPassButAreListed) {
  const Args candidate_args =
      with(with(kBaselineArgs, "tensor_model_parallel_size", "4"), "data_parallel_size", "2");
  const ResolvedComparison result =
      compare_resolved(default_policy(), run_of(kBaselineArgs),
                       run_of(candidate_args, recipe_with("--tensor-model-parallel-size", "4")));
  EXPECT_TRUE(result.passed);
  ASSERT_EQ(result.differences.size(), 2u);
  const ResolvedDifference* tp = difference(result, "tensor_model_parallel_size");
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->verdict, CheckVerdict::kAllowed);
  EXPECT_EQ(tp->rule, CheckRule::kStructural);
  EXPECT_THAT(tp->implied_by, ElementsAre("--tensor-model-parallel-size"));
  EXPECT_THAT(tp->message, HasSubstr("2 -> 4; set by --tensor-model-parallel-size: "));
  const ResolvedDifference* dp = difference(result, "data_parallel_size");
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->flag, "") << "derived by Megatron, no flag sets it";
  EXPECT_EQ(dp->objective_class, ObjectiveClass::kStructural);
}

TEST(ResolvedArgsCompare, AnUnknownDestIsNumeric) {
  const ResolvedComparison result = compare_resolved(
      default_policy(), run_of(kBaselineArgs), run_of(with(kBaselineArgs, "mystery_knob", "7")));
  EXPECT_FALSE(result.passed);
  const ResolvedDifference* d = difference(result, "mystery_knob");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->before.has_value());
  EXPECT_EQ(d->objective_class, ObjectiveClass::kNumeric);
  EXPECT_EQ(d->rule, CheckRule::kUnlisted);
}

TEST(ResolvedArgsCompare, PolicyRulesApplyToTheResolvedArguments) {
  const Policy glm = shipped("glm-4.5");
  // A frozen structural setting turned on.
  const ResolvedComparison overlap = compare_resolved(
      glm, run_of(kBaselineArgs), run_of(with(kBaselineArgs, "tp_comm_overlap", "True")));
  EXPECT_FALSE(overlap.passed);
  ASSERT_NE(difference(overlap, "tp_comm_overlap"), nullptr);
  EXPECT_EQ(difference(overlap, "tp_comm_overlap")->rule, CheckRule::kFrozen);
  // A micro-batch change: frozen on GLM-4.5, structural on MiniMax-M2.
  const Args rows = with(kBaselineArgs, "micro_batch_size", "2");
  EXPECT_FALSE(compare_resolved(glm, run_of(kBaselineArgs), run_of(rows)).passed);
  const Policy minimax = shipped("minimax-m2");
  EXPECT_TRUE(compare_resolved(minimax, run_of(kBaselineArgs), run_of(rows)).passed);
}

TEST(ResolvedArgsCompare, AKnownDefectIsReadFromThePrintedArguments) {
  // ETP printed as 8 although the recipe leaves it to default to TP.
  const Args candidate_args = with(with(with(kBaselineArgs, "tensor_model_parallel_size", "8"),
                                        "expert_tensor_parallel_size", "8"),
                                   "expert_model_parallel_size", "1");
  const ResolvedComparison result =
      compare_resolved(shipped("glm-4.5"), run_of(kBaselineArgs), run_of(candidate_args));
  EXPECT_FALSE(result.passed);
  bool defect = false;
  for (const ConfigRefusal& failure : result.failures) {
    if (failure.rule != CheckRule::kDefect) continue;
    defect = true;
    EXPECT_EQ(failure.setting, "expert_model_parallel_size=1 expert_tensor_parallel_size=8");
  }
  EXPECT_TRUE(defect);
}

TEST(ResolvedArgsCompare, TheEnvironmentIsComparedWhenBothRunsRecordedIt) {
  const Policy policy = shipped("default");
  ResolvedRun base = run_of(kBaselineArgs);
  ResolvedRun candidate = run_of(kBaselineArgs);
  base.env = std::map<std::string, std::string>{{"CUDA_DEVICE_MAX_CONNECTIONS", "1"},
                                                {"SLURM_JOB_ID", "100"}};
  candidate.env = std::map<std::string, std::string>{
      {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}, {"SLURM_JOB_ID", "101"}, {"NVTE_FUSED_ATTN", "0"}};
  const ResolvedComparison result = compare_resolved(policy, base, candidate);
  EXPECT_TRUE(result.env_compared);
  EXPECT_FALSE(result.passed);
  ASSERT_NE(difference(result, "SLURM_JOB_ID"), nullptr);
  EXPECT_EQ(difference(result, "SLURM_JOB_ID")->verdict, CheckVerdict::kReported);
  ASSERT_NE(difference(result, "NVTE_FUSED_ATTN"), nullptr);
  EXPECT_EQ(difference(result, "NVTE_FUSED_ATTN")->kind, ChangeKind::kEnv);
  EXPECT_EQ(difference(result, "NVTE_FUSED_ATTN")->rule, CheckRule::kUnlisted);

  candidate.env = std::nullopt;
  const ResolvedComparison unrecorded = compare_resolved(policy, base, candidate);
  EXPECT_FALSE(unrecorded.env_compared);
  EXPECT_TRUE(unrecorded.passed);
}

TEST(ResolvedArgsTables, NameRealFlagsAndDests) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  std::vector<std::string> derived;
  for (const DerivedArg& arg : known_derived_args()) {
    derived.emplace_back(arg.dest);
    EXPECT_EQ(catalog.find_by_dest(arg.dest), nullptr) << arg.dest << " is set by a flag";
  }
  for (const ArgImplication& implication : known_arg_implications()) {
    EXPECT_NE(catalog.find(implication.flag), nullptr) << implication.flag;
    const bool known = catalog.find_by_dest(implication.dest) != nullptr ||
                       std::find(derived.begin(), derived.end(), implication.dest) != derived.end();
    EXPECT_TRUE(known) << implication.dest;
    EXPECT_FALSE(implication.note.empty());
  }
}

}  // namespace
}  // namespace attune
