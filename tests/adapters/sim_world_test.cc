// The simulated world: reproducibility from its seeds, hidden factors, noise, slow nodes,
// allocations, and every way a run ends (completed, oom, invalid, crash, infra, hang).
#include "adapters/world/world.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "adapters/model/performance_model.h"
#include "adapters/model/sweep.h"
#include "tests/adapters/sim_world_fixtures.h"

namespace attune::sim {
namespace {

using testing::contains;
using testing::qwen_baseline;
using testing::qwen_workload;
using testing::with;
using testing::without;

// A world without infrastructure failures or slow nodes, so only the recipe decides the outcome.
WorldConfig quiet_world() {
  WorldConfig config;
  config.infra_failures_per_node_hour = 0;
  config.slow_node_probability = 0;
  return config;
}

// Mean step time over the measurement window (steps 4-13 of 14).
double window_mean_s(const SimulatedRun& run) {
  EXPECT_GE(run.step_times_s.size(), 13u);
  double sum = 0;
  for (std::size_t i = 3; i < 13; ++i) sum += run.step_times_s[i];
  return sum / 10.0;
}

TEST(SimWorld, SameSeedsAndNodesGiveTheSameRun) {
  const World world(qwen_workload(), WorldConfig{});
  const Recipe recipe = qwen_baseline();
  const std::vector<std::string> nodes = {"node-002", "node-005"};
  const SimulatedRun a = world.simulate(recipe, 14, 7, nodes, false);
  const SimulatedRun b = world.simulate(recipe, 14, 7, nodes, false);
  EXPECT_EQ(a.outcome, b.outcome);
  EXPECT_EQ(a.step_times_s, b.step_times_s);
  EXPECT_EQ(a.loss.lm_loss, b.loss.lm_loss);
  EXPECT_EQ(a.loss.grad_norm, b.loss.grad_norm);
  EXPECT_EQ(a.startup_s, b.startup_s);
  EXPECT_EQ(a.end_s, b.end_s);

  const World again(qwen_workload(), WorldConfig{});
  EXPECT_EQ(again.simulate(recipe, 14, 7, nodes, false).step_times_s, a.step_times_s);

  const SimulatedRun other_seed = world.simulate(recipe, 14, 8, nodes, false);
  EXPECT_NE(other_seed.step_times_s, a.step_times_s);
  const SimulatedRun other_nodes = world.simulate(recipe, 14, 7, {"node-001", "node-003"}, false);
  EXPECT_NE(other_nodes.step_times_s, a.step_times_s);
}

TEST(SimWorld, HiddenFactorsDifferFromOneAndAreReproduciblePerRealitySeed) {
  const Workload workload = qwen_workload();
  WorldConfig config;
  const CostFactors f = hidden_factors(workload, config);
  const std::vector<double> terms = {f.gemm,      f.attention, f.elementwise, f.tp_comm,
                                     f.cp_comm,   f.ep_a2a,    f.pp_p2p,      f.dp_comm,
                                     f.optimizer, f.recompute, f.host};
  int away_from_one = 0;
  for (const double term : terms) {
    EXPECT_GE(term, 1.0 - config.factor_spread);
    EXPECT_LE(term, 1.0 + config.factor_spread);
    if (std::abs(term - 1.0) > 0.02) ++away_from_one;
  }
  EXPECT_GE(away_from_one, 6);
  EXPECT_GE(f.memory, 1.0 - config.memory_factor_spread);
  EXPECT_LE(f.memory, 1.0 + config.memory_factor_spread);

  const CostFactors same = hidden_factors(workload, config);
  EXPECT_EQ(same.gemm, f.gemm);
  EXPECT_EQ(same.ep_a2a, f.ep_a2a);
  EXPECT_EQ(World(workload, config).hidden_factors().host, f.host);

  WorldConfig other = config;
  other.reality_seed = 42;
  EXPECT_NE(hidden_factors(workload, other).gemm, f.gemm);

  // Another hardware/model pair in the same world draws its own factors.
  const Workload llama = testing::load("llama3.1-8b", "h100", 8, 4096, 128);
  EXPECT_NE(hidden_factors(llama, config).gemm, f.gemm);
}

TEST(SimWorld, RealityIsNotTheModel) {
  const Workload workload = qwen_workload();
  const World world(workload, quiet_world());
  const Recipe recipe = qwen_baseline();
  const Prediction clean = predict(workload, recipe);
  const SimulatedRun run = world.simulate(recipe, 14, 1, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kCompleted);
  EXPECT_GT(std::abs(run.prediction.step_time_s / clean.step_time_s - 1.0), 0.01);
  EXPECT_NEAR(window_mean_s(run) / run.prediction.step_time_s, 1.0, 0.05);
}

double window_rsd(double noise_rsd) {
  WorldConfig config = quiet_world();
  config.noise_rsd = noise_rsd;
  const World world(qwen_workload(), config);
  const Recipe recipe = qwen_baseline();
  const std::vector<std::string> nodes = {"node-001", "node-002"};
  std::vector<double> means;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    means.push_back(window_mean_s(world.simulate(recipe, 14, seed, nodes, false)));
  }
  const double mean = std::accumulate(means.begin(), means.end(), 0.0) / means.size();
  double sq = 0;
  for (const double m : means) sq += (m - mean) * (m - mean);
  return std::sqrt(sq / (means.size() - 1)) / mean;
}

TEST(SimWorld, RunToRunNoiseIsCloseToTheConfiguredRsd) {
  EXPECT_NEAR(window_rsd(0.01), 0.01, 0.002);
  EXPECT_NEAR(window_rsd(0.03), 0.03, 0.006);
}

TEST(SimWorld, SlowNodeSlowsTheRunsThatHoldIt) {
  WorldConfig config = quiet_world();
  config.noise_rsd = 0;
  const World steady(qwen_workload(), config);
  config.slow_node_probability = 1.0;
  const World slow(qwen_workload(), config);
  const Recipe recipe = qwen_baseline();
  const std::vector<std::string> nodes = {"node-001", "node-002"};
  EXPECT_TRUE(slow.is_slow_node("node-001"));
  const SimulatedRun a = steady.simulate(recipe, 14, 3, nodes, false);
  const SimulatedRun b = slow.simulate(recipe, 14, 3, nodes, false);
  EXPECT_EQ(b.slow_node_factor, config.slow_node_factor);
  EXPECT_NEAR(window_mean_s(b) / window_mean_s(a), config.slow_node_factor, 1e-9);
  // The telemetry shows it: the lowest GPU of a healthy allocation draws 98-100% of the median
  // GPU's power, the slow node's 1 / 1.15 of that.
  EXPECT_GE(a.lowest_gpu_power_fraction, 0.98);
  EXPECT_LE(a.lowest_gpu_power_fraction, 1.0);
  EXPECT_NEAR(b.lowest_gpu_power_fraction * config.slow_node_factor, a.lowest_gpu_power_fraction,
              1e-12);
  EXPECT_LT(b.lowest_gpu_power_fraction, 0.93);

  // At the default rate some nodes of a large cluster are slow, persistently.
  const World world(qwen_workload(), WorldConfig{});
  // 1 in 500 (WorldConfig): about 40 of 20000.
  int slow_nodes = 0;
  for (int i = 0; i < 20000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%05d", i);
    if (world.is_slow_node(name)) ++slow_nodes;
    EXPECT_EQ(world.is_slow_node(name), world.is_slow_node(name));
  }
  EXPECT_GT(slow_nodes, 20);
  EXPECT_LT(slow_nodes, 65);
}

TEST(SimWorld, AllocationsAreDistinctAndRespectExclusions) {
  const World world(qwen_workload(), WorldConfig{});
  EXPECT_EQ(world.nodes_needed(), 2);
  EXPECT_GE(world.node_names().size(), static_cast<std::size_t>(3 * 2 + 2));
  std::set<std::vector<std::string>> distinct;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    const std::vector<std::string> nodes = world.allocate(2, {}, seed);
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_NE(nodes[0], nodes[1]);
    EXPECT_TRUE(std::is_sorted(nodes.begin(), nodes.end()));
    EXPECT_EQ(world.allocate(2, {}, seed), nodes);
    distinct.insert(nodes);
  }
  EXPECT_GE(distinct.size(), 5u);

