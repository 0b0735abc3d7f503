// The software stack a cluster trains with, as the simulated world sees it: how much slower each
// cost term of the performance model runs on it than on the stack the model's presets are
// calibrated to (Megatron-Bridge's performance containers, the published tables), the work the
// training loop does between steps, and whether the stack can capture CUDA graphs.
//
// A profile is a property of the world, the same for every workload on it: never a correction
// per model. Plain data read from a TOML file (a preset under adapters/model/data/stacks, or a
// user's file). Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/cost_factors.h"
#include "adapters/model/layout.h"
#include "adapters/model/prediction.h"
#include "adapters/model/workload.h"
#include "events/result.h"

namespace attune::sim {

struct StackProfile {
  std::string name = "megatron-bridge";
  std::string description;
  // Multiplies each term of the step (1.0: as on the calibrated stack).
  CostFactors factors;
  // Seconds the training loop spends between two steps (data hand-off, logging, bookkeeping);
  // the log's step times include it.
  double between_steps_s = 0;
  // Seconds each pipeline rank's loop spends around every microbatch (building its batch and
  // packing metadata, waiting on the host), with the GPU idle.
  double per_microbatch_s = 0;
  // False: the stack cannot capture CUDA graphs, so a recipe's graph flags capture nothing and
  // its kernels launch eagerly (and need no graph memory).
  bool cuda_graphs = true;
  // True: the stack always runs Megatron with variable sequence lengths (packed rows), which the
  // allgather token dispatcher does not support, so it swaps that dispatcher for alltoall before
  // the run (slime does, in its validate_args). The recipe keeps the flag it was written with.
  bool variable_seq_lengths = false;
  // False: the pipeline's sends and receives are on the critical path even under an interleaved
  // schedule, as without Megatron's overlap_p2p_comm (the paper measured its interleaved
  // Llama-3.1-405B recipe bound by them on slime).
  bool p2p_overlap = true;
};

// Each term of `a` times the same term of `b`.
CostFactors times(CostFactors a, const CostFactors& b);

// The dispatcher `stack` runs for `asked`: alltoall for allgather where it has variable sequence
// lengths, else `asked`.
Dispatcher dispatcher_on_stack(const StackProfile& stack, Dispatcher asked);

// The layout as `stack` runs it: without CUDA graphs the recipe's graph flags capture nothing;
// with variable sequence lengths an allgather dispatcher runs as alltoall; without pipeline
// overlap the interleaved schedule's exchanges are exposed.
ResolvedLayout layout_on_stack(const StackProfile& stack, ResolvedLayout resolved);

// What a run of `resolved` does on `stack`, with the cost terms scaled by `factors` (the stack's
// own factors already folded in by the caller): without CUDA graphs the recipe runs eagerly, with
// variable sequence lengths the allgather dispatcher runs as alltoall; the
// loop's time around each microbatch (on the critical rank: its own microbatches plus the
// pipeline's fill) and between steps is the breakdown's loop_s, with the GPU idle.
Prediction predict_on_stack(const Workload& workload, ResolvedLayout resolved,
                            const StackProfile& stack, const CostFactors& factors);

// The same for a recipe, with the stack's own factors: the clean model on that stack. An invalid
// recipe gives valid = false and Megatron's assertion message, as predict() does.
Prediction predict_on_stack(const Workload& workload, const Recipe& recipe,
                            const StackProfile& stack);

// Parses a profile; errors are one line naming the file, line and key.
Result<StackProfile> parse_stack_toml(std::string_view text, std::string_view source);

// The preset names (data/stacks/NAME.toml): "megatron-bridge" (the default), "slime".
std::vector<std::string> stack_preset_names();

// A preset name, or a path to a TOML file (anything ending in ".toml" or holding a '/'); empty
// names the default, megatron-bridge.
Result<StackProfile> load_stack(std::string_view name_or_path);

}  // namespace attune::sim
