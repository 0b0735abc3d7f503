// The simulated world: the cluster that runs simulated jobs, as opposed to the model that
// estimates them. Reality is not the model. The world scales every cost term of the performance
// and memory model by hidden efficiency factors drawn from its reality seed (one CostFactors per
// hardware/model pair), so a tuner that trusts the clean model (factors 1.0) is off by up to
// WorldConfig::factor_spread per term and has to measure, as on a real cluster.
//
// On top of that: run-to-run noise, nodes that are persistently slow, infrastructure failures
// at a rate per node-hour, and known stack defects (a dispatcher that cannot initialise across
// NVLink domains, a conjunction of settings that hangs, one that silently changes training).
// Each simulated run also gets a loss curve (loss_model.h).
//
// Everything is a pure function of (reality seed, workload, recipe, run seed, nodes): the same
// inputs give the same SimulatedRun, bit for bit. A World is immutable after construction, so any
// thread may call it without synchronization.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/cost_factors.h"
#include "adapters/model/layout.h"
#include "adapters/model/prediction.h"
#include "adapters/model/stack_profile.h"
#include "adapters/model/workload.h"
#include "adapters/world/loss_model.h"
#include "events/recipe.h"

namespace attune::sim {

constexpr std::uint32_t kProfiledSteps = 3;  // traced steps a profiled run adds after its steps
constexpr int kConcurrentJobsMax = 3;        // jobs the default cluster holds at once
constexpr int kSpareNodesMin = 2;

// Known defects of the simulated training stack, conjunctions of settings the real stack fails
// on although Megatron accepts them.
enum class StackDefect : std::uint8_t {
  // The flex dispatcher with the DeepEP backend, with an expert-parallel group that spans NVLink
  // domains: NVSHMEM cannot initialise its transport and the job dies at start-up.
  kDeepepAcrossNvlinkDomains,
  // A MoE model with expert data parallelism > 1, both data-parallel overlaps
  // (--overlap-grad-reduce --overlap-param-gather) and --moe-shared-expert-overlap: the first
  // gradient reduction deadlocks between the overlapping streams and the log stops growing.
  kDataParallelOverlapWithExpertDataParallel,
  // A MoE model with expert-tensor parallelism 8 and expert parallelism 1: runs, but changes
  // training (the loss drifts from the baseline's), as the paper observed on GLM-4.5 (Table B1).
  kExpertTensorParallelWithoutExpertParallel,
};

std::string_view stack_defect_name(StackDefect defect);
// Every known defect: the default world has them all.
std::vector<StackDefect> all_stack_defects();

struct WorldConfig {
  std::uint64_t reality_seed = 0;  // 0 is the default world
  double noise_rsd = 0.01;         // relative σ of a run's mean step time
  double factor_spread = 0.20;     // hidden time factors are uniform in [1 - s, 1 + s]
  double memory_factor_spread = 0.05;
  // A node is persistently slow with this probability. The paper's five calibration runs on
  // distinct 16-node allocations varied by 1% or less (bands at the 3% floor on GLM-4.5 and
  // Mixtral-8x22B, its Table D1): at 1 node in 500, about 85% of such calibrations meet no slow
  // node, where 1 in 50 left 81% of them with one, and a band of 15-25%.
  double slow_node_probability = 0.002;
  double slow_node_factor = 1.15;  // step-time multiplier of a run that holds a slow node
  double infra_failures_per_node_hour = 0.001;
  int gpus_per_node = 0;  // 0: the hardware's NVLink domain when it is at most 8, else 4
  int nodes = 0;          // 0: room for kConcurrentJobsMax jobs of the workload, plus spares
  std::vector<StackDefect> defects = all_stack_defects();
  // The software stack the cluster trains with: its terms multiply the hidden factors, its
  // between-step work adds to every step, and without CUDA graphs a recipe runs eagerly.
  StackProfile stack;
  // The recipe that works on this cluster (a campaign's baseline). The premise of tuning is that
  // it runs: where it fits in memory on the stack, the hidden memory factor is held at most at
  // the value that keeps it fitting. Empty: no such premise.
  std::optional<Recipe> baseline;
};

enum class JobOutcome : std::uint8_t {
  kCompleted,
  kOutOfMemory,       // a pipeline stage's peak exceeds the GPU's memory: in iteration 1, or
                      // while the model and optimizer are built (failed_step 0)
  kInvalidAtStartup,  // Megatron refuses the layout (an assertion at start-up)
  kCrash,             // a program error: a stack defect at start-up, or a NaN loss
  kInfrastructure,    // a node was lost, or the network failed
  kHang,              // the job stops making progress and never exits
};

std::string_view job_outcome_name(JobOutcome outcome);

enum class InfraFailure : std::uint8_t { kNone, kNodeLost, kNetworkError };

struct SimulatedRun {
  JobOutcome outcome = JobOutcome::kCompleted;
  // One line on what went wrong: Megatron's assertion message, the defect, the stage that ran
  // out of memory, the node that failed. Empty on success.
  std::string error;
  std::vector<std::string> nodes;  // the allocation, as given

