// resolve_launch_script's contract: on the real-world launch scripts against their hand-checked
// answers (tests/data/real-world/recipes/MANIFEST.md), and on small scripts that misbehave.
#include "adapters/script/launch_script.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace attune::script {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kRecipes = fs::path(ATTUNE_SOURCE_DIR) / "tests/data/real-world/recipes";
// Five answers are for scripts kept in the shared data folder, not next to the answers.
const fs::path kSharedRecipes = "/work/shared/data/real-world/recipes";

using InsideFiles = std::vector<std::pair<std::string, std::string>>;

// The answers' needs_files, written out: the answers state them in prose. Keyed by answer.
const std::map<std::string, InsideFiles>& needs_files() {
  static const std::map<std::string, InsideFiles> files = {
      {"NVIDIA__Megatron-LM__examples__gptoss__02_train.sh",
       {{"/workspace/checkpoints/gpt-oss-20b/", ""},
        {"/workspace/megatron-lm/pretrain_gpt.py", ""}}},
      {"NVIDIA__Megatron-LM__examples__megatron_fsdp__sbatch_mfsdp_deepseek_v3.sh",
       {{"/workspace/megatron-lm/", ""}}},
      {"NVIDIA__Megatron-LM__tests__functional_tests__test_scripts__gpt3__pretrain_gpt3_"
       "distributed_test.sh",
       {{"/workspace/scripts/", ""}}},
      {"alibaba__Pai-Megatron-Patch__examples__llama3__mpi_run_pretrain_llama3.sh",
       {{"/etc/mpi/hostfile",
         "llama3-70b-worker-0\nllama3-70b-worker-1\nllama3-70b-worker-2\nllama3-70b-worker-3\n"}}},
      {"alibaba__Pai-Megatron-Patch__examples__qwen2_5__run_mcore_qwen.sh",
       {{"/mnt/qwen-ckpts/Qwen2.5-0.5B-Instruct-to-mcore/config.json", "{}\n"},
        {"/mnt/qwen-ckpts/Qwen2.5-0.5B-Instruct-to-mcore/merges.txt", ""}}},
      {"bigscience-workshop__bigscience__train__tr11-176B-ml__tr11-176B-ml.slurm",
       {{"/gpfswork/rech/six/commun/envs/.bash-git-prompt/gitprompt.sh", ""},
        {"/gpfswork/rech/six/commun/code/tr11-176B-ml/Megatron-DeepSpeed/", ""},
        {"/gpfslocalsup/pub/anaconda-py3/2020.02/bin/conda", "#!/bin/sh\nexit 0\n"}}},
      {"ccl-bench__llama_31_8b-megatron_lm-dp_2-tp_4-perlmutter-group_1.run.sh",
       {{"/scratch/megatron-lm/pretrain_gpt.py", ""}}},
      {"megatron-lm__llama__train_llama3_8b_h100_fp8.sh",
       {{"/workspace/megatron-lm/pretrain_gpt.py", ""}}},
      {"microsoft__Megatron-DeepSpeed__examples_deepspeed__pretrain_llama2_distributed.sh",
       {{"/workspace/Megatron-DeepSpeed/tmp/", ""}}},
      {"microsoft__Megatron-DeepSpeed__examples_deepspeed__rebase__ds_pretrain_gpt_125M.sh",
       {{"/workspace/Megatron-DeepSpeed/examples_deepspeed/rebase/"
         "BookCorpusDataset_text_document.bin",
         ""},
        {"/workspace/Megatron-DeepSpeed/examples_deepspeed/rebase/"
         "BookCorpusDataset_text_document.idx",
         ""},
        {"/workspace/Megatron-DeepSpeed/examples_deepspeed/rebase/gpt2-vocab.json", ""},
        {"/workspace/Megatron-DeepSpeed/examples_deepspeed/rebase/gpt2-merges.txt", ""}}},
      {"okoge-kaz__Megatron-LM__scripts__abci__Llama-3.1-8B__llama-3.1-8b-tp4-pp2.sh",
       {{"/bb/llm/gaf51275/2024/Megatron-LM/.env/bin/activate", ""},
        {"/var/spool/uge/a0001/active_jobs/42424242.1/pe_hostfile",
         "a0001.abci.local 80 all.q@a0001.abci.local UNDEFINED\n"}}},
  };
  return files;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::vector<std::string> answer_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kRecipes / "expected")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

