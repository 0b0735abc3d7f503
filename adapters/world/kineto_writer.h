// Kineto traces of a simulated, profiled run: one Chrome-trace JSON file per traced pipeline
// stage (the stage's first rank, as Megatron's --profile-ranks would pick it), gzip-compressed,
// named rank-<R>.json.gz, in the shape the PyTorch profiler writes (trace_anchors.md §1.1, the
// corpus in shared/data/kineto-traces): schemaVersion, deviceProperties, distributedInfo with
// every process group of the rank (pg_name, pg_desc such as TENSOR_MODEL_PARALLEL_GROUP, ranks),
// traceEvents, traceName, displayTimeUnit, baseTimeNanoseconds.
//
// The events cover the kProfiledSteps traced steps: a ProfilerStep#N annotation per step (N is
// the profiler's step count, the iteration minus one), cpu_op ranges, one runtime launch per
// kernel (cudaLaunchKernel, or cuLaunchKernelEx for NCCL) joined to its kernel by the correlation
// id and an ac2g flow, and kernels with realistic names on realistic streams: GEMMs
// (sm90_xmma_gemm_..., nvjet_... on Blackwell, cutlass grouped GEMMs for experts), flash
// attention, Transformer Engine and ATen elementwise kernels, the fused Adam step, and NCCL
// kernels by collective (ncclDevKernel_AllGather_RING_LL, ..._ReduceScatter_Sum_bf16_RING_LL,
// ..._AllReduce_..., ncclDevKernel_SendRecv for pipeline send/receive and the all-to-all
// dispatcher) or DeepEP's dispatch/combine kernels, each NCCL kernel carrying Kineto's collective
// arguments (Collective name, message sizes, Process Group Name/Description/Ranks). Streams:
// compute 7; tensor parallel 20, context parallel 24, expert dispatch 28, pipeline 36, data
// parallel 44, expert data parallel 48.
//
// Durations come from the world's StageTiming of the traced stage, scaled to the run's measured
// step: exposed communication holds the compute stream, hidden communication overlaps it, host
// overhead leaves gaps before launches, and the stage's share of the pipeline bubble is a
// receive that waits (a long SendRecv kernel), as on a real GPU. Large steps are coalesced
// (several layers, then several microbatches, per kernel) so a file stays under
// kTraceKernelsPerStepMax kernels per step.
//
// Pure functions apart from the file writes of write_kineto_traces; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kineto/kineto_trace.h"
#include "adapters/model/workload.h"
#include "adapters/world/world.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune::sim {

constexpr int kTraceKernelsPerStepMax = 2500;
constexpr int kComputeStream = 7;

struct TraceOptions {
  int gpus_per_node = 8;
  std::int64_t start_unix_ns = 0;  // when the job's process started
};

// The global ranks whose traces a profiled run writes: the first rank of each pipeline stage.
std::vector<int> traced_ranks(int world_size, int pipeline_stages);

// The trace of pipeline stage `stage`'s first rank, as records for the shared Kineto writer
// (adapters/kineto). REQUIRES: `run` (from World::simulate of `workload` and `recipe`) is profiled
// and completed every profiled step.
kineto::TraceRecords stage_trace(const Workload& workload, const Recipe& recipe,
                                 const SimulatedRun& run, int stage, const TraceOptions& options);

// The JSON text of that trace.
std::string kineto_trace_json(const Workload& workload, const Recipe& recipe,
                              const SimulatedRun& run, int stage, const TraceOptions& options);

// Writes every traced stage's file into `directory` (created if missing); returns their paths.
Result<std::vector<std::string>> write_kineto_traces(const std::string& directory,
                                                     const Workload& workload, const Recipe& recipe,
                                                     const SimulatedRun& run,
                                                     const TraceOptions& options);

}  // namespace attune::sim
