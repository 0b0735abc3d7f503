// The tuner's own reading of a profiled run: per pipeline stage and per ProfilerStep window,
// where the GPU's time went (trace_anchors.md §6 item 4, the native mode):
//   compute      a kernel, memcpy or memset that is not communication runs;
//   exposed comm communication runs and no compute does, split by kind (tp, ep_a2a, pp_p2p, dp,
//                cp, unknown); time where several kinds run at once is shared equally;
//   host_bound   nothing runs and the host had not yet launched the operation that ends the
//                gap (its runtime launch comes after the GPU went idle); cuda_sync rows are the
//                host waiting, so they count as nothing running;
//   idle         nothing runs although the next operation was launched.
// The four add up to the step. A stage is the pipeline position of its traced rank (from the
// pipeline group in distributedInfo), else the rank order. The slowest stage is the one with
// the most work of its own (the step minus its pipeline waits and idle time); its largest
// exposed cost is named.
//
// Pure functions of their input; thread-safe.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "adapters/profiler/trace_directory.h"
#include "events/event.h"

namespace attune::profiler {

struct StepBreakdown {
  std::string name;  // "ProfilerStep#12", or "trace" when the trace has no ProfilerStep
  double step_ms = 0;
  double compute_ms = 0;
  std::array<double, kCommKindCount> exposed_comm_ms{};  // indexed by CommKind
  double host_bound_ms = 0;
  double idle_ms = 0;
};

struct StageDiagnosis {
  int stage = 0;
  int rank = 0;
  std::string path;
  std::vector<StepBreakdown> steps;
  StepBreakdown mean;  // over the steps; name "mean"
};

struct Diagnosis {
  std::vector<StageDiagnosis> stages;  // by stage
  std::size_t slowest = 0;             // index into stages
  std::string largest_cost;            // e.g. "ep_a2a on stage 3"
  std::vector<std::string> warnings;
};

// Errors: no traced rank has a GPU operation.
Result<Diagnosis> diagnose_stages(const TraceDirectory& directory);

// The diagnosis as the event the control plane records (run_id 0, the caller sets it).
ProfileAnalyzed profile_analyzed(const Diagnosis& diagnosis);

}  // namespace attune::profiler
