// The Slurm launcher against a real Slurm cluster on loopback (slurm_cluster.h): each job an
// attune-sim-job paced in real time, watched by squeue sweeps, its failures classified from the
// scheduler's facts and the log.
#include "adapters/launcher/slurm/slurm_launcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "adapters/metrics/log_metrics_source.h"
#include "adapters/model/presets.h"
#include "events/recipe.h"
#include "tests/slurm/slurm_cluster.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using slurm_test::cluster;

constexpr std::int64_t kCheckIntervalNs = 50'000'000;
constexpr std::int64_t kJobTimeoutNs = 60'000'000'000;
constexpr std::uint32_t kSteps = 14;
constexpr int kStepMs = 120;

// The sim job's log goes through a pipe to the job's output, as a real launcher's output does.
std::string sim_job_template() {
  return "#!/bin/bash\n"
         "#SBATCH --gres=gpu:{gpus_per_node}\n"
         "#SBATCH --ntasks-per-node=1\n"
         "set -o pipefail\n"
         "{env}\n" +
         std::string(ATTUNE_BIN_DIR) +
         "/attune-sim-job --model qwen3-30b-a3b --gpu h200 --gpus {gpus} --seq 4096 --gbs 64 "
         "--recipe {recipe_file} --steps {steps} --log /dev/stdout --realtime --step-ms " +
         std::to_string(kStepMs) + " --nodes \"$SLURMD_NODENAME\" | cat\n";
}

Recipe baseline_recipe() {
  Recipe recipe = sim::load_recipe_preset("qwen3-30b-a3b-h100x16").value();
  EXPECT_TRUE(set_flag(recipe, "expert-model-parallel-size", "4").ok());
  EXPECT_TRUE(set_flag(recipe, "global-batch-size", "64").ok());
  return recipe;
}

Recipe with_flag(const std::string& flag, const std::string& value) {
  Recipe recipe = baseline_recipe();
  EXPECT_TRUE(set_flag(recipe, flag, value).ok()) << flag;
  return recipe;
}

class SlurmLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster().ready()) << cluster().start_error();
    ASSERT_TRUE(cluster().settle()) << "jobs of an earlier test are still in the cluster";
    root_ =
        fs::path(cluster().dir()) /
        ("ledger-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(root_);
  }

  SlurmLauncherOptions options(const std::string& job_template = sim_job_template()) const {
    SlurmLauncherOptions options;
    options.job_template = job_template;
    options.gpus_per_node = 8;
    options.poll_interval_s = 0.3;
    options.start_limit_s = 60.0;
    options.expected_seconds_per_step = kStepMs / 1000.0;
    options.bin_dir = cluster().wrappers_dir();
    options.command_timeout_s = 20.0;
    return options;
  }

  std::unique_ptr<SlurmLauncher> open(const SlurmLauncherOptions& launcher_options) {
    auto launcher =
        SlurmLauncher::open(*scheduler_, root_.string(), "slurm-jobs/c1", launcher_options);
    EXPECT_TRUE(launcher.ok()) << launcher.error();
    if (!launcher.ok()) return nullptr;
    auto opened = std::move(launcher).value();
    opened->set_listener([this](const JobReport& report) { reports_.push_back(report); });
    return opened;
  }

  // Job names are unique per test: the cluster lists earlier tests' jobs for an hour.
  LaunchSpec spec(RunId run_id, const Recipe& recipe, std::vector<std::string> exclude = {}) const {
    LaunchSpec launch;
    launch.campaign_id = "c1";
    launch.run_id = run_id;
    launch.job_name =
        "attune-" +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()).substr(0, 24) +
        "-r" + std::to_string(run_id);
    launch.recipe = canonical_text(recipe);
    launch.gpus = 8;
    launch.steps = kSteps;
    launch.exclude_nodes = std::move(exclude);
    return launch;
  }

  // Runs the scheduler until `done` (checked every 50 ms) or a minute passes.
  void run_until(
      const std::function<bool()>& done, const std::function<void()>& each_check = [] {}) {
    const std::int64_t deadline = scheduler_->now_unix_ns() + kJobTimeoutNs;
    std::function<void()> check = [&] {
      each_check();
      if (done() || scheduler_->now_unix_ns() > deadline) {
        scheduler_->stop();
        return;
      }
      scheduler_->schedule_after(kCheckIntervalNs, check);
    };
    scheduler_->schedule_after(0, check);
    scheduler_->run();
    ASSERT_TRUE(done()) << "timed out";
  }

  const JobReport* report_of(RunId run_id, JobReport::Kind kind) const {
    for (const JobReport& report : reports_) {
      if (report.run_id == run_id && report.kind == kind) return &report;
    }
    return nullptr;
  }
  bool finished(RunId run_id) const {
    return report_of(run_id, JobReport::Kind::kFinished) != nullptr;
  }

  // The failure class (or the measurement) the metrics reader makes of a finished run.
  RunOutcome outcome(const SlurmLauncher& launcher, RunId run_id) const {
    const JobReport& report = *report_of(run_id, JobReport::Kind::kFinished);
    auto log = launcher.read_log(report.log_path);
    EXPECT_TRUE(log.ok()) << log.error();
    MeasureSpec measure;
    measure.seq_length = 4096;
    measure.gpus = 8;
    measure.log_went_silent = report.cancel_reason == "hang";
    return LogMetricsSource().measure(log.ok() ? log.value() : "", report, measure);
  }

  static std::optional<FailureClass> failure_of(const RunOutcome& outcome) {
    if (const auto* failed = std::get_if<RunFailed>(&outcome)) return failed->failure_class;
    return std::nullopt;
  }

  fs::path root_;
  std::unique_ptr<Scheduler> scheduler_ = make_asio_scheduler();
  std::vector<JobReport> reports_;
};

