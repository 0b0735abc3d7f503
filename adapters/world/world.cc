#include "adapters/world/world.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <unordered_set>
#include <utility>

#include "adapters/model/performance_model.h"
#include "adapters/world/seeded_random.h"
#include "events/assert.h"

namespace attune::sim {
namespace {

constexpr double kStartupBaseS = 30.0;         // imports, argument parsing, process groups
constexpr double kStartupPerDoublingS = 6.0;   // communicator set-up per doubling of the GPUs
constexpr double kStartupPerWeightGibS = 1.5;  // building and initialising the model
constexpr double kFirstStepFactor = 3.0;       // iteration 1: allocator growth, NCCL set-up
constexpr double kFirstStepExtraS = 8.0;
constexpr double kSecondStepFactor = 1.1;
constexpr double kProfilerOverhead = 1.05;  // traced steps run slower
// How far below its median GPU the lowest GPU of a healthy allocation draws, at most.
constexpr double kHealthyPowerSpread = 0.02;
constexpr double kTeardownS = 5.0;
constexpr double kInvalidAtStartupS = 12.0;  // validate_args runs right after the imports
constexpr double kNodeLossDetectionS = 45.0;
constexpr double kNetworkErrorDetectionS = 15.0;
constexpr double kSetupOomShareOfStartup = 0.8;  // model and optimizer are built late in start-up

std::uint64_t world_key(const WorldConfig& config, std::string_view label) {
  return combine(config.reality_seed, hash_text(label));
}

std::uint64_t nodes_key(const std::vector<std::string>& nodes) {
  std::uint64_t key = hash_text("nodes");
  for (const std::string& node : nodes) key = combine(key, hash_text(node));
  return key;
}

// Whether some group of `group_size` consecutive ranks (aligned to its size) holds GPUs of two
// NVLink domains of `domain_gpus`.
bool contiguous_group_spans_domains(int world_size, int group_size, int domain_gpus) {
  if (group_size <= 1 || domain_gpus <= 0) return false;
  for (int first = 0; first < world_size; first += group_size) {
    const int last = std::min(world_size, first + group_size) - 1;
    if (first / domain_gpus != last / domain_gpus) return true;
  }
  return false;
}

// The largest memory factor, at most `factors.memory`, at which `baseline` still fits, when it
// fits at the stack's own memory factor; `factors.memory` otherwise.
double memory_factor_keeping(const Workload& workload, const Recipe& baseline,
                             const StackProfile& stack, CostFactors factors) {
  constexpr int kBisections = 30;
  Result<Layout> layout = decode_layout(workload, baseline);
  if (!layout.ok()) return factors.memory;
  Result<ResolvedLayout> resolved = resolve_layout(workload, *layout);
  if (!resolved.ok()) return factors.memory;
  const auto fits = [&](double memory) {
    CostFactors f = factors;
    f.memory = memory;
    return predict_on_stack(workload, *resolved, stack, f).fits_in_memory;
  };
  const double drawn = factors.memory;
  double low = std::min(drawn, stack.factors.memory);
  if (fits(drawn) || !fits(low)) return drawn;
  double high = drawn;
  for (int i = 0; i < kBisections; ++i) {
    const double middle = 0.5 * (low + high);
    (fits(middle) ? low : high) = middle;
  }
  return low;
}

std::string node_name(int index) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "node-%03d", index + 1);
  return buffer;
}

}  // namespace

std::string_view stack_defect_name(StackDefect defect) {
  switch (defect) {
    case StackDefect::kDeepepAcrossNvlinkDomains:
      return "deepep-across-nvlink-domains";
    case StackDefect::kDataParallelOverlapWithExpertDataParallel:
      return "dp-overlap-with-expert-data-parallel";
    case StackDefect::kExpertTensorParallelWithoutExpertParallel:
      return "etp-without-ep";
  }
  return "?";
}

std::vector<StackDefect> all_stack_defects() {
  std::vector<StackDefect> defects;
  defects.push_back(StackDefect::kDeepepAcrossNvlinkDomains);
  defects.push_back(StackDefect::kDataParallelOverlapWithExpertDataParallel);
  defects.push_back(StackDefect::kExpertTensorParallelWithoutExpertParallel);
  return defects;
}