fs::path script_of(const std::string& name) {
  const fs::path here = kRecipes / name;
  return fs::exists(here) ? here : kSharedRecipes / name;
}

ScriptInput input_of(const std::string& name, const json& answer) {
  ScriptInput input;
  input.path = script_of(name).string();
  input.args = answer["script_args"].get<std::vector<std::string>>();
  input.env = answer["script_env"].get<std::map<std::string, std::string>>();
  input.invocation_cwd = answer["invocation"]["cwd"].get<std::string>();
  input.invocation_script_path = answer["invocation"]["script_path"].get<std::string>();
  input.hostname = answer["invocation"]["hostname"].get<std::string>();
  for (const json& companion : answer.value("companions", json::array())) {
    input.files.emplace_back((kRecipes / companion["saved_as"].get<std::string>()).string(),
                             companion["placed_at"].get<std::string>());
  }
  const auto needed = needs_files().find(name);
  if (needed != needs_files().end()) input.empty_files_inside = needed->second;
  return input;
}

// Where two argument lists part, for a failure message that a reader can act on.
std::string first_difference(const std::vector<std::string>& got,
                             const std::vector<std::string>& want) {
  const std::size_t common = std::min(got.size(), want.size());
  for (std::size_t i = 0; i < common; ++i) {
    if (got[i] != want[i]) {
      return "at " + std::to_string(i) + ": got '" + got[i] + "', want '" + want[i] + "'";
    }
  }
  return "lengths: got " + std::to_string(got.size()) + ", want " + std::to_string(want.size());
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name;
  for (const char c : info.param) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

class RecipeAnswerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RecipeAnswerTest, ResolvesToTheHandCheckedAnswer) {
  std::string why_not;
  if (!sandbox_available(&why_not)) GTEST_SKIP() << why_not;
  const std::string name = GetParam();
  const json answer = read_json(kRecipes / "expected" / (name + ".json"));
  const auto resolved = resolve_launch_script(input_of(name, answer));
  const int exit_status = answer["script_exit_status"].get<int>();
  if (answer["program"].is_null()) {
    ASSERT_FALSE(resolved.ok()) << resolved_script_json(*resolved);
    EXPECT_NE(resolved.error().find("bash exited " + std::to_string(exit_status) +
                                    " before reaching a training program"),
              std::string::npos)
        << resolved.error();
    EXPECT_EQ(resolved.error().find('\n'), std::string::npos) << resolved.error();
    return;
  }
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_TRUE(resolved->sandboxed);
  // Exact, the answers' nondeterministic_values and unresolved_values included: the stubs give
  // what the answers' stubs gave (the pinned date, shuf's lower bound, 8 GPUs, an empty output
  // of a helper python call, no bond0), so those values are reproducible here.
  EXPECT_EQ(resolved->program, answer["program"].get<std::string>());
  EXPECT_EQ(resolved->program_path, answer["program_path"].get<std::string>());
  const auto want_args = answer["args"].get<std::vector<std::string>>();
  EXPECT_EQ(resolved->args, want_args) << first_difference(resolved->args, want_args);
  EXPECT_EQ(resolved->env, (answer["env"].get<std::map<std::string, std::string>>()));
  EXPECT_EQ(resolved->launcher, answer["launcher"].get<std::string>());
  EXPECT_EQ(resolved->script_exit_status, exit_status);
  // Helper python calls the answer lists are reported: their output, empty here, is unresolved.
  for (const json& helper : answer.value("other_python_calls", json::array())) {
    const bool warned = std::any_of(
        resolved->warnings.begin(), resolved->warnings.end(), [&](const std::string& warning) {
          return warning.find(helper.get<std::string>().substr(0, 40)) != std::string::npos;
        });
    EXPECT_TRUE(warned) << "no warning for " << helper;
  }
}