TEST(SlurmCluster, StartsWithFourIdleNodesOfEightGpus) {
  ASSERT_TRUE(cluster().ready()) << "the test Slurm cluster did not start: "
                                 << cluster().start_error();
  const auto nodes = slurm_test::shell("sinfo -h -N -o '%N %T %G'");
  EXPECT_EQ(nodes.out, "node1 idle gpu:8\nnode2 idle gpu:8\nnode3 idle gpu:8\nnode4 idle gpu:8\n");
}

TEST_F(SlurmLauncherTest, RunsABatchJobAndTakesAdmissionReleaseAndNodesFromTheScheduler) {
  auto launcher = open(options());
  ASSERT_NE(launcher, nullptr);
  EXPECT_FALSE(launcher->records().accounting) << "the test cluster has no slurmdbd";
  const std::int64_t before_ns = scheduler_->now_unix_ns();
  ASSERT_TRUE(launcher->submit(spec(1, baseline_recipe())).ok());
  std::set<std::int64_t> progress_seen;
  run_until([&] { return finished(1); },
            [&] {
              if (auto at = launcher->last_progress_unix_ns(1)) progress_seen.insert(*at);
            });

  ASSERT_EQ(reports_.size(), 3u);
  const JobReport& submitted = reports_[0];
  const JobReport& started = reports_[1];
  const JobReport& done = reports_[2];
  EXPECT_EQ(submitted.kind, JobReport::Kind::kSubmitted);
  EXPECT_FALSE(submitted.launcher_job_id.empty());
  EXPECT_EQ(started.kind, JobReport::Kind::kStarted);
  ASSERT_EQ(started.nodes.size(), 1u);
  EXPECT_EQ(started.nodes[0].rfind("node", 0), 0u) << started.nodes[0];
  EXPECT_EQ(done.final_state, "COMPLETED");
  EXPECT_EQ(done.facts_source, "squeue");
  // Slurm's clock: whole seconds, admission no earlier than the submission's second.
  EXPECT_EQ(started.at_unix_ns % 1'000'000'000, 0);
  EXPECT_GE(started.at_unix_ns, before_ns / 1'000'000'000 * 1'000'000'000);
  EXPECT_GE(done.at_unix_ns, started.at_unix_ns);
  EXPECT_GE(progress_seen.size(), 3u) << "the log was read as it grew";
  EXPECT_FALSE(fs::path(done.log_path).is_absolute());
  const RunOutcome measured = outcome(*launcher, 1);
  ASSERT_TRUE(std::holds_alternative<RunMeasured>(measured));
  EXPECT_GT(std::get<RunMeasured>(measured).tokens_per_sec_per_gpu, 0.0);

  // The job-completion log, the record once squeue forgets the job, says the same.
  auto text = std::ifstream(cluster().jobcomp_file());
  std::stringstream content;
  content << text.rdbuf();
  const std::vector<SlurmJobFacts> records = parse_jobcomp_text(content.str());
  const auto record = std::find_if(records.begin(), records.end(), [&](const SlurmJobFacts& r) {
    return r.job_id == submitted.launcher_job_id;
  });
  ASSERT_NE(record, records.end());
  EXPECT_EQ(record->name, spec(1, baseline_recipe()).job_name);
  EXPECT_EQ(record->state, "COMPLETED");
  EXPECT_EQ(record->start_unix_s * 1'000'000'000, started.at_unix_ns);
  EXPECT_EQ(record->end_unix_s * 1'000'000'000, done.at_unix_ns);
  EXPECT_EQ(record->nodes, started.nodes);
}

TEST_F(SlurmLauncherTest, RunsJobsInParallelOnDistinctNodes) {
  auto launcher = open(options());
  ASSERT_NE(launcher, nullptr);
  for (RunId run = 1; run <= 3; ++run)
    ASSERT_TRUE(launcher->submit(spec(run, baseline_recipe())).ok());
  run_until([&] { return finished(1) && finished(2) && finished(3); });
  std::set<std::string> nodes;
  std::int64_t latest_start = 0;
  std::int64_t earliest_end = INT64_MAX;
  for (RunId run = 1; run <= 3; ++run) {
    const JobReport* started = report_of(run, JobReport::Kind::kStarted);
    ASSERT_NE(started, nullptr);
    nodes.insert(started->nodes.begin(), started->nodes.end());
    latest_start = std::max(latest_start, started->at_unix_ns);
    earliest_end = std::min(earliest_end, report_of(run, JobReport::Kind::kFinished)->at_unix_ns);
    EXPECT_EQ(report_of(run, JobReport::Kind::kFinished)->final_state, "COMPLETED");
  }
  EXPECT_EQ(nodes.size(), 3u) << "each job holds a whole node's eight GPUs";
  EXPECT_LE(latest_start, earliest_end) << "the three jobs ran at the same time";
}

TEST_F(SlurmLauncherTest, ExcludesEarlierNodesWhileTheClusterHasEnough) {
  auto launcher = open(options());
  ASSERT_NE(launcher, nullptr);
  ASSERT_TRUE(launcher->submit(spec(1, baseline_recipe(), {"node1", "node2", "node3"})).ok());
  run_until([&] { return finished(1); });
  EXPECT_EQ(report_of(1, JobReport::Kind::kStarted)->nodes, std::vector<std::string>{"node4"});
  // Every node excluded would leave none: the launcher keeps enough for the job to run.
  ASSERT_TRUE(
      launcher->submit(spec(2, baseline_recipe(), {"node1", "node2", "node3", "node4"})).ok());
  run_until([&] { return finished(2); });
  EXPECT_EQ(report_of(2, JobReport::Kind::kFinished)->final_state, "COMPLETED");
}

TEST_F(SlurmLauncherTest, AnOutOfMemoryIsAbortedEarlyAndClassifiedOom) {
  // The job lives on after the failing rank, as the other ranks of a real job wait in NCCL.
  std::string lingering = sim_job_template();
  lingering.replace(lingering.rfind(" | cat\n"), 7, " | cat\nsleep 600\n");
  auto launcher = open(options(lingering));
  ASSERT_NE(launcher, nullptr);
  ASSERT_TRUE(launcher->submit(spec(1, with_flag("micro-batch-size", "8"))).ok());
  run_until([&] { return finished(1); });
  const JobReport& done = *report_of(1, JobReport::Kind::kFinished);
  EXPECT_EQ(done.final_state, "CANCELLED");
  EXPECT_EQ(done.cancel_reason, "early-abort");
  EXPECT_LT(done.at_unix_ns - report_of(1, JobReport::Kind::kStarted)->at_unix_ns, 10'000'000'000);
  EXPECT_EQ(failure_of(outcome(*launcher, 1)), FailureClass::kOom);
}

TEST_F(SlurmLauncherTest, ACrashIsFailedAndClassifiedCrash) {
  auto launcher = open(options());
  ASSERT_NE(launcher, nullptr);
  ASSERT_TRUE(launcher->submit(spec(1, with_flag("tensor-model-parallel-size", "3"))).ok());
  run_until([&] { return finished(1); });
  const JobReport& done = *report_of(1, JobReport::Kind::kFinished);
  EXPECT_TRUE(done.final_state == "FAILED" || done.cancel_reason == "early-abort")
      << done.final_state;
  EXPECT_EQ(failure_of(outcome(*launcher, 1)), FailureClass::kCrash);
}

TEST_F(SlurmLauncherTest, AHangIsDetectedByLogSilenceAndCancelled) {
  SlurmLauncherOptions silent = options();
  silent.log_silence_s = 2.0;
  auto launcher = open(silent);
  ASSERT_NE(launcher, nullptr);
  // A known stack defect: the first gradient reduction deadlocks and the log stops growing.
  ASSERT_TRUE(launcher->submit(spec(1, with_flag("moe-shared-expert-overlap", ""))).ok());
  run_until([&] { return finished(1); });
  const JobReport& done = *report_of(1, JobReport::Kind::kFinished);
  EXPECT_EQ(done.final_state, "CANCELLED");
  EXPECT_EQ(done.cancel_reason, "hang");
  EXPECT_EQ(failure_of(outcome(*launcher, 1)), FailureClass::kHang);
  const JobReport& started = *report_of(1, JobReport::Kind::kStarted);
  EXPECT_GE(done.at_unix_ns - started.at_unix_ns, 2'000'000'000);
}

TEST_F(SlurmLauncherTest, AKilledNodeIsInfraAndTheRetryRunsElsewhereAndCanFailThereToo) {
  auto launcher = open(options());
  ASSERT_NE(launcher, nullptr);
  ASSERT_TRUE(launcher->submit(spec(1, baseline_recipe())).ok());
  run_until([&] { return report_of(1, JobReport::Kind::kStarted) != nullptr; });
  const std::string first_node = report_of(1, JobReport::Kind::kStarted)->nodes.at(0);
  ASSERT_TRUE(cluster().fail_node(first_node));
  run_until([&] { return finished(1); });
  EXPECT_EQ(report_of(1, JobReport::Kind::kFinished)->final_state, "NODE_FAIL");
  EXPECT_EQ(failure_of(outcome(*launcher, 1)), FailureClass::kInfra);

  // The retry avoids the failed node; its own node fails too: a second infrastructure failure,
  // on a different node (the control plane then counts the recipe as failed).
  ASSERT_TRUE(cluster().restore_node(first_node));
  ASSERT_TRUE(launcher->submit(spec(2, baseline_recipe(), {first_node})).ok());
  run_until([&] { return report_of(2, JobReport::Kind::kStarted) != nullptr; });
  const std::string second_node = report_of(2, JobReport::Kind::kStarted)->nodes.at(0);
  EXPECT_NE(second_node, first_node);
  ASSERT_TRUE(cluster().fail_node(second_node));
  run_until([&] { return finished(2); });
  EXPECT_EQ(report_of(2, JobReport::Kind::kFinished)->final_state, "NODE_FAIL");
  EXPECT_EQ(failure_of(outcome(*launcher, 2)), FailureClass::kInfra);
  EXPECT_TRUE(cluster().restore_node(second_node));
}

TEST_F(SlurmLauncherTest, AJobThatNeverStartsWithinTheLimitIsCancelledUncharged) {
  // The user's template holds the job in the queue for ten minutes.
  std::string held = sim_job_template();
  held.insert(held.find('\n') + 1, "#SBATCH --begin=now+600\n");
  SlurmLauncherOptions limited = options(held);
  limited.start_limit_s = 2.0;
  auto launcher = open(limited);
  ASSERT_NE(launcher, nullptr);
  const std::int64_t submitted_ns = scheduler_->now_unix_ns();
  ASSERT_TRUE(launcher->submit(spec(1, baseline_recipe())).ok());
  run_until([&] { return finished(1); });
  EXPECT_EQ(report_of(1, JobReport::Kind::kStarted), nullptr) << "it never started";
  const JobReport& done = *report_of(1, JobReport::Kind::kFinished);
  EXPECT_EQ(done.final_state, "CANCELLED");
  EXPECT_EQ(done.cancel_reason, "not-started");
  EXPECT_GE(scheduler_->now_unix_ns() - submitted_ns, 2'000'000'000);
  EXPECT_EQ(failure_of(outcome(*launcher, 1)), FailureClass::kInfra);
}

TEST_F(SlurmLauncherTest, AfterACrashReattachFindsTheJobByNameWhenItsRecordIsLost) {
  {
    auto first = open(options());
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->submit(spec(1, baseline_recipe())).ok());
  }  // the control plane is gone; the job runs on
  // The crash came between sbatch and the journal: no record of the job is left.
  fs::remove(root_ / "slurm-jobs/c1/jobs.jsonl");
  reports_.clear();
  auto second = open(options());
  ASSERT_NE(second, nullptr);
  cluster().reset_calls();
  auto found = second->reattach(spec(1, baseline_recipe()));
  ASSERT_TRUE(found.ok()) << found.error();
  EXPECT_TRUE(found.value());
  EXPECT_FALSE(second->reattach(spec(2, baseline_recipe())).value()) << "never submitted";
  EXPECT_EQ(cluster().calls("squeue"), 1u) << "one listing answers both";
  run_until([&] { return finished(1); });
  EXPECT_EQ(report_of(1, JobReport::Kind::kFinished)->final_state, "COMPLETED");
  EXPECT_EQ(cluster().calls("sbatch"), 0u) << "nothing was submitted again";
}

TEST_F(SlurmLauncherTest, HundredsOfRunsCostOneSqueuePerIntervalNotOnePerJob) {
  // Short CPU-only jobs, so that dozens are in flight at once (16 run, the rest queue).
  SlurmLauncherOptions many = options("#!/bin/bash\nsleep 1\necho done {run_id}\n");
  many.poll_interval_s = 0.5;
  auto launcher = open(many);
  ASSERT_NE(launcher, nullptr);
  constexpr RunId kRuns = 120;
  for (RunId run = 1; run <= kRuns; ++run) {
    LaunchSpec launch = spec(run, baseline_recipe());
    launch.gpus = 1;
    ASSERT_TRUE(launcher->submit(launch).ok());
  }
  cluster().reset_calls();
  const auto start = std::chrono::steady_clock::now();
  std::size_t in_flight_max = 0;
  run_until(
      [&] {
        for (RunId run = 1; run <= kRuns; ++run) {
          if (!finished(run)) return false;
        }
        return true;
      },
      [&] {
        std::size_t in_flight = 0;
        for (RunId run = 1; run <= kRuns; ++run) in_flight += finished(run) ? 0 : 1;
        in_flight_max = std::max(in_flight_max, in_flight);
      });
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::uint64_t squeues = cluster().calls("squeue");
  EXPECT_GE(in_flight_max, 24u);
  EXPECT_LE(squeues, static_cast<std::uint64_t>(elapsed_s / many.poll_interval_s) + 2)
      << "one squeue per interval, over " << elapsed_s << " s";
  EXPECT_LT(squeues, kRuns / 4);
  EXPECT_EQ(cluster().calls("scontrol"), 0u);
  EXPECT_EQ(cluster().calls("sacct"), 0u);
  for (RunId run = 1; run <= kRuns; ++run) {
    EXPECT_EQ(report_of(run, JobReport::Kind::kFinished)->final_state, "COMPLETED") << run;
  }
}

}  // namespace
}  // namespace attune
