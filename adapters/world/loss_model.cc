#include "adapters/world/loss_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "adapters/model/recipe_values.h"
#include "adapters/world/seeded_random.h"
#include "events/arg_catalog.h"
#include "events/assert.h"

namespace attune::sim {
namespace {

constexpr double kDataNoiseRsd = 0.01;        // batch-to-batch difficulty, relative
constexpr double kReductionNoiseRsd = 0.001;  // reduction order, relative
constexpr double kFlagOffset = 0.005;         // drift of one numeric setting, relative
constexpr double kFinalLossNats = 2.2;        // where the curve would flatten, far beyond 20 steps
constexpr double kFastShare = 0.35;           // the part of the initial excess learnt first
constexpr double kFastProgress = 1.0e-3;      // summed learning rate that learns it (1/e)
constexpr double kSlowProgress = 3.0e-2;
constexpr double kGradNormFloor = 1.2;
constexpr double kGradNormExcess = 28.0;
constexpr double kGradNormProgress = 2.0e-3;

constexpr std::uint32_t kDivergenceStepsToNan = 3;

// Flags whose effect the model computes itself; every other numeric flag drifts the curve by its
// own deterministic offset.
constexpr std::array<std::string_view, 16> kModelledFlags = {
    "--seed",
    "--lr",
    "--min-lr",
    "--lr-decay-style",
    "--lr-decay-iters",
    "--lr-warmup-iters",
    "--lr-warmup-fraction",
    "--lr-warmup-init",
    "--train-iters",
    "--micro-batch-size",
    "--grad-reduce-in-bf16",
    "--moe-aux-loss-coeff",
    "--moe-router-load-balancing-type",
    "--moe-z-loss-coeff",
    "--fp8-format",
    "--fp8-recipe",
};

bool modelled(std::string_view flag) {
  return std::find(kModelledFlags.begin(), kModelledFlags.end(), flag) != kModelledFlags.end();
}

double keyed_normal(std::uint64_t key, std::uint64_t index) {
  return SeededStream(combine(key, index)).normal();
}

std::uint64_t key_of(std::uint64_t seed, std::string_view label) {
  return combine(seed, hash_text(label));
}

// Megatron's OptimizerParamScheduler.get_lr, in iterations.
struct Schedule {
  double max_lr = kFallbackLearningRate;
  double min_lr = 0.0;
  double init_lr = 0.0;
  double warmup_iters = 0.0;
  double decay_iters = 1.0;
  std::string style = "linear";