INSTANTIATE_TEST_SUITE_P(RealWorld, RecipeAnswerTest, ::testing::ValuesIn(answer_names()),
                         test_name);

// Small scripts written for one test, in a folder of their own that goes with the test.
class LaunchScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("attune-launch-script-test-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  ScriptInput script(const std::string& text) {
    const fs::path path = folder_ / "launch.sh";
    std::ofstream(path) << text;
    ScriptInput input;
    input.path = path.string();
    return input;
  }

  void require_sandbox() {
    std::string why_not;
    if (!sandbox_available(&why_not)) GTEST_SKIP() << why_not;
  }

  fs::path folder_;
};

TEST_F(LaunchScriptTest, ALoopIsStoppedAtTheTimeLimitWithAOneLineError) {
  require_sandbox();
  ScriptInput input = script("echo looping >&2\nwhile true; do :; done\npython3 train.py\n");
  input.timeout_seconds = 1;
  const auto started = std::chrono::steady_clock::now();
  const auto resolved = resolve_launch_script(input);
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error(), input.path +
                                  ": still running after 1 s (killed); the last line it "
                                  "printed: looping");
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST_F(LaunchScriptTest, TheNetworkGivesNothing) {
  require_sandbox();
  const auto resolved = resolve_launch_script(script(
      "page=$(curl -s https://example.com)\n"
      "if (exec 3<>/dev/tcp/93.184.215.14/80) 2>/dev/null; then tcp=open; else tcp=closed; fi\n"
      "git clone https://github.com/NVIDIA/Megatron-LM.git && cloned=yes || cloned=no\n"
      "python3 train.py --page \"$page\" --tcp $tcp --cloned $cloned\n"));
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->args,
            (std::vector<std::string>{"--page", "", "--tcp", "closed", "--cloned", "no"}));
}

TEST_F(LaunchScriptTest, NothingTheScriptWritesIsLeftOnThisMachine) {
  require_sandbox();
  const std::string mark = "attune-leak-" + std::to_string(::getpid());
  const auto resolved = resolve_launch_script(script(
      "touch /tmp/" + mark + "\necho hi > $HOME/" + mark + "\necho hi > ./" + mark +
      "\nmkdir -p /" + mark + "/deep\necho hi > /etc/" + mark + "\npython3 train.py --lr 1e-4\n"));
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->program, "train.py");
  for (const fs::path& path : {fs::path("/tmp") / mark, fs::path("/home/user") / mark,
                               folder_ / mark, fs::path("/") / mark, fs::path("/etc") / mark}) {
    EXPECT_FALSE(fs::exists(path)) << path;
  }
}

TEST_F(LaunchScriptTest, AScriptThatExitsBeforePythonIsAnErrorNamingIt) {
  require_sandbox();
  const ScriptInput input =
      script("echo 'DATA_PATH is not set' >&2\nexit 1\npython3 pretrain_gpt.py --lr 1\n");
  const auto resolved = resolve_launch_script(input);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error(), input.path +
                                  ": bash exited 1 before reaching a training program: "
                                  "DATA_PATH is not set");
}

TEST_F(LaunchScriptTest, AMissingSourcedFileIsNamed) {
  require_sandbox();
  const auto resolved =
      resolve_launch_script(script("set -e\nsource ./conf/model.sh\npython3 train.py\n"));
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.error().find("bash exited 1 before reaching a training program"),
            std::string::npos)
      << resolved.error();
  EXPECT_NE(resolved.error().find("./conf/model.sh: No such file or directory"), std::string::npos)
      << resolved.error();
}

