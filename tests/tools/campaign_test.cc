// The main job end to end on the simulated cluster: determinism, replay, and crash recovery after
// an abrupt exit at every event of a whole campaign.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include "tests/tools/private_data_home.h"
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string out;
};

Outcome run(const std::string& command) {
  const testing_support::CommandOutcome run = testing_support::run_shell(command);
  return Outcome{run.exit_code, run.out};
}

std::string attune() { return std::string(ATTUNE_BIN_DIR) + "/attune"; }
std::string example() {
  return std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml";
}

class Campaign : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("attune-campaign-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string db(const std::string& name) const { return (root_ / name).string(); }

  nlohmann::json run_json(const std::string& ledger, const std::string& env = "") {
    Outcome outcome =
        run(env + " " + attune() + " campaign run " + example() + " --db " + ledger + " --json");
    EXPECT_EQ(outcome.exit_code, 0);
    auto json = nlohmann::json::parse(outcome.out, nullptr, false);
    return json.is_discarded() ? nlohmann::json{} : json;
  }

  std::string export_ledger(const std::string& ledger, const std::string& campaign) {
    return run(attune() + " ledger export --db " + ledger + " --campaign " + campaign).out;
  }

  fs::path root_;
};

TEST_F(Campaign, RunsFromCalibrationToAShippedRecipeWithinItsBudget) {
  nlohmann::json summary = run_json(db("a"));
  ASSERT_TRUE(summary.contains("shipped")) << summary.dump();
  EXPECT_EQ(summary["baseline"]["calibration_runs"].get<int>(), 5);
  EXPECT_GE(summary["baseline"]["band_fraction"].get<double>(), 0.03);
  const double budget = summary["gpu_hours"]["budget"].get<double>();
  EXPECT_GT(budget, 0.0);
  EXPECT_EQ(static_cast<int>(budget) % 10, 0) << "an auto budget is a multiple of 10 GPU-hours";
  if (!summary["shipped"]["is_baseline"].get<bool>()) {
    EXPECT_GT(summary["shipped"]["gain_fraction"].get<double>(),
              summary["baseline"]["band_fraction"].get<double>());
  }
  // The shipped recipe is written as a script that runs (tests/tools/shipped_files_test.cc runs
  // it), one flag per continued line.
  std::ifstream recipe(summary["shipped"]["recipe_file"].get<std::string>());
  std::stringstream text;
  text << recipe.rdbuf();
  EXPECT_TRUE(text.str().starts_with("#!/usr/bin/env bash\n")) << text.str();
  EXPECT_NE(text.str().find("\n  --bf16 \\\n"), std::string::npos) << text.str();
  // The audit of a finished campaign is clean.
  EXPECT_EQ(run(attune() + " audit --db " + db("a") + " --campaign " +
                summary["campaign_id"].get<std::string>())
                .exit_code,
            0);
}

TEST_F(Campaign, TheSameSeedsGiveAByteIdenticalLedgerAndReplayMatchesTheLiveCampaign) {
  // The same empty learned-rules catalog for both: the second must not read what the first
  // learned.
  nlohmann::json first = run_json(db("a"), "XDG_DATA_HOME=" + db("data"));
  fs::remove_all(db("data"));
  nlohmann::json second = run_json(db("b"), "XDG_DATA_HOME=" + db("data"));
  const std::string id = first["campaign_id"].get<std::string>();
  ASSERT_EQ(id, second["campaign_id"].get<std::string>());
  const std::string exported = export_ledger(db("a"), id);
  EXPECT_FALSE(exported.empty());
  EXPECT_EQ(exported, export_ledger(db("b"), id));

  // What replay rebuilds from the ledger is what the live campaign printed.
  auto replayed = nlohmann::json::parse(
      run(attune() + " replay --db " + db("a") + " --campaign " + id + " --json").out);
  EXPECT_TRUE(replayed["chain"]["ok"].get<bool>());
  EXPECT_DOUBLE_EQ(replayed["budget"]["tuner_gpu_hours"].get<double>(),
                   first["gpu_hours"]["tuner"].get<double>());
  EXPECT_DOUBLE_EQ(replayed["baseline"]["band_fraction"].get<double>(),
                   first["baseline"]["band_fraction"].get<double>());
}

