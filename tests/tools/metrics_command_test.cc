// `attune metrics` as a user runs it on a real job's two files (.out and .err): the class with the
// deciding line and the file it is in, the ranked alternatives, the failing node, output that
// fits 100 columns, and the JSON a script reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/tools/shell_command.h"

namespace attune {
namespace {

using nlohmann::json;

const std::string kShared = "/work/shared/data/real-world/logs/";

testing_support::CommandOutcome attune(const std::string& args) {
  return testing_support::run_shell(std::string(ATTUNE_BIN_DIR) + "/attune " + args);
}

std::string job(const std::string& id) {
  return kShared + "elyulina-" + id + ".out " + kShared + "elyulina-" + id + ".err";
}

TEST(MetricsCommand, ABadNodeIsInfraWithItsLineItsFileAndTheNode) {
  const auto run = attune("metrics " + job("2611382"));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  // Line 261 is NCCL's "Failed to initialize any NET plugin": the network, by hand.
  EXPECT_NE(run.out.find("failed: infra (network, storage or system error; cause network)"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("decided by elyulina-2611382.err line 261:"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("failed tasks on: nid006742"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("tasks 32-35 failed on nid006742 alone, of 14 nodes"), std::string::npos)
      << run.out;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100U) << line;
}

TEST(MetricsCommand, TheJsonGivesTheDecidingLineAndTheRankedAlternatives) {
  const auto run = attune("metrics --json " + job("2611435"));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const json out = json::parse(run.out);
  EXPECT_EQ(out.at("schema_version"), 2);
  EXPECT_EQ(out.at("failure_class"), "hang");
  const json& failure = out.at("failure");
  EXPECT_EQ(failure.at("text"), "hang");
  EXPECT_EQ(failure.at("cause"), "time-limit");  // Slurm's "CANCELLED ... DUE TO TIME LIMIT"
  EXPECT_EQ(failure.at("deciding").at("file"), kShared + "elyulina-2611435.err");
  EXPECT_NE(failure.at("deciding").at("message").get<std::string>().find("DUE TO TIME LIMIT"),
            std::string::npos);
  // The batch script's wandb traceback is an alternative the training went on after.
  bool preamble_listed = false;
  for (const json& alternative : failure.at("alternatives")) {
    preamble_listed =
        preamble_listed ||
        (alternative.at("line") == 14 &&
         alternative.at("why").get<std::string>().find("training went on") != std::string::npos);
  }
  EXPECT_TRUE(preamble_listed) << failure.dump(2);
  EXPECT_EQ(out.at("iterations").size(), 230U);
}

TEST(MetricsCommand, AFinalStateOfTimeoutDoesNotMakeAPreambleErrorACrash) {
  const auto run = attune("metrics --final-state TIMEOUT " + job("2611435"));
  EXPECT_NE(run.out.find("failed: hang"), std::string::npos) << run.out;
}

TEST(MetricsCommand, AMissingSecondFileIsAOneLineErrorNamingIt) {
  const auto run = attune("metrics " + kShared + "elyulina-2611435.out /nonexistent/job.err");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("/nonexistent/job.err"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

}  // namespace
}  // namespace attune