TEST_F(LaunchScriptTest, ANamedWorkingFolderIsShownReadOnlyAndWhatTheScriptWritesStaysInside) {
  require_sandbox();
  const fs::path checkout = folder_ / "Megatron-LM";
  fs::create_directories(checkout / "megatron");
  std::ofstream(checkout / "pretrain_gpt.py") << "# the training program\n";
  std::ofstream(checkout / "megatron" / "version.txt") << "0.14\n";
  std::ofstream(checkout / "launch.sh") << "the checkout's own launch.sh, hidden by the script\n";
  ScriptInput input = script(
      "[ -f pretrain_gpt.py ] || { echo 'pretrain_gpt.py is not present'; exit 1; }\n"
      "mkdir -p logs && echo hi > logs/out\n"
      "echo changed > pretrain_gpt.py 2>/dev/null && exit 3\n"
      "python3 pretrain_gpt.py --version \"$(cat megatron/version.txt)\" --pwd \"$PWD\" "
      "--self \"$(head -c 9 launch.sh)\"\n");
  input.invocation_cwd = checkout.string();
  input.invocation_script_path = (checkout / "launch.sh").string();
  const auto resolved = resolve_launch_script(input);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->args, (std::vector<std::string>{"--version", "0.14", "--pwd",
                                                      checkout.string(), "--self", "[ -f pret"}));
  EXPECT_FALSE(fs::exists(checkout / "logs"));
  std::ifstream program(checkout / "pretrain_gpt.py");
  std::string first;
  std::getline(program, first);
  EXPECT_EQ(first, "# the training program");
}

TEST_F(LaunchScriptTest, AFileTheScriptChecksForIsNamedWithTheWayToShowIt) {
  require_sandbox();
  ScriptInput input = script(
      "[ -f pretrain_gpt.py ] || { echo 'Error: pretrain_gpt.py not found'; echo 'Please run "
      "from the root, where pretrain_gpt.py is present.'; exit 1; }\npython3 pretrain_gpt.py\n");
  input.invocation_cwd = (folder_ / "no-such-checkout").string();
  const auto resolved = resolve_launch_script(input);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.error().find("where pretrain_gpt.py is present. (the script sees only its "
                                  "own file and those named: --file FILE, or --cwd FOLDER"),
            std::string::npos)
      << resolved.error();
}

TEST_F(LaunchScriptTest, MegatronLmsOwnLlamaScriptReadsFromANamedCheckout) {
  require_sandbox();
  const fs::path checkout = folder_ / "Megatron-LM";
  fs::create_directories(checkout);
  std::ofstream(checkout / "pretrain_gpt.py") << "# stands for Megatron-LM's\n";
  ScriptInput input;
  input.path = script_of("megatron-lm__llama__train_llama3_8b_h100_fp8.sh").string();
  if (!fs::exists(input.path)) GTEST_SKIP() << input.path << " is not on this machine";
  input.invocation_cwd = checkout.string();
  const auto resolved = resolve_launch_script(input);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->program, "pretrain_gpt.py");
  const auto& args = resolved->args;
  const auto value_of = [&](const std::string& flag) {
    const auto at = std::find(args.begin(), args.end(), flag);
    return at == args.end() || at + 1 == args.end() ? std::string("(absent)") : *(at + 1);
  };
  // Hand-read from the script: Llama-3-8B, 32 layers of 4096, TP1 PP1, seq 8192, FP8 hybrid.
  EXPECT_EQ(value_of("--num-layers"), "32");
  EXPECT_EQ(value_of("--hidden-size"), "4096");
  EXPECT_EQ(value_of("--seq-length"), "8192");
  EXPECT_EQ(value_of("--fp8-format"), "hybrid");
  EXPECT_NE(std::find(args.begin(), args.end(), "--grad-reduce-in-bf16"), args.end());
}

