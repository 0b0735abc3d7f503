// The pure parts of the Slurm launcher: what Slurm's commands print, the batch script made from
// the user's template, the [slurm] section of a campaign file, and how Slurm's final states
// become failure classes.
#include "adapters/launcher/slurm/slurm_facts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "adapters/launcher/slurm/sbatch_script.h"
#include "adapters/launcher/slurm/slurm_options.h"
#include "adapters/metrics/log_metrics_source.h"
#include "core/campaign_file.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

// Trimmed from Slurm 22.05.8's `squeue --json`: a running job, a finished one and a job
// cancelled while it was pending (Slurm gives it a start time, but no nodes).
constexpr const char* kSqueueJson = R"({
  "meta": {"plugin": {"type": "openapi/v0.0.38"}, "Slurm": {"release": "22.05.8"}},
  "errors": [],
  "jobs": [
    {"job_id": 11, "name": "attune-c-r1", "job_state": "RUNNING", "state_reason": "None",
     "submit_time": 1795952238, "start_time": 1795952239, "end_time": 1827488239,
     "nodes": "node[1-2]", "job_resources": {"nodes": "node[1-2]", "allocated_nodes": [
       {"nodename": "node1"}, {"nodename": "node2"}]}},
    {"job_id": 12, "name": "attune-c-r2", "job_state": "NODE_FAIL", "state_reason": "NodeDown",
     "submit_time": 1795952240, "start_time": 1795952241, "end_time": 1795952250,
     "nodes": "node3", "job_resources": {"nodes": "node3"}},
    {"job_id": 13, "name": "attune-c-r3", "job_state": "CANCELLED", "state_reason": "BeginTime",
     "submit_time": 1795952352, "start_time": 1795952353, "end_time": 1795952353, "nodes": ""}
  ]
})";

TEST(SlurmFacts, ReadsEveryJobOfASqueueSweep) {
  auto jobs = parse_squeue_json(kSqueueJson);
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  ASSERT_EQ(jobs->size(), 3u);
  const SlurmJobFacts& running = (*jobs)[0];
  EXPECT_EQ(running.job_id, "11");
  EXPECT_EQ(running.name, "attune-c-r1");
  EXPECT_EQ(running.state, "RUNNING");
  EXPECT_EQ(running.start_unix_s, 1795952239);
  EXPECT_EQ(running.nodes, (std::vector<std::string>{"node1", "node2"}));
  EXPECT_TRUE(is_running_state(running.state));
  EXPECT_FALSE(is_final_state(running.state));
  const SlurmJobFacts& failed = (*jobs)[1];
  EXPECT_EQ(failed.nodes, std::vector<std::string>{"node3"});
  EXPECT_TRUE(is_final_state(failed.state));
  EXPECT_EQ(failed.end_unix_s, 1795952250);
  const SlurmJobFacts& never = (*jobs)[2];
  EXPECT_TRUE(is_final_state(never.state));
  EXPECT_FALSE(never.ran()) << "a start time without nodes is not an admission";
  EXPECT_FALSE(parse_squeue_json("squeue: error: Invalid user").ok());
  EXPECT_FALSE(parse_squeue_json(R"({"errors": []})").ok());
}

TEST(SlurmFacts, ReadsLaterSqueueShapes) {
  auto jobs = parse_squeue_json(
      R"({"jobs": [{"job_id": 5, "name": "x", "job_state": ["COMPLETED"],
          "start_time": {"set": true, "number": 100}, "end_time": {"set": true, "number": 160},
          "nodes": "gpu-a[07-08]"}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  EXPECT_EQ((*jobs)[0].state, "COMPLETED");
  EXPECT_EQ((*jobs)[0].end_unix_s - (*jobs)[0].start_unix_s, 60);
  EXPECT_EQ((*jobs)[0].nodes, (std::vector<std::string>{"gpu-a07", "gpu-a08"}));
}

