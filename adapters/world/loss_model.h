// The loss curve of a simulated run: what Megatron-LM would print as `lm loss`, the MoE balancing
// and z losses, the grad norm and the learning rate, step by step.
//
// What the curve depends on, and how (the correctness gate is tested against these answers):
//  - Data order and initialisation: the recipe's --seed. The loss of each step is the mean of a
//    per-sample term over the global batch, so how the batch is cut into microbatches and spread
//    over ranks does not change it.
//  - Training progress: the sum of the learning rates applied so far, from Megatron's schedule
//    (--lr, --min-lr, --lr-warmup-*, --lr-decay-style, --lr-decay-iters, --train-iters).
//  - Reduction order: a noise of about 0.1 % per step (never beyond kReductionNoiseMax), keyed by
//    every setting that is not numeric (the layout, the dispatcher, the environment) and by the
//    run seed. Objective-preserving changes move the curve by this much and no more.
//  - Numeric changes, each by a realistic amount that grows with training progress:
//    the microbatch size of a MoE model whose load-balancing loss is computed per microbatch
//    (--moe-router-load-balancing-type aux_loss with a coefficient > 0), the data-parallel size
//    under global_aux_loss, --grad-reduce-in-bf16, FP8, the auxiliary-loss settings, and any
//    other flag classified numeric (ArgCatalog), each through its own deterministic offset.
//  - Divergence: a peak learning rate beyond kDivergentLearningRate makes the loss blow up and
//    turn NaN a few steps after the schedule crosses it.
//  - Injected faults for known-answer tests (Fault), and a known stack defect that changes
//    training (expert-tensor parallelism without expert parallelism).
//
// Pure functions of their arguments, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/layout.h"
#include "adapters/model/workload.h"
#include "events/recipe.h"

namespace attune::sim {

constexpr double kReductionNoiseMax = 0.002;       // relative, per step
constexpr double kDivergentLearningRate = 4.0e-3;  // peak learning rate that diverges in bf16
// Megatron requires --lr; a recipe without it runs (and prints) this one.
constexpr double kFallbackLearningRate = 1.0e-4;

// Code faults a known-answer test injects; no recipe reaches them.
enum class Fault : std::uint8_t {
  kNone,
  // "aux-loss-coeff": the auxiliary-loss coefficient is applied ten times over (MoE models with
  // an auxiliary loss only). Moves the balancing loss clearly and the LM loss barely.
  kAuxLossCoefficient,
  // "grad-scale": gradients are summed instead of averaged over microbatches and data-parallel
  // ranks, so gradient clipping shrinks every update. Moves the loss clearly once the learning
  // rate is large enough for the loss to move at all; the grad norm shows it at once.
  kGradientScaling,
  // "drop-microbatch": every data-parallel rank loses its last microbatch of each step. Moves the
  // loss barely.
  kDroppedMicrobatch,
};

std::string_view fault_name(Fault fault);
// "none", "aux-loss-coeff", "grad-scale", "drop-microbatch"; nullopt otherwise.
std::optional<Fault> parse_fault(std::string_view name);

struct LossSeries {
  std::string name;  // as Megatron prints the key: "load_balancing_loss", "z_loss", "mtp_1 loss"
  std::vector<double> values;  // one per step
};

struct LossCurve {
  std::vector<double> lm_loss;            // one per step; index 0 is iteration 1; NaN once diverged
  std::vector<LossSeries> other_losses;   // in Megatron's printing order
  std::vector<double> grad_norm;          // NaN once diverged
  std::vector<double> learning_rate;      // the value Megatron prints at each iteration
  std::optional<std::uint32_t> nan_step;  // 1-based iteration whose loss is NaN
};

struct LossRun {
  std::uint32_t steps = 0;
  std::uint64_t run_seed = 0;
  Fault fault = Fault::kNone;
  bool training_changing_defect = false;  // a known stack defect that changes training is hit
};

// The curve of `steps` iterations of `recipe`, already resolved against `workload` as `resolved`.
LossCurve simulate_loss(const Workload& workload, const Recipe& recipe,
                        const ResolvedLayout& resolved, const LossRun& run);

}  // namespace attune::sim
