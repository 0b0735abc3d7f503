// The red team's attacks and faults at the command line, each as a hostile but fair user would
// try it: every one must end in a clear one-line error or a correct result, never in a crash, a
// false fact in the ledger or a lost file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "events/event_store.h"
#include "tests/tools/private_data_home.h"
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing_support::CommandOutcome;

std::string attune_bin() { return std::string(ATTUNE_BIN_DIR) + "/attune"; }

// Lines that are attune's errors ("attune: ..."), not progress.
int error_lines_of(const std::string& text) {
  int count = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) count += line.rfind("attune: ", 0) == 0 ? 1 : 0;
  return count;
}

int lines_of(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class RedTeam : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attune-red-team-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }

  CommandOutcome attune(const std::string& args) const {
    return testing_support::run_shell(attune_bin() + " " + args);
  }
  std::string example() const {
    return std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml";
  }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }
  // The example campaign with `edit` applied to its text, written as `name`.
  std::string example_with(const std::string& name, const std::string& from,
                           const std::string& to) const {
    std::string text = slurp(example());
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return write(name, text);
  }
  json run_json(const std::string& args) const {
    const CommandOutcome run = attune(args + " --json");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return json::parse(run.out, nullptr, false);
  }

  fs::path dir_;
};

// Severe 2: attune's own I/O failing (here: a file-size limit, as a full disk makes writes fail)
// is never recorded as a fact about a recipe. The campaign stops with a message, and resume
// ships exactly what an undisturbed campaign ships.
TEST_F(RedTeam, AFailingDiskStopsTheCampaignCleanlyAndResumeShipsWhatACleanRunShips) {
  const json clean = run_json("campaign run " + example() + " --db " + (dir_ / "clean").string());
  const std::string db = (dir_ / "full").string();
  // SIGXFSZ ignored: writes past the limit fail with EFBIG, as they would with ENOSPC.
  const CommandOutcome stopped =
      testing_support::run_shell("trap '' XFSZ; ulimit -f 100; " + attune_bin() + " campaign run " +
                                 example() + " --db " + db + " --json");
  ASSERT_NE(stopped.exit_code, 0) << "the limit must bite for this test to mean anything";
  EXPECT_EQ(stopped.exit_code, 2) << stopped.err;
  // One error line among the progress lines on stderr.
  EXPECT_EQ(error_lines_of(stopped.err), 1) << stopped.err;
  const std::string id = clean.value("campaign_id", "");
  const CommandOutcome audit = attune("audit --db " + db + " --campaign " + id + " --json");
  EXPECT_EQ(audit.exit_code, 0) << "nothing false or broken was recorded: " << audit.out
                                << audit.err;
  const json resumed = run_json("campaign resume --db " + db + " --campaign " + id);
  EXPECT_EQ(resumed["shipped"]["run_id"], clean["shipped"]["run_id"]);
  EXPECT_EQ(resumed["shipped"]["recipe"], clean["shipped"]["recipe"]);
}

// Severe 3: --listen never deletes a file that is not a stale socket of ours.
TEST_F(RedTeam, ListeningOnTheCampaignFileIsRefusedAndTheFileIsKept) {
  const std::string campaign = write("c.toml", slurp(example()));
  const CommandOutcome run = attune("campaign run " + campaign + " --db " + (dir_ / "db").string() +
                                    " --tuner external --listen unix:" + campaign);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(lines_of(run.err), 1) << run.err;
  EXPECT_EQ(slurp(campaign), slurp(example())) << "the campaign file was changed or removed";
}

// Medium 8: a head record of the wrong length is a broken ledger (exit 1), not a crash.
TEST_F(RedTeam, AHeadOfTheWrongLengthIsABrokenChainAndResumeRefusesIt) {
  const std::string db = (dir_ / "db").string();
  const std::string id = run_json("campaign run " + example() + " --db " + db)["campaign_id"];
  {
    auto store = EventStore::open(db);
    ASSERT_TRUE(store.ok()) << store.error();
    ASSERT_TRUE((*store)->overwrite_head_bytes_for_testing(id, "short").ok());
  }
  for (const std::string command : {"replay", "audit"}) {
    const CommandOutcome out = attune(command + " --db " + db + " --campaign " + id);
    EXPECT_EQ(out.exit_code, 1) << command << ": " << out.out << out.err;
  }
  const CommandOutcome resume = attune("campaign resume --db " + db + " --campaign " + id);
  EXPECT_EQ(resume.exit_code, 2) << resume.out << resume.err;
  EXPECT_EQ(lines_of(resume.err), 1) << resume.err;
  EXPECT_NE(resume.err.find("head"), std::string::npos) << resume.err;
}