TEST(SlurmFacts, ReadsTheJobCompletionLogAndSacct) {
  const std::vector<SlurmJobFacts> jobcomp = parse_jobcomp_text(
      "JobId=2 UserId=root(0) GroupId=root(0) Name=attune-c-r2 JobState=NODE_FAIL "
      "Partition=debug TimeLimit=UNLIMITED StartTime=2026-11-29T11:37:30 "
      "EndTime=2026-11-29T11:37:31 NodeList=node3 NodeCnt=1 ProcCnt=1 WorkDir=/tmp "
      "SubmitTime=2026-11-29T11:37:29 ExitCode=0:0 \n"
      "garbage line\n"
      "JobId=1 Name=p1 JobState=CANCELLED StartTime=2026-11-29T11:39:13 "
      "EndTime=2026-11-29T11:39:13 NodeList=(null) NodeCnt=0\n");
  ASSERT_EQ(jobcomp.size(), 2u);
  EXPECT_EQ(jobcomp[0].job_id, "2");
  EXPECT_EQ(jobcomp[0].name, "attune-c-r2");
  EXPECT_EQ(jobcomp[0].state, "NODE_FAIL");
  EXPECT_EQ(jobcomp[0].end_unix_s - jobcomp[0].start_unix_s, 1);
  EXPECT_EQ(jobcomp[0].nodes, std::vector<std::string>{"node3"});
  EXPECT_FALSE(jobcomp[1].ran());

  const std::vector<SlurmJobFacts> sacct = parse_sacct_text(
      "7|attune-c-r7|CANCELLED by 0|2026-11-29T11:00:00|2026-11-29T11:00:05|"
      "2026-11-29T11:01:05|node[2,4]\n"
      "8|attune-c-r8|PENDING|2026-11-29T11:00:00|Unknown|Unknown|None assigned\n");
  ASSERT_EQ(sacct.size(), 2u);
  EXPECT_EQ(sacct[0].state, "CANCELLED");
  EXPECT_EQ(sacct[0].end_unix_s - sacct[0].start_unix_s, 60);
  EXPECT_EQ(sacct[0].nodes, (std::vector<std::string>{"node2", "node4"}));
  EXPECT_EQ(sacct[1].start_unix_s, 0);
  EXPECT_FALSE(sacct[1].ran());
}

TEST(SlurmFacts, ExpandsHostlists) {
  EXPECT_EQ(expand_hostlist("node[1-3,7],login,rack[1-2]-gpu[01-02]").value(),
            (std::vector<std::string>{"node1", "node2", "node3", "node7", "login", "rack1-gpu01",
                                      "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"}));
  EXPECT_FALSE(expand_hostlist("node[1-3").ok());
  EXPECT_FALSE(expand_hostlist("node[3-1]").ok());
  EXPECT_FALSE(expand_hostlist("node[1-99999999]").ok());
}

TEST(SlurmFacts, KnowsWhichRecordsTheClusterKeepsAndWhichNodesAreUsable) {
  const SlurmRecords none = parse_scontrol_config(
      "AccountingStorageType   = accounting_storage/none\n"
      "JobCompLoc              = /var/log/slurm/jobcomp.txt\n"
      "JobCompType             = jobcomp/filetxt\n");
  EXPECT_FALSE(none.accounting);
  EXPECT_EQ(none.jobcomp_file, "/var/log/slurm/jobcomp.txt");
  const SlurmRecords accounted = parse_scontrol_config(
      "AccountingStorageType = accounting_storage/slurmdbd\n"
      "JobCompType = jobcomp/none\n");
  EXPECT_TRUE(accounted.accounting);
  EXPECT_TRUE(accounted.jobcomp_file.empty());
  EXPECT_EQ(parse_usable_nodes("node1 idle\nnode2 down\nnode3 mixed\nnode4 drained\n"
                               "node5 idle*\nnode1 idle\nnode6 allocated\n"),
            (std::vector<std::string>{"node1", "node3", "node6"}));
}