TEST_F(LaunchScriptTest, AScriptThatReadsStdinSeesItsEnd) {
  require_sandbox();
  ScriptInput input = script("read -r answer\npython3 train.py --answer \"$answer\"\n");
  input.timeout_seconds = 5;
  const auto resolved = resolve_launch_script(input);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->args, (std::vector<std::string>{"--answer", ""}));
}

TEST_F(LaunchScriptTest, TheLaunchedCallIsTheTrainingProgramAndHelpersAreWarnedAbout) {
  require_sandbox();
  ScriptInput input = script(
      "export NCCL_DEBUG=INFO\n"
      "DATA=$(python3 tools/make_config.py --a 1 --b 2 --c 3 --d 4)\n"
      "torchrun --nproc_per_node=8 --rdzv-endpoint=$(hostname):29500 pretrain.py --tp 2 "
      "--data \"$DATA\"\n"
      "python3 tools/collect.py --e 1 --f 2 --g 3 --h 4 --i 5\n");
  input.hostname = "gpu-17";
  input.env = {{"NCCL_DEBUG", "WARN"}, {"KEPT", "1"}};
  const auto resolved = resolve_launch_script(input);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->program, "pretrain.py");
  EXPECT_EQ(resolved->args, (std::vector<std::string>{"--tp", "2", "--data", ""}));
  EXPECT_EQ(resolved->launcher, "torchrun --nproc_per_node=8 --rdzv-endpoint=gpu-17:29500");
  EXPECT_EQ(resolved->env, (std::map<std::string, std::string>{{"NCCL_DEBUG", "INFO"}}));
  EXPECT_EQ(resolved->warnings.size(), 2u);
}

TEST_F(LaunchScriptTest, MpirunAppliesItsAssignmentsAndTheLauncherShowsItsCommand) {
  require_sandbox();
  const auto resolved = resolve_launch_script(
      script("mpirun -np 16 --allow-run-as-root -mca btl '^openib' -x NCCL_IB_HCA=mlx5 -x PATH "
             "-bind-to none python pretrain_gpt.py --rank-from-env $OMPI_COMM_WORLD_RANK\n"));
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->launcher,
            "mpirun -np 16 --allow-run-as-root -mca btl '^openib' -x NCCL_IB_HCA=mlx5 -x PATH "
            "-bind-to none python");
  EXPECT_EQ(resolved->env, (std::map<std::string, std::string>{{"NCCL_IB_HCA", "mlx5"}}));
}

TEST_F(LaunchScriptTest, TheStubsAnswerLikeANodeOfEightH100sAtAPinnedMoment) {
  require_sandbox();
  ScriptInput input = script(
      "nodes=$(scontrol show hostnames 'node[001-003,007],gpu5' | paste -sd, -)\n"
      "gpus=$(nvidia-smi -L | wc -l)\n"
      "first=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits | head -1)\n"
      "port=$(shuf -i 20000-30000 -n 1)\n"
      "job=$(sbatch --parsable --wrap 'pip install -r requirements.txt; sleep 600')\n"
      "srun -N2 -n16 --ntasks-per-node 8 numactl --membind=0-3 apptainer exec --nv img.sif \\\n"
      "  bash -c \"env EXTRA=1 python -u -m torch.distributed.run --nproc-per-node=8 --nnodes 2 "
      "\\\n"
      "  --node_rank \\$SLURM_PROCID train.py --nodes $nodes --gpus $gpus --first '$first' \\\n"
      "  --host $(hostname -s) --when $(date +%FT%T) --port $port --job $job\"\n");
  input.hostname = "node001.cluster";
  const auto resolved = resolve_launch_script(input);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->args,
            (std::vector<std::string>{"--nodes", "node001,node002,node003,node007,gpu5", "--gpus",
                                      "8", "--first", "NVIDIA H100 80GB HBM3, 81559", "--host",
                                      "node001", "--when", "2026-01-01T00:00:00", "--port", "20000",
                                      "--job", "4242"}));
  EXPECT_EQ(resolved->launcher,
            "python -u -m torch.distributed.run --nproc-per-node=8 --nnodes 2 --node_rank 0");
  EXPECT_EQ(resolved->env, (std::map<std::string, std::string>{{"EXTRA", "1"}}));
}

