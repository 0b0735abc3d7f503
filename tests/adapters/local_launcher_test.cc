// The local launcher's contract, with real processes on the real-time Asio scheduler.
#include "adapters/launcher/local_launcher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "adapters/launcher/job_journal.h"
#include "adapters/model/presets.h"
#include "events/recipe.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kCheckIntervalNs = 20'000'000;
constexpr std::int64_t kTestTimeoutNs = 10'000'000'000;

// Whether any process of the group is still running (zombies excepted: orphans may go unreaped).
bool group_has_live_process(int group) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat) || stat.rfind(')') == std::string::npos) continue;
    std::istringstream fields(stat.substr(stat.rfind(')') + 1));
    char state = 0;
    int parent = 0, process_group = 0;
    fields >> state >> parent >> process_group;
    if (process_group == group && state != 'Z') return true;
  }
  return false;
}

class LocalLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("attune-local-launcher-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<LocalLauncher> open(const std::string& job_template) {
    auto launcher = LocalLauncher::open(*scheduler_, root_.string(), "local",
                                        LocalLauncherOptions{job_template, 2.0});
    EXPECT_TRUE(launcher.ok()) << launcher.error();
    auto opened = std::move(launcher).value();
    opened->set_listener([this](const JobReport& report) { reports_.push_back(report); });
    return opened;
  }

  static LaunchSpec spec(const std::string& job_name, const std::string& recipe) {
    LaunchSpec launch;
    launch.campaign_id = "c1";
    launch.run_id = 7;
    launch.job_name = job_name;
    launch.recipe = recipe;
    launch.gpus = 16;
    launch.steps = 14;
    return launch;
  }

  static std::string plain_recipe() { return canonical_text(parse_recipe("python x.py").value()); }

  // Runs the scheduler until `done`, sampling `each_check` as it goes; fails after a timeout.
  void run_until(
      const std::function<bool()>& done, const std::function<void()>& each_check = [] {}) {
    const std::int64_t deadline = scheduler_->now_unix_ns() + kTestTimeoutNs;
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

  bool has(JobReport::Kind kind) const {
    for (const JobReport& report : reports_) {
      if (report.kind == kind) return true;
    }
    return false;
  }
  const JobReport& finished() const { return reports_.back(); }

  fs::path root_;
  std::unique_ptr<Scheduler> scheduler_ = make_asio_scheduler();
  std::vector<JobReport> reports_;
};

TEST_F(LocalLauncherTest, SimJobInRealTimeCompletesWithAGrowingLog) {
  const std::string job_template = std::string(ATTUNE_BIN_DIR) +
                                   "/attune-sim-job --model qwen3-30b-a3b --gpu h100 --gpus 16 "
                                   "--seq 4096 --gbs 256 --recipe {recipe_file} --steps {steps} "
                                   "--log {log} --realtime --step-ms 50";
  auto launcher = open(job_template);
  auto recipe = sim::load_recipe_preset("qwen3-30b-a3b-h100x16");
  ASSERT_TRUE(recipe.ok()) << recipe.error();
  ASSERT_TRUE(launcher->submit(spec("c1-run7", canonical_text(recipe.value()))).ok());
  std::set<std::int64_t> progress_seen;
  std::set<std::size_t> log_sizes_seen;  // what the early-abort pruner reads while the job runs
  run_until([&] { return has(JobReport::Kind::kFinished); },
            [&] {
              if (auto at = launcher->last_progress_unix_ns(7)) progress_seen.insert(*at);
              if (auto so_far = launcher->read_log_so_far(7); so_far.ok()) {
                log_sizes_seen.insert(so_far->size());
              }
            });

  ASSERT_EQ(reports_.size(), 3u);
  EXPECT_EQ(reports_[0].kind, JobReport::Kind::kSubmitted);
  EXPECT_EQ(reports_[1].kind, JobReport::Kind::kStarted);
  EXPECT_EQ(reports_[1].nodes, std::vector<std::string>{"localhost"});
  EXPECT_EQ(finished().kind, JobReport::Kind::kFinished);
  EXPECT_EQ(finished().final_state, "COMPLETED");
  EXPECT_EQ(finished().facts_source, "local");
  EXPECT_GE(finished().at_unix_ns, reports_[1].at_unix_ns);
  EXPECT_FALSE(fs::path(finished().log_path).is_absolute());
  EXPECT_GE(progress_seen.size(), 3u) << "the log grew while the job ran";
  EXPECT_GE(log_sizes_seen.size(), 3u) << "the log so far grew while the job ran";
  EXPECT_FALSE(launcher->read_log_so_far(99).ok()) << "an unknown run has no log";
  EXPECT_FALSE(launcher->last_progress_unix_ns(7).has_value());
  auto log = launcher->read_log(finished().log_path);
  ASSERT_TRUE(log.ok()) << log.error();
  EXPECT_NE(log->find("iteration       14/      14"), std::string::npos) << *log;
  auto so_far = launcher->read_log_so_far(7);
  ASSERT_TRUE(so_far.ok()) << so_far.error();
  EXPECT_EQ(*so_far, *log) << "once the job ended, the log so far is the whole log";
}