  const std::vector<std::string> busy = {"node-001", "node-002", "node-003"};
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    for (const std::string& node : world.allocate(2, busy, seed)) {
      EXPECT_EQ(std::find(busy.begin(), busy.end(), node), busy.end());
    }
  }
  std::vector<std::string> all_but_one = world.node_names();
  all_but_one.pop_back();
  EXPECT_TRUE(world.allocate(2, all_but_one, 0).empty());
  EXPECT_TRUE(
      world.allocate(static_cast<std::uint32_t>(world.node_names().size() + 1), {}, 0).empty());
}

// Nodes to avoid are kept in the order given while enough others remain: asked to avoid every
// node but one, an allocation of two avoids all of them but the last one asked, and never a busy
// node.
TEST(SimWorld, NodesToAvoidAreKeptInOrderWhileEnoughOthersRemain) {
  const World world(qwen_workload(), WorldConfig{});
  const std::vector<std::string>& names = world.node_names();
  const std::vector<std::string> busy = {names[0]};
  std::vector<std::string> avoid(names.rbegin(), names.rend() - 2);  // all but the first two
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    const std::vector<std::string> nodes = world.allocate_avoiding(2, busy, avoid, seed);
    std::vector<std::string> expected = {names[1], avoid.back()};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(nodes, expected);
  }
  EXPECT_TRUE(
      world.allocate_avoiding(2, std::vector<std::string>(names.begin() + 1, names.end()), {}, 0)
          .empty());
}

