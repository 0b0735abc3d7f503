// The simulated job's Megatron-LM log: the exact line formats of megatron_lm.md §2 (compared
// byte for byte with the reference's example lines), the arguments block and its implied
// overrides, the failure texts, and what attune's own readers make of it.
#include "adapters/world/megatron_log_writer.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "adapters/metrics/megatron_log.h"
#include "adapters/model/recipe_values.h"
#include "adapters/world/sim_job.h"
#include "gate/resolved_args.h"
#include "tests/adapters/sim_world_fixtures.h"

namespace attune::sim {
namespace {

using testing::contains;
using testing::qwen_baseline;
using testing::qwen_workload;
using testing::with;
using testing::without;

// megatron_lm.md §2.4, lines 1 and 3, exactly as the code formats them.
constexpr std::string_view kReferenceLine1 =
    " [2026-08-22 15:31:07.482913] iteration        1/     500 | consumed samples:          256 "
    "| elapsed time per iteration (ms): 48213.6 | throughput per GPU (TFLOP/s/GPU): 27.4 | "
    "learning rate: 1.500000E-07 | global batch size:   256 | lm loss: 1.217735E+01 | loss "
    "scale: 1.0 | grad norm: 41.273 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |";
constexpr std::string_view kReferenceLine3 =
    " [2026-08-22 16:02:11.902771] iteration      120/   20000 | consumed samples:       491520 "
    "| elapsed time per iteration (ms): 7315.9 | throughput per GPU (TFLOP/s/GPU): 388.2 | "
    "learning rate: 2.999100E-04 | global batch size:  4096 | lm loss: 4.125531E+00 | "
    "load_balancing_loss: 1.021341E+00 | z_loss: 1.841220E-03 | mtp_1 loss: 4.337926E+00 | "
    "loss scale: 1.0 | grad norm: 0.284 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |";

WorldConfig quiet_world() {
  WorldConfig config;
  config.infra_failures_per_node_hour = 0;
  config.slow_node_probability = 0;
  return config;
}

std::int64_t at(int hour, int minute, int second, int microsecond) {
  return kVirtualStartUnixNs + ((hour - 15) * 3600LL + minute * 60LL + second) * 1'000'000'000LL +
         microsecond * 1000LL;
}

// The throughput depends on the model's FLOPs; the reference's example comes from another model.
std::string with_throughput(std::string line, std::string_view throughput) {
  static const std::regex field(R"(throughput per GPU \(TFLOP/s/GPU\): [0-9.]+ \|)");
  return std::regex_replace(line, field,
                            "throughput per GPU (TFLOP/s/GPU): " + std::string(throughput) + " |");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string run_log(const World& world, const Recipe& recipe, std::uint32_t steps = 14,
                    Fault fault = Fault::kNone) {
  Result<SimJobResult> result = run_sim_job(world, recipe, SimJobRun{steps, 1, {}, false, fault});
  EXPECT_TRUE(result.ok());
  return result.ok() ? result->log : "";
}

TEST(SimLog, DatetimeIsMegatronsFormat) {
  EXPECT_EQ(megatron_datetime(kVirtualStartUnixNs), "2026-08-22 15:00:00.000000");
  EXPECT_EQ(megatron_datetime(at(15, 31, 7, 482913)), "2026-08-22 15:31:07.482913");
}

TEST(SimLog, PythonFloatIsPythonsRepr) {
  EXPECT_EQ(python_float(3e-4), "0.0003");
  EXPECT_EQ(python_float(1e-4), "0.0001");
  EXPECT_EQ(python_float(1e-5), "1e-05");
  EXPECT_EQ(python_float(2.5e-5), "2.5e-05");
  EXPECT_EQ(python_float(1.5e-7), "1.5e-07");
  EXPECT_EQ(python_float(1.0), "1.0");
  EXPECT_EQ(python_float(0.0), "0.0");
  EXPECT_EQ(python_float(-0.5), "-0.5");
  EXPECT_EQ(python_float(0.1), "0.1");
  EXPECT_EQ(python_float(12345.0), "12345.0");
  EXPECT_EQ(python_float(1e16), "1e+16");
  EXPECT_EQ(python_float(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(python_float(1e22), "1e+22");
}

TEST(SimLog, IterationLineMatchesTheReferenceByteForByte) {
  const Workload workload = testing::load("llama3.1-8b", "h100", 8, 4096, 256);
  Recipe recipe;
  recipe.flags["--micro-batch-size"] = "1";
  SimulatedRun run;
  run.steps_requested = 500;
  run.step_times_s = {48.2136};
  run.loss.lm_loss = {12.17735};
  run.loss.learning_rate = {1.5e-7};
  run.loss.grad_norm = {41.273};
  MegatronLogWriter writer(workload, recipe, run, 8);
  const std::string text = writer.step_text(1, at(15, 31, 7, 482913));
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(with_throughput(lines[0], "27.4"), kReferenceLine1);
}

TEST(SimLog, MoeIterationLineMatchesTheReferenceByteForByte) {
  const Workload workload = testing::load("qwen3-30b-a3b", "h100", 16, 4096, 4096);
  const Recipe recipe = with(qwen_baseline(), "log-interval", "10");
  constexpr std::uint32_t kSteps = 120;
  SimulatedRun run;
  run.steps_requested = 20000;
  run.step_times_s.assign(kSteps, 7.3159);
  run.loss.lm_loss.assign(kSteps, 4.125531);
  run.loss.other_losses = {{"load_balancing_loss", std::vector<double>(kSteps, 1.021341)},
                           {"z_loss", std::vector<double>(kSteps, 1.84122e-3)},
                           {"mtp_1 loss", std::vector<double>(kSteps, 4.337926)}};
  run.loss.learning_rate.assign(kSteps, 2.9991e-4);
  run.loss.grad_norm.assign(kSteps, 0.284);
  MegatronLogWriter writer(workload, recipe, run, 8);
  EXPECT_EQ(writer.log_interval(), 10u);
  std::string last;
  int printed = 0;
  for (std::uint32_t step = 1; step <= kSteps; ++step) {
    const std::string text = writer.step_text(step, at(16, 2, 11, 902771));
    if (!text.empty()) {
      ++printed;
      last = lines_of(text)[0];
    }
  }
  EXPECT_EQ(printed, 1 + 12);  // the first iteration, then every 10th
  EXPECT_EQ(with_throughput(last, "388.2"), kReferenceLine3);
}

TEST(SimLog, IntervalLinesAverageTheirIterations) {
  const Workload workload = qwen_workload();
  const Recipe recipe = with(qwen_baseline(), "log-interval", "2");
  SimulatedRun run;
  run.steps_requested = 4;
  run.step_times_s = {10.0, 1.0, 2.0, 4.0};
  run.loss.lm_loss = {10.0, 9.0, 8.0, 6.0};
  run.loss.learning_rate = {1e-4, 1e-4, 1e-4, 1e-4};
  run.loss.grad_norm = {5.0, 4.0, 3.0, 2.0};
  MegatronLogWriter writer(workload, recipe, run, 8);
  const std::string first = writer.step_text(1, kVirtualStartUnixNs);
  EXPECT_TRUE(contains(first, "elapsed time per iteration (ms): 10000.0 |")) << first;
  // Iteration 2 closes the first interval, which (as in Megatron) still holds iteration 1.
  const std::string second = writer.step_text(2, kVirtualStartUnixNs);
  EXPECT_TRUE(contains(second, "elapsed time per iteration (ms): 5500.0 |")) << second;
  EXPECT_TRUE(contains(second, "lm loss: 9.500000E+00 |")) << second;
  EXPECT_TRUE(writer.step_text(3, kVirtualStartUnixNs).empty());
  const std::string fourth = writer.step_text(4, kVirtualStartUnixNs);
  EXPECT_TRUE(contains(fourth, "elapsed time per iteration (ms): 3000.0 |")) << fourth;
  EXPECT_TRUE(contains(fourth, "lm loss: 7.000000E+00 |")) << fourth;
  EXPECT_TRUE(contains(fourth, "grad norm: 2.000 |")) << fourth;
}

TEST(SimLog, WholeLogHasTheReferenceLineFormats) {
  const World world(qwen_workload(), quiet_world());
  const std::string log = run_log(world, qwen_baseline());
  const std::regex iteration(
      R"( \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}\] iteration +\d+/ +\d+ \| consumed samples: +\d+ \| elapsed time per iteration \(ms\): \d+\.\d \| throughput per GPU \(TFLOP/s/GPU\): \d+\.\d \| learning rate: \d\.\d{6}E[-+]\d\d \| global batch size: +\d+ \| lm loss: \d\.\d{6}E[-+]\d\d \| loss scale: 1\.0 \| grad norm: \d+\.\d{3} \| number of skipped iterations: +\d+ \| number of nan iterations: +\d+ \|)");
  const std::regex memory(
      R"(\[Rank \d+\] \(after \d+ iterations\) memory \(MB\) \| allocated: \d+\.\d\d \| max allocated: \d+\.\d\d \| reserved: \d+\.\d\d \| max reserved: \d+\.\d\d)");
  int iterations = 0, memory_lines = 0;
  std::set<std::string> memory_ranks;
  for (const std::string& line : lines_of(log)) {
    if (contains(line, " iteration ") && contains(line, "consumed samples")) {
      EXPECT_TRUE(std::regex_match(line, iteration)) << line;
      ++iterations;
    }
    if (line.starts_with("[Rank ")) {
      EXPECT_TRUE(std::regex_match(line, memory)) << line;
      ++memory_lines;
      memory_ranks.insert(line.substr(0, line.find(']')));
    }
  }
  EXPECT_EQ(iterations, 14);
  // Every data-parallel-rank-0 process (TP 2: ranks 0 and 1) after the first two logs.
  EXPECT_EQ(memory_lines, 4);
  EXPECT_EQ(memory_ranks, (std::set<std::string>{"[Rank 0", "[Rank 1"}));
  EXPECT_TRUE(contains(log,
                       "using world size: 16, data-parallel size: 8, context-parallel size: "
                       "1, hierarchical context-parallel sizes: None, tensor-model-parallel "
                       "size: 2, pipeline-model-parallel size: 1\n"));
  EXPECT_TRUE(std::regex_search(
      log,
      std::regex(
          R"(\[before the start of training step\] datetime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} \n)")));
  EXPECT_TRUE(std::regex_search(
      log,
      std::regex(
          R"(\[after training is done\] datetime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} \n$)")));
}

// The arguments block's lines, without header and footer.
std::vector<std::string> argument_lines(const std::string& log) {
  std::vector<std::string> out;
  bool inside = false;
  for (const std::string& line : lines_of(log)) {
    if (line == "------------------------ arguments ------------------------") {
      inside = true;
    } else if (line == "-------------------- end of arguments ---------------------") {
      inside = false;
    } else if (inside) {
      out.push_back(line);
    }
  }
  return out;
}

std::map<std::string, std::string> argument_values(const std::string& log) {
  std::map<std::string, std::string> values;
  for (const std::string& line : argument_lines(log)) {
    const std::size_t name_end = line.find(' ', 2);
    const std::size_t value_at = line.find(' ', name_end + 1);
    values[line.substr(2, name_end - 2)] = line.substr(value_at + 1);
  }
  return values;
}

TEST(SimLog, ArgumentsBlockHasMegatronsLayoutAndOrder) {
  const World world(qwen_workload(), quiet_world());
  const std::string log = run_log(world, qwen_baseline(), 3);
  const std::vector<std::string> lines = argument_lines(log);
  ASSERT_GT(lines.size(), 500u);  // every argument Megatron prints
  const std::regex layout(R"(  ([A-Za-z_][A-Za-z0-9_]*) (\.*) (.*))");
  std::set<std::string> dests;
  for (const std::string& line : lines) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, layout)) << line;
    const std::string dest = m[1];
    EXPECT_EQ(m[2].length(),
              static_cast<std::size_t>(std::max(0, 48 - static_cast<int>(dest.size()))))
        << line;
    EXPECT_TRUE(dests.insert(dest).second) << "printed twice: " << dest;
    EXPECT_EQ(line, argument_line(dest, m[3]));
  }
  std::vector<std::string> lowered = lines;
  for (std::string& line : lowered) {
    for (char& c : line) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  EXPECT_TRUE(std::is_sorted(lowered.begin(), lowered.end()));
  EXPECT_EQ(argument_line("micro_batch_size", "1"),
            "  micro_batch_size ................................ 1");  // megatron_lm.md §2.4
}

TEST(SimLog, ArgumentsBlockShowsTheResolvedLayoutAndImpliedOverrides) {
  const World world(qwen_workload(), quiet_world());
  const auto baseline = argument_values(run_log(world, qwen_baseline(), 3));
  EXPECT_EQ(baseline.at("world_size"), "16");
  EXPECT_EQ(baseline.at("data_parallel_size"), "8");
  EXPECT_EQ(baseline.at("tensor_model_parallel_size"), "2");
  EXPECT_EQ(baseline.at("expert_model_parallel_size"), "8");
  EXPECT_EQ(baseline.at("expert_tensor_parallel_size"), "1");
  EXPECT_EQ(baseline.at("sequence_parallel"), "True");
  EXPECT_EQ(baseline.at("bf16"), "True");
  EXPECT_EQ(baseline.at("accumulate_allreduce_grads_in_fp32"), "True");
  EXPECT_EQ(baseline.at("params_dtype"), "torch.bfloat16");
  EXPECT_EQ(baseline.at("recompute_granularity"), "selective");
  EXPECT_EQ(baseline.at("num_layers"), "48");
  EXPECT_EQ(baseline.at("num_experts"), "128");
  EXPECT_EQ(baseline.at("seq_length"), "4096");
  EXPECT_EQ(baseline.at("global_batch_size"), "256");
  EXPECT_EQ(baseline.at("virtual_pipeline_model_parallel_size"), "None");
  EXPECT_EQ(baseline.at("overlap_p2p_comm"), "False");  // no interleaving
  EXPECT_EQ(baseline.at("moe_token_dispatcher_type"), "alltoall");
  EXPECT_EQ(baseline.at("lr"), "0.0001");

  const auto bf16_reduce =
      argument_values(run_log(world, with(qwen_baseline(), "grad-reduce-in-bf16"), 3));
  EXPECT_EQ(bf16_reduce.at("grad_reduce_in_bf16"), "True");
  EXPECT_EQ(bf16_reduce.at("accumulate_allreduce_grads_in_fp32"), "False");

  Recipe tp1 = with(qwen_baseline(), "tensor-model-parallel-size", "1");
  const auto no_tp = argument_values(run_log(world, with(tp1, "lr", "2.5e-5"), 3));
  EXPECT_EQ(no_tp.at("sequence_parallel"), "False");
  EXPECT_EQ(no_tp.at("data_parallel_size"), "16");
  EXPECT_EQ(no_tp.at("expert_tensor_parallel_size"), "1");
  EXPECT_EQ(no_tp.at("lr"), "2.5e-05");

  const auto switches = argument_values(run_log(
      world, with(with(qwen_baseline(), "no-overlap-p2p-communication"), "cp-comm-type", "p2p"),
      3));
  EXPECT_EQ(switches.at("overlap_p2p_comm"), "False");
  EXPECT_EQ(switches.at("cp_comm_type"), "['p2p']");
}

TEST(SimLog, GateReadsTheResolvedArguments) {
  const World world(qwen_workload(), quiet_world());
  const std::string base_log = run_log(world, qwen_baseline(), 3);
  const std::string bf16_log = run_log(world, with(qwen_baseline(), "grad-reduce-in-bf16"), 3);
  Result<ResolvedArgs> base = parse_resolved_args(base_log, "baseline.log");
  Result<ResolvedArgs> bf16 = parse_resolved_args(bf16_log, "candidate.log");
  ASSERT_TRUE(base.ok()) << base.error();
  ASSERT_TRUE(bf16.ok()) << bf16.error();
  EXPECT_EQ(base->values.at("accumulate_allreduce_grads_in_fp32"), "True");
  EXPECT_EQ(bf16->values.at("accumulate_allreduce_grads_in_fp32"), "False");
}

TEST(SimLog, MetricsReaderReadsACompletedLog) {
  const World world(qwen_workload(), quiet_world());
  Result<SimJobResult> job = run_sim_job(world, qwen_baseline(), SimJobRun{14, 3, {}, false});
  ASSERT_TRUE(job.ok());
  const MegatronLog log = read_megatron_log(job->log);
  ASSERT_EQ(log.iterations.size(), 14u);
  EXPECT_EQ(log.iteration_lines_rejected, 0u);
  EXPECT_TRUE(log.arguments.complete);
  EXPECT_EQ(log.arguments.unsigned_value("world_size"), 16u);
  for (std::size_t i = 0; i < 14; ++i) {
    const IterationLine& line = log.iterations[i];
    EXPECT_EQ(line.iteration, i + 1);
    EXPECT_EQ(line.train_iters, 14u);
    EXPECT_NEAR(line.elapsed_ms_per_iteration, job->run.step_times_s[i] * 1000.0, 0.051);
    ASSERT_TRUE(line.lm_loss.has_value());
    EXPECT_NEAR(*line.lm_loss, job->run.loss.lm_loss[i], 1e-5 * job->run.loss.lm_loss[i]);
    EXPECT_EQ(line.global_batch_size, 256u);
  }
  ASSERT_EQ(log.memory.size(), 2u);
  EXPECT_NEAR(log.memory[0].max_reserved_mb / 1024.0, job->run.peak_memory_gib_by_stage[0], 6.0);
  for (std::size_t s = 0; s < kFailureSignCount; ++s) {
    EXPECT_FALSE(log.first_signs[s].has_value()) << "sign " << s;
  }
}

TEST(SimLog, FailuresWriteTheRealErrorText) {
  const World world(qwen_workload(), quiet_world());
  const auto fails = [&](const Recipe& recipe, JobOutcome outcome) {
    Result<SimJobResult> job = run_sim_job(world, recipe, SimJobRun{14, 1, {}, false});
    EXPECT_TRUE(job.ok());
    EXPECT_EQ(job->run.outcome, outcome) << job->run.error;
    EXPECT_EQ(job->exit_code, kJobExitFailure);
    return job->log;
  };
  const std::string oom =
      fails(with(qwen_baseline(), "micro-batch-size", "4"), JobOutcome::kOutOfMemory);
  EXPECT_TRUE(std::regex_search(
      oom,
      std::regex(
          R"(\[rank0\]: torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate \d+\.\d\d [GM]iB\. GPU 0 has a total capacity of 79\.60 GiB of which \d+\.\d\d [GM]iB is free\. Including non-PyTorch memory, this process has \d+\.\d\d GiB memory in use\. Of the allocated memory \d+\.\d\d GiB is allocated by PyTorch, and \d+\.\d\d [GM]iB is reserved by PyTorch but unallocated\. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation\.  See documentation for Memory Management  \(https://pytorch\.org/docs/stable/notes/cuda\.html#environment-variables\)\n)")))
      << oom;
  EXPECT_TRUE(contains(oom, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"));
  EXPECT_TRUE(read_megatron_log(oom).first_sign(FailureSign::kOutOfMemory).has_value());

  const std::string invalid = fails(with(qwen_baseline(), "tensor-model-parallel-size", "3"),
                                    JobOutcome::kInvalidAtStartup);
  EXPECT_TRUE(std::regex_search(invalid, std::regex(R"(\[rank0\]: AssertionError: .+\n)")))
      << invalid;
  EXPECT_TRUE(contains(invalid, "in validate_args"));
  EXPECT_FALSE(contains(invalid, "------------------------ arguments"));
  EXPECT_TRUE(read_megatron_log(invalid).first_sign(FailureSign::kProgramError).has_value());

  const std::string nan = fails(with(qwen_baseline(), "lr", "0.02"), JobOutcome::kCrash);
  EXPECT_TRUE(contains(nan, "Unexpected result nan"));
  EXPECT_TRUE(contains(nan, "(message='found NaN in local forward loss calculation')"));
  EXPECT_TRUE(read_megatron_log(nan).first_sign(FailureSign::kProgramError).has_value());

  const std::string deepep = fails(with(with(qwen_baseline(), "moe-token-dispatcher-type", "flex"),
                                        "expert-model-parallel-size", "16"),
                                   JobOutcome::kCrash);
  EXPECT_TRUE(contains(deepep, "nvshmem initialization failed, exiting"));
  EXPECT_TRUE(contains(deepep, "[before the start of training step]"));
  EXPECT_EQ(read_megatron_log(deepep).iterations.size(), 0u);
  EXPECT_TRUE(read_megatron_log(deepep).first_sign(FailureSign::kErrorEcho).has_value());
}

TEST(SimLog, InfrastructureFailuresNameTheNode) {
  WorldConfig config = quiet_world();
  config.infra_failures_per_node_hour = 20.0;
  const World world(qwen_workload(), config);
  bool saw_network = false, saw_node_loss = false;
  for (std::uint64_t seed = 0; seed < 60 && !(saw_network && saw_node_loss); ++seed) {
    Result<SimJobResult> job = run_sim_job(world, qwen_baseline(), SimJobRun{14, seed, {}, false});
    ASSERT_TRUE(job.ok());
    if (job->run.outcome != JobOutcome::kInfrastructure) continue;
    const MegatronLog log = read_megatron_log(job->log);
    EXPECT_TRUE(log.first_sign(FailureSign::kInfrastructure).has_value()) << job->log;
    EXPECT_TRUE(contains(job->log,
                         "ncclRemoteError: A call failed possibly due to a network "
                         "error or a remote process exiting prematurely."));
    EXPECT_EQ(log.iterations.size(), job->run.step_times_s.size());
    if (job->run.infra == InfraFailure::kNetworkError) {
      saw_network = true;
      EXPECT_TRUE(contains(job->log, job->run.blamed_node + ":"));
      EXPECT_TRUE(contains(job->log, "NET/IB : Got completion from peer"));
    } else {
      saw_node_loss = true;
      EXPECT_TRUE(contains(job->log, "srun: error: Node failure on " + job->run.blamed_node));
    }
  }
  EXPECT_TRUE(saw_network);
  EXPECT_TRUE(saw_node_loss);
}

TEST(SimLog, HangStopsTheLog) {
  const Workload glm = testing::load("glm-4.5", "b200", 128, 4096, 2048);
  const World world(glm, quiet_world());
  const Recipe hang = with(testing::preset("glm-4.5-b200x128"), "expert-model-parallel-size", "8");
  Result<SimJobResult> job = run_sim_job(world, hang, SimJobRun{14, 1, {}, false});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->run.outcome, JobOutcome::kHang);
  EXPECT_FALSE(job->exit_code.has_value());
  EXPECT_TRUE(job->log.ends_with(" \n"));
  EXPECT_TRUE(contains(job->log, "[before the start of training step]"));
  EXPECT_TRUE(read_megatron_log(job->log).iterations.empty());
  EXPECT_EQ(job->log_growth.back().first, job->run.last_progress_s);
}

TEST(SimLog, NanIterationsAreCountedWhenMegatronDoesNotStop) {
  const World world(qwen_workload(), quiet_world());
  const std::string log = run_log(
      world, with(with(qwen_baseline(), "lr", "0.02"), "no-check-for-nan-in-loss-and-grad"));
  const MegatronLog read = read_megatron_log(log);
  ASSERT_EQ(read.iterations.size(), 14u);
  EXPECT_FALSE(read.iterations.back().lm_loss.has_value());
  EXPECT_EQ(read.iterations.back().nan_iterations, 1u);
  EXPECT_TRUE(contains(log, "grad norm: nan |"));
}

TEST(SimLog, LogIsWrittenIncrementally) {
  const World world(qwen_workload(), quiet_world());
  const SimJobRun spec{14, 5, {}, false};
  Result<SimJobResult> whole = run_sim_job(world, qwen_baseline(), spec);
  ASSERT_TRUE(whole.ok());
  SimJob job(world, qwen_baseline(), spec);
  std::string pieces;
  double last_at = 0;
  for (std::size_t i = 0; i < job.pieces().size(); ++i) {
    EXPECT_GE(job.pieces()[i].at_s, last_at);
    last_at = job.pieces()[i].at_s;
    pieces += job.render(i, kVirtualStartUnixNs + static_cast<std::int64_t>(last_at * 1e9));
  }
  EXPECT_EQ(pieces, whole->log);
  EXPECT_EQ(job.pieces().size(), 2u + 14u + 1u);
  for (std::size_t i = 1; i < whole->log_growth.size(); ++i) {
    EXPECT_GT(whole->log_growth[i].second, whole->log_growth[i - 1].second);
  }
}

TEST(SimLog, SameSeedsGiveTheSameBytes) {
  const World world(qwen_workload(), WorldConfig{});
  EXPECT_EQ(run_log(world, qwen_baseline()), run_log(world, qwen_baseline()));
  const World again(qwen_workload(), WorldConfig{});
  EXPECT_EQ(run_log(again, qwen_baseline()), run_log(world, qwen_baseline()));
}

}  // namespace
}  // namespace attune::sim

namespace attune::sim {
namespace {

// The arguments block names the model's own normalization, position embedding and tokenizer,
// as the model's launch script passes them, unless the recipe sets them.
TEST(SimLog, TheArgumentsBlockNamesTheModelsNormPositionEmbeddingAndTokenizer) {
  const World world(testing::qwen_workload(), quiet_world());
  Result<ResolvedArgs> args =
      parse_resolved_args(run_log(world, testing::qwen_baseline(), 3), "baseline.log");
  ASSERT_TRUE(args.ok()) << args.error();
  EXPECT_EQ(args->values.at("normalization"), "RMSNorm");
  EXPECT_EQ(args->values.at("position_embedding_type"), "rope");
  EXPECT_EQ(args->values.at("tokenizer_type"), "HuggingFaceTokenizer");
  EXPECT_EQ(args->values.at("apply_rope_fusion"), "True");
}

// validate_args turns RoPE fusion off for any position embedding but rope (YaRN's here), and
// the block prints what it rewrote.
TEST(SimLog, AnyPositionEmbeddingButRopeTurnsTheRopeFusionOff) {
  const World world(testing::qwen_workload(), quiet_world());
  Result<ResolvedArgs> args = parse_resolved_args(
      run_log(world, testing::with(testing::qwen_baseline(), "position-embedding-type", "yarn"), 3),
      "yarn.log");
  ASSERT_TRUE(args.ok()) << args.error();
  EXPECT_EQ(args->values.at("position_embedding_type"), "yarn");
  EXPECT_EQ(args->values.at("apply_rope_fusion"), "False");
}

// A model whose MLP is squared ReLU and whose RoPE turns half of each head (Nemotron-4 340B):
// the arguments block says so, as Megatron prints a run launched with --squared-relu and
// --rotary-percent 0.5, and a recipe's own --rotary-percent wins.
TEST(SimLog, TheArgumentsBlockNamesASquaredReluMlpAndPartialRotary) {
  const Workload nemotron = testing::load("nemotron4-340b", "gb200", 128, 4096, 32);
  ASSERT_EQ(nemotron.model.name, "nemotron4-340b");
  const World world(nemotron, quiet_world());
  const std::string recipe_text =
      "CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py --tensor-model-parallel-size 8 "
      "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 12 "
      "--sequence-parallel --micro-batch-size 1 --global-batch-size 32 --seq-length 4096 --bf16 "
      "--use-distributed-optimizer";
  Result<Recipe> recipe = parse_recipe(recipe_text);
  ASSERT_TRUE(recipe.ok()) << recipe.error();
  Result<ResolvedArgs> args = parse_resolved_args(run_log(world, *recipe, 3), "nemotron.log");
  ASSERT_TRUE(args.ok()) << args.error();
  EXPECT_EQ(args->values.at("squared_relu"), "True");
  EXPECT_EQ(args->values.at("swiglu"), "False");
  EXPECT_EQ(args->values.at("rotary_percent"), "0.5");
  EXPECT_EQ(args->values.at("normalization"), "LayerNorm");

  Result<Recipe> pinned = parse_recipe(recipe_text + " --rotary-percent 0.25");
  ASSERT_TRUE(pinned.ok()) << pinned.error();
  Result<ResolvedArgs> pinned_args =
      parse_resolved_args(run_log(world, *pinned, 3), "nemotron-pinned.log");
  ASSERT_TRUE(pinned_args.ok()) << pinned_args.error();
  EXPECT_EQ(pinned_args->values.at("rotary_percent"), "0.25");
}

}  // namespace
}  // namespace attune::sim