  double at(double iteration) const {
    if (warmup_iters > 0 && iteration <= warmup_iters) {
      return init_lr + (max_lr - init_lr) * iteration / warmup_iters;
    }
    if (style == "constant" || style == "WSD") return max_lr;
    if (style == "inverse-square-root") {
      const double warmup = std::max(warmup_iters, 1.0);
      return std::max(min_lr, max_lr * std::sqrt(warmup) / std::sqrt(std::max(iteration, 1.0)));
    }
    if (iteration > decay_iters) return min_lr;
    const double span = std::max(decay_iters - warmup_iters, 1.0);
    const double ratio = std::clamp((iteration - warmup_iters) / span, 0.0, 1.0);
    const double coefficient =
        style == "cosine" ? 0.5 * (std::cos(std::acos(-1.0) * ratio) + 1.0) : 1.0 - ratio;
    return min_lr + coefficient * (max_lr - min_lr);
  }
};

Schedule schedule_of(const Recipe& recipe, std::uint32_t steps) {
  Schedule s;
  s.max_lr = recipe_number(recipe, "--lr", kFallbackLearningRate);
  s.min_lr = recipe_number(recipe, "--min-lr", 0.0);
  s.init_lr = recipe_number(recipe, "--lr-warmup-init", 0.0);
  const double train_iters = recipe_number(recipe, "--train-iters", steps);
  s.decay_iters = std::max(1.0, recipe_number(recipe, "--lr-decay-iters", train_iters));
  const double fraction = recipe_number(recipe, "--lr-warmup-fraction", -1.0);
  s.warmup_iters =
      fraction >= 0 ? fraction * s.decay_iters : recipe_number(recipe, "--lr-warmup-iters", 0.0);
  s.style = recipe_text(recipe, "--lr-decay-style");
  return s;
}

// Keys of the settings that do not change the math (reduction order) and offsets of the numeric
// settings the model does not compute itself.
struct SettingKeys {
  std::uint64_t reduction = 0;
  std::vector<std::uint64_t> numeric;  // one per unmodelled numeric flag, with its value
};

SettingKeys setting_keys(const Recipe& recipe, std::uint64_t run_seed) {
  SettingKeys keys;
  keys.reduction = key_of(run_seed, "reduction order");
  for (const auto& [flag, value] : recipe.flags) {
    const ArgInfo* info = ArgCatalog::megatron().find(flag);
    const ObjectiveClass cls = info == nullptr ? ObjectiveClass::kNumeric : info->objective_class;
    const std::uint64_t pair = hash_text(flag + "=" + value);
    if (cls != ObjectiveClass::kNumeric) {
      keys.reduction = combine(keys.reduction, pair);
    } else if (!modelled(flag)) {
      keys.numeric.push_back(pair);
    }
  }
  for (const auto& [name, value] : recipe.env) {
    keys.reduction = combine(keys.reduction, hash_text(name + "=" + value));
  }
  return keys;
}

struct MoeLoss {
  bool active = false;       // an auxiliary balancing loss is computed and logged
  std::string type;          // aux_loss, seq_aux_loss, global_aux_loss, ...
  double coefficient = 0.0;  // as applied, faults included
  double z_coefficient = 0.0;
};

MoeLoss moe_loss_of(const Workload& workload, const Recipe& recipe, Fault fault) {
  MoeLoss m;
  if (!is_moe(workload.model)) return m;
  m.type = recipe_text(recipe, "--moe-router-load-balancing-type");
  m.coefficient = recipe_number(recipe, "--moe-aux-loss-coeff", 0.0);
  if (fault == Fault::kAuxLossCoefficient) m.coefficient *= 10.0;
  m.z_coefficient = recipe_number(recipe, "--moe-z-loss-coeff", 0.0);
  m.active = m.coefficient > 0 &&
             (m.type == "aux_loss" || m.type == "seq_aux_loss" || m.type == "global_aux_loss");
  return m;
}

std::string balancing_loss_name(std::string_view type) {
  if (type == "seq_aux_loss") return "seq_load_balancing_loss";
  if (type == "global_aux_loss") return "global_load_balancing_loss";
  return "load_balancing_loss";
}

// Mean per-sample difficulty of step `step`'s global batch, less the samples a fault drops.
double data_noise(std::uint64_t data_key, std::uint32_t step, int global_batch, int dropped) {
  const int kept = std::max(1, global_batch - dropped);
  const double sample_rsd = kDataNoiseRsd * std::sqrt(static_cast<double>(global_batch));
  const std::uint64_t step_key = combine(data_key, step);
  double sum = 0.0;
  for (int sample = 0; sample < kept; ++sample) sum += keyed_normal(step_key, sample);
  return sample_rsd * sum / kept;
}

}  // namespace

std::string_view fault_name(Fault fault) {
  switch (fault) {
    case Fault::kNone:
      return "none";
    case Fault::kAuxLossCoefficient:
      return "aux-loss-coeff";
    case Fault::kGradientScaling:
      return "grad-scale";
    case Fault::kDroppedMicrobatch:
      return "drop-microbatch";
  }
  return "none";
}

std::optional<Fault> parse_fault(std::string_view name) {
  for (const Fault fault : {Fault::kNone, Fault::kAuxLossCoefficient, Fault::kGradientScaling,
                            Fault::kDroppedMicrobatch}) {
    if (fault_name(fault) == name) return fault;
  }
  return std::nullopt;
}

// Offsets of the loss that do not depend on the step (they grow in with the ramp of training
// progress): each numeric setting, a bf16 gradient reduction, the balancing loss's statistic, FP8
// and a defect that changes training.
double step_independent_drift(const Workload& workload, const Layout& layout,
                              const SettingKeys& keys, const MoeLoss& moe, const LossRun& run,
                              int dp, int mbs) {
  const bool fp8 = workload.precision == Precision::kFp8;
  double drift = 0.0;
  for (const std::uint64_t pair : keys.numeric) {
    // Each numeric setting shifts the curve by 1-2 offsets' worth, up or down.
    SeededStream draw(combine(pair, hash_text("offset")));
    const double sign = draw.uniform() < 0.5 ? -1.0 : 1.0;
    drift += sign * kFlagOffset * (1.0 + draw.uniform());
  }
  if (layout.grad_reduce_in_bf16) {
    drift += 0.008 * (1.0 + 0.25 * std::log2(static_cast<double>(dp * std::max(1, layout.cp))));
  }
  if (moe.active && moe.type == "aux_loss") drift += 0.006 * std::log2(mbs);
  if (moe.active && moe.type == "global_aux_loss") drift += 0.004 * std::log2(dp) - 0.005;
  if (moe.active && moe.type == "seq_aux_loss") drift += 0.006;
  if (moe.active) drift += 0.003 * std::log2(1.0 + moe.coefficient / 1.0e-3);
  if (moe.z_coefficient > 0) drift += 0.002 * std::log2(1.0 + moe.z_coefficient / 1.0e-3);
  if (fp8) drift += 0.006 + 0.002 * keyed_normal(hash_text("fp8 " + layout.fp8_recipe), 0);
  if (run.training_changing_defect) drift += 0.015;
  return drift;
}

// The per-step scatter of the same changes, which also grows in with the ramp.
double step_wobble(const Layout& layout, const SettingKeys& keys, const MoeLoss& moe,
                   const LossRun& run, std::uint64_t data_key, std::uint32_t step, int dp,
                   int mbs) {
  double wobble = 0.0;
  for (const std::uint64_t pair : keys.numeric) wobble += 0.001 * keyed_normal(pair, step);
  if (layout.grad_reduce_in_bf16) {
    wobble += 0.002 * keyed_normal(key_of(data_key, "bf16 reduce"), step);
  }
  if (moe.active && moe.type == "aux_loss") {
    wobble += 0.003 * keyed_normal(combine(key_of(data_key, "aux per microbatch"), mbs), step);
  }
  if (moe.active && moe.type == "global_aux_loss") {
    wobble += 0.003 * keyed_normal(combine(key_of(data_key, "aux over dp"), dp), step);
  }
  if (run.training_changing_defect) {
    wobble += 0.004 * keyed_normal(key_of(data_key, "defect"), step);
  }
  return wobble;
}

// A step `since` steps after the divergence began: the loss and gradient norm blow up, and
// become NaN after kDivergenceStepsToNan steps.
void diverge(std::uint32_t step, std::uint32_t since, double& loss, double& grad_norm,
             LossCurve& curve) {
  if (since >= kDivergenceStepsToNan) {
    if (!curve.nan_step) curve.nan_step = step;
    loss = std::numeric_limits<double>::quiet_NaN();
    grad_norm = std::numeric_limits<double>::quiet_NaN();
  } else {
    loss *= std::exp(0.6 * (since + 1));
    grad_norm *= std::exp(2.0 * (since + 1));
  }
}

// The losses Megatron logs beside the language-model loss: the balancing loss, the router's
// z-loss and one per MTP depth; NaN from the step the language-model loss is.
void add_other_losses(const Workload& workload, const Layout& layout, const MoeLoss& moe,
                      const LossRun& run, std::uint64_t data_key, int dp, int mbs,
                      LossCurve& curve) {
  const std::uint32_t steps = run.steps;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto mark_nan = [&](LossSeries& series) {
    if (!curve.nan_step) return;
    for (std::uint32_t step = *curve.nan_step; step <= steps; ++step) {
      series.values[step - 1] = nan;
    }
  };
  if (moe.active) {
    // The balancing loss is a statistic of the tokens it is computed over: one microbatch of one
    // sequence-parallel group for aux_loss, one sequence for seq_aux_loss, the data-parallel
    // group for global_aux_loss.
    const double seq = workload.seq_length;
    const double tokens = moe.type == "seq_aux_loss"      ? seq
                          : moe.type == "global_aux_loss" ? seq * mbs * dp
                                                          : seq * mbs;
    const double experts = workload.model.num_experts;
    const double topk = std::max(1, workload.model.moe_router_topk);
    const double rate = std::min(1.0, 0.08 * std::sqrt(moe.coefficient / 1.0e-3));
    const std::uint64_t routing_key = combine(key_of(data_key, "routing"), hash_text(moe.type));
    LossSeries balancing{balancing_loss_name(moe.type), {}};
    for (std::uint32_t step = 1; step <= steps; ++step) {
      const double imbalance =
          (run.training_changing_defect ? 0.22 : 0.15) * std::exp(-(step - 1.0) * rate);
      const double statistic = 0.5 * experts / (topk * tokens);
      const double noise =
          0.004 * keyed_normal(combine(routing_key, static_cast<std::uint64_t>(tokens)), step);
      balancing.values.push_back(1.0 + imbalance + statistic + noise);
    }
    mark_nan(balancing);
    curve.other_losses.push_back(std::move(balancing));
  }
  if (is_moe(workload.model) && moe.z_coefficient > 0) {
    LossSeries z{"z_loss", {}};
    for (std::uint32_t step = 1; step <= steps; ++step) {
      z.values.push_back(1.8e-3 * (1.0 + 0.6 * std::exp(-(step - 1.0) / 8.0)) *
                         (1.0 + 0.02 * keyed_normal(key_of(data_key, "z loss"), step)));
    }
    mark_nan(z);
    curve.other_losses.push_back(std::move(z));
  }
  for (int depth = 1; depth <= layout.mtp_layers; ++depth) {
    LossSeries mtp{"mtp_" + std::to_string(depth) + " loss", {}};
    for (std::uint32_t step = 1; step <= steps; ++step) {
      mtp.values.push_back(curve.lm_loss[step - 1] * (1.03 + 0.01 * depth) *
                           (1.0 + 0.001 * keyed_normal(key_of(data_key, mtp.name), step)));
    }
    curve.other_losses.push_back(std::move(mtp));
  }
}

namespace {

// How fast updates make progress: gradient clipping shrinks the over-scaled gradients of the
// scaling fault; a dropped microbatch leaves each update a little noisier.
double progress_rate_of(const Recipe& recipe, bool gradients_scaled, bool microbatch_dropped,
                        int microbatches) {
  double rate = 1.0;
  if (gradients_scaled && recipe_number(recipe, "--clip-grad", 1.0) > 0) rate = 0.5;
  if (microbatch_dropped) rate *= 1.0 - 0.5 / microbatches;
  return rate;
}

// The gradient norm of a healthy run after `progress`: it falls towards a floor, with noise.
double grad_norm_at(double progress, std::uint64_t data_key, std::uint32_t step) {
  return (kGradNormFloor + kGradNormExcess * std::exp(-progress / kGradNormProgress)) *
         (1.0 + 0.06 * keyed_normal(key_of(data_key, "grad norm"), step));
}

}  // namespace

LossCurve simulate_loss(const Workload& workload, const Recipe& recipe,
                        const ResolvedLayout& resolved, const LossRun& run) {
  const std::uint32_t steps = run.steps;
  const Layout& layout = resolved.layout;
  const int mbs = std::max(1, layout.micro_batch_size);
  const int dp = std::max(1, resolved.dp);
  const int microbatches = std::max(1, resolved.microbatches);
  const bool fp8 = workload.precision == Precision::kFp8;

  const std::uint64_t seed = static_cast<std::uint64_t>(recipe_number(recipe, "--seed", 1234));
  const std::uint64_t data_key = combine(hash_text(workload.model.name), seed);
  const SettingKeys keys = setting_keys(recipe, run.run_seed);
  const Schedule schedule = schedule_of(recipe, steps);
  const MoeLoss moe = moe_loss_of(workload, recipe, run.fault);

  const int gradient_scale = run.fault == Fault::kGradientScaling ? microbatches * dp : 1;
  const int dropped_samples = run.fault == Fault::kDroppedMicrobatch ? mbs * dp : 0;
  const double progress_rate =
      progress_rate_of(recipe, gradient_scale > 1, dropped_samples > 0, microbatches);

  const double initial_loss = std::log(static_cast<double>(padded_vocab_size(workload.model, 1))) +
                              0.2 + 0.02 * keyed_normal(key_of(data_key, "init"), 0);
  const double excess = std::max(initial_loss - kFinalLossNats, 0.5);

  const double drift = step_independent_drift(workload, layout, keys, moe, run, dp, mbs);

  // Divergence: the first update whose learning rate is beyond what the precision tolerates.
  const double divergent_lr = kDivergentLearningRate * (fp8 ? 0.75 : 1.0);
  std::optional<std::uint32_t> divergence_step;

  LossCurve curve;
  curve.lm_loss.reserve(steps);
  curve.grad_norm.reserve(steps);
  curve.learning_rate.reserve(steps);
  double progress = 0.0;  // summed learning rate of the updates before this step's forward pass
  for (std::uint32_t step = 1; step <= steps; ++step) {
    const double update_lr = schedule.at(step - 1.0);  // the update of the previous iteration
    if (step > 1) {
      progress += update_lr * progress_rate;
      if (!divergence_step && update_lr > divergent_lr) divergence_step = step;
    }
    const double ramp = 1.0 - std::exp(-(step - 1.0) / 6.0);
    const double base =
        kFinalLossNats + excess * (kFastShare * std::exp(-progress / kFastProgress) +
                                   (1.0 - kFastShare) * std::exp(-progress / kSlowProgress));

    double relative = data_noise(data_key, step, workload.global_batch_size, dropped_samples);
    relative += std::clamp(kReductionNoiseRsd * keyed_normal(keys.reduction, step),
                           -kReductionNoiseMax, kReductionNoiseMax);
    const double wobble = step_wobble(layout, keys, moe, run, data_key, step, dp, mbs);
    relative += ramp * (drift + wobble);
    if (fp8) relative += 0.002 + 0.002 * keyed_normal(key_of(data_key, "fp8"), step);

    double loss = base * (1.0 + relative);
    double grad_norm = grad_norm_at(progress, data_key, step) * gradient_scale;
    if (divergence_step && step >= *divergence_step) {
      diverge(step, step - *divergence_step, loss, grad_norm, curve);
    }
    curve.lm_loss.push_back(loss);
    curve.grad_norm.push_back(grad_norm);
    curve.learning_rate.push_back(schedule.at(step));
  }

  add_other_losses(workload, layout, moe, run, data_key, dp, mbs, curve);
  ATTUNE_ASSERT(curve.lm_loss.size() == steps && curve.learning_rate.size() == steps,
                "one loss and learning rate per step");
  return curve;
}

}  // namespace attune::sim