TEST(SbatchScript, FillsThePlaceholdersAndKeepsWhatTheUserWrote) {
  SbatchValues values;
  values.campaign_id = "c-1";
  values.job_name = "attune-c-1-r4";
  values.run_id = 4;
  values.steps = 14;
  values.nodes = 2;
  values.gpus = 16;
  values.gpus_per_node = 8;
  values.log_path = "/shared/logs/attune-c-1-r4.log";
  values.recipe_file = "/shared/my recipes/r4.recipe";
  values.recipe = parse_recipe(
                      "NCCL_IB_QPS_PER_CONNECTION=4 python pretrain_gpt.py "
                      "--tensor-model-parallel-size 2 --bf16 --data-path 'a b'")
                      .value();
  const std::string script = render_sbatch_script(
      "#!/bin/bash\n"
      "#SBATCH --nodes={nodes}\n"
      "#SBATCH --output={log}\n"
      "#SBATCH --gpus-per-node={gpus_per_node}\n"
      "export MASTER_PORT=${MASTER_PORT:-29500}\n"
      "srun torchrun --nnodes {nodes} {recipe_command} {recipe_args} --train-iters {steps} "
      "--recipe-copy {recipe_file} {unknown}\n",
      values);
  EXPECT_EQ(script,
            "#!/bin/bash\n"
            "#SBATCH --nodes=2\n"
            "#SBATCH --output=/shared/logs/attune-c-1-r4.log\n"
            "#SBATCH --gpus-per-node=8\n"
            "export NCCL_IB_QPS_PER_CONNECTION=4\n"
            "export MASTER_PORT=${MASTER_PORT:-29500}\n"
            "srun torchrun --nnodes 2 python pretrain_gpt.py --bf16 --data-path 'a b' "
            "--tensor-model-parallel-size 2 --train-iters 14 --recipe-copy "
            "'/shared/my recipes/r4.recipe' {unknown}\n");
  // With {env}, the exports go where the user put them.
  EXPECT_EQ(render_sbatch_script("#!/bin/sh\necho start\n{env}\n", values),
            "#!/bin/sh\necho start\nexport NCCL_IB_QPS_PER_CONNECTION=4\n");
}

// How Slurm's final states, with or without a log that says more, become failure classes.
TEST(SlurmStates, MapToFailureClasses) {
  const auto failure_of = [](const std::string& state, const std::string& log,
                             bool silent = false) -> std::optional<FailureClass> {
    JobReport finished;
    finished.kind = JobReport::Kind::kFinished;
    finished.final_state = state;
    MeasureSpec spec;
    spec.seq_length = 4096;
    spec.gpus = 8;
    spec.log_went_silent = silent;
    const RunOutcome outcome = LogMetricsSource().measure(log, finished, spec);
    if (const auto* failed = std::get_if<RunFailed>(&outcome)) return failed->failure_class;
    return std::nullopt;
  };
  const std::string oom_log =
      "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n";
  const std::string nccl_log =
      "[rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
      "remote process exited or there was a network error, NCCL version 2.21.5\n"
      "ncclRemoteError: A call failed possibly due to a network error or a remote process "
      "exiting prematurely.\n";
  EXPECT_EQ(failure_of("OUT_OF_MEMORY", ""), FailureClass::kOom);
  EXPECT_EQ(failure_of("FAILED", oom_log), FailureClass::kOom);
  EXPECT_EQ(failure_of("NODE_FAIL", ""), FailureClass::kInfra);
  EXPECT_EQ(failure_of("BOOT_FAIL", ""), FailureClass::kInfra);
  EXPECT_EQ(failure_of("FAILED", nccl_log), FailureClass::kInfra);
  EXPECT_EQ(failure_of("TIMEOUT", ""), FailureClass::kHang);
  EXPECT_EQ(failure_of("CANCELLED", "", true), FailureClass::kHang);
  EXPECT_EQ(failure_of("FAILED", ""), FailureClass::kCrash);
  EXPECT_EQ(failure_of("CANCELLED", ""), FailureClass::kInfra) << "cancelled by someone else";
}

TEST(SlurmOptions, SurviveTheirRecordForResume) {
  SlurmLauncherOptions options;
  options.job_template = "#!/bin/bash\nsrun {recipe_command} {recipe_args}\n";
  options.partition = "gpu";
  options.sbatch_args = {"--account=llm", "--qos=high"};
  options.poll_interval_s = 2.5;
  options.start_limit_s = 600;
  options.log_silence_s = 900;
  options.work_dir = "/shared/attune";
  const fs::path path =
      fs::temp_directory_path() / ("attune-slurm-options-" + std::to_string(::getpid()));
  ASSERT_TRUE(save_slurm_options(path.string(), options).ok());
  auto loaded = load_slurm_options(path.string());
  fs::remove(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->job_template, options.job_template);
  EXPECT_EQ(loaded->sbatch_args, options.sbatch_args);
  EXPECT_EQ(loaded->partition, "gpu");
  EXPECT_DOUBLE_EQ(loaded->poll_interval_s, 2.5);
  EXPECT_DOUBLE_EQ(loaded->log_silence_s, 900);
  EXPECT_EQ(loaded->work_dir, "/shared/attune");
  options.poll_interval_s = 0;
  EXPECT_FALSE(check_slurm_options(options).ok());
}