// Every run the cluster was asked to start, from the simulated cluster's own record.
std::multiset<std::string> submitted_jobs(const fs::path& ledger) {
  std::multiset<std::string> jobs;
  for (const auto& entry : fs::recursive_directory_iterator(ledger)) {
    if (entry.path().filename() != "jobs.jsonl") continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      auto json = nlohmann::json::parse(line, nullptr, false);
      if (!json.is_discarded() && json.contains("run_id")) {
        jobs.insert(json["job_name"].get<std::string>());
      }
    }
  }
  return jobs;
}

TEST_F(Campaign, ResumesAfterAnAbruptExitAtEveryEventWithNothingLostOrDoubled) {
  nlohmann::json reference = run_json(db("reference"), "XDG_DATA_HOME=" + db("data-reference"));
  const std::string id = reference["campaign_id"].get<std::string>();
  const std::string reference_export = export_ledger(db("reference"), id);
  const int events =
      static_cast<int>(std::count(reference_export.begin(), reference_export.end(), '\n'));
  ASSERT_GT(events, 50);
  const std::string shipped_hash = [&] {
    auto replay = nlohmann::json::parse(
        run(attune() + " status --db " + db("reference") + " --campaign " + id + " --json").out);
    return replay["stop"]["shipped"]["recipe_hash"].get<std::string>();
  }();

  int resumed = 0;
  for (int n = 1; n <= events; ++n) {
    const std::string ledger = db("crash-" + std::to_string(n));
    Outcome crashed =
        run("ATTUNE_CRASH_AFTER_EVENT=" + std::to_string(n) + " XDG_DATA_HOME=" + ledger +
            "-data " + attune() + " campaign run " + example() + " --db " + ledger + " --json");
    if (crashed.exit_code == 0) continue;  // the event was the last one
    ASSERT_EQ(crashed.exit_code, 86) << "crash at event " << n;
    Outcome resume =
        run(attune() + " campaign resume --db " + ledger + " --campaign " + id + " --json");
    ASSERT_EQ(resume.exit_code, 0) << "resume after a crash at event " << n;
    ++resumed;
    auto status = nlohmann::json::parse(
        run(attune() + " status --db " + ledger + " --campaign " + id + " --json").out);
    EXPECT_EQ(status["stop"]["shipped"]["recipe_hash"].get<std::string>(), shipped_hash)
        << "crash at event " << n;
    EXPECT_EQ(run(attune() + " audit --db " + ledger + " --campaign " + id).exit_code, 0)
        << "the ledger after a crash at event " << n
        << " is inconsistent (double charge, lost event)";
    const std::multiset<std::string> jobs = submitted_jobs(ledger);
    for (const std::string& job : jobs) {
      EXPECT_EQ(jobs.count(job), 1u) << job << " was submitted twice (crash at event " << n << ")";
    }
    fs::remove_all(ledger);
    fs::remove_all(ledger + "-data");
  }
  EXPECT_GT(resumed, events / 2);
}

// The demo workload as a local campaign: each run an attune-sim-job process that paces itself at
// `step_ms` per step and writes its Megatron log as it goes.
void write_local_campaign(const fs::path& file, const std::string& name, int step_ms) {
  const std::string baseline =
      std::string(ATTUNE_SOURCE_DIR) + "/adapters/model/data/recipes/qwen3-30b-a3b-h100x16.sh";
  std::ofstream(file) << "name = \"" << name
                      << "\"\n"
                         "[cluster]\nmodel = \"qwen3-30b-a3b\"\nhardware = \"h100\"\ngpus = 16\n"
                         "launcher = \"local\"\n"
                         "[local]\njob = \""
                      << ATTUNE_BIN_DIR
                      << "/attune-sim-job --model qwen3-30b-a3b --gpu h100 --gpus 16 --seq 4096 "
                         "--gbs 256 --recipe {recipe_file} --steps {steps} --log {log} --realtime "
                         "--step-ms "
                      << step_ms
                      << "\"\nseconds_per_step = 0.05\n"
                         "[workload]\nseq_length = 4096\nglobal_batch = 256\n"
                         "[baseline]\nrecipe_file = \""
                      << baseline
                      << "\"\n"
                         "[budget]\ngpu_hours = 0.03\n"
                         "[run]\ncalibration_runs = 3\n";
}