TEST(SimWorld, AnEmptyAllocationIsChosenByTheRunSeed) {
  const World world(qwen_workload(), quiet_world());
  const SimulatedRun run = world.simulate(qwen_baseline(), 3, 11, {}, false);
  EXPECT_EQ(run.nodes, world.allocate(2, {}, 11));
}

TEST(SimWorld, CompletedRunTimeline) {
  const World world(qwen_workload(), quiet_world());
  const SimulatedRun run = world.simulate(qwen_baseline(), 14, 2, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kCompleted);
  EXPECT_EQ(run.steps_requested, 14u);
  EXPECT_EQ(run.step_times_s.size(), 14u);
  EXPECT_GT(run.startup_s, 30.0);
  EXPECT_GT(run.step_times_s[0], 2.0 * run.step_times_s[5]);  // warm-up
  const double end_of_steps =
      run.startup_s + std::accumulate(run.step_times_s.begin(), run.step_times_s.end(), 0.0);
  EXPECT_NEAR(run.last_progress_s, end_of_steps, 1e-9);
  EXPECT_GT(run.end_s, run.last_progress_s);
  EXPECT_EQ(run.loss.lm_loss.size(), 14u);
  EXPECT_EQ(run.peak_memory_gib_by_stage.size(), 1u);
  EXPECT_TRUE(run.error.empty());
}

TEST(SimWorld, ProfiledRunAddsThreeTracedSteps) {
  const World world(qwen_workload(), quiet_world());
  const SimulatedRun run = world.simulate(qwen_baseline(), 14, 2, {}, true);
  ASSERT_EQ(run.outcome, JobOutcome::kCompleted);
  EXPECT_EQ(run.steps_requested, 14u + kProfiledSteps);
  EXPECT_EQ(run.first_profiled_step, 15u);
  EXPECT_EQ(run.step_times_s.size(), 17u);
}

TEST(SimWorld, OutOfMemoryInTheFirstStep) {
  const World world(qwen_workload(), quiet_world());
  const SimulatedRun run =
      world.simulate(with(qwen_baseline(), "micro-batch-size", "4"), 14, 1, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kOutOfMemory);
  EXPECT_EQ(run.failed_step, 1u);
  EXPECT_EQ(run.failed_stage, 0);
  EXPECT_TRUE(run.step_times_s.empty());
  EXPECT_GT(run.peak_memory_gib_by_stage[0], qwen_workload().hardware.hbm_capacity_gib);
  EXPECT_GT(run.end_s, run.startup_s);
  EXPECT_TRUE(contains(run.error, "pipeline stage 0 needs")) << run.error;
}

