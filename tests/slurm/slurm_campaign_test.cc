// `attune campaign run` and `attune campaign resume` on a real Slurm cluster (slurm_cluster.h),
// as a user runs them: a campaign file with a [slurm] section and an sbatch launch template whose
// jobs are attune-sim-job processes paced in real time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "adapters/launcher/slurm/slurm_facts.h"
#include "adapters/model/presets.h"
#include "events/recipe.h"
#include "tests/slurm/slurm_cluster.h"
#include "tests/tools/private_data_home.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using slurm_test::cluster;
using slurm_test::shell;

constexpr int kWaitTriesMax = 600;  // × 100 ms

std::string attune() { return std::string(ATTUNE_BIN_DIR) + "/attune"; }

class SlurmCampaignTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster().ready()) << cluster().start_error();
    ASSERT_TRUE(cluster().settle()) << "jobs of an earlier test are still in the cluster";
    name_ =
        "slurm-" +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()).substr(0, 20);
    root_ = fs::path(cluster().dir()) / ("campaign-" + name_);
    fs::create_directories(root_);
    std::ofstream(root_ / "job.sbatch")
        << "#!/bin/bash\n"
           "# The sim job stands in for srun ... python pretrain_gpt.py {recipe_args}.\n"
           "#SBATCH --gres=gpu:{gpus_per_node}\n"
           "#SBATCH --ntasks-per-node=1\n"
           "set -o pipefail\n"
           "{env}\n"
        << ATTUNE_BIN_DIR
        << "/attune-sim-job --model qwen3-30b-a3b --gpu h200 --gpus {gpus} --seq 4096 --gbs 64 "
           "--recipe {recipe_file} --steps {steps} --log /dev/stdout --realtime --step-ms 100 "
           "--nodes \"$SLURMD_NODENAME\" | cat\n";
    Recipe baseline = sim::load_recipe_preset("qwen3-30b-a3b-h100x16").value();
    ASSERT_TRUE(set_flag(baseline, "expert-model-parallel-size", "4").ok());
    ASSERT_TRUE(set_flag(baseline, "global-batch-size", "64").ok());
    std::ofstream(root_ / "baseline.sh") << canonical_text(baseline);
    std::ofstream(root_ / "campaign.toml")
        << "name = \"" << name_
        << "\"\n"
           "[cluster]\nmodel = \"qwen3-30b-a3b\"\nhardware = \"h200\"\ngpus = 8\n"
           "launcher = \"slurm\"\n"
           "[slurm]\ntemplate = \"job.sbatch\"\ngpus_per_node = 8\npoll_seconds = 0.3\n"
           "start_limit_seconds = 120\nlog_silence_seconds = 5\nseconds_per_step = 0.1\n"
           "bin_dir = \""
        << cluster().wrappers_dir()
        << "\"\n"
           "[workload]\nseq_length = 4096\nglobal_batch = 64\n"
           "[baseline]\nrecipe_file = \"baseline.sh\"\n"
           "[budget]\ngpu_hours = 0.045\n"
           "[run]\ncalibration_runs = 3\nconcurrency = 2\n"
           "[tuner]\nname = \"random\"\n";
  }

  std::string db() const { return (root_ / "ledger").string(); }
  std::string campaign_file() const { return (root_ / "campaign.toml").string(); }

  std::vector<nlohmann::json> exported(const std::string& campaign_id) const {
    std::vector<nlohmann::json> events;
    std::istringstream lines(
        shell(attune() + " ledger export --db " + db() + " --campaign " + campaign_id).out);
    for (std::string line; std::getline(lines, line);) {
      auto json = nlohmann::json::parse(line, nullptr, false);
      if (!json.is_discarded()) events.push_back(std::move(json));
    }
    return events;
  }

  // Every job of this campaign that the cluster knows, by name (jobs stay listed for an hour).
  std::multiset<std::string> cluster_job_names() const {
    std::multiset<std::string> names;
    auto listed = parse_squeue_json(shell("squeue --json").out);
    if (!listed.ok()) return names;
    for (const SlurmJobFacts& job : listed.value()) {
      if (job.name.rfind("attune-" + name_ + "-", 0) == 0) names.insert(job.name);
    }
    return names;
  }

  // `attune campaign run` in the background; its output goes to run.out.
  pid_t start_campaign() const {
    const pid_t child = ::fork();
    if (child == 0) {
      const std::string command = "exec " + attune() + " campaign run " + campaign_file() +
                                  " --db " + db() + " --json >" + (root_ / "run.out").string() +
                                  " 2>&1";
      ::execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
      ::_exit(127);
    }
    return child;
  }

  // The campaign's jobs that Slurm runs now, by run id, with their node.
  std::map<RunId, std::string> running_jobs() const {
    std::map<RunId, std::string> running;
    std::istringstream lines(shell("squeue -h -t R -o '%j %N'").out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string job, node;
      if (!(words >> job >> node) || job.rfind("attune-" + name_ + "-", 0) != 0) continue;
      running[std::stoull(job.substr(job.rfind("-r") + 2))] = node;
    }
    return running;
  }

  std::string recipe_of(RunId run) const {
    const std::string id = campaign_id();
    std::ifstream in(fs::path(db()) / "slurm-jobs" / id / "recipes" /
                     ("attune-" + id + "-r" + std::to_string(run) + ".recipe"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string campaign_id() const {
    std::string id;
    for (const auto& entry : fs::directory_iterator(fs::path(db()) / "slurm-jobs")) {
      id = entry.path().filename().string();
    }
    return id;
  }

  std::string name_;
  fs::path root_;
};

TEST_F(SlurmCampaignTest, RunsAWholeCampaignFromCalibrationToAShippedRecipe) {
  const auto outcome =
      shell(attune() + " campaign run " + campaign_file() + " --db " + db() + " --json");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.out;
  const auto summary = nlohmann::json::parse(outcome.out);
  ASSERT_TRUE(summary.contains("shipped")) << outcome.out;
  EXPECT_EQ(summary["baseline"]["calibration_runs"].get<int>(), 3);
  EXPECT_GT(summary["baseline"]["tokens_per_s_per_gpu"].get<double>(), 0.0);
  EXPECT_GT(summary["gpu_hours"]["tuner"].get<double>(), 0.0);
  const std::string id = summary["campaign_id"].get<std::string>();

  std::map<RunId, std::vector<std::string>> nodes;
  std::map<RunId, std::string> purposes;
  std::set<RunId> search_runs;
  std::size_t finished = 0;
  for (const nlohmann::json& event : exported(id)) {
    const nlohmann::json& body = event["body"];
    if (event["type"] == "LaunchAdmitted") {
      purposes[body["run_id"].get<RunId>()] = body["purpose"].get<std::string>();
    } else if (event["type"] == "JobStarted") {
      nodes[body["run_id"].get<RunId>()] = body["nodes"].get<std::vector<std::string>>();
    } else if (event["type"] == "JobFinished") {
      ++finished;
      EXPECT_EQ(body["facts_source"], "squeue") << body.dump();
    }
  }
  // The three calibration runs had distinct node allocations.
  std::set<std::string> calibration_nodes;
  std::size_t calibration_runs = 0;
  for (const auto& [run, purpose] : purposes) {
    if (purpose != "calibration" || !nodes.contains(run)) continue;
    ++calibration_runs;
    calibration_nodes.insert(nodes[run].begin(), nodes[run].end());
  }
  EXPECT_EQ(calibration_runs, 3u);
  EXPECT_EQ(calibration_nodes.size(), 3u);
  EXPECT_GT(purposes.size(), 4u) << "it searched and checked beyond the calibration";
  EXPECT_EQ(finished, purposes.size());
  EXPECT_EQ(shell(attune() + " audit --db " + db() + " --campaign " + id).exit_code, 0);
  for (const auto& [job, count] : [&] {
         std::map<std::string, int> counts;
         for (const std::string& name : cluster_job_names()) ++counts[name];
         return counts;
       }()) {
    EXPECT_EQ(count, 1) << job << " was submitted twice";
  }
}

TEST_F(SlurmCampaignTest, ResumeAfterTheControlPlaneIsKilledReattachesAndSubmitsNothingTwice) {
  cluster().reset_calls();
  const pid_t child = start_campaign();
  ASSERT_GT(child, 0);
  // Kill it while jobs run, once the search has begun (a fourth job was submitted).
  bool running = false;
  for (int i = 0; i < kWaitTriesMax && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (cluster().calls("sbatch") < 4) continue;
    const auto listed = shell("squeue -h -t R -o %j");
    running = listed.out.find("attune-" + name_ + "-") != std::string::npos;
  }
  ASSERT_TRUE(running) << "no job of the campaign ran";
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::uint64_t submitted_before = cluster().calls("sbatch");
  const auto queued = shell("squeue -h -t PD,R -o %j");
  ASSERT_NE(queued.out.find("attune-" + name_ + "-"), std::string::npos)
      << "jobs run on while the control plane is down";

  const std::string id = campaign_id();
  ASSERT_FALSE(id.empty());
  const auto resumed =
      shell(attune() + " campaign resume --db " + db() + " --campaign " + id + " --json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  const auto summary = nlohmann::json::parse(resumed.out);
  EXPECT_TRUE(summary.contains("shipped"));
  EXPECT_EQ(shell(attune() + " audit --db " + db() + " --campaign " + id).exit_code, 0);

  // Every job the cluster ran for the campaign was submitted once; the resume submitted only
  // runs admitted after it started.
  const std::multiset<std::string> names = cluster_job_names();
  for (const std::string& name : names) EXPECT_EQ(names.count(name), 1u) << name;
  EXPECT_EQ(cluster().calls("sbatch"), names.size());
  EXPECT_GT(cluster().calls("sbatch"), submitted_before) << "the campaign went on after resume";
  std::size_t admitted = 0;
  for (const nlohmann::json& event : exported(id)) admitted += event["type"] == "LaunchAdmitted";
  EXPECT_EQ(admitted, names.size());
}

TEST_F(SlurmCampaignTest, AKilledNodeIsInfraRetriedElsewhereAndASecondInfraFailureEndsTheRecipe) {
  const pid_t child = start_campaign();
  ASSERT_GT(child, 0);
  // The first search run that is well under way (calibration is runs 1 to 3) loses its node.
  RunId first = 0;
  std::string first_node;
  std::map<RunId, int> seen_running;
  for (int i = 0; i < kWaitTriesMax && first == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& [run, node] : running_jobs()) {
      if (run >= 4 && ++seen_running[run] >= 3) {
        first = run;
        first_node = node;
        break;
      }
    }
  }
  ASSERT_NE(first, 0u) << "no search run ran";
  ASSERT_TRUE(cluster().fail_node(first_node));
  const std::string recipe = recipe_of(first);
  ASSERT_FALSE(recipe.empty());
  // Its retry, the same recipe on another node, loses its node too.
  RunId retry = 0;
  std::string retry_node;
  for (int i = 0; i < kWaitTriesMax && retry == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& [run, node] : running_jobs()) {
      if (run > first && recipe_of(run) == recipe) {
        retry = run;
        retry_node = node;
        break;
      }
    }
  }
  ASSERT_NE(retry, 0u) << "run " << first << " was not retried";
  EXPECT_NE(retry_node, first_node);
  ASSERT_TRUE(cluster().fail_node(retry_node));
  EXPECT_TRUE(cluster().restore_node(first_node));
  EXPECT_TRUE(cluster().restore_node(retry_node));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  std::ifstream out(root_ / "run.out");
  std::stringstream text;
  text << out.rdbuf();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text.str();

  std::map<std::uint64_t, nlohmann::json> proposals;
  std::map<RunId, nlohmann::json> admitted, failed, started, verdicts;
  for (const nlohmann::json& event : exported(campaign_id())) {
    const nlohmann::json& body = event["body"];
    if (event["type"] == "CandidateProposed") proposals[body["proposal_id"]] = body;
    if (event["type"] == "LaunchAdmitted") admitted[body["run_id"]] = body;
    if (event["type"] == "RunFailed") failed[body["run_id"]] = body;
    if (event["type"] == "JobStarted") started[body["run_id"]] = body;
    if (event["type"] == "VerdictRecorded") verdicts[body["run_id"]] = body;
  }
  ASSERT_TRUE(failed.contains(first) && failed.contains(retry));
  EXPECT_EQ(failed[first]["failure_class"], "infra");
  EXPECT_EQ(failed[retry]["failure_class"], "infra");
  EXPECT_EQ(admitted[retry]["purpose"], "retry");
  const nlohmann::json retry_proposal = proposals[admitted[retry]["proposal_id"]];
  ASSERT_TRUE(retry_proposal.is_object());
  EXPECT_EQ(retry_proposal["retry_of_run_id"], first);
  EXPECT_EQ(started[first]["nodes"], std::vector<std::string>{first_node});
  EXPECT_EQ(started[retry]["nodes"], std::vector<std::string>{retry_node});
  EXPECT_EQ(verdicts[retry]["verdict"], "failed") << "two infrastructure failures fail the recipe";
  // Not a third time: no run retries the retry, and no other run ran that recipe.
  for (const auto& [run, body] : admitted) {
    EXPECT_NE(proposals[body["proposal_id"]]["retry_of_run_id"], retry);
    if (run != first && run != retry) {
      EXPECT_NE(proposals[body["proposal_id"]]["recipe_hash"], retry_proposal["recipe_hash"])
          << "run " << run;
    }
  }
}

}  // namespace
}  // namespace attune