TEST_F(Campaign, RunsOnTheLocalLauncherWithRealProcessesInRealTime) {
  const fs::path file = root_ / "local.toml";
  write_local_campaign(file, "local-demo", 20);
  Outcome outcome =
      run(attune() + " campaign run " + file.string() + " --db " + db("local") + " --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.out;
  auto summary = nlohmann::json::parse(outcome.out);
  EXPECT_EQ(summary["baseline"]["calibration_runs"].get<int>(), 3);
  EXPECT_GT(summary["baseline"]["tokens_per_s_per_gpu"].get<double>(), 0.0);
  const std::string id = summary["campaign_id"].get<std::string>();
  const std::string exported = export_ledger(db("local"), id);
  EXPECT_NE(exported.find("\"facts_source\":\"local\""), std::string::npos);
  EXPECT_EQ(run(attune() + " audit --db " + db("local") + " --campaign " + id).exit_code, 0);
}

TEST_F(Campaign, SigintStopsTheLocalJobsAndPrintsTheResumeCommand) {
  const fs::path file = root_ / "interrupt.toml";
  write_local_campaign(file, "local-interrupt", 400);  // 14 steps: more than 5 s per job
  const std::string ledger = db("interrupt");
  const fs::path err = root_ / "err.txt";
  // Start the campaign, wait for its first job to start, then interrupt it.
  const testing_support::CommandOutcome outcome = testing_support::run_shell(
      attune() + " campaign run " + file.string() + " --db " + ledger + " > " +
      (root_ / "out.txt").string() + " 2> " + err.string() + " & pid=$!; for i in $(seq 200); do " +
      "grep -q 'started on' " + err.string() + " && break; sleep 0.05; done; sleep 0.3; " +
      "kill -INT $pid; wait $pid; echo $?");
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  const std::string said = text.str();
  EXPECT_EQ(outcome.out, "130\n") << said;
  EXPECT_NE(said.find("interrupted by SIGINT"), std::string::npos) << said;
  EXPECT_NE(said.find("local jobs stopped"), std::string::npos) << said;
  const std::size_t resume = said.find("attune campaign resume --db " + ledger + " --campaign ");
  ASSERT_NE(resume, std::string::npos) << said;
  // The jobs got SIGTERM: none of them is left running.
  testing_support::run_shell("sleep 1");
  EXPECT_NE(testing_support::run_shell("pgrep -f '[a]ttune-sim-job.*" + ledger + "'").exit_code, 0)
      << "a job outlived the interrupt";
  // The printed command continues the campaign to a shipped recipe; the stopped runs are
  // infrastructure failures (cancelled), not failures of their recipes.
  const std::string id = said.substr(resume, said.find('\n', resume) - resume)
                             .substr(said.find("--campaign ", resume) - resume + 11);
  Outcome resumed =
      run(attune() + " campaign resume --db " + ledger + " --campaign " + id + " --json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  const std::string exported = export_ledger(ledger, id);
  EXPECT_NE(exported.find("\"final_state\":\"CANCELLED\""), std::string::npos);
  EXPECT_NE(exported.find("\"failure_class\":\"infra\""), std::string::npos);
  EXPECT_EQ(run(attune() + " audit --db " + ledger + " --campaign " + id).exit_code, 0);
}

}  // namespace
}  // namespace attune
