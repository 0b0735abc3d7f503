// The attune command line as a user runs it: exit codes, one-line errors, views of the ledger.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "events/codec.h"
#include "events/event_store.h"
#include "tests/tools/private_data_home.h"
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `attune ARGS` with stdout and stderr captured separately.
Outcome attune(const std::string& args) {
  const testing_support::CommandOutcome run =
      testing_support::run_shell(std::string(ATTUNE_BIN_DIR) + "/attune " + args);
  return Outcome{run.exit_code, run.out, run.err};
}

int lines_of(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attune-cli-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string db() const { return (dir_ / "ledger").string(); }
  std::string example() const {
    return std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml";
  }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  // Opens the example campaign and returns its id.
  std::string open_campaign() {
    Outcome run = attune("campaign run " + example() + " --db " + db() + " --json");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    auto json = nlohmann::json::parse(run.out, nullptr, false);
    EXPECT_FALSE(json.is_discarded()) << run.out;
    return json.is_discarded() ? "" : json.value("campaign_id", "");
  }

  fs::path dir_;
};

TEST_F(Cli, HelpAndVersionTellTheTruthAndExitZero) {
  Outcome help = attune("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* command : {"campaign", "status", "replay", "audit", "ledger", "gate"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
  }
  Outcome version = attune("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("attune "), std::string::npos);
  for (const char* command : {"status", "replay", "audit", "ledger export", "campaign run"}) {
    Outcome sub = attune(std::string(command) + " --help");
    EXPECT_EQ(sub.exit_code, 0) << command;
    EXPECT_NE(sub.out.find("--json"), std::string::npos) << command;
  }
}

// The subcommands a --help lists: the first word of each line of its "Subcommands:" section.
std::vector<std::string> subcommands_in(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream lines(help);
  bool listing = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "Subcommands:") {
      listing = true;
    } else if (listing && line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    } else if (listing && !line.empty() && line[0] != ' ') {
      listing = false;
    }
  }
  return names;
}

// Every command's --help, found by walking the subcommands from the top, fits 100 columns:
// long descriptions continue under their description column.
TEST_F(Cli, EveryHelpFitsTheTerminal) {
  std::vector<std::string> pending = {""};
  int seen = 0;
  while (!pending.empty()) {
    const std::string command = pending.back();
    pending.pop_back();
    const Outcome help = attune(command + (command.empty() ? "" : " ") + "--help");
    ASSERT_EQ(help.exit_code, 0) << command;
    ++seen;
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
      // Columns are code points: count the bytes that start one in UTF-8.
      const auto columns = std::count_if(line.begin(), line.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      });
      EXPECT_LE(columns, 100) << "attune " << command << " --help: " << line;
    }
    for (const std::string& sub : subcommands_in(help.out)) {
      pending.push_back(command.empty() ? sub : command + " " + sub);
    }
  }
  EXPECT_GT(seen, 30);  // every command, not only the top level
}

TEST_F(Cli, UnknownCommandsAndMissingOptionsGiveOneLineErrors) {
  for (const char* args : {"frobnicate", "status", "ledger export --db /nonexistent"}) {
    Outcome outcome = attune(args);
    EXPECT_NE(outcome.exit_code, 0) << args;
    EXPECT_EQ(lines_of(outcome.err), 1) << args << ": " << outcome.err;
    EXPECT_EQ(outcome.err.rfind("attune: ", 0), 0u) << outcome.err;
  }
}

TEST_F(Cli, AMissingLedgerIsNamedInTheError) {
  Outcome outcome = attune("status --db " + db());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.err.find(db()), std::string::npos) << outcome.err;
  EXPECT_EQ(lines_of(outcome.err), 1);
}

TEST_F(Cli, CampaignRunOpensTheCampaignAndTheViewsShowIt) {
  const std::string id = open_campaign();
  ASSERT_FALSE(id.empty());
  Outcome status = attune("status --db " + db() + " --json");
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto json = nlohmann::json::parse(status.out);
  EXPECT_EQ(json.value("schema_version", 0), 1);
  EXPECT_EQ(json.at("campaigns").at(0).value("campaign_id", ""), id);

  Outcome text = attune("status --db " + db() + " --campaign " + id);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("qwen3-30b-a3b"), std::string::npos) << text.out;

  Outcome replay = attune("replay --db " + db() + " --campaign " + id + " --json");
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_TRUE(nlohmann::json::parse(replay.out).at("chain").at("ok").get<bool>());

  Outcome audit = attune("audit --db " + db() + " --campaign " + id);
  EXPECT_EQ(audit.exit_code, 0) << audit.err;
  EXPECT_NE(audit.out.find("consistent"), std::string::npos);

  Outcome jsonl = attune("ledger export --db " + db() + " --campaign " + id + " --format jsonl");
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  auto first = nlohmann::json::parse(jsonl.out.substr(0, jsonl.out.find('\n')));
  EXPECT_EQ(first.value("type", ""), "CampaignOpened");
  EXPECT_EQ(first.value("sequence", 0), 1);
  Outcome csv = attune("ledger export --db " + db() + " --campaign " + id + " --format csv");
  ASSERT_EQ(csv.exit_code, 0);
  EXPECT_EQ(csv.out.rfind("sequence,campaign_id,", 0), 0u);
  EXPECT_EQ(attune("ledger export --db " + db() + " --format xml").exit_code, 2);
}