TEST(SimWorld, OutOfMemoryWhileBuildingTheModel) {
  const World world(qwen_workload(), quiet_world());
  Recipe recipe = with(qwen_baseline(), "tensor-model-parallel-size", "1");
  recipe = with(recipe, "expert-model-parallel-size", "1");
  recipe = without(recipe, "sequence-parallel");
  const SimulatedRun run = world.simulate(recipe, 14, 1, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kOutOfMemory);
  EXPECT_EQ(run.failed_step, 0u);
  EXPECT_EQ(run.end_s, run.startup_s);
}

TEST(SimWorld, InvalidLayoutFailsAtStartupWithMegatronsAssertion) {
  const World world(qwen_workload(), quiet_world());
  const SimulatedRun run =
      world.simulate(with(qwen_baseline(), "tensor-model-parallel-size", "3"), 14, 1, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kInvalidAtStartup);
  EXPECT_TRUE(contains(run.error, "must be a multiple of tensor_model_parallel_size (3)") ||
              contains(run.error, "is not divisible by"))
      << run.error;
  EXPECT_TRUE(run.step_times_s.empty());
  EXPECT_LT(run.end_s, 60.0);
}

TEST(SimWorld, DeepepAcrossNodesFailsAtStartupAndWorksWithinANode) {
  const World world(qwen_workload(), quiet_world());
  const Recipe flex = with(qwen_baseline(), "moe-token-dispatcher-type", "flex");
  // EP 8 x ETP 1 stays inside a node of 8.
  const SimulatedRun inside = world.simulate(flex, 14, 1, {}, false);
  EXPECT_EQ(inside.outcome, JobOutcome::kCompleted) << inside.error;
  // EP 16 spans both nodes.
  Recipe across = with(flex, "expert-model-parallel-size", "16");
  const SimulatedRun run = world.simulate(across, 14, 1, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kCrash) << run.error;
  EXPECT_EQ(run.defect, StackDefect::kDeepepAcrossNvlinkDomains);
  EXPECT_TRUE(run.step_times_s.empty());
  EXPECT_EQ(run.failed_step, 1u);
  EXPECT_LT(run.end_s, run.startup_s + 0.5 * inside.step_times_s[0]);

  // The same layout with the defect switched off runs.
  WorldConfig config = quiet_world();
  config.defects.clear();
  EXPECT_EQ(World(qwen_workload(), config).simulate(across, 14, 1, {}, false).outcome,
            JobOutcome::kCompleted);
}

TEST(SimWorld, KnownDefectConjunctionHangs) {
  const Workload glm = testing::load("glm-4.5", "b200", 128, 4096, 2048);
  const World world(glm, quiet_world());
  const Recipe baseline = testing::preset("glm-4.5-b200x128");
  EXPECT_NE(world.simulate(baseline, 3, 1, {}, false).outcome, JobOutcome::kHang);
  // Expert parallelism inside a node leaves expert data parallelism 2, with both data-parallel
  // overlaps and the shared-expert overlap on.
  const SimulatedRun run =
      world.simulate(with(baseline, "expert-model-parallel-size", "8"), 14, 1, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kHang) << run.error;
  EXPECT_EQ(run.defect, StackDefect::kDataParallelOverlapWithExpertDataParallel);
  EXPECT_TRUE(run.step_times_s.empty());
  EXPECT_EQ(run.last_progress_s, run.startup_s);
}

TEST(SimWorld, InfrastructureFailuresBlameANodeOfTheAllocation) {
  WorldConfig config = quiet_world();
  config.infra_failures_per_node_hour = 20.0;  // about one per run
  const World world(qwen_workload(), config);
  int failures = 0, network = 0, lost = 0;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    const std::vector<std::string> nodes = world.allocate(2, {}, seed);
    const SimulatedRun run = world.simulate(qwen_baseline(), 14, seed, nodes, false);
    if (run.outcome != JobOutcome::kInfrastructure) continue;
    ++failures;
    EXPECT_NE(std::find(nodes.begin(), nodes.end(), run.blamed_node), nodes.end());
    EXPECT_TRUE(contains(run.error, run.blamed_node));
    EXPECT_LT(run.step_times_s.size(), 14u);
    EXPECT_GT(run.end_s, run.startup_s * 0.0);
    (run.infra == InfraFailure::kNetworkError ? network : lost)++;
  }
  EXPECT_GT(failures, 15);
  EXPECT_GT(network, 0);
  EXPECT_GT(lost, 0);

  // The default rate rarely fails a short run.
  const World calm(qwen_workload(), WorldConfig{});
  int calm_failures = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    if (calm.simulate(qwen_baseline(), 14, seed, {}, false).outcome ==
        JobOutcome::kInfrastructure) {
      ++calm_failures;
    }
  }
  EXPECT_LE(calm_failures, 2);
}