TEST_F(LocalLauncherTest, NonZeroExitIsFailedWithItsOutputInTheLog) {
  auto launcher = open("echo about to fail; exit 3");
  ASSERT_TRUE(launcher->submit(spec("c1-run7", plain_recipe())).ok());
  run_until([&] { return has(JobReport::Kind::kFinished); });
  EXPECT_EQ(finished().final_state, "FAILED");
  EXPECT_NE(launcher->read_log(finished().log_path)->find("about to fail"), std::string::npos);
}

TEST_F(LocalLauncherTest, CancelKillsTheProcessGroupPromptly) {
  auto launcher = open("sleep 30; echo survived");
  ASSERT_TRUE(launcher->submit(spec("c1-run7", plain_recipe())).ok());
  run_until([&] { return has(JobReport::Kind::kStarted); });
  const int pid = std::stoi(reports_[0].launcher_job_id.substr(std::string("local-").size()));
  const auto cancelled = std::chrono::steady_clock::now();
  launcher->cancel(7, "hang");
  run_until([&] { return has(JobReport::Kind::kFinished); });
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled, std::chrono::seconds(1));
  EXPECT_EQ(finished().final_state, "CANCELLED");
  EXPECT_EQ(finished().cancel_reason, "hang");
  EXPECT_FALSE(group_has_live_process(pid));
}

TEST_F(LocalLauncherTest, RecipeEnvironmentAndPlaceholdersReachTheChild) {
  auto launcher = open(
      "env > {log}; echo steps={steps} run={run_id} job={job_name} nodes={nodes} >> {log}; "
      "cat {recipe_file} >> {log}");
  const std::string recipe = canonical_text(
      parse_recipe("ATTUNE_TEST_GREETING='hello there' python x.py --lr 1e-4").value());
  ASSERT_TRUE(launcher->submit(spec("c1-run7", recipe)).ok());
  run_until([&] { return has(JobReport::Kind::kFinished); });
  EXPECT_EQ(finished().final_state, "COMPLETED");
  const std::string log = launcher->read_log(finished().log_path).value();
  EXPECT_NE(log.find("ATTUNE_TEST_GREETING=hello there\n"), std::string::npos) << log;
  EXPECT_NE(log.find("steps=14 run=7 job=c1-run7 nodes=localhost"), std::string::npos) << log;
  EXPECT_NE(log.find(recipe), std::string::npos) << log;
}

TEST_F(LocalLauncherTest, AnUnspawnableJobFailsWithTheReasonInItsLog) {
  auto launcher = open("true");
  ASSERT_TRUE(launcher->submit(spec("c1-run7", "--tensor-model-parallel-size two")).ok());
  run_until([&] { return has(JobReport::Kind::kFinished); });
  ASSERT_EQ(reports_.size(), 3u);
  EXPECT_EQ(finished().final_state, "FAILED");
  EXPECT_NE(launcher->read_log(finished().log_path)->find("expects an integer"), std::string::npos);
}