std::string_view job_outcome_name(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kCompleted:
      return "completed";
    case JobOutcome::kOutOfMemory:
      return "oom";
    case JobOutcome::kInvalidAtStartup:
      return "invalid";
    case JobOutcome::kCrash:
      return "crash";
    case JobOutcome::kInfrastructure:
      return "infra";
    case JobOutcome::kHang:
      return "hang";
  }
  return "?";
}

CostFactors hidden_factors(const Workload& workload, const WorldConfig& config) {
  const std::uint64_t pair =
      combine(hash_text(workload.hardware.name), hash_text(workload.model.name));
  SeededStream draws(combine(world_key(config, "hidden factors"), pair));
  const double s = config.factor_spread;
  CostFactors f;
  for (double* term : {&f.gemm, &f.attention, &f.elementwise, &f.tp_comm, &f.cp_comm, &f.ep_a2a,
                       &f.pp_p2p, &f.dp_comm, &f.optimizer, &f.recompute, &f.host}) {
    *term = draws.uniform(1.0 - s, 1.0 + s);
  }
  f.memory = draws.uniform(1.0 - config.memory_factor_spread, 1.0 + config.memory_factor_spread);
  return f;
}

int first_rank_of_stage(int world_size, int pipeline_stages, int stage) {
  ATTUNE_ASSERT(pipeline_stages > 0 && world_size % pipeline_stages == 0,
                "the pipeline divides the world");
  return stage * (world_size / pipeline_stages);
}

World::World(Workload workload, WorldConfig config)
    : workload_(std::move(workload)), config_(std::move(config)) {
  ATTUNE_ASSERT(workload_.gpus > 0, "a world has GPUs");
  factors_ = times(sim::hidden_factors(workload_, config_), config_.stack.factors);
  if (config_.baseline) {
    factors_.memory = memory_factor_keeping(workload_, *config_.baseline, config_.stack, factors_);
  }
  const int domain = workload_.hardware.nvlink_domain_gpus;
  gpus_per_node_ = config_.gpus_per_node > 0     ? config_.gpus_per_node
                   : (domain > 0 && domain <= 8) ? domain
                                                 : 4;
  const int needed = nodes_needed();
  const int nodes = config_.nodes > 0
                        ? config_.nodes
                        : kConcurrentJobsMax * needed + std::max(kSpareNodesMin, needed / 4);
  node_names_.reserve(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i) node_names_.push_back(node_name(i));
}

int World::nodes_needed() const { return (workload_.gpus + gpus_per_node_ - 1) / gpus_per_node_; }

bool World::is_slow_node(std::string_view node) const {
  SeededStream draw(combine(world_key(config_, "slow node"), hash_text(node)));
  return draw.uniform() < config_.slow_node_probability;
}

std::vector<std::string> World::allocate(std::uint32_t nodes_needed,
                                         const std::vector<std::string>& exclude,
                                         std::uint64_t seed) const {
  // A set: a world of a million GPUs has a quarter of a million nodes, and a calibration run
  // excludes every node an earlier one used.
  const std::unordered_set<std::string_view> excluded(exclude.begin(), exclude.end());
  std::vector<std::string> free;
  for (const std::string& node : node_names_) {
    if (!excluded.contains(node)) free.push_back(node);
  }
  if (free.size() < nodes_needed) return {};
  SeededStream draws(combine(world_key(config_, "allocate"), seed));
  for (std::size_t i = free.size(); i > 1; --i) {
    std::swap(free[i - 1], free[draws.below(i)]);
  }
  free.resize(nodes_needed);
  std::sort(free.begin(), free.end());
  return free;
}

std::vector<std::string> World::allocate_avoiding(std::uint32_t nodes_needed,
                                                  const std::vector<std::string>& busy,
                                                  const std::vector<std::string>& avoid,
                                                  std::uint64_t seed) const {
  std::unordered_set<std::string_view> excluded(busy.begin(), busy.end());
  std::size_t remaining = 0;
  for (const std::string& node : node_names_) remaining += excluded.contains(node) ? 0 : 1;
  std::vector<std::string> exclude = busy;
  for (const std::string& node : avoid) {
    if (remaining <= nodes_needed) break;
    if (!excluded.insert(node).second) continue;
    exclude.push_back(node);
    --remaining;
  }
  return allocate(nodes_needed, exclude, seed);
}