  std::uint32_t steps_requested = 0;  // training steps plus kProfiledSteps when profiled
  bool profiled = false;
  std::uint32_t first_profiled_step = 0;  // 1-based; 0 when not profiled
  // Seconds from process start. The job prints its start-up lines during start-up, then one
  // line per step at the end of that step.
  double startup_s = 0;
  std::vector<double> step_times_s;  // one per completed step
  double last_progress_s = 0;        // when the log last grew
  double end_s = 0;                  // when the process exits; for a hang, when it went silent

  // Failure details.
  std::uint32_t failed_step = 0;  // 1-based step in which the job failed; 0: at start-up
  int failed_stage = -1;          // pipeline rank that ran out of memory
  InfraFailure infra = InfraFailure::kNone;
  std::string blamed_node;  // the node an infrastructure failure names
  std::optional<StackDefect> defect;
  Fault fault = Fault::kNone;

  double slow_node_factor = 1.0;  // > 1 when the allocation holds a slow node
  // The power draw of the launch's lowest GPU over its median GPU's, as a cluster's telemetry
  // (DCGM, nvidia-smi) shows it: 0.98-1.0 on a healthy allocation; a slow node's GPUs run and draw
  // at 1 / slow_node_factor of the others'.
  double lowest_gpu_power_fraction = 1.0;
  LossCurve loss;  // values for the steps requested; the log prints completed ones
  std::vector<double> peak_memory_gib_by_stage;
  Prediction prediction;  // the world's prediction: hidden factors applied, before noise
  // The layout as it ran on the world's stack (layout_on_stack); empty when the recipe was
  // refused at start-up.
  std::optional<ResolvedLayout> layout;
};

class World {
 public:
  World(Workload workload, WorldConfig config);

  const Workload& workload() const { return workload_; }
  const WorldConfig& config() const { return config_; }
  // The efficiency factors runs see: this hardware/model pair's hidden factors at this reality
  // seed, times the stack's, with the memory factor held where the baseline premise needs it.
  const CostFactors& hidden_factors() const { return factors_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int nodes_needed() const;  // by one job of the workload
  // Every node of the cluster, "node-001" ..., in order.
  const std::vector<std::string>& node_names() const { return node_names_; }
  // Whether a node is persistently slow (hidden from tuners; for tests).
  bool is_slow_node(std::string_view node) const;

  // One run of `recipe` for `steps` steps (plus kProfiledSteps traced steps when `profile`) on
  // `nodes` (empty: an allocation chosen by `run_seed`), with `fault` injected into its
  // training. REQUIRES: steps > 0.
  SimulatedRun simulate(const Recipe& recipe, std::uint32_t steps, std::uint64_t run_seed,
                        const std::vector<std::string>& nodes, bool profile,
                        Fault fault = Fault::kNone) const;

  // `nodes_needed` distinct nodes not in `exclude`, chosen by `seed`, sorted by name; empty when
  // the cluster has too few. Different seeds give different allocations when nodes are spare.
  std::vector<std::string> allocate(std::uint32_t nodes_needed,
                                    const std::vector<std::string>& exclude,
                                    std::uint64_t seed) const;
  // The same, never on `busy`, and avoiding `avoid` (names of this world's nodes) in the order
  // given as far as enough other nodes remain (the Slurm launcher keeps a job's exclusions the same
  // way); empty when `busy` alone leaves too few.
  std::vector<std::string> allocate_avoiding(std::uint32_t nodes_needed,
                                             const std::vector<std::string>& busy,
                                             const std::vector<std::string>& avoid,
                                             std::uint64_t seed) const;

 private:
  std::optional<StackDefect> defect_hit(const ResolvedLayout& resolved) const;

  Workload workload_;
  WorldConfig config_;
  CostFactors factors_;
  int gpus_per_node_ = 8;
  std::vector<std::string> node_names_;
};

// The hidden factors of a workload's hardware/model pair at the config's reality seed, as drawn
// (before the stack and the baseline premise).
CostFactors hidden_factors(const Workload& workload, const WorldConfig& config);

// The global rank that the first GPU of pipeline stage `stage` holds, with Megatron's default
// rank order (tp-cp-ep-dp-pp: the pipeline rank varies slowest).
int first_rank_of_stage(int world_size, int pipeline_stages, int stage);

}  // namespace attune::sim