TEST_F(LocalLauncherTest, ReattachAfterReopeningFollowsTheRunningJob) {
  auto first = open("sleep 1; echo done");
  ASSERT_TRUE(first->submit(spec("c1-run7", plain_recipe())).ok());
  run_until([&] { return has(JobReport::Kind::kStarted); });
  first.reset();  // a crash: the job keeps running
  reports_.clear();

  auto second = open("sleep 1; echo done");
  EXPECT_FALSE(second->reattach(spec("c1-run8", plain_recipe())).value());
  EXPECT_FALSE(second->submit(spec("c1-run7", plain_recipe())).ok()) << "never submitted twice";
  ASSERT_TRUE(second->reattach(spec("c1-run7", plain_recipe())).value());
  run_until([&] { return has(JobReport::Kind::kFinished); });
  EXPECT_EQ(finished().final_state, "COMPLETED");
  EXPECT_NE(second->read_log(finished().log_path)->find("done"), std::string::npos);
}

TEST_F(LocalLauncherTest, ReattachToAJobThatEndedUnwatchedIsUnknownAtItsLastOutput) {
  auto first = open("echo last words");
  ASSERT_TRUE(first->submit(spec("c1-run7", plain_recipe())).ok());
  run_until([&] { return has(JobReport::Kind::kStarted); });
  const int pid = std::stoi(reports_[0].launcher_job_id.substr(std::string("local-").size()));
  const std::int64_t started_unix_ns = reports_[1].at_unix_ns;
  first.reset();
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);  // someone else collected its exit status
  reports_.clear();

  auto second = open("echo last words");
  ASSERT_TRUE(second->reattach(spec("c1-run7", plain_recipe())).value());
  run_until([&] { return has(JobReport::Kind::kFinished); });
  EXPECT_EQ(finished().final_state, "UNKNOWN");
  struct stat log_facts {};
  ASSERT_EQ(::stat((root_ / finished().log_path).c_str(), &log_facts), 0);
  const std::int64_t written_unix_ns =
      std::int64_t{log_facts.st_mtim.tv_sec} * 1'000'000'000 + log_facts.st_mtim.tv_nsec;
  EXPECT_EQ(finished().at_unix_ns, std::max(written_unix_ns, started_unix_ns));
}