TEST(SimWorld, DivergentLearningRateCrashesWithNan) {
  const World world(qwen_workload(), quiet_world());
  const SimulatedRun run = world.simulate(with(qwen_baseline(), "lr", "0.02"), 14, 1, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kCrash) << run.error;
  ASSERT_TRUE(run.loss.nan_step.has_value());
  EXPECT_EQ(run.failed_step, *run.loss.nan_step);
  EXPECT_EQ(run.step_times_s.size(), *run.loss.nan_step - 1);

  // Without Megatron's NaN check the job runs on and prints NaN iterations.
  const SimulatedRun unchecked =
      world.simulate(with(with(qwen_baseline(), "lr", "0.02"), "no-check-for-nan-in-loss-and-grad"),
                     14, 1, {}, false);
  EXPECT_EQ(unchecked.outcome, JobOutcome::kCompleted);
}

TEST(SimWorld, ExpertTensorParallelismWithoutExpertParallelismChangesTraining) {
  const World world(qwen_workload(), quiet_world());
  Recipe defect = with(qwen_baseline(), "expert-model-parallel-size", "1");
  defect = with(defect, "expert-tensor-parallel-size", "8");
  defect = with(defect, "tensor-model-parallel-size", "8");
  const SimulatedRun run = world.simulate(defect, 20, 1, {}, false);
  ASSERT_EQ(run.outcome, JobOutcome::kCompleted) << run.error;
  EXPECT_EQ(run.defect, StackDefect::kExpertTensorParallelWithoutExpertParallel);
  const SimulatedRun baseline = world.simulate(qwen_baseline(), 20, 1, {}, false);
  EXPECT_GT(testing::max_relative_difference(run.loss.lm_loss, baseline.loss.lm_loss), 0.008);
}

// The paper's Mixtral-8x22B finding holds in the default world too, not only in the clean model:
// from the expert-tuned recipe nothing gains more than about 5 % at reality seed 0. Overlapped
// communication costs the compute it overlaps there as well, so the overlap switches and the
// TP4 PP2 ETP4 layout that black-box tuners reach for gain little.
TEST(SimWorld, MixtralExpertRecipeIsNearTheWorldsOptimum) {
  const World world(testing::mixtral_workload(), quiet_world());
  ASSERT_EQ(world.config().reality_seed, 0u);
  const Recipe baseline = testing::mixtral_baseline();
  const SimulatedRun base = world.simulate(baseline, 3, 1, {}, false);
  ASSERT_EQ(base.outcome, JobOutcome::kCompleted) << base.error;
  const auto world_gain = [&](const Recipe& recipe) {
    const SimulatedRun run = world.simulate(recipe, 3, 1, {}, false);
    EXPECT_EQ(run.outcome, JobOutcome::kCompleted) << run.error;
    return run.prediction.tokens_per_s_per_gpu / base.prediction.tokens_per_s_per_gpu - 1;
  };
  Recipe ep_overlap = with(baseline, "overlap-moe-expert-parallel-comm");
  EXPECT_LT(world_gain(ep_overlap), 0.03);
  EXPECT_LT(world_gain(with(ep_overlap, "tp-comm-overlap")), 0.05);
  Recipe tp4 = with(ep_overlap, "tensor-model-parallel-size", "4");
  tp4 = with(tp4, "pipeline-model-parallel-size", "2");
  tp4 = with(tp4, "expert-tensor-parallel-size", "4");
  tp4 = with(tp4, "num-virtual-stages-per-pipeline-rank", "4");
  EXPECT_LT(world_gain(tp4), 0.03);
  EXPECT_LT(world_gain(with(tp4, "tp-comm-overlap")), 0.05);

  // The oracle over the whole layout and overlap space, priced with the world's hidden factors:
  // its best gains 4.9 % at seed 0.
  SweepOptions options;
  options.factors = world.hidden_factors();
  Result<SweepResult> oracle = sweep(world.workload(), baseline, options);
  ASSERT_TRUE(oracle.ok()) << oracle.error();
  ASSERT_FALSE(oracle->best.empty());
  EXPECT_NEAR(oracle->baseline.step_time_s, base.prediction.step_time_s, 1e-9);
  EXPECT_LT(
      oracle->best.front().prediction.tokens_per_s_per_gpu / oracle->baseline.tokens_per_s_per_gpu -
          1,
      0.055);
}

