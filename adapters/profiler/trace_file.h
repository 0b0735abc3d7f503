// One rank's Kineto trace file, read into compact per-event records.
//
// Reads a PyTorch profiler (Kineto) Chrome-trace JSON file, plain or gzip, the way HTA's loader
// does (trace_anchors.md §1.1 and §1.2 steps 1-3): the rank from the first line matching
// `"rank":\s+(\d+)` (else 0), the ns rounding when any `ts` is written with a fraction, rows
// without `dur` or `cat` and `cat == "Trace"` dropped, `args.stream` coerced (non-numeric -> -1).
// It keeps only the rows the analyses need: GPU operations, rows with a correlation id (runtime
// launches), ProfilerStep annotations and the first event; everything else is skipped while
// parsing, and the file's text is freed before the function returns. Memory while parsing: the
// text, the kept records and simdjson's index of one chunk of traceEvents (about 8 MiB of text at
// a time), not of the whole document.
//
// Depends only on simdjson, zlib and libdeflate (the fuzz target compiles it on its own).
// Thread-safe: each call owns its parser and buffers.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/profiler/kernel_class.h"
#include "events/result.h"

namespace attune::profiler {

// The Kineto categories the analyses tell apart.
enum class CatClass : std::uint8_t {
  kKernel,      // kernel, gpu_memcpy, gpu_memset, Kernel, Memcpy, Memset, mtia_ccp_events
  kRuntime,     // cuda_runtime, cuda_driver: the host-side launch of a GPU operation
  kCudaSync,    // cuda_sync: Stream Sync, Context Sync, Event Sync, Stream Wait Event
  kAnnotation,  // user_annotation (ProfilerStep#N), gpu_user_annotation
  kOther,
};

// Per-event flags.
constexpr std::uint8_t kGpuRow = 1;         // HTA's GPU row: stream >= 0 and correlation >= 0, or
                                            // named "Event Sync" / "Context Sync"
constexpr std::uint8_t kProfilerStep = 2;   // name matches ^ProfilerStep#\d+
constexpr std::uint8_t kStreamFromTid = 4;  // an MTIA device event: its stream is its tid
constexpr std::uint8_t kGpuAnnotation = 8;  // cat gpu_user_annotation: the GPU-side span of a
                                            // CPU annotation (a ProfilerStep seen twice)

// One kept row, 48 bytes. Times are µs, relative to the trace's own clock (not yet aligned).
struct TraceEvent {
  double ts_us = 0;
  double dur_us = 0;
  std::int64_t stream = -1;
  std::int64_t correlation = -1;
  std::uint32_t index = 0;      // position in traceEvents, all events counted
  std::uint32_t name_id = 0;    // into RankTrace::names
  std::uint32_t comm_args = 0;  // into RankTrace::comm_args, 0 when the event has none
  CatClass cat = CatClass::kOther;
  KernelClass kernel = KernelClass::kOther;
  CommKind comm = CommKind::kNone;  // communication kernels only
  std::uint8_t flags = 0;

  bool gpu_row() const { return (flags & kGpuRow) != 0; }
  bool profiler_step() const { return (flags & kProfilerStep) != 0; }
};

struct ProcessGroupInfo {
  std::string name;  // pg_name, e.g. "3"
  std::string desc;  // pg_desc, e.g. "TENSOR_MODEL_PARALLEL_GROUP"
  std::vector<int> ranks;
};

// Kineto's collective arguments of a communication kernel (or its record_param_comms op).
struct CommArgs {
  std::string group_desc;   // "Process Group Description"
  std::string group_name;   // "Process Group Name"
  std::string group_ranks;  // "Process Group Ranks", as written: "[0, 1]"
  std::string collective;   // "Collective name"
};

struct RankTrace {
  std::string path;
  int rank = 0;               // as HTA reads it: the first `"rank":\s+(\d+)` match, else 0
  bool rank_found = false;    // false: no line matched, rank 0 by default
  int distributed_rank = -1;  // distributedInfo.rank, -1 if absent
  int world_size = 0;
  std::string backend;  // distributedInfo.backend, e.g. "nccl", "mtia:hccl"
  std::vector<ProcessGroupInfo> process_groups;  // distributedInfo.pg_config

  std::vector<std::string> names;   // interned event names
  std::vector<CommArgs> comm_args;  // [0] is empty
  std::vector<TraceEvent> events;   // kept rows, in file order
  // CPU rows with a negative correlation (the default -1), as (correlation, ts): HTA's filter
  // joins on correlation, so they matter when a GPU row has a negative one (a sync without a
  // launch). Empty when no GPU row does.
  std::vector<std::pair<std::int64_t, double>> negative_correlation_cpu_rows;

  std::size_t event_count = 0;  // all traceEvents, kept or not
  std::size_t row_count = 0;    // rows left after dropping null dur/cat and cat "Trace"
  double min_ts_us = std::numeric_limits<double>::infinity();      // over those rows
  double min_cpu_ts_us = std::numeric_limits<double>::infinity();  // over their CPU rows
  bool ns_rounded = false;  // ts was written with fractions: times rounded to whole µs
  std::size_t json_bytes = 0;
};

// Reads and parses one trace file (gzip detected by its magic bytes). Errors: unreadable file,
// truncated or corrupt gzip, malformed JSON, no traceEvents array.
Result<RankTrace> read_trace_file(const std::string& path);

// Parses JSON text already in memory; `label` names it in errors.
Result<RankTrace> parse_trace_text(std::string_view json_text, const std::string& label);

// Parses a trace file's bytes already in memory, gzip or plain JSON, exactly as read_trace_file
// parses the file's contents (the fuzz target's entry point); `label` names them in errors.
Result<RankTrace> parse_trace_bytes(std::string_view bytes, const std::string& label);

// Inflates gzip bytes (one or more members). Errors name `label`.
Result<std::string> gunzip(std::string_view compressed, const std::string& label);

}  // namespace attune::profiler