TEST_F(LocalLauncherTest, ExpectedCostIsPaceTimesStepsTimesGpus) {
  auto launcher = open("true");
  EXPECT_DOUBLE_EQ(launcher->expected_gpu_hours(spec("c1-run7", plain_recipe())),
                   2.0 * 14 * 16 / 3600.0);
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// A crash after the spawn and before its record: the journal holds only the intent. Resume finds
// the process by its name and follows it instead of starting the run a second time; where the
// spawn never happened, the run may start.
TEST_F(LocalLauncherTest, AJobWhoseSpawnWasNotRecordedIsAdoptedNotStartedTwice) {
  auto first = open("sleep 1; echo done");
  ASSERT_TRUE(first->submit(spec("c1-run7", plain_recipe())).ok());
  run_until([&] { return has(JobReport::Kind::kStarted); });
  const int pid = std::stoi(reports_[0].launcher_job_id.substr(std::string("local-").size()));
  first.reset();
  reports_.clear();
  const fs::path journal = root_ / "local" / "jobs.jsonl";
  std::ifstream in(journal);
  std::string intent;
  ASSERT_TRUE(std::getline(in, intent));
  ASSERT_NE(intent.find("local-pending"), std::string::npos) << intent;
  in.close();
  std::ofstream(journal, std::ios::trunc) << intent << "\n";  // the spawn's record was lost

  auto second = open("sleep 1; echo done");
  ASSERT_TRUE(second->reattach(spec("c1-run7", plain_recipe())).value()) << "adopted by name";
  EXPECT_FALSE(second->submit(spec("c1-run7", plain_recipe())).ok()) << "never submitted twice";
  run_until([&] { return has(JobReport::Kind::kFinished); });
  EXPECT_NE(second->read_log(finished().log_path)->find("done"), std::string::npos);
  EXPECT_FALSE(group_has_live_process(pid));
}

TEST_F(LocalLauncherTest, AnIntentWhoseSpawnNeverHappenedLetsTheRunStart) {
  fs::create_directories(root_ / "local");
  std::ofstream(root_ / "local" / "jobs.jsonl")
      << R"({"job_name":"c1-run7","job_id":"local-pending","run_id":7,"pid":0,)"
      << R"("started_at_unix_ns":1,"log_path":"local/logs/c1-run7.log"})"
      << "\n";
  fs::create_directories(root_ / "local" / "logs");
  std::ofstream(root_ / "local" / "logs" / "c1-run7.log");
  auto launcher = open("echo fresh");
  EXPECT_FALSE(launcher->reattach(spec("c1-run7", plain_recipe())).value());
  ASSERT_TRUE(launcher->submit(spec("c1-run7", plain_recipe())).ok());
  run_until([&] { return has(JobReport::Kind::kFinished); });
  EXPECT_EQ(finished().final_state, "COMPLETED");
}

// Two ledgers on one machine may each run a job called c1-run7: an intent in one is never taken
// for the other's running process.
TEST_F(LocalLauncherTest, AnotherLedgersJobOfTheSameNameIsNotAdopted) {
  const fs::path other_root = root_.string() + "-other";
  fs::remove_all(other_root);
  fs::create_directories(other_root);
  auto other = LocalLauncher::open(*scheduler_, other_root.string(), "local",
                                   LocalLauncherOptions{"sleep 5", 2.0});
  ASSERT_TRUE(other.ok()) << other.error();
  ASSERT_TRUE(other.value()->submit(spec("c1-run7", plain_recipe())).ok());

  fs::create_directories(root_ / "local" / "logs");
  std::ofstream(root_ / "local" / "jobs.jsonl")
      << R"({"job_name":"c1-run7","job_id":"local-pending","run_id":7,"pid":0,)"
      << R"("started_at_unix_ns":1,"log_path":"local/logs/c1-run7.log"})"
      << "\n";
  std::ofstream(root_ / "local" / "logs" / "c1-run7.log");
  auto launcher = open("echo fresh");
  EXPECT_FALSE(launcher->reattach(spec("c1-run7", plain_recipe())).value())
      << "the other ledger's process is not ours";
  other.value()->cancel(7, "test over");
  other.value().reset();
  fs::remove_all(other_root);
}

// A crash mid-line leaves a torn last line; the next record is appended after cutting it, never
// joined onto it (which would leave a malformed line in the middle).
TEST(JobJournal, ARecordAfterATornLineIsWholeAndReadable) {
  const fs::path path =
      fs::temp_directory_path() / ("attune-journal-torn-" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(path) << R"({"job_name":"a","pid":1})"
                      << "\n"
                      << R"({"job_name":"b","pi)";
  ASSERT_TRUE(append_journal_submission(path.string(), {{"job_name", "c"}, {"pid", 3}}).ok());
  auto read = read_journal(path.string());
  ASSERT_TRUE(read.ok()) << read.error();
  ASSERT_EQ(read->size(), 2U);
  EXPECT_EQ(read->at(1).submission.at("job_name"), "c");
  fs::remove(path);
}

TEST(JobJournal, AFieldOfTheWrongTypeIsAnErrorNamingItsLine) {
  const fs::path path =
      fs::temp_directory_path() / ("attune-journal-" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(path) << R"({"job_name":"a","pid":1})"
                      << "\n"
                      << R"({"job_name":"b","pid":"twelve"})"
                      << "\n";
  auto read = read_journal(path.string());
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().find(path.string() + ":2:"), std::string::npos) << read.error();
  fs::remove(path);
}

}  // namespace
}  // namespace attune
