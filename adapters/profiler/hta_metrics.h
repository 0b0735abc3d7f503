// HTA-compatible metrics of a trace directory: the temporal breakdown, the communication-
// computation overlap, the kernel-type and per-kernel breakdown, and the idle-time breakdown,
// with the definitions, windows and quirks of Meta's HolisticTraceAnalysis (trace_anchors.md
// §1.2 steps 4-6 and §1.4-§1.7), so the numbers are the numbers HTA prints.
//
// Times are µs. Percentages are rounded as HTA rounds them (numpy's round half to even on
// x * 10^d). NaN marks what HTA leaves undefined (no communication, no idle time).
// Pure functions of their input; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "adapters/profiler/trace_directory.h"

namespace attune::profiler {

struct TemporalRow {
  int rank = 0;
  double idle_us = 0;
  double compute_us = 0;
  double non_compute_us = 0;
  double kernel_us = 0;
  double idle_pctg = 0;
  double compute_pctg = 0;
  double non_compute_pctg = 0;
};

struct OverlapRow {
  int rank = 0;
  double overlap_pctg = 0;  // NaN when the rank ran no communication kernel
};

struct KernelTypeRow {
  std::string kernel_type;  // "COMPUTATION", "COMPUTATION overlapping COMMUNICATION", ...
  double sum_us = 0;
  double percentage = 0;
};

struct KernelRow {
  std::string kernel_type;
  std::string name;  // or "others"
  int rank = 0;
  double sum_us = 0;
  double max_us = 0;
  double min_us = 0;
  double mean_us = 0;
  double stddev_us = 0;
};

struct IdleRow {
  int rank = 0;
  std::int64_t stream = 0;
  std::string idle_category;  // host_wait, kernel_wait, other
  double idle_us = 0;
  double idle_ratio = 0;  // NaN when the stream never idled
};

struct HtaOptions {
  std::vector<int> idle_ranks = {0};  // HTA's default
  double consecutive_kernel_delay_us = 30;
  double duration_ratio = 0.8;
  std::size_t num_kernels = 10;
};

struct HtaReport {
  std::vector<TemporalRow> temporal;
  std::vector<OverlapRow> overlap;
  std::vector<KernelTypeRow> kernel_types;  // sorted by sum, descending
  std::vector<KernelRow> kernels;           // sorted by (kernel_type, name, rank)
  std::vector<IdleRow> idle;
  std::vector<std::string> warnings;  // ranks left out (no GPU operation), ranks not traced
  // Where HTA itself would stop (a negative time in the temporal breakdown): why, one line; the
  // tables are then not HTA's and are not shown.
  std::string refusal;
};

HtaReport analyze_hta(const TraceDirectory& directory, const HtaOptions& options = {});

// A GPU operation's time span, µs: [ts, end).
struct Interval {
  double ts = 0;
  double end = 0;
};

// HTA's merge of kernel intervals: sorted by start, a new group begins when a start lies strictly
// after every end so far (so touching intervals merge); each group becomes (first start, largest
// end). The result is sorted and its groups are disjoint.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);

// numpy's round(x, decimals): round half to even of x * 10^decimals.
double round_like_numpy(double value, int decimals);

// One rank's rows as HTA's loader leaves them (§1.2 steps 4-6): the ProfilerStep filter applied
// when `filter` (with its inner-merge duplication), times aligned by `min_ts_us`, and for each
// row the launch time of its runtime row (ts_runtime, NaN when there is none). Exposed for tests.
struct HtaRows {
  std::vector<TraceEvent> rows;
  std::vector<double> ts_runtime_us;
};
HtaRows hta_rows(const RankTrace& trace, bool filter, double min_ts_us);

// Whether HTA filters the directory: >= 2 distinct ProfilerStep names over all ranks.
bool hta_filters(const TraceDirectory& directory);

}  // namespace attune::profiler