// The paper's GLM-4.5 finding holds at reality seed 0 too: experts inside a node help, DeepEP
// helps more, and TP1 at 16 pipeline stages with full recomputation is faster still, by more than
// +30 % over the public recipe.
TEST(SimWorld, Glm45FindingHoldsInTheWorld) {
  const World world(testing::load("glm-4.5", "b200", 128, 4096, 2048), quiet_world());
  ASSERT_EQ(world.config().reality_seed, 0u);
  const auto world_run = [&](const Recipe& recipe) {
    return world.simulate(recipe, 3, 1, {}, false);
  };
  const Recipe baseline = testing::preset("glm-4.5-b200x128");
  const SimulatedRun base = world_run(baseline);
  ASSERT_EQ(base.outcome, JobOutcome::kCompleted) << base.error;
  const auto world_gain = [&](const Recipe& recipe) {
    const SimulatedRun run = world_run(recipe);
    EXPECT_EQ(run.outcome, JobOutcome::kCompleted) << run.error;
    return run.prediction.tokens_per_s_per_gpu / base.prediction.tokens_per_s_per_gpu - 1;
  };
  // Seed 0's stack deadlocks the first gradient reduction under shared-expert overlap once the
  // experts have data parallelism (EP8 at PP8), so the variants run without it.
  const Recipe ep8 =
      with(without(baseline, "moe-shared-expert-overlap"), "expert-model-parallel-size", "8");
  const double ep8_gain = world_gain(ep8);
  const double deepep_gain = world_gain(with(ep8, "moe-token-dispatcher-type", "flex"));
  Recipe tp1 = with(ep8, "tensor-model-parallel-size", "1");
  tp1 = without(tp1, "sequence-parallel");
  tp1 = with(tp1, "pipeline-model-parallel-size", "16");
  tp1 = with(tp1, "decoder-first-pipeline-num-layers", "6");
  tp1 = with(tp1, "decoder-last-pipeline-num-layers", "2");
  // The paper's TP1 run needed full recomputation; the model fits it under the baseline's
  // selective recomputation too (sim_findings_test.cc), so that is the layout that roughly
  // doubles the intranode-expert gain. Full recomputation costs time: in this world it no longer
  // beats DeepEP inside a node, where the paper measured it ahead.
  const double selective_gain = world_gain(tp1);
  Recipe full = with(tp1, "recompute-granularity", "full");
  full = with(full, "recompute-method", "uniform");
  full = with(full, "recompute-num-layers", "1");
  const double full_gain = world_gain(full);
  EXPECT_GT(ep8_gain, 0.1);
  EXPECT_GT(deepep_gain, ep8_gain);
  EXPECT_GT(selective_gain, 1.5 * deepep_gain);
  EXPECT_GT(selective_gain, full_gain);
  EXPECT_GT(full_gain, 0.3);
  EXPECT_LT(full_gain, 0.8);
  std::printf(
      "GLM-4.5 world seed 0: EP8 %+.1f%%, DeepEP %+.1f%%, TP1 PP16 %+.1f%% (full recomputation "
      "%+.1f%%)\n",
      100 * ep8_gain, 100 * deepep_gain, 100 * selective_gain, 100 * full_gain);
}

}  // namespace
}  // namespace attune::sim