// Medium 9: a shipped recipe that cannot be written is an error, never reported as written.
TEST_F(RedTeam, AShippedRecipeThatCannotBeWrittenIsAnError) {
  const std::string id =
      run_json("campaign run " + example() + " --db " + (dir_ / "first").string())["campaign_id"];
  const std::string db = (dir_ / "db").string();
  fs::create_directories(fs::path(db) / (id + ".shipped.sh"));  // a folder in the recipe's place
  const CommandOutcome run = attune("campaign run " + example() + " --db " + db);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.err.find(id + ".shipped.sh: cannot write"), std::string::npos) << run.err;
}

// Medium 10: reads and inflations are bounded: a gzip bomb and a 3 GB recipe file are refused
// with a message under a memory limit far below what they would take.
TEST_F(RedTeam, AGzipBombAndAHugeRecipeFileAreRefusedUnderAMemoryLimit) {
  fs::create_directories(dir_ / "traces");
  const std::string bomb = (dir_ / "traces" / "rank-0.json.gz").string();
  ASSERT_EQ(testing_support::run_shell("head -c 700M /dev/zero | gzip -1 > " + bomb).exit_code, 0);
  const CommandOutcome trace = testing_support::run_shell(
      "ulimit -v 1500000; " + attune_bin() + " trace breakdown " + (dir_ / "traces").string());
  EXPECT_EQ(trace.exit_code, 2) << trace.err;
  EXPECT_NE(trace.err.find("inflates to more than"), std::string::npos) << trace.err;

  const std::string huge = (dir_ / "huge.sh").string();
  ASSERT_EQ(testing_support::run_shell("truncate -s 3G " + huge).exit_code, 0);
  const std::string campaign =
      write("c.toml",
            "name = \"x\"\n[cluster]\nmodel = \"qwen3-30b-a3b\"\nhardware = \"h100\"\n"
            "gpus = 16\n[workload]\nseq_length = 4096\nglobal_batch = 256\n"
            "[baseline]\nrecipe_file = \"" +
                huge + "\"\n[budget]\ngpu_hours = 10\n");
  const CommandOutcome run =
      testing_support::run_shell("ulimit -v 1500000; " + attune_bin() + " campaign run " +
                                 campaign + " --db " + (dir_ / "db").string());
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("larger than"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir_ / "db"));
}

