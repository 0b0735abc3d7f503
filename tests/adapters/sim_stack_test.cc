// Stack profiles: the presets, the file format and its errors, what a stack does to a prediction
// (CUDA graphs it cannot capture, the loop's time per microbatch and between steps, its term
// factors), and the world's premise that a working baseline keeps working.
#include "adapters/model/stack_profile.h"

#include <gtest/gtest.h>

#include <set>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "adapters/model/sweep.h"
#include "adapters/world/kineto_writer.h"
#include "adapters/world/world.h"
#include "tests/adapters/sim_world_fixtures.h"

namespace attune::sim {
namespace {

using testing::contains;
using testing::qwen_baseline;
using testing::qwen_workload;
using testing::with;

StackProfile preset_stack(std::string_view name) {
  Result<StackProfile> stack = load_stack(name);
  EXPECT_TRUE(stack.ok()) << (stack.ok() ? "" : stack.error());
  return stack.ok() ? std::move(stack).value() : StackProfile{};
}

// `a` runs as `b` on `stack` (the same step and memory) but not on the calibrated stack, so the
// likeness is the stack's doing and the check could fail.
void expect_alike_only_on(const Workload& w, const Recipe& a, const Recipe& b,
                          const StackProfile& stack) {
  const Prediction pa = predict_on_stack(w, a, stack);
  const Prediction pb = predict_on_stack(w, b, stack);
  ASSERT_TRUE(pa.valid && pb.valid) << pa.error << pb.error;
  EXPECT_EQ(pa.step_time_s, pb.step_time_s);
  EXPECT_EQ(pa.peak_memory_gib, pb.peak_memory_gib);
  const Prediction own_a = predict_on_stack(w, a, StackProfile{});
  const Prediction own_b = predict_on_stack(w, b, StackProfile{});
  ASSERT_TRUE(own_a.valid && own_b.valid) << own_a.error << own_b.error;
  EXPECT_NE(own_a.step_time_s, own_b.step_time_s);
}

TEST(SimStack, PresetsLoadAndTheDefaultChangesNothing) {
  const std::vector<std::string> names = stack_preset_names();
  EXPECT_TRUE(std::find(names.begin(), names.end(), "megatron-bridge") != names.end());
  EXPECT_TRUE(std::find(names.begin(), names.end(), "slime") != names.end());
  EXPECT_EQ(preset_stack("").name, "megatron-bridge");

  const StackProfile bridge = preset_stack("megatron-bridge");
  EXPECT_EQ(bridge.name, "megatron-bridge");
  EXPECT_TRUE(bridge.cuda_graphs);
  EXPECT_EQ(bridge.between_steps_s, 0.0);
  EXPECT_EQ(bridge.per_microbatch_s, 0.0);
  EXPECT_EQ(bridge.factors.host, 1.0);
  EXPECT_EQ(bridge.factors.gemm, 1.0);

  const StackProfile slime = preset_stack("slime");
  EXPECT_EQ(slime.name, "slime");
  EXPECT_FALSE(slime.cuda_graphs);
  EXPECT_TRUE(bridge.p2p_overlap);
  EXPECT_FALSE(slime.p2p_overlap);
  EXPECT_GT(slime.between_steps_s, 0.0);
  EXPECT_GT(slime.factors.host, 1.0);

  const Workload w = qwen_workload();
  const Recipe recipe = qwen_baseline();
  const Prediction plain = predict(w, recipe);
  const Prediction on_bridge = predict_on_stack(w, recipe, bridge);
  ASSERT_TRUE(plain.valid);
  EXPECT_EQ(on_bridge.step_time_s, plain.step_time_s);
  EXPECT_EQ(on_bridge.tokens_per_s_per_gpu, plain.tokens_per_s_per_gpu);
  EXPECT_EQ(on_bridge.peak_memory_gib, plain.peak_memory_gib);
}

TEST(SimStack, BadFilesAreRefusedWithTheLineAndTheKey) {
  Result<StackProfile> unknown = parse_stack_toml("name = \"x\"\n[step]\nhots = 2.0\n", "s.toml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.error(), "s.toml:3")) << unknown.error();
  EXPECT_TRUE(contains(unknown.error(), "step.hots")) << unknown.error();

  Result<StackProfile> negative =
      parse_stack_toml("name = \"x\"\n[loop]\nbetween_steps_s = -1\n", "s.toml");
  ASSERT_FALSE(negative.ok());
  EXPECT_TRUE(contains(negative.error(), "s.toml:3")) << negative.error();
  EXPECT_TRUE(contains(negative.error(), "loop.between_steps_s")) << negative.error();

  Result<StackProfile> nameless = parse_stack_toml("[loop]\ncuda_graphs = false\n", "s.toml");
  ASSERT_FALSE(nameless.ok());
  EXPECT_TRUE(contains(nameless.error(), "name")) << nameless.error();

  Result<StackProfile> missing = load_stack("no-such-stack");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error(), "slime")) << missing.error();
}

TEST(SimStack, WithoutCudaGraphsAGraphedRecipeRunsAsTheEagerOne) {
  const Workload w = qwen_workload();
  const Recipe eager = qwen_baseline();
  const Recipe graphed = with(with(eager, "cuda-graph-impl", "transformer_engine"),
                              "cuda-graph-modules", "moe_router moe_preprocess");
  StackProfile no_graphs;
  no_graphs.cuda_graphs = false;
  // Where graphs are captured they save host time.
  expect_alike_only_on(w, graphed, eager, no_graphs);
}

TEST(SimStack, WithoutPipelineOverlapAnInterleavedRecipeRunsAsOneThatTurnsItOff) {
  const Workload w = testing::mixtral_workload();
  const Recipe interleaved = testing::mixtral_baseline();
  const Recipe exposed = with(interleaved, "no-overlap-p2p-communication");
  StackProfile no_overlap;
  no_overlap.p2p_overlap = false;
  // On a stack without the overlap the interleaved recipe runs as one that turns it off; on the
  // calibrated stack its exchanges cost less.
  expect_alike_only_on(w, interleaved, exposed, no_overlap);
  const Prediction overlapped = predict_on_stack(w, interleaved, StackProfile{});
  const Prediction not_overlapped = predict_on_stack(w, interleaved, no_overlap);
  EXPECT_LT(overlapped.breakdown.pp_p2p_s, not_overlapped.breakdown.pp_p2p_s);
}

TEST(SimStack, ASweepOnAStackWithoutGraphsTriesNoGraphs) {
  const Workload w = qwen_workload();
  SweepOptions options;
  options.top_k = 50;
  const auto count_graphed = [](const SweepResult& result) {
    return std::count_if(result.best.begin(), result.best.end(), [](const SweepEntry& e) {
      return e.layout.layout.cuda_graph != CudaGraphImpl::kNone;
    });
  };
  Result<SweepResult> with_graphs = sweep(w, qwen_baseline(), options);
  ASSERT_TRUE(with_graphs.ok());
  EXPECT_GT(count_graphed(with_graphs.value()), 0);
  options.stack = preset_stack("slime");
  options.factors = options.stack.factors;
  Result<SweepResult> without = sweep(w, qwen_baseline(), options);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(count_graphed(without.value()), 0);
  EXPECT_LT(without->layouts_considered, with_graphs->layouts_considered);
}

TEST(SimStack, WithVariableSequenceLengthsAnAllgatherRecipeRunsAsAlltoall) {
  const Workload w = qwen_workload();
  const Recipe alltoall = qwen_baseline();  // EP 8 with the alltoall dispatcher
  const Recipe allgather = with(alltoall, "moe-token-dispatcher-type", "allgather");
  StackProfile varlen;
  varlen.variable_seq_lengths = true;
  // A stack with fixed lengths runs the allgather dispatcher itself.
  expect_alike_only_on(w, allgather, alltoall, varlen);

  EXPECT_TRUE(preset_stack("slime").variable_seq_lengths);
  EXPECT_FALSE(preset_stack("megatron-bridge").variable_seq_lengths);
  Result<StackProfile> bad =
      parse_stack_toml("name = \"x\"\n[loop]\nvariable_seq_lengths = 2\n", "s.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error(), "s.toml:3")) << bad.error();

  // The oracle does not try what such a stack would run as another draw.
  SweepOptions options;
  options.top_k = 400;
  const auto count_allgather = [](const SweepResult& result) {
    return std::count_if(result.best.begin(), result.best.end(), [](const SweepEntry& e) {
      return e.layout.layout.dispatcher == Dispatcher::kAllgather;
    });
  };
  Result<SweepResult> fixed = sweep(w, alltoall, options);
  ASSERT_TRUE(fixed.ok());
  EXPECT_GT(count_allgather(fixed.value()), 0);
  options.stack = varlen;
  Result<SweepResult> packed = sweep(w, alltoall, options);
  ASSERT_TRUE(packed.ok());
  EXPECT_EQ(count_allgather(packed.value()), 0);
  EXPECT_LT(packed->layouts_considered, fixed->layouts_considered);

  // From an allgather baseline, an alltoall draw without overlaps is the baseline's own draw
  // again; only the overlaps allgather cannot have make an alltoall draw new.
  options.stack = varlen;
  Result<SweepResult> from_allgather = sweep(w, allgather, options);
  ASSERT_TRUE(from_allgather.ok());
  for (const SweepEntry& e : from_allgather->best) {
    const Layout& l = e.layout.layout;
    EXPECT_FALSE(l.dispatcher == Dispatcher::kAlltoall && !l.ep_overlap &&
                 !l.shared_expert_overlap);
  }
}

// The trace of a run shows the kernels of the layout as the stack ran it.
TEST(SimStack, ATraceShowsTheDispatcherTheStackRan) {
  const Workload w = qwen_workload();
  const Recipe allgather = with(qwen_baseline(), "moe-token-dispatcher-type", "allgather");
  const auto collectives = [&](bool varlen) {
    WorldConfig config;
    config.infra_failures_per_node_hour = 0;
    config.slow_node_probability = 0;
    config.stack.variable_seq_lengths = varlen;
    const World world(w, config);
    const SimulatedRun run = world.simulate(allgather, 1, 1, {}, true);
    EXPECT_EQ(run.outcome, JobOutcome::kCompleted) << run.error;
    std::set<std::string> names;
    if (run.outcome != JobOutcome::kCompleted) return names;
    EXPECT_TRUE(run.layout.has_value());
    const kineto::TraceRecords trace = stage_trace(w, allgather, run, 0, TraceOptions{});
    for (const kineto::GpuRow& row : trace.gpu) {
      if (row.collective) names.insert(row.collective->collective);
    }
    return names;
  };
  EXPECT_FALSE(collectives(false).contains("all_to_allv"));  // allgather runs as itself
  EXPECT_TRUE(collectives(true).contains("all_to_allv"));
}

TEST(SimStack, TheLoopAddsItsTimePerMicrobatchSlotAndPerStep) {
  const Workload w = qwen_workload();
  const Recipe recipe = qwen_baseline();
  const Prediction plain = predict(w, recipe);
  ASSERT_TRUE(plain.valid);
  StackProfile loop;
  loop.between_steps_s = 1.5;
  loop.per_microbatch_s = 0.02;
  const Prediction with_loop = predict_on_stack(w, recipe, loop);
  const int stages = static_cast<int>(plain.stages.size());
  const double expected_s = 1.5 + 0.02 * (plain.microbatches + stages - 1);
  EXPECT_NEAR(with_loop.step_time_s - plain.step_time_s, expected_s, 1e-9);
  EXPECT_NEAR(with_loop.breakdown.total_s(), with_loop.step_time_s, 1e-9);
  EXPECT_NEAR(with_loop.tokens_per_s_per_gpu * with_loop.step_time_s,
              plain.tokens_per_s_per_gpu * plain.step_time_s, 1e-6);
}

TEST(SimStack, TermFactorsSlowTheirTermsOnly) {
  const Workload w = qwen_workload();
  const Recipe recipe = qwen_baseline();
  StackProfile slow_gemm;
  slow_gemm.factors.gemm = 2.0;
  const Prediction plain = predict(w, recipe);
  const Prediction slow = predict_on_stack(w, recipe, slow_gemm);
  EXPECT_NEAR(slow.breakdown.gemm_s, 2.0 * plain.breakdown.gemm_s, 1e-9);
  EXPECT_EQ(slow.breakdown.attention_s, plain.breakdown.attention_s);
}

TEST(SimStack, TheWorldRunsItsStackBetweenSteps) {
  WorldConfig calm;
  calm.noise_rsd = 0;
  calm.infra_failures_per_node_hour = 0;
  calm.slow_node_probability = 0;
  WorldConfig looped = calm;
  looped.stack.between_steps_s = 2.0;
  const Workload w = qwen_workload();
  const SimulatedRun a = World(w, calm).simulate(qwen_baseline(), 14, 3, {}, false);
  const SimulatedRun b = World(w, looped).simulate(qwen_baseline(), 14, 3, {}, false);
  ASSERT_EQ(a.outcome, JobOutcome::kCompleted);
  ASSERT_EQ(b.outcome, JobOutcome::kCompleted);
  for (std::size_t step = 3; step < 14; ++step) {
    EXPECT_NEAR(b.step_times_s[step] - a.step_times_s[step], 2.0, 1e-9) << "step " << step + 1;
  }
}

// Llama-3.1-405B's public recipe on 128 B200s with FP32 gradient reduction (without its
// --grad-reduce-in-bf16) uses all but 0.3 GiB of the GPU, so a hidden memory factor above 1 runs
// it out of memory: without the premise, some reality seed does; with the baseline named, none
// does, and the factor is only lowered where it has to be.
TEST(SimStack, AWorkingBaselineKeepsWorkingAtEveryRealitySeed) {
  const Workload w = testing::load("llama3.1-405b", "b200", 128, 8192, 64, Precision::kFp8);
  Recipe baseline = testing::preset("llama3.1-405b-b200x128");
  ASSERT_TRUE(remove_flag(baseline, "--grad-reduce-in-bf16").ok());
  ASSERT_TRUE(predict(w, baseline).fits_in_memory);
  int out_of_memory_without = 0;
  int lowered = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    WorldConfig config;
    config.reality_seed = seed;
    const World without_premise(w, config);
    if (!predict(w, baseline, without_premise.hidden_factors()).fits_in_memory) {
      ++out_of_memory_without;
    }
    config.baseline = baseline;
    const World with_premise(w, config);
    EXPECT_TRUE(predict(w, baseline, with_premise.hidden_factors()).fits_in_memory)
        << "reality seed " << seed;
    EXPECT_LE(with_premise.hidden_factors().memory, without_premise.hidden_factors().memory);
    if (with_premise.hidden_factors().memory < without_premise.hidden_factors().memory) ++lowered;
    EXPECT_EQ(with_premise.hidden_factors().gemm, without_premise.hidden_factors().gemm);
  }
  EXPECT_GT(out_of_memory_without, 0);
  EXPECT_EQ(lowered, out_of_memory_without);
}

}  // namespace
}  // namespace attune::sim
