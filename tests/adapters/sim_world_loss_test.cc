// The loss curves of the simulated world against the correctness gate's known answers:
// objective-preserving changes stay within 0.5 % of the baseline's curve, numeric changes move
// it, and injected faults move it by very different amounts.
#include "adapters/world/loss_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "adapters/world/world.h"
#include "gate/convergence.h"
#include "tests/adapters/sim_world_fixtures.h"

namespace attune::sim {
namespace {

using testing::max_relative_difference;
using testing::qwen_baseline;
using testing::qwen_workload;
using testing::with;
using testing::without;

constexpr std::uint32_t kCheckSteps = 20;  // the gate's check runs
constexpr double kObjectivePreservingMax = 0.005;

WorldConfig quiet_world() {
  WorldConfig config;
  config.infra_failures_per_node_hour = 0;
  return config;
}

// The baseline trains with an auxiliary loss (computed per microbatch) and a learning rate
// large enough that 20 steps move the loss.
Recipe moe_baseline() {
  Recipe recipe = with(qwen_baseline(), "moe-aux-loss-coeff", "1e-3");
  recipe = with(recipe, "lr", "3e-4");
  return with(recipe, "lr-decay-style", "constant");
}

LossCurve curve(const World& world, const Recipe& recipe, std::uint64_t run_seed = 1,
                Fault fault = Fault::kNone) {
  const SimulatedRun run = world.simulate(recipe, kCheckSteps, run_seed, {}, false, fault);
  EXPECT_EQ(run.outcome, JobOutcome::kCompleted) << run.error;
  return run.loss;
}

// Llama-3.1-8B on 8 H100s.
Recipe dense_recipe() {
  Recipe recipe;
  recipe.env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1";
  recipe.flags["--tensor-model-parallel-size"] = "2";
  recipe.flags["--sequence-parallel"] = "";
  recipe.flags["--use-distributed-optimizer"] = "";
  recipe.flags["--micro-batch-size"] = "1";
  recipe.flags["--lr"] = "3e-4";
  return recipe;
}

bool gate_passes(const LossCurve& baseline, const LossCurve& candidate) {
  return compare_loss_curves(baseline.lm_loss, candidate.lm_loss).passed;
}

TEST(SimWorldLoss, FaultNamesRoundTrip) {
  for (const Fault fault : {Fault::kNone, Fault::kAuxLossCoefficient, Fault::kGradientScaling,
                            Fault::kDroppedMicrobatch}) {
    EXPECT_EQ(parse_fault(fault_name(fault)), fault);
  }
  EXPECT_FALSE(parse_fault("bogus").has_value());
}

TEST(SimWorldLoss, CurveIsAFunctionOfDataOrderAndStep) {
  const World world(qwen_workload(), quiet_world());
  const LossCurve a = curve(world, moe_baseline());
  EXPECT_EQ(curve(world, moe_baseline()).lm_loss, a.lm_loss);
  // The loss starts near ln(vocabulary) and falls.
  EXPECT_NEAR(a.lm_loss.front(), std::log(152064.0), 0.6);
  EXPECT_LT(a.lm_loss.back(), a.lm_loss.front() - 1.0);
  // Another data order (--seed) is another curve, beyond reduction noise.
  const LossCurve reseeded = curve(world, with(moe_baseline(), "seed", "4321"));
  EXPECT_GT(max_relative_difference(reseeded.lm_loss, a.lm_loss), 0.01);
  // The balancing loss is logged, near 1, as Megatron's example shows.
  ASSERT_EQ(a.other_losses.size(), 1u);
  EXPECT_EQ(a.other_losses[0].name, "load_balancing_loss");
  for (const double value : a.other_losses[0].values) {
    EXPECT_GT(value, 0.95);
    EXPECT_LT(value, 1.3);
  }
  // The printed learning rate follows the schedule.
  EXPECT_DOUBLE_EQ(a.learning_rate.front(), 3e-4);
}

TEST(SimWorldLoss, ObjectivePreservingChangesStayWithinHalfAPercent) {
  const World world(qwen_workload(), quiet_world());
  const Recipe baseline = moe_baseline();
  const LossCurve reference = curve(world, baseline);
  const std::vector<std::pair<std::string, Recipe>> candidates = {
      {"replicate (another run seed)", baseline},
      {"tensor parallel 4", with(baseline, "tensor-model-parallel-size", "4")},
      {"expert parallel 16", with(baseline, "expert-model-parallel-size", "16")},
      {"pipeline parallel 2", with(with(baseline, "pipeline-model-parallel-size", "2"),
                                   "expert-model-parallel-size", "4")},
      {"flex dispatcher", with(baseline, "moe-token-dispatcher-type", "flex")},
      {"full recompute",
       with(with(with(baseline, "recompute-granularity", "full"), "recompute-method", "uniform"),
            "recompute-num-layers", "1")},
      {"no overlaps", without(without(baseline, "overlap-param-gather"), "overlap-grad-reduce")},
      {"environment",
       [&] {
         Recipe r = baseline;
         r.env["NCCL_ALGO"] = "Ring";
         return r;
       }()},
  };
  for (const auto& [what, recipe] : candidates) {
    const LossCurve candidate = curve(world, recipe, 2);
    EXPECT_LE(max_relative_difference(candidate.lm_loss, reference.lm_loss),
              kObjectivePreservingMax)
        << what;
    EXPECT_GT(max_relative_difference(candidate.lm_loss, reference.lm_loss), 0.0) << what;
    EXPECT_TRUE(gate_passes(reference, candidate)) << what;
  }
}

TEST(SimWorldLoss, DenseMicrobatchSizeIsObjectivePreserving) {
  const Workload llama = testing::load("llama3.1-8b", "h100", 8, 4096, 64);
  const World world(llama, quiet_world());
  const Recipe dense = dense_recipe();
  const LossCurve a = curve(world, dense);
  const LossCurve b = curve(world, with(dense, "micro-batch-size", "2"), 2);
  EXPECT_LE(max_relative_difference(a.lm_loss, b.lm_loss), kObjectivePreservingMax);
  EXPECT_TRUE(a.other_losses.empty());
}

TEST(SimWorldLoss, NumericChangesMoveTheCurve) {
  const World world(qwen_workload(), quiet_world());
  const Recipe baseline = moe_baseline();
  const LossCurve reference = curve(world, baseline);
  struct Case {
    std::string what;
    LossCurve candidate;
  };
  std::vector<Case> cases = {
      // The load-balancing loss is computed per microbatch: two rows per microbatch route
      // differently. (The baseline's MBS 2 does not fit in memory with selective recompute; full
      // recomputation is objective-preserving.)
      {"MoE micro-batch size 2",
       curve(world, with(with(with(with(baseline, "micro-batch-size", "2"), "recompute-granularity",
                                   "full"),
                              "recompute-method", "uniform"),
                         "recompute-num-layers", "1"))},
      {"grad-reduce-in-bf16", curve(world, with(baseline, "grad-reduce-in-bf16"))},
      {"learning rate x2", curve(world, with(baseline, "lr", "6e-4"))},
      {"auxiliary-loss coefficient x10",
       curve(world, with(baseline, "moe-aux-loss-coeff", "1e-2"))},
      {"seq_aux_loss",
       curve(world, with(baseline, "moe-router-load-balancing-type", "seq_aux_loss"))},
  };
  const World fp8_world(qwen_workload(Precision::kFp8), quiet_world());
  cases.push_back({"fp8", curve(fp8_world, with(baseline, "fp8-format", "hybrid"))});
  for (const Case& c : cases) {
    EXPECT_GT(max_relative_difference(c.candidate.lm_loss, reference.lm_loss), 0.006) << c.what;
  }
}

TEST(SimWorldLoss, MoeMicrobatchSizeMovesTheBalancingLoss) {
  const World world(qwen_workload(), quiet_world());
  const Recipe full_recompute = with(
      with(with(moe_baseline(), "recompute-granularity", "full"), "recompute-method", "uniform"),
      "recompute-num-layers", "1");
  const LossCurve one = curve(world, full_recompute);
  const LossCurve two = curve(world, with(full_recompute, "micro-batch-size", "2"));
  EXPECT_GT(max_relative_difference(one.other_losses[0].values, two.other_losses[0].values), 0.003);
}

TEST(SimWorldLoss, FaultsMoveTheLossByDifferentAmounts) {
  const World world(qwen_workload(), quiet_world());
  const Recipe baseline = moe_baseline();
  const LossCurve reference = curve(world, baseline);
  const LossCurve scaled = curve(world, baseline, 2, Fault::kGradientScaling);
  const LossCurve dropped = curve(world, baseline, 2, Fault::kDroppedMicrobatch);
  const LossCurve aux = curve(world, baseline, 2, Fault::kAuxLossCoefficient);

  // The gradient-scaling bug moves the 20-step loss clearly: the gate catches it.
  EXPECT_GT(std::abs(scaled.lm_loss.back() / reference.lm_loss.back() - 1.0), 0.05);
  EXPECT_FALSE(gate_passes(reference, scaled));
  EXPECT_GT(scaled.grad_norm.front(), 10.0 * reference.grad_norm.front());
  // A dropped microbatch barely moves it: the gate passes it.
  const double dropped_move = max_relative_difference(dropped.lm_loss, reference.lm_loss);
  EXPECT_GT(dropped_move, 0.0);
  EXPECT_LT(dropped_move, 0.02);
  EXPECT_TRUE(gate_passes(reference, dropped));
  // A wrong auxiliary-loss coefficient barely moves the LM loss but clearly the balancing loss.
  EXPECT_LT(max_relative_difference(aux.lm_loss, reference.lm_loss), 0.02);
  EXPECT_TRUE(gate_passes(reference, aux));
  EXPECT_GT(max_relative_difference(aux.other_losses[0].values, reference.other_losses[0].values),
            0.03);
  EXPECT_GT(std::abs(scaled.lm_loss.back() / reference.lm_loss.back() - 1.0), 5.0 * dropped_move);

  // At the small learning rates of the first steps of a warm-up, even the scaling bug barely
  // moves the loss.
  const Recipe warmup = with(with(baseline, "lr-warmup-iters", "2000"), "lr-decay-iters", "100000");
  const LossCurve slow = curve(world, warmup);
  const LossCurve slow_scaled = curve(world, warmup, 2, Fault::kGradientScaling);
  EXPECT_LT(max_relative_difference(slow_scaled.lm_loss, slow.lm_loss), 0.005);
}

TEST(SimWorldLoss, FaultsNeedTheMachineryTheyBreak) {
  // A dense model has no auxiliary loss to mis-weight.
  const Workload llama = testing::load("llama3.1-8b", "h100", 8, 4096, 64);
  const World world(llama, quiet_world());
  const Recipe dense = dense_recipe();
  const LossCurve a = curve(world, dense, 1);
  const LossCurve b = curve(world, dense, 1, Fault::kAuxLossCoefficient);
  EXPECT_EQ(a.lm_loss, b.lm_loss);
}

TEST(SimWorldLoss, LearningRateScheduleMatchesMegatron) {
  const World world(qwen_workload(), quiet_world());
  Recipe recipe = with(qwen_baseline(), "lr", "3e-4");
  recipe = with(recipe, "lr-warmup-iters", "2000");
  recipe = with(recipe, "lr-decay-iters", "500000");
  const LossCurve warm = curve(world, recipe);
  EXPECT_DOUBLE_EQ(warm.learning_rate[0], 1.5e-7);  // megatron_lm.md §2.4, iteration 1
  EXPECT_DOUBLE_EQ(warm.learning_rate[9], 1.5e-6);  // iteration 10
  const LossCurve cosine =
      curve(world, with(with(with(qwen_baseline(), "lr", "1e-4"), "lr-decay-style", "cosine"),
                        "min-lr", "1e-5"));
  EXPECT_NEAR(cosine.learning_rate[9], 1e-5 + 0.5 * 9e-5 * (std::cos(M_PI * 10 / 20) + 1), 1e-12);
  EXPECT_NEAR(cosine.learning_rate[19], 1e-5, 1e-12);
}

}  // namespace
}  // namespace attune::sim