TEST(SlurmCampaignFile, ReadsTheSlurmSection) {
  const fs::path dir =
      fs::temp_directory_path() / ("attune-slurm-campaign-file-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "launch.sbatch") << "#!/bin/bash\nsrun {recipe_command} {recipe_args}\n";
  const std::string head =
      "name = \"s\"\n[cluster]\nmodel = \"qwen3-30b-a3b\"\nhardware = \"h100\"\ngpus = 16\n"
      "launcher = \"slurm\"\n[workload]\nseq_length = 4096\nglobal_batch = 256\n"
      "[baseline]\nrecipe = \"python pretrain_gpt.py --bf16\"\n[budget]\ngpu_hours = 100\n";
  const std::string path = (dir / "campaign.toml").string();
  auto spec = parse_campaign_text(head +
                                      "[slurm]\ntemplate = \"launch.sbatch\"\npartition = \"gpu\"\n"
                                      "gpus_per_node = 4\nsbatch_args = [\"--account=llm\"]\n"
                                      "poll_seconds = 0.5\nstart_limit_seconds = 600\n"
                                      "log_silence_seconds = 1800\nseconds_per_step = 3.5\n"
                                      "work_dir = \"jobs\"\n",
                                  path);
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->launcher, "slurm");
  EXPECT_EQ(spec->job_template, "#!/bin/bash\nsrun {recipe_command} {recipe_args}\n");
  EXPECT_EQ(spec->slurm.partition, "gpu");
  EXPECT_EQ(spec->slurm.gpus_per_node, 4u);
  EXPECT_EQ(spec->slurm.sbatch_args, std::vector<std::string>{"--account=llm"});
  EXPECT_DOUBLE_EQ(spec->slurm.poll_seconds, 0.5);
  EXPECT_DOUBLE_EQ(spec->slurm.start_limit_seconds, 600);
  EXPECT_DOUBLE_EQ(spec->slurm.log_silence_seconds, 1800);
  EXPECT_DOUBLE_EQ(spec->expected_seconds_per_step, 3.5);
  EXPECT_EQ(spec->slurm.work_dir, (dir / "jobs").string());
  EXPECT_EQ(campaign_opened(spec.value()).job_template, spec->job_template);

  auto missing = parse_campaign_text(head, path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("[slurm]"), std::string::npos) << missing.error();
  auto unknown =
      parse_campaign_text(head + "[slurm]\ntemplate = \"launch.sbatch\"\nqueue = \"x\"\n", path);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("queue"), std::string::npos) << unknown.error();
  auto no_file = parse_campaign_text(head + "[slurm]\ntemplate = \"absent.sbatch\"\n", path);
  ASSERT_FALSE(no_file.ok());
  EXPECT_NE(no_file.error().find("absent.sbatch"), std::string::npos) << no_file.error();
  fs::remove_all(dir);
}

TEST(SlurmExample, TheExampleCampaignAndTemplateMakeAValidBatchScript) {
  auto spec = parse_campaign_file(std::string(ATTUNE_SOURCE_DIR) +
                                  "/examples/slurm-qwen3-30b-a3b-h100x16.toml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->launcher, "slurm");
  SbatchValues values;
  values.job_name = "attune-qwen3-r1";
  values.steps = 14;
  values.nodes = 2;
  values.gpus = 16;
  values.gpus_per_node = spec->slurm.gpus_per_node;
  values.log_path = "/shared/attune/r1.log";
  values.recipe_file = "/shared/attune/r1.recipe";
  values.recipe = spec->baseline;
  const std::string script = render_sbatch_script(spec->job_template, values);
  EXPECT_NE(script.find("#SBATCH --nodes=2\n"), std::string::npos) << script;
  EXPECT_NE(script.find("export CUDA_DEVICE_MAX_CONNECTIONS=1\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--tensor-model-parallel-size 2"), std::string::npos) << script;
  EXPECT_NE(script.find("--train-iters 14"), std::string::npos) << script;
  EXPECT_EQ(script.find('{'), script.find("${MASTER_PORT") + 1) << "no placeholder is left";
  const fs::path file =
      fs::temp_directory_path() / ("attune-slurm-example-" + std::to_string(::getpid()));
  std::ofstream(file) << script;
  EXPECT_EQ(std::system(("bash -n " + file.string()).c_str()), 0) << script;
  fs::remove(file);
}

}  // namespace
}  // namespace attune