TEST_F(LaunchScriptTest, UnsandboxedRunsStayInTheirFolderAndNameTheInsidePaths) {
  ScriptInput input = script(
      "mkdir -p logs && echo hi > logs/out\n"
      "python3 $PWD/pretrain_gpt.py --save $PWD/checkpoints --host $(hostname)\n");
  input.invocation_cwd = "/workspace/megatron-lm";
  input.invocation_script_path = "/workspace/megatron-lm/launch.sh";
  input.hostname = "node042";
  const auto resolved = resolve_launch_script_with(input, Isolation::kUnsandboxed);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_FALSE(resolved->sandboxed);
  EXPECT_EQ(resolved->program_path, "/workspace/megatron-lm/pretrain_gpt.py");
  EXPECT_EQ(resolved->args,
            (std::vector<std::string>{"--save", "/workspace/megatron-lm/checkpoints", "--host",
                                      "node042"}));
  ASSERT_FALSE(resolved->warnings.empty());
  EXPECT_NE(resolved->warnings.front().find("without a sandbox"), std::string::npos);
  EXPECT_FALSE(fs::exists("/workspace/megatron-lm/logs/out"));
}

TEST_F(LaunchScriptTest, BadInputIsRefusedBeforeAnythingRuns) {
  ScriptInput missing;
  missing.path = (folder_ / "absent.sh").string();
  ASSERT_FALSE(resolve_launch_script(missing).ok());
  EXPECT_EQ(resolve_launch_script(missing).error(), missing.path + ": no such launch script");

  ScriptInput path_set = script("python3 train.py\n");
  path_set.env = {{"PATH", "/opt/bin"}};
  ASSERT_FALSE(resolve_launch_script(path_set).ok());

  ScriptInput in_usr = script("python3 train.py\n");
  in_usr.invocation_script_path = "/usr/local/bin/launch.sh";
  ASSERT_FALSE(resolve_launch_script(in_usr).ok());
  EXPECT_NE(resolve_launch_script(in_usr).error().find("read-only"), std::string::npos);

  ScriptInput in_etc_folder = script("python3 train.py\n");
  in_etc_folder.empty_files_inside = {{"/etc/mpi/hostfile", "n1\n"}, {"/etc/profile.d/x.sh", ""}};
  ASSERT_FALSE(resolve_launch_script(in_etc_folder).ok());
  EXPECT_NE(resolve_launch_script(in_etc_folder).error().find("/etc/profile.d/x.sh"),
            std::string::npos);

  ScriptInput bad_host = script("python3 train.py\n");
  bad_host.hostname = "node 1; rm -rf /";
  ASSERT_FALSE(resolve_launch_script(bad_host).ok());
}

TEST_F(LaunchScriptTest, TheJsonNamesProgramArgsEnvLauncherAndWarnings) {
  ResolvedScript resolved;
  resolved.program = "pretrain_gpt.py";
  resolved.program_path = "../pretrain_gpt.py";
  resolved.args = {"--tp", "2"};
  resolved.env = {{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}};
  resolved.launcher = "torchrun --nproc_per_node 8";
  resolved.warnings = {"a warning"};
  const json parsed = json::parse(resolved_script_json(resolved));
  EXPECT_EQ(parsed["program"], "pretrain_gpt.py");
  EXPECT_EQ(parsed["args"], json::array({"--tp", "2"}));
  EXPECT_EQ(parsed["env"]["CUDA_DEVICE_MAX_CONNECTIONS"], "1");
  EXPECT_EQ(parsed["launcher"], "torchrun --nproc_per_node 8");
  EXPECT_EQ(parsed["warnings"], json::array({"a warning"}));
  EXPECT_NE(resolved_script_json(resolved).find("\n  \"program\""), std::string::npos);
}

}  // namespace
}  // namespace attune::script
