// The preflight refuses a campaign that cannot work before it spends anything: `campaign check`
// says why, one line per problem, and `campaign run` refuses it without touching the ledger.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/tools/private_data_home.h"
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Preflight : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attune-preflight-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string example_with(const std::string& from, const std::string& to) const {
    std::string text =
        slurp(std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml");
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    const fs::path path = dir_ / "c.toml";
    std::ofstream(path) << text;
    return path.string();
  }
  testing_support::CommandOutcome attune(const std::string& args) const {
    return testing_support::run_shell(std::string(ATTUNE_BIN_DIR) + "/attune " + args);
  }

  fs::path dir_;
};

TEST_F(Preflight, TheExampleIsReadyAndItsSummaryFitsOneScreen) {
  const auto check = attune("campaign check " + std::string(ATTUNE_SOURCE_DIR) +
                            "/examples/qwen3-30b-a3b-h100x16.toml");
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("ready"), std::string::npos) << check.out;
  EXPECT_LT(std::count(check.out.begin(), check.out.end(), '\n'), 25) << check.out;
}

TEST_F(Preflight, ImpossibleCampaignsAreRefusedBeforeAnyLaunch) {
  const struct {
    const char* from;
    const char* to;
    const char* says;
  } cases[] = {
      {"gpus = 16", "gpus = 7", "cannot run on 7 GPUs"},
      {"--tensor-model-parallel-size 2", "--tensor-model-parallel-size 0", "cannot run"},
      {"--micro-batch-size 1", "--micro-batch-size 0", "cannot run"},
      {"--lr 1.0e-5", "--lr nan", "--lr is nan, not a finite number"},
      {"--global-batch-size 256", "--global-batch-size 512",
       "--global-batch-size 512 differs from [workload] global_batch = 256"},
      {"--seq-length 4096", "--seq-length 2048", "differs from [workload] seq_length"},
      {"launcher = \"sim\"", "launcher = \"sim\"\nstack = \"no-such-stack\"",
       "unknown stack 'no-such-stack'"},
  };
  for (const auto& c : cases) {
    const std::string file = example_with(c.from, c.to);
    const auto check = attune("campaign check " + file);
    EXPECT_EQ(check.exit_code, 1) << c.to << ": " << check.out << check.err;
    EXPECT_NE(check.out.find(c.says), std::string::npos) << c.to << ": " << check.out;
    const std::string db = (dir_ / "db").string();
    const auto run = attune("campaign run " + file + " --db " + db);
    EXPECT_EQ(run.exit_code, 2) << c.to << ": " << run.out;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << c.to << ": " << run.err;
    EXPECT_FALSE(fs::exists(db)) << c.to << ": the ledger was touched";
  }
}

TEST_F(Preflight, TheStackIsTheSimulatedClustersAndItsPredictionShows) {
  const auto bridge = attune("campaign check " + example_with("gpus = 16", "gpus = 16"));
  const auto slime =
      attune("campaign check " +
             example_with("launcher = \"sim\"", "launcher = \"sim\"\nstack = \"slime\""));
  EXPECT_EQ(slime.exit_code, 0) << slime.out << slime.err;
  const auto predicted = [](const std::string& out) {
    const std::size_t at = out.find("predicted ");
    return at == std::string::npos ? 0.0 : std::stod(out.substr(at + 10));
  };
  EXPECT_GT(predicted(bridge.out), 0.0) << bridge.out;
  EXPECT_LT(predicted(slime.out), predicted(bridge.out)) << slime.out;

  const std::string local =
      example_with("launcher = \"sim\"", "launcher = \"local\"\nstack = \"slime\"");
  const auto refused = attune("campaign check " + local);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("c.toml:"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("stack"), std::string::npos) << refused.err;
}

TEST_F(Preflight, ACalibrationThatCannotFitTheBudgetIsRefused) {
  const std::string file = example_with("gpu_hours = \"auto\"", "gpu_hours = 0.01");
  const auto check = attune("campaign check " + file);
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_NE(check.out.find("more than the budget's"), std::string::npos) << check.out;
}

}  // namespace
}  // namespace attune