std::optional<StackDefect> World::defect_hit(const ResolvedLayout& resolved) const {
  const Layout& l = resolved.layout;
  const bool moe = is_moe(workload_.model);
  for (const StackDefect defect : config_.defects) {
    switch (defect) {
      case StackDefect::kDeepepAcrossNvlinkDomains:
        if (moe && l.dispatcher == Dispatcher::kFlex &&
            (l.flex_backend == FlexBackend::kDeepep || l.moe_enable_deepep) &&
            contiguous_group_spans_domains(workload_.gpus, std::max(1, l.etp) * l.ep,
                                           workload_.hardware.nvlink_domain_gpus)) {
          return defect;
        }
        break;
      case StackDefect::kDataParallelOverlapWithExpertDataParallel:
        if (moe && resolved.edp > 1 && l.overlap_grad_reduce && l.overlap_param_gather &&
            l.shared_expert_overlap) {
          return defect;
        }
        break;
      case StackDefect::kExpertTensorParallelWithoutExpertParallel:
        if (moe && l.etp >= 8 && l.ep == 1) return defect;
        break;
    }
  }
  return std::nullopt;
}

namespace {

// How a run that is not cut short by the infrastructure ends: after how many steps, how far into
// the failing step, and whether it dies while building the model and optimizer.
struct NaturalStop {
  std::uint32_t steps_to_run = 0;
  double in_step_fraction = 0;
  bool oom_at_setup = false;
};

// The outcome the recipe alone would have (a stack defect, out of memory, a NaN loss) into `run`,
// and when the process would stop.
NaturalStop natural_stop(SimulatedRun& run, bool check_for_nan) {
  NaturalStop stop{run.steps_requested, 0.0, false};
  if (run.defect == StackDefect::kDeepepAcrossNvlinkDomains) {
    run.outcome = JobOutcome::kCrash;
    run.error = "NVSHMEM cannot initialise DeepEP's transport across NVLink domains";
    stop.steps_to_run = 0;
    stop.in_step_fraction = 0.05;  // the first dispatch builds DeepEP's buffers
  } else if (!run.prediction.fits_in_memory) {
    run.outcome = JobOutcome::kOutOfMemory;
    const double capacity = run.prediction.memory_capacity_gib;
    const auto& peaks = run.peak_memory_gib_by_stage;
    run.failed_stage = 0;
    for (std::size_t s = 0; s < peaks.size(); ++s) {
      if (peaks[s] - capacity > peaks[static_cast<std::size_t>(run.failed_stage)] - capacity) {
        run.failed_stage = static_cast<int>(s);
      }
    }
    char text[160];
    std::snprintf(text, sizeof text, "pipeline stage %d needs %.1f GiB of %.1f GiB",
                  run.failed_stage, peaks[static_cast<std::size_t>(run.failed_stage)], capacity);
    run.error = text;
    stop.steps_to_run = 0;
    stop.in_step_fraction = 0.4;
    const StageMemory& m = run.prediction.stages[static_cast<std::size_t>(run.failed_stage)].memory;
    // When the weights, gradient buffers and optimizer state alone do not fit, the job dies
    // while it builds the model and optimizer, before training starts.
    stop.oom_at_setup =
        m.weights_gib + m.gradients_gib + m.optimizer_gib + m.reserved_gib > capacity;
  } else if (run.defect == StackDefect::kDataParallelOverlapWithExpertDataParallel) {
    run.outcome = JobOutcome::kHang;
    run.error =
        "the first gradient reduction deadlocks (data-parallel and shared-expert overlap "
        "with expert data parallelism > 1)";
    stop.steps_to_run = 0;
  } else if (run.loss.nan_step && check_for_nan) {
    run.outcome = JobOutcome::kCrash;
    run.error = "NaN loss at iteration " + std::to_string(*run.loss.nan_step);
    stop.steps_to_run = *run.loss.nan_step - 1;
    stop.in_step_fraction = 0.5;
  }
  return stop;
}

// The time of every requested step, were the run to go on: the prediction with the run's noise
// and its slow node, the first steps' warm-up and the profiler's overhead.
std::vector<double> draw_step_times(const SimulatedRun& run, double noise_rsd,
                                    SeededStream& draws) {
  const double run_factor = std::max(0.5, 1.0 + noise_rsd * draws.normal());
  const double step_s = run.prediction.step_time_s * run_factor * run.slow_node_factor;
  std::vector<double> steps_s;
  for (std::uint32_t step = 1; step <= run.steps_requested; ++step) {
    double t = step_s * std::max(0.5, 1.0 + 0.5 * noise_rsd * draws.normal());
    if (step == 1) t = t * kFirstStepFactor + kFirstStepExtraS;
    if (step == 2) t *= kSecondStepFactor;
    if (run.profiled && step >= run.first_profiled_step) t *= kProfilerOverhead;
    steps_s.push_back(t);
  }
  return steps_s;
}

// An infrastructure failure: when it strikes, and what it blames.
struct InfraDraw {
  double at_s = HUGE_VAL;
  bool blame_network = false;
  std::size_t blamed = 0;
};

// `run` cut short by the infrastructure at `infra.at_s`.
void fail_on_infrastructure(SimulatedRun& run, const InfraDraw& infra) {
  run.outcome = JobOutcome::kInfrastructure;
  run.infra = infra.blame_network ? InfraFailure::kNetworkError : InfraFailure::kNodeLost;
  run.blamed_node = run.nodes.empty() ? std::string() : run.nodes[infra.blamed];
  run.error = (infra.blame_network ? "NCCL network error on " : "node lost: ") + run.blamed_node;
  run.failed_step = static_cast<std::uint32_t>(run.step_times_s.size()) + 1;
  if (infra.at_s < run.startup_s) {
    run.failed_step = 0;
    run.startup_s = infra.at_s;
  }
  run.defect.reset();
  run.failed_stage = -1;
  run.end_s = infra.at_s + (infra.blame_network ? kNetworkErrorDetectionS : kNodeLossDetectionS);
  run.last_progress_s = run.end_s;
}

// Plays the timeline up to the natural stop, unless the infrastructure fails first.
void play_timeline(SimulatedRun& run, const std::vector<double>& natural_steps_s,
                   const NaturalStop& stop, const InfraDraw& infra) {
  if (stop.oom_at_setup) {
    const double setup_oom_s = kSetupOomShareOfStartup * run.startup_s;
    if (infra.at_s < setup_oom_s) return fail_on_infrastructure(run, infra);
    run.startup_s = setup_oom_s;
    run.failed_step = 0;
    run.end_s = setup_oom_s;
    run.last_progress_s = setup_oom_s;
    return;
  }
  double t = run.startup_s;
  if (infra.at_s < t) return fail_on_infrastructure(run, infra);
  for (std::uint32_t step = 0; step < stop.steps_to_run; ++step) {
    if (infra.at_s < t + natural_steps_s[step]) return fail_on_infrastructure(run, infra);
    t += natural_steps_s[step];
    run.step_times_s.push_back(natural_steps_s[step]);
  }
  switch (run.outcome) {
    case JobOutcome::kCompleted:
      if (infra.at_s < t + kTeardownS) return fail_on_infrastructure(run, infra);
      run.last_progress_s = t;
      run.end_s = t + kTeardownS;
      break;
    case JobOutcome::kHang:
      run.failed_step = 1;
      run.last_progress_s = t;
      run.end_s = t;
      break;
    case JobOutcome::kCrash:
    case JobOutcome::kOutOfMemory: {
      const double failing_step_s = natural_steps_s[stop.steps_to_run] * stop.in_step_fraction;
      if (infra.at_s < t + failing_step_s) return fail_on_infrastructure(run, infra);
      run.failed_step = stop.steps_to_run + 1;
      run.end_s = t + failing_step_s;
      run.last_progress_s = run.end_s;
      break;
    }
    case JobOutcome::kInvalidAtStartup:
    case JobOutcome::kInfrastructure:
      ATTUNE_ASSERT(false, "every outcome is decided above");
      break;
  }
}

// Seconds from admission to the first step: a base, a term per doubling of the GPUs and one per
// GiB of the largest stage's weights (building and initialising the model), times a draw of
// about 5%.
double startup_seconds(const Prediction& prediction, int gpus, SeededStream& draws) {
  double weights_gib = 0;
  for (const StageTiming& stage : prediction.stages) {
    weights_gib = std::max(weights_gib, stage.memory.weights_gib);
  }
  return (kStartupBaseS + kStartupPerDoublingS * std::log2(gpus) +
          kStartupPerWeightGibS * weights_gib) *
         std::max(0.5, 1.0 + 0.05 * draws.normal());
}

}  // namespace

