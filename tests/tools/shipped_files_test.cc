// What a campaign leaves next to its ledger runs as it stands: bash on <id>.shipped.sh reaches the
// training program with every flag and variable of the shipped recipe, and the baseline script,
// the diff and the JSON agree with it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "events/recipe.h"
#include "tests/tools/private_data_home.h"
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> split_nul(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\0', start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

class ShippedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attune-shipped-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "stubs");
    // A python that records its argv and environment, NUL-separated, and succeeds.
    const fs::path stub = dir_ / "stubs" / "python";
    std::ofstream(stub) << "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$RECORD.argv\"\n"
                           "env -0 > \"$RECORD.env\"\n";
    fs::permissions(stub, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `script` with the stub first on PATH; returns the recorded argv and environment.
  std::pair<std::vector<std::string>, std::map<std::string, std::string>> run(
      const std::string& script) const {
    const std::string record = (dir_ / "record").string();
    const auto outcome =
        testing_support::run_shell("env -i PATH=" + (dir_ / "stubs").string() +
                                   ":/usr/bin:/bin RECORD=" + record + " bash " + script);
    EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
    std::map<std::string, std::string> env;
    for (const std::string& entry : split_nul(slurp(record + ".env"))) {
      const std::size_t eq = entry.find('=');
      if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    return {split_nul(slurp(record + ".argv")), env};
  }

  fs::path dir_;
};

TEST_F(ShippedFiles, EveryScriptRunsAndDeliversEveryFlagAndVariable) {
  const std::string db = (dir_ / "db").string();
  const auto outcome = testing_support::run_shell(
      std::string(ATTUNE_BIN_DIR) + "/attune campaign run " + ATTUNE_SOURCE_DIR +
      "/examples/qwen3-30b-a3b-h100x16.toml --db " + db + " --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const json summary = json::parse(outcome.out);
  const json shipped = json::parse(slurp(summary["shipped"]["json_file"].get<std::string>()));
  EXPECT_EQ(shipped["schema_version"], 1);
  for (const char* which : {"recipe", "baseline"}) {
    const std::string script =
        summary["shipped"][std::string(which) == "recipe" ? "recipe_file" : "baseline_file"]
            .get<std::string>();
    const auto [argv, env] = run(script);
    ASSERT_FALSE(argv.empty()) << which << ": the program was not reached";
    EXPECT_EQ(argv.front(), "pretrain_gpt.py");
    // The arguments that arrived read back as the recipe the JSON names.
    std::string text;
    for (const auto& [name, value] : shipped[which]["env"].items()) {
      EXPECT_EQ(env.count(name), 1u) << which << ": " << name << " was not exported";
      if (env.count(name)) {
        EXPECT_EQ(env.at(name), value.get<std::string>()) << name;
      }
    }
    text = "python";
    for (const std::string& word : argv) text += " " + shell_quote(word);
    auto arrived = parse_recipe(text, "argv");
    ASSERT_TRUE(arrived.ok()) << arrived.error();
    using Flags = std::map<std::string, std::string>;
    const Flags expected = shipped[which]["flags"].get<Flags>();
    EXPECT_EQ(arrived->flags, expected) << which;
  }
  // The diff names exactly the changed settings.
  const std::string diff = slurp(summary["shipped"]["diff_file"].get<std::string>());
  int marked = 0;
  std::istringstream lines(diff);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with("+  --") && line.find("$(: changed)") != std::string::npos) ++marked;
  }
  int changed_flags = 0;
  for (const json& change : shipped["changes"]) {
    if (change["kind"] == "flag" && !change["after"].is_null()) ++changed_flags;
  }
  EXPECT_EQ(marked, changed_flags) << diff;
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// A campaign whose baseline is a launch script in the styles real ones use (an array, a default
// expansion, a launcher): bash resolves it to the same recipe as the pasted example, and the
// shipped script keeps the script's launcher.
TEST_F(ShippedFiles, AScriptBaselineResolvesToTheSameRecipeAsThePastedOne) {
  if (testing_support::run_shell("bwrap --unshare-all --die-with-parent --ro-bind / / true")
          .exit_code != 0) {
    GTEST_SKIP() << "no bubblewrap sandbox can be made here";
  }
  const fs::path script = dir_ / "train.sh";
  std::ofstream(script)
      << "#!/bin/bash\nset -euo pipefail\nGPUS_PER_NODE=8\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
         "export NCCL_NVLS_ENABLE=0\nMODEL_ARGS=(\n  --tensor-model-parallel-size 2\n"
         "  --pipeline-model-parallel-size 1 --expert-model-parallel-size 8\n"
         "  --expert-tensor-parallel-size 1 --sequence-parallel\n)\n"
         "TRAIN_ARGS=\"--micro-batch-size 1 --global-batch-size ${GBS:-256} --seq-length 4096 "
         "--bf16 --lr 1.0e-5 --min-lr 1.0e-5 --lr-decay-style constant\"\n"
         "MOE=\"--moe-token-dispatcher-type alltoall --moe-router-load-balancing-type aux_loss "
         "--moe-aux-loss-coeff 1e-3\"\n"
         "case \"${1:-}\" in\n  --selective) RECOMPUTE=\"--recompute-granularity selective\";;\n"
         "  *) RECOMPUTE=\"\";;\nesac\n"
         "torchrun --nproc_per_node $GPUS_PER_NODE --nnodes 2 pretrain_gpt.py \"${MODEL_ARGS[@]}\" "
         "$TRAIN_ARGS $MOE $RECOMPUTE --use-distributed-optimizer --overlap-grad-reduce "
         "--overlap-param-gather --padded-vocab-size 152576\n";
  std::string campaign =
      slurp(std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml");
  const std::size_t begin = campaign.find("recipe = '''");
  const std::size_t end = campaign.find("'''", begin + 12) + 3;
  campaign.replace(begin, end - begin,
                   "script = \"" + script.string() + "\"\nscript_args = [\"--selective\"]\n");
  std::ofstream(dir_ / "c.toml") << campaign;
  const std::string attune = std::string(ATTUNE_BIN_DIR) + "/attune";
  const auto shown = testing_support::run_shell(attune + " recipe show " + script.string() +
                                                " --arg --selective --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const json resolved = json::parse(shown.out);
  EXPECT_EQ(resolved["program"], "pretrain_gpt.py");
  EXPECT_EQ(resolved["launcher"], "torchrun --nproc_per_node 8 --nnodes 2");
  EXPECT_EQ(resolved["env"]["NCCL_NVLS_ENABLE"], "0");

  const auto campaign_run =
      testing_support::run_shell(attune + " campaign run " + (dir_ / "c.toml").string() + " --db " +
                                 (dir_ / "db").string() + " --json");
  ASSERT_EQ(campaign_run.exit_code, 0) << campaign_run.err;
  const json summary = json::parse(campaign_run.out);
  const json shipped = json::parse(slurp(summary["shipped"]["json_file"].get<std::string>()));
  // The same recipe as the pasted example's.
  const std::string example =
      slurp(std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml");
  const std::size_t open = example.find("recipe = '''") + 12;
  auto pasted = parse_recipe(example.substr(open, example.find("'''", open) - open), "example");
  ASSERT_TRUE(pasted.ok()) << pasted.error();
  using Strings = std::map<std::string, std::string>;
  EXPECT_EQ(shipped["baseline"]["flags"].get<Strings>(), pasted->flags);
  EXPECT_EQ(shipped["baseline"]["env"].get<Strings>(), pasted->env);
  EXPECT_EQ(shipped["baseline"]["command"], pasted->command);
  EXPECT_EQ(shipped["launcher"], "torchrun --nproc_per_node 8 --nnodes 2");
  EXPECT_EQ(shipped["baseline"]["flags"]["--recompute-granularity"], "selective");
  EXPECT_EQ(shipped["baseline"]["flags"]["--global-batch-size"], "256");
  EXPECT_EQ(shipped["baseline"]["env"]["CUDA_DEVICE_MAX_CONNECTIONS"], "1");
  // The user's own script, with the changes applied where its flags are literal: run it with a
  // torchrun stub, and every setting it was not told to leave to the user arrives as shipped.
  const std::string user_script = summary["shipped"]["user_script_file"].get<std::string>();
  ASSERT_FALSE(user_script.empty());
  const fs::path torchrun = dir_ / "stubs" / "torchrun";
  std::ofstream(torchrun) << "#!/bin/sh\nwhile [ \"${1#--}\" != \"$1\" ]; do shift 2; done\n"
                             "exec python \"$@\"\n";
  fs::permissions(torchrun, fs::perms::owner_all);
  const auto [argv, env] = run(user_script + " --selective");
  std::string text = "python";
  for (const std::string& word : argv) text += " " + shell_quote(word);
  auto arrived = parse_recipe(text, "argv");
  ASSERT_TRUE(arrived.ok()) << arrived.error();
  const std::string by_hand = summary["shipped"]["change_by_hand"].dump();
  for (const auto& [flag, value] : shipped["recipe"]["flags"].items()) {
    if (by_hand.find(flag) != std::string::npos) continue;
    EXPECT_EQ(arrived->flags.count(flag), 1u) << flag << " did not arrive; by hand: " << by_hand;
    if (arrived->flags.count(flag)) {
      EXPECT_EQ(arrived->flags.at(flag), value.get<std::string>()) << flag;
    }
  }
  for (const auto& [flag, value] : arrived->flags) {
    EXPECT_TRUE(shipped["recipe"]["flags"].contains(flag)) << flag << " should have been removed";
  }
  const std::string script_text = slurp(summary["shipped"]["recipe_file"].get<std::string>());
  EXPECT_NE(script_text.find("torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py \\\n"),
            std::string::npos)
      << script_text;
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// A batch script reads what Slurm gives it; the campaign's size stands in for it.
TEST_F(ShippedFiles, ABatchScriptGetsSlurmsVariablesForTheCampaignsSize) {
  if (testing_support::run_shell("bwrap --unshare-all --die-with-parent --ro-bind / / true")
          .exit_code != 0) {
    GTEST_SKIP() << "no bubblewrap sandbox can be made here";
  }
  std::string campaign =
      slurp(std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml");
  const std::size_t begin = campaign.find("recipe = '''");
  const std::size_t end = campaign.find("'''", begin + 12) + 3;
  const std::string pasted = campaign.substr(begin + 12, end - begin - 15);
  // The pasted recipe, but its global batch computed from the node count Slurm would give.
  std::string body = pasted;
  const std::string gbs = "--global-batch-size 256";
  body.replace(body.find(gbs), gbs.size(), "--global-batch-size $((128 * SLURM_NNODES))");
  // Pasted, the variables were the program's; in a script they must be exported to be.
  for (const std::string name : {"CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_NVLS_ENABLE"}) {
    body.insert(body.find(name), "export ");
  }
  const fs::path script = dir_ / "job.sbatch";
  std::ofstream(script) << "#!/bin/bash\n#SBATCH --nodes=2\nset -euo pipefail\n" << body << "\n";
  campaign.replace(begin, end - begin, "script = \"" + script.string() + "\"\n");
  std::ofstream(dir_ / "c.toml") << campaign;
  const auto check = testing_support::run_shell(
      std::string(ATTUNE_BIN_DIR) + "/attune campaign check " + (dir_ / "c.toml").string());
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

}  // namespace
}  // namespace attune