TEST_F(Cli, TheSameCampaignFileAndSeedGiveTheSameLedgerBytes) {
  fs::remove_all(attune::testing_support::private_data_home() / "attune");
  const std::string id = open_campaign();
  Outcome first = attune("ledger export --db " + db() + " --campaign " + id);
  fs::remove_all(db());
  // The learned-rules catalog the first campaign appended to is an input of the second: start
  // both from the same (empty) one.
  fs::remove_all(attune::testing_support::private_data_home() / "attune");
  ASSERT_EQ(open_campaign(), id);
  Outcome second = attune("ledger export --db " + db() + " --campaign " + id);
  EXPECT_EQ(first.out, second.out);
  // Opening it again in the same ledger is refused and changes nothing.
  Outcome again = attune("campaign run " + example() + " --db " + db());
  EXPECT_NE(again.exit_code, 0);
  EXPECT_EQ(attune("ledger export --db " + db() + " --campaign " + id).out, second.out);
}

TEST_F(Cli, AMalformedCampaignFileIsRefusedWithFileLineAndKeyAndTheLedgerIsUntouched) {
  const std::string bad = write("bad.toml",
                                "name = \"x\"\n[cluster]\nmodel = \"llama3.1-8b\"\nhardware = "
                                "\"h100\"\ngpus = \"eight\"\n");
  Outcome outcome = attune("campaign run " + bad + " --db " + db());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_EQ(lines_of(outcome.err), 1) << outcome.err;
  EXPECT_NE(outcome.err.find(bad + ":5:"), std::string::npos) << outcome.err;
  EXPECT_NE(outcome.err.find("gpus"), std::string::npos) << outcome.err;
  EXPECT_FALSE(fs::exists(db())) << "a refused campaign file must not create a ledger";

  const std::string bad_recipe =
      write("bad-recipe.toml",
            "name = \"x\"\n[cluster]\nmodel = \"m\"\nhardware = \"h100\"\ngpus = 8\n[workload]\n"
            "seq_length = 4096\nglobal_batch = 8\n[baseline]\nrecipe = \"--bf16 true\"\n[budget]\n"
            "gpu_hours = 10\n");
  outcome = attune("campaign run " + bad_recipe + " --db " + db());
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.err.find("--bf16"), std::string::npos) << outcome.err;
}

TEST_F(Cli, ReplayAndAuditFailOnATamperedLedger) {
  const std::string id = open_campaign();
  {
    auto store = EventStore::open(db());
    ASSERT_TRUE(store.ok()) << store.error();
    auto records = (*store)->read_raw(id);
    ASSERT_TRUE(records.ok());
    Envelope envelope = decode_envelope(records->front().bytes).value();
    std::get<CampaignOpened>(envelope.body).gpu_count = 1024;  // a forged change
    ASSERT_TRUE((*store)->overwrite_raw_for_testing(id, 1, encode_envelope(envelope, true)).ok());
  }
  Outcome replay = attune("replay --db " + db() + " --campaign " + id);
  EXPECT_EQ(replay.exit_code, 1);
  EXPECT_EQ(lines_of(replay.err), 1) << replay.err;
  Outcome audit = attune("audit --db " + db() + " --campaign " + id + " --json");
  EXPECT_EQ(audit.exit_code, 1);
  EXPECT_FALSE(nlohmann::json::parse(audit.out).at("consistent").get<bool>());
}

TEST_F(Cli, ALedgerHeldByAWriterIsReportedAndViewsStillRead) {
  const std::string id = open_campaign();
  auto writer = EventStore::open(db());
  ASSERT_TRUE(writer.ok());
  Outcome status = attune("status --db " + db());
  EXPECT_EQ(status.exit_code, 0) << "read-only views work beside a writer: " << status.err;
  Outcome run = attune("campaign run " + example() + " --db " + db() + " --seed 99");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("held by another process"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// slime's real run-qwen3-4B.sh (THUDM/slime, tests/data/real-world/recipes) sources its model
// script from the folder beside it. The sandbox shows it the script alone, so it fails and says
// how to name the companion; with --file the model's flags come through.
TEST_F(Cli, RecipeShowReadsAScriptThatSourcesANamedCompanion) {
  const fs::path recipes = fs::path(ATTUNE_SOURCE_DIR) / "tests/data/real-world/recipes";
  fs::create_directories(dir_ / "models");
  fs::copy_file(recipes / "THUDM__slime__scripts__run-qwen3-4B.sh", dir_ / "run-qwen3-4B.sh");
  fs::copy_file(recipes / "THUDM__slime__scripts__run-qwen3-4B.d/models/qwen3-4B.sh",
                dir_ / "models/qwen3-4B.sh");
  const std::string script = (dir_ / "run-qwen3-4B.sh").string();
  const Outcome alone = attune("recipe show " + script + " --json");
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("--file"), std::string::npos) << alone.err;
  EXPECT_EQ(lines_of(alone.err), 1) << alone.err;

  const Outcome named = attune("recipe show " + script + " --file " +
                               (dir_ / "models/qwen3-4B.sh").string() + " --json");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  const auto json = nlohmann::json::parse(named.out);
  EXPECT_EQ(json["program"], "train.py");
  const std::vector<std::string> args = json["args"].get<std::vector<std::string>>();
  const auto layers = std::find(args.begin(), args.end(), "--num-layers");
  ASSERT_NE(layers, args.end()) << named.out;
  EXPECT_EQ(*(layers + 1), "36");  // Qwen3-4B, from the sourced model script
}

}  // namespace
}  // namespace attune
