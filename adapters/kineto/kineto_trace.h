// The Kineto trace format, written: Chrome-trace JSON in the shape the PyTorch profiler writes and
// the trace analyzer (adapters/profiler) and HolisticTraceAnalysis read (trace_anchors.md §1.1).
// One writer for every producer: the GPU-side tools (cuda/: the CUPTI tracer, the NCCL profiler
// plugin) and the simulated world's profiled runs (adapters/world).
//
// One file per rank, named rank-<R>.json or rank-<R>.json.gz, with distributedInfo written as
// `"rank": R` (a space after the colon, which HTA's rank regex needs), traceEvents whose ts/dur are
// microseconds with exactly three decimals relative to baseTimeNanoseconds, GPU rows (kernel,
// gpu_memcpy, gpu_memset, cuda_sync) with pid = device, tid = stream and args.stream and
// args.correlation, host rows (cuda_runtime, cuda_driver, cpu_op, user_annotation such as
// ProfilerStep#N) with pid/tid of the host thread, and an ac2g flow from each correlated launch
// to its GPU row.
//
// Pure functions apart from write_trace_file; thread-safe. Depends on nothing but the standard
// library and zlib (gzip.h), so that the shared libraries NCCL and CUDA load can link it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "events/result.h"

namespace attune::kineto {

// Kineto's collective arguments on an NCCL kernel and its host row.
struct CollectiveArgs {
  std::string collective;  // Kineto's "Collective name": allreduce, allgather, reduce_scatter, ...
  std::int64_t in_nelems = 0;
  std::int64_t out_nelems = 0;
  int group_size = 0;
  std::string dtype;              // Kineto's names: BFloat16, Float, Half, ...
  std::string group_name;         // "Process Group Name"
  std::string group_description;  // "Process Group Description"
  std::vector<int> group_ranks;   // "Process Group Ranks"; empty when unknown
  // What the NCCL profiler plugin knows beyond Kineto's fields; written only when set.
  std::string comm_id;  // hexadecimal communicator id
  std::int64_t seq = -1;
  std::string algorithm;
  std::string protocol;
  int channels = -1;
  int peer = -1;
  int comm_rank = -1;
  std::int64_t bytes = -1;
};

enum class GpuRowKind { kKernel, kMemcpy, kMemset, kSync };

// A span on a GPU stream. Times are ns on the host clock the trace is written in.
struct GpuRow {
  GpuRowKind kind = GpuRowKind::kKernel;
  std::string name;  // demangled kernel name, "Memcpy HtoD (Pageable -> Device)", "Stream Sync"
  int device = 0;
  std::int64_t stream = -1;  // a context sync has none and carries 4294967295 as Kineto does
  std::int64_t correlation = -1;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t bytes = -1;  // memcpy and memset
  int grid[3] = {0, 0, 0};  // kernels; all zero when unknown
  int block[3] = {0, 0, 0};
  std::optional<CollectiveArgs> collective;
  std::int64_t external_id = -1;  // the operator it belongs to; -1: the correlation
};

// A process's or thread's name, as Kineto closes its event list ("process_name" with "python",
// "thread_name" with "stream 7 ", ...): viewers label their rows with them.
struct TraceName {
  std::string kind;  // process_name, process_labels, thread_name, ...
  int pid = 0;
  std::int64_t tid = 0;
  std::string key;  // the argument's name: name, labels, sort_index
  std::string value;
  bool value_is_number = false;
};

// A span on a host thread: a runtime or driver call (cat cuda_runtime/cuda_driver), a CPU
// operation (cpu_op) or an annotation (user_annotation, e.g. ProfilerStep#3).
struct HostRow {
  std::string category;
  std::string name;
  int pid = 0;
  std::int64_t tid = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t correlation = -1;  // joins a launch to its GPU row; -1 for none
  int cbid = -1;                  // runtime/driver callback id; -1 for none
  std::optional<CollectiveArgs> collective;
  std::int64_t external_id = -1;  // the operator it belongs to; -1: the correlation
};

struct TraceDevice {
  int id = 0;
  std::string name;
  std::int64_t total_memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
};

struct TraceProcessGroup {
  std::string name;
  std::string description;
  int size = 0;
  std::vector<int> ranks;  // empty when unknown
};

// One rank's trace. `counters` are written under the top-level key "attune" (say what a tool
// dropped or could not time), which HTA keeps as metadata and ignores.
struct TraceRecords {
  int rank = 0;
  int world_size = 1;
  std::string trace_name;
  std::vector<TraceDevice> devices;
  std::vector<TraceProcessGroup> process_groups;
  std::vector<HostRow> host;
  std::vector<GpuRow> gpu;
  std::vector<TraceName> names;
  std::string nccl_version;  // written into distributedInfo when set
  std::vector<std::pair<std::string, std::int64_t>> counters;
};

// "rank-<R>.json" or "rank-<R>.json.gz".
std::string trace_file_name(int rank, bool gzip);

// ns as Kineto writes µs: "<us>.<ns%1000 in 3 digits>", with a sign for negative values.
std::string kineto_microseconds(std::int64_t ns);

// The Chrome-trace JSON text. Rows are written in start order (host rows first, as Kineto does),
// relative to a base of the earliest timestamp rounded down to a whole second.
std::string kineto_trace_json(const TraceRecords& records);

// Writes kineto_trace_json(records) to directory/trace_file_name(rank, gzip), creating the
// directory; the file appears whole (written beside it, then renamed). Returns the path.
Result<std::string> write_trace_file(const std::string& directory, const TraceRecords& records,
                                     bool gzip);

}  // namespace attune::kineto