SimulatedRun World::simulate(const Recipe& recipe, std::uint32_t steps, std::uint64_t run_seed,
                             const std::vector<std::string>& nodes, bool profile,
                             Fault fault) const {
  ATTUNE_ASSERT(steps > 0, "a job runs steps");
  SimulatedRun run;
  run.nodes =
      nodes.empty() ? allocate(static_cast<std::uint32_t>(nodes_needed()), {}, run_seed) : nodes;
  run.profiled = profile;
  run.fault = fault;
  run.steps_requested = steps + (profile ? kProfiledSteps : 0);
  run.first_profiled_step = profile ? steps + 1 : 0;
  const std::uint64_t run_key =
      combine(combine(world_key(config_, "run"), run_seed), nodes_key(run.nodes));
  SeededStream draws(run_key);

  const auto fail_at_startup = [&](JobOutcome outcome, std::string error, double at_s) {
    run.outcome = outcome;
    run.error = std::move(error);
    run.startup_s = at_s;
    run.last_progress_s = at_s;
    run.end_s = at_s;
    return run;
  };

  Result<Layout> layout = decode_layout(workload_, recipe);
  if (!layout.ok()) {
    return fail_at_startup(JobOutcome::kInvalidAtStartup, layout.error(), kInvalidAtStartupS);
  }
  Result<ResolvedLayout> resolved = resolve_layout(workload_, *layout);
  if (resolved.ok()) {
    run.layout = layout_on_stack(config_.stack, *resolved);
    run.prediction = predict_on_stack(workload_, *run.layout, config_.stack, factors_);
  }
  if (!resolved.ok() || !run.prediction.valid) {
    run.layout.reset();
    return fail_at_startup(JobOutcome::kInvalidAtStartup,
                           resolved.ok() ? run.prediction.error : resolved.error(),
                           kInvalidAtStartupS);
  }
  run.peak_memory_gib_by_stage = run.prediction.peak_memory_gib_by_stage;
  run.defect = defect_hit(*resolved);
  run.loss =
      simulate_loss(workload_, recipe, *resolved,
                    LossRun{run.steps_requested, run_seed, fault,
                            run.defect == StackDefect::kExpertTensorParallelWithoutExpertParallel});

  run.startup_s = startup_seconds(run.prediction, workload_.gpus, draws);

  for (const std::string& node : run.nodes) {
    if (is_slow_node(node)) run.slow_node_factor = config_.slow_node_factor;
  }
  // From a stream of its own, so that the run's other draws stay as they were.
  SeededStream power(combine(run_key, hash_text("gpu power")));
  run.lowest_gpu_power_fraction =
      (1.0 - kHealthyPowerSpread * power.uniform()) / run.slow_node_factor;
  const std::vector<double> natural_steps_s = draw_step_times(run, config_.noise_rsd, draws);
  const double infra_rate_per_s = config_.infra_failures_per_node_hour *
                                  static_cast<double>(std::max<std::size_t>(1, run.nodes.size())) /
                                  3600.0;
  InfraDraw infra;
  infra.at_s = infra_rate_per_s > 0 ? draws.exponential(infra_rate_per_s) : HUGE_VAL;
  infra.blame_network = draws.uniform() < 0.5;
  infra.blamed = run.nodes.empty() ? 0 : draws.below(run.nodes.size());

  const NaturalStop stop = natural_stop(run, layout->check_for_nan);
  play_timeline(run, natural_steps_s, stop, infra);
  ATTUNE_ASSERT(run.step_times_s.size() <= run.steps_requested,
                "a run logs no more steps than it was asked for");
  return run;
}

}  // namespace attune::sim
