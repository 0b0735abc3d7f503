// The oracle: enumerates the valid layout space around a baseline recipe (TP, PP with its
// stage splits, VP, CP, EP, ETP, microbatch size where allowed, recomputation, dispatcher,
// optimizer offload, TP communication overlap, expert-parallel overlap and CUDA graphs), predicts
// each layout with the clean model (or given cost factors, e.g. a simulated world's), and keeps
// the fastest that fit in memory. Tuners are scored against its best. Every other setting of the
// baseline (precision, other overlaps, fusions, environment) is kept; settings a layout makes
// invalid are dropped as a careful engineer would (sequence parallelism and TP communication
// overlap at TP 1, expert-parallel overlap without interleaving).
//
// Pure and deterministic (enumeration order breaks ties); single-threaded.
#pragma once

#include <functional>
#include <vector>

#include "adapters/model/cost_factors.h"
#include "adapters/model/layout.h"
#include "adapters/model/prediction.h"
#include "adapters/model/stack_profile.h"
#include "adapters/model/workload.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune::sim {

struct SweepOptions {
  int top_k = 10;
  // Microbatch sizes to try; empty keeps the baseline's (the microbatch size changes the loss of
  // MoE models whose load-balancing loss is per microbatch, so it is opt-in).
  std::vector<int> micro_batch_sizes;
  int max_tp = 8;
  int max_cp = 8;
  int max_vp = 8;
  bool vary_recompute = true;
  bool vary_dispatcher = true;
  bool vary_offload = true;  // only where the baseline's optimizer allows offload
  // --tp-comm-overlap where TP > 1, --overlap-moe-expert-parallel-comm where Megatron allows it.
  bool vary_overlaps = true;
  // No CUDA graphs and Transformer Engine per-layer graphs (attention, router and preprocessing of
  // MoE layers; whole layers of dense models), where the layout allows them: where launching
  // kernels binds, graphs are worth as much as a layout change, and the oracle must stay an upper
  // bound.
  bool vary_cuda_graphs = true;
  CostFactors factors;  // all 1.0: the clean model; fold in the stack's own factors
  // The stack the layouts run on: its loop's time counts, and without CUDA graphs no graph
  // variant is tried (it would run as the eager one).
  StackProfile stack;
  // Which recipes may enter the best list (a policy's layer-1 check, say); empty admits every
  // one. Asked only of layouts fast enough to enter it, so a filter that refuses the fastest
  // layouts still leaves top_k others.
  std::function<bool(const Recipe&)> admit;
};

struct SweepEntry {
  Recipe recipe;  // the baseline with this layout
  ResolvedLayout layout;
  Prediction prediction;
};

struct SweepResult {
  Prediction baseline;
  std::vector<SweepEntry> best;  // fastest first, at most top_k, all valid and fitting
  long long layouts_considered = 0;
  long long layouts_valid = 0;
  long long layouts_fitting = 0;
};

// Fails when the baseline recipe does not decode; an invalid or out-of-memory baseline is fine
// (its prediction says so).
Result<SweepResult> sweep(const Workload& workload, const Recipe& baseline,
                          const SweepOptions& options = SweepOptions{});

}  // namespace attune::sim