// Medium 13: the policy is found from any working folder, and a changed policy is refused.
TEST_F(RedTeam, ResumeFindsThePolicyFromAnotherFolderAndRefusesAChangedOne) {
  const std::string policy_text =
      slurp(std::string(ATTUNE_SOURCE_DIR) + "/gate/policies/default.toml");
  ASSERT_FALSE(policy_text.empty());
  write("work/policy.toml", policy_text);
  example_with("work/c.toml", "[budget]", "[policy]\nfile = \"policy.toml\"\n\n[budget]");
  const CommandOutcome run =
      testing_support::run_shell("cd " + (dir_ / "work").string() + " && " + attune_bin() +
                                 " campaign run c.toml --db ../ledger --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = json::parse(run.out)["campaign_id"];
  const std::string resume = "cd / && " + attune_bin() + " campaign resume --db " +
                             (dir_ / "ledger").string() + " --campaign " + id + " --json";
  const CommandOutcome again = testing_support::run_shell(resume);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  write("work/policy.toml", policy_text + "\n# changed\n");
  const CommandOutcome changed = testing_support::run_shell(resume);
  EXPECT_EQ(changed.exit_code, 2);
  EXPECT_NE(changed.err.find("changed after the campaign opened"), std::string::npos)
      << changed.err;
}

// Low: every section refuses unknown keys; a typo in [tuner] is not silently ignored.
TEST_F(RedTeam, ATypoInTheTunerSectionIsRefusedWithItsLine) {
  const std::string campaign =
      example_with("c.toml", "name = \"expert\"", "name = \"expert\"\nlearned_rule = \"x\"");
  const CommandOutcome run = attune("campaign run " + campaign + " --db " + (dir_ / "db").string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(lines_of(run.err), 1) << run.err;
  EXPECT_NE(run.err.find("[tuner] learned_rule: unknown key"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(campaign + ":"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir_ / "db"));
}

// Low: a ';' in a baseline recipe would merge two commands; it is refused at the boundary.
TEST_F(RedTeam, ASecondCommandInTheBaselineIsRefused) {
  const std::string campaign =
      example_with("c.toml", "--padded-vocab-size 152576", "--padded-vocab-size 152576; rm -rf x");
  const CommandOutcome run = attune("campaign run " + campaign + " --db " + (dir_ / "db").string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("a second command after ';'"), std::string::npos) << run.err;
}

// Low: a torn last line in the shared catalog does not block later campaigns; it is skipped
// with a warning, cut before the next append, and what simulated campaigns learn is tagged so
// that real campaigns leave it out.
TEST_F(RedTeam, ATornCatalogTailIsSkippedAndCutAndSimulatedRulesAreTagged) {
  const std::string data = (dir_ / "data").string();
  const std::string catalog =
      write("data/attune/learned_rules.jsonl",
            "{\"lever\":\"--x\",\"when\":\"compute-bound\",\"effect\":\"hurt\",\"rule\":\"r\"}\n"
            "{\"lever\":\"--y\",\"wh");
  const CommandOutcome run =
      testing_support::run_shell("XDG_DATA_HOME=" + data + " " + attune_bin() + " campaign run " +
                                 example() + " --db " + (dir_ / "db").string() + " --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("torn last line"), std::string::npos) << run.err;
  std::istringstream lines(slurp(catalog));
  std::string line;
  int learned = 0;
  while (std::getline(lines, line)) {
    const json rule = json::parse(line, nullptr, false);
    ASSERT_FALSE(rule.is_discarded()) << "every line parses after the append: " << line;
    if (rule["lever"] != "--x") {
      EXPECT_EQ(rule.value("source", ""), "sim") << line;
      ++learned;
    }
  }
  EXPECT_GT(learned, 0) << "the demo campaign learns at least one rule";
}

// Low: ids that would leave the ledger's folder are never valid, and misleading messages are
// gone.
TEST_F(RedTeam, PathLikeCampaignIdsAndMisleadingMessagesAreRefusedPlainly) {
  for (const char* id : {"..", ".", "../../x", "a/b", ".hidden"}) {
    EXPECT_FALSE(is_valid_campaign_id(id)) << id;
  }
  EXPECT_TRUE(is_valid_campaign_id("qwen3-30b-a3b-demo-31b8490a"));
  const std::string db = (dir_ / "db").string();
  run_json("campaign run " + example() + " --db " + db);
  const CommandOutcome resume = attune("campaign resume --db " + db + " --campaign ..");
  EXPECT_EQ(resume.exit_code, 2);
  EXPECT_NE(resume.err.find("invalid campaign id"), std::string::npos) << resume.err;

  const CommandOutcome predict =
      attune("sim predict --model qwen3-30b-a3b --gpu h100 --gpus 0 --seq 4096 --gbs 256");
  EXPECT_EQ(predict.exit_code, 2) << predict.out;
  EXPECT_LT(predict.err.size(), 200u) << predict.err;
  EXPECT_NE(predict.err.find("1048576"), std::string::npos) << predict.err;

  if (::geteuid() != 0) {  // root reads a folder of mode 000 anyway
    fs::permissions(db, fs::perms::none);
    const CommandOutcome status = attune("status --db " + db);
    EXPECT_EQ(status.exit_code, 2);
    EXPECT_NE(status.err.find("cannot read the ledger folder"), std::string::npos) << status.err;
    fs::permissions(db, fs::perms::owner_all);
  }
}

// Medium 11: agent install keeps settings it did not write.
TEST_F(RedTeam, AgentInstallKeepsSettingsItDidNotWrite) {
  const std::string settings = write("agent/.claude/settings.json", "{\"model\": \"mine\"}\n");
  const std::string install =
      "agent install " + (dir_ / "agent").string() + " --socket unix:" + (dir_ / "s.sock").string();
  const CommandOutcome refused = attune(install);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(slurp(settings), "{\"model\": \"mine\"}\n");
  const CommandOutcome forced = attune(install + " --force");
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(slurp(settings + ".bak"), "{\"model\": \"mine\"}\n");
  EXPECT_NE(slurp(settings).find("hook pre-tool"), std::string::npos);
  // Reinstalling over its own settings needs no --force, and the keyring is a secret.
  EXPECT_EQ(attune(install).exit_code, 0);
  const std::string policy = slurp(dir_ / "agent" / ".attune" / "agent-policy.toml");
  EXPECT_NE(policy.find("secrets = ["), std::string::npos) << policy;
  EXPECT_NE(policy.find("attune/keys"), std::string::npos) << policy;
}

}  // namespace
}  // namespace attune
