#include "adapters/profiler/hta_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <utility>

namespace attune::profiler {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Σend − Σts, summed in order, as HTA computes a merged set's length.
double merged_length(const std::vector<Interval>& groups) {
  double ends = 0;
  double starts = 0;
  for (const Interval& g : groups) {
    ends += g.end;
    starts += g.ts;
  }
  return ends - starts;
}

std::vector<Interval> intervals_of(const std::vector<const TraceEvent*>& rows,
                                   std::optional<KernelClass> kernel_class) {
  std::vector<Interval> out;
  for (const TraceEvent* e : rows) {
    if (!kernel_class || e->kernel == *kernel_class)
      out.push_back({e->ts_us, e->ts_us + e->dur_us});
  }
  return out;
}

struct SweepPoint {
  double time = 0;
  int weight = 0;
};

// The running sum of weighted interval starts (+w) and ends (−w), in time order; calls
// `piece(running, length)` for each piece between consecutive points.
template <typename Piece>
void sweep(std::vector<SweepPoint> points, Piece piece) {
  std::stable_sort(points.begin(), points.end(),
                   [](const SweepPoint& a, const SweepPoint& b) { return a.time < b.time; });
  int running = 0;
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    running += points[i].weight;
    piece(running, points[i + 1].time - points[i].time);
  }
}

void add_points(std::vector<SweepPoint>& points, const std::vector<Interval>& groups, int weight) {
  for (const Interval& g : groups) {
    points.push_back({g.ts, weight});
    points.push_back({g.end, -weight});
  }
}

TemporalRow temporal_of(int rank, const std::vector<const TraceEvent*>& gpu) {
  const std::vector<Interval> all = merge_intervals(intervals_of(gpu, std::nullopt));
  TemporalRow row;
  row.rank = rank;
  row.kernel_us = all.back().end - all.front().ts;
  row.idle_us = row.kernel_us - merged_length(all);
  row.compute_us = merged_length(merge_intervals(intervals_of(gpu, KernelClass::kComputation)));
  row.non_compute_us = row.kernel_us - row.compute_us - row.idle_us;
  row.idle_pctg = round_like_numpy(100 * (row.idle_us / row.kernel_us), 2);
  row.compute_pctg = round_like_numpy(100 * (row.compute_us / row.kernel_us), 2);
  row.non_compute_pctg = round_like_numpy(100 * (row.non_compute_us / row.kernel_us), 2);
  return row;
}

OverlapRow overlap_of(int rank, const std::vector<const TraceEvent*>& gpu) {
  const std::vector<Interval> compute =
      merge_intervals(intervals_of(gpu, KernelClass::kComputation));
  const std::vector<Interval> comm =
      merge_intervals(intervals_of(gpu, KernelClass::kCommunication));
  std::vector<SweepPoint> points;
  add_points(points, compute, 2);
  add_points(points, comm, 1);
  double overlap = 0;
  sweep(std::move(points), [&](int running, double length) {
    if (running == 3) overlap += length;
  });
  double comm_length = 0;
  for (const Interval& g : comm) comm_length += g.end - g.ts;
  OverlapRow row;
  row.rank = rank;
  row.overlap_pctg = comm.empty() ? kNaN : round_like_numpy(100 * (overlap / comm_length), 2);
  return row;
}

constexpr KernelClass kAnalysedClasses[] = {KernelClass::kComputation, KernelClass::kCommunication,
                                            KernelClass::kMemory};

std::string running_label(int running) {
  std::string label;
  for (int bit = 0; bit < 3; ++bit) {
    if ((running & (1 << bit)) == 0) continue;
    if (!label.empty()) label += " overlapping ";
    label += kernel_class_name(kAnalysedClasses[bit]);
  }
  return label;
}

// Per label, Σ of int(next − time) over the pieces where something runs.
void add_kernel_type_times(const std::vector<const TraceEvent*>& gpu,
                           std::map<std::string, double>& sums) {
  std::vector<SweepPoint> points;
  for (int bit = 0; bit < 3; ++bit) {
    add_points(points, merge_intervals(intervals_of(gpu, kAnalysedClasses[bit])), 1 << bit);
  }
  std::map<int, double> by_running;
  sweep(std::move(points), [&](int running, double length) {
    if (running > 0) by_running[running] += std::trunc(length);
  });
  for (const auto& [running, sum] : by_running) sums[running_label(running)] += sum;
}

// numpy's linear quantile of sorted values.
double linear_quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const double below = std::floor(position);
  const auto lo = static_cast<std::size_t>(below);
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double t = position - below;
  const double a = values[lo];
  const double b = values[hi];
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

struct Stats {
  double sum = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  double mean = 0;
  double stddev = 0;
};

// sum, max, min, mean and the sample standard deviation (Welford; 0 for one value).
Stats stats_of(const std::vector<double>& values) {
  Stats s;
  double mean = 0;
  double squares = 0;
  std::size_t n = 0;
  for (double v : values) {
    s.sum += v;
    s.max = std::max(s.max, v);
    s.min = std::min(s.min, v);
    ++n;
    const double delta = v - mean;
    mean += delta / static_cast<double>(n);
    squares += delta * (v - mean);
  }
  s.mean = s.sum / static_cast<double>(n);
  s.stddev = n > 1 ? std::sqrt(squares / static_cast<double>(n - 1)) : 0;
  return s;
}

// HTA's _aggr_gpu_kernel_time for one rank and one kernel type.
void add_kernel_rows(int rank, KernelClass kernel_class, const std::vector<const TraceEvent*>& gpu,
                     const RankTrace& trace, const HtaOptions& options,
                     std::vector<KernelRow>& out) {
  std::map<std::string, std::vector<double>> durations;
  for (const TraceEvent* e : gpu) {
    if (e->kernel == kernel_class) durations[trace.names[e->name_id]].push_back(e->dur_us);
  }
  if (durations.empty()) return;
  struct Named {
    std::string name;
    Stats stats;
  };
  std::vector<Named> rows;
  for (const auto& [name, values] : durations) rows.push_back({name, stats_of(values)});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Named& a, const Named& b) { return a.stats.sum > b.stats.sum; });
  if (rows.size() > options.num_kernels) {
    std::vector<double> cumulative;
    double running = 0;
    for (const Named& row : rows) cumulative.push_back(running += row.stats.sum);
    const double quantile = linear_quantile(cumulative, options.duration_ratio);
    std::map<std::string, std::vector<double>> sums;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const bool other = cumulative[i] > quantile || i >= options.num_kernels;
      sums[other ? "others" : rows[i].name].push_back(rows[i].stats.sum);
    }
    rows.clear();
    for (const auto& [name, values] : sums) rows.push_back({name, stats_of(values)});
  }
  for (const Named& row : rows) {
    out.push_back(KernelRow{kernel_class_name(kernel_class), row.name, rank, row.stats.sum,
                            row.stats.max, row.stats.min, row.stats.mean, row.stats.stddev});
  }
}

// HTA's idle-time breakdown of one rank, per stream in order of first appearance.
void add_idle_rows(int rank, const HtaRows& hta, const HtaOptions& options,
                   std::vector<IdleRow>& out) {
  std::vector<std::int64_t> streams;
  std::map<std::int64_t, std::vector<std::size_t>> rows_of_stream;
  for (std::size_t i = 0; i < hta.rows.size(); ++i) {
    const TraceEvent& e = hta.rows[i];
    if (e.stream == -1 || e.cat != CatClass::kKernel) continue;
    auto [it, inserted] = rows_of_stream.try_emplace(e.stream);
    if (inserted) streams.push_back(e.stream);
    it->second.push_back(i);
  }
  for (const std::int64_t stream : streams) {
    std::vector<std::size_t>& rows = rows_of_stream[stream];
    std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
      return hta.rows[a].ts_us < hta.rows[b].ts_us;
    });
    // host_wait, kernel_wait, other: the first kernel's category is other, with no gap.
    double sums[3] = {0, 0, 0};
    bool present[3] = {false, false, true};
    for (std::size_t k = 1; k < rows.size(); ++k) {
      const TraceEvent& previous = hta.rows[rows[k - 1]];
      const TraceEvent& current = hta.rows[rows[k]];
      const double previous_end = previous.ts_us + previous.dur_us;
      const double gap = current.ts_us - previous_end;
      const double ts_runtime = hta.ts_runtime_us[rows[k]];
      const int category = ts_runtime > previous_end                   ? 0
                           : gap < options.consecutive_kernel_delay_us ? 1
                                                                       : 2;
      sums[category] += gap;
      present[category] = true;
    }
    double total = 0;
    for (int c = 0; c < 3; ++c) total += present[c] ? sums[c] : 0;
    constexpr const char* kNames[3] = {"host_wait", "kernel_wait", "other"};
    for (int c = 0; c < 3; ++c) {
      if (!present[c]) continue;
      const double ratio = sums[c] / total;
      out.push_back(IdleRow{rank, stream, kNames[c], round_like_numpy(sums[c], 2),
                            std::isnan(ratio) ? kNaN : round_like_numpy(ratio, 2)});
    }
  }
}

}  // namespace

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  std::stable_sort(intervals.begin(), intervals.end(),
                   [](const Interval& a, const Interval& b) { return a.ts < b.ts; });
  std::vector<Interval> groups;
  for (const Interval& i : intervals) {
    if (groups.empty() || i.ts > groups.back().end) {
      groups.push_back(i);
    } else {
      groups.back().end = std::max(groups.back().end, i.end);
    }
  }
  return groups;
}

double round_like_numpy(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::nearbyint(value * scale) / scale;
}

// The distinct ProfilerStep names of the traces, counted up to 2: HTA filters with 2 or more.
std::size_t profiler_step_names(const TraceDirectory& directory) {
  std::set<std::string> step_names;
  for (const RankTrace& trace : directory.ranks) {
    for (const TraceEvent& e : trace.events) {
      if (e.profiler_step()) step_names.insert(trace.names[e.name_id]);
      if (step_names.size() >= 2) return 2;
    }
  }
  return step_names.size();
}

HtaRows hta_rows(const RankTrace& trace, bool filter, double min_ts_us) {
  HtaRows out;
  if (!filter) {
    out.rows = trace.events;
  } else {
    // The last ProfilerStep's start on this rank; CPU rows from then on are dropped, and GPU
    // rows follow their launching CPU rows through an inner join on correlation.
    double last_start = -std::numeric_limits<double>::infinity();
    bool any_step = false;
    for (const TraceEvent& e : trace.events) {
      if (e.profiler_step() && !e.gpu_row()) {
        last_start = std::max(last_start, e.ts_us);
        any_step = true;
      }
    }
    if (!any_step) last_start = trace.min_cpu_ts_us;
    std::unordered_map<std::int64_t, std::uint32_t> kept_cpu_rows;
    for (const TraceEvent& e : trace.events) {
      if (!e.gpu_row() && e.correlation >= 0 && e.ts_us < last_start)
        ++kept_cpu_rows[e.correlation];
    }
    for (const auto& [correlation, ts] : trace.negative_correlation_cpu_rows) {
      if (ts < last_start) ++kept_cpu_rows[correlation];
    }
    for (const TraceEvent& e : trace.events) {
      if (!e.gpu_row()) continue;
      const auto found = kept_cpu_rows.find(e.correlation);
      const std::uint32_t copies = found == kept_cpu_rows.end() ? 0 : found->second;
      for (std::uint32_t c = 0; c < copies; ++c) out.rows.push_back(e);
    }
    for (const TraceEvent& e : trace.events) {
      if (!e.gpu_row() && e.ts_us < last_start) out.rows.push_back(e);
    }
  }
  for (TraceEvent& e : out.rows) e.ts_us -= min_ts_us;

  // index_correlation: the last CPU row with the GPU row's correlation, else row 0 (HTA's
  // min(correlation, 0)); its time, when that row is still there after the filter.
  std::unordered_map<std::int64_t, std::uint32_t> launch_index;
  for (const TraceEvent& e : trace.events) {
    if (!e.gpu_row() && e.correlation >= 0) launch_index[e.correlation] = e.index;
  }
  std::unordered_map<std::uint32_t, double> ts_of_index;
  for (const TraceEvent& e : out.rows) ts_of_index.try_emplace(e.index, e.ts_us);
  out.ts_runtime_us.assign(out.rows.size(), kNaN);
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    const TraceEvent& e = out.rows[i];
    if (!e.gpu_row() || e.correlation < 0) continue;
    const auto launch = launch_index.find(e.correlation);
    const std::uint32_t index = launch == launch_index.end() ? 0 : launch->second;
    const auto ts = ts_of_index.find(index);
    if (ts != ts_of_index.end()) out.ts_runtime_us[i] = ts->second;
  }
  return out;
}

namespace {

// HTA's temporal breakdown and overlap of one rank's GPU operations, into `report`; a negative
// time there is where HTA stops (report.refusal).
void add_temporal_and_overlap(const RankTrace& trace, const std::vector<const TraceEvent*>& gpu,
                              HtaReport& report) {
  // HTA's temporal breakdown (and so its overlap here) sees only rows with args.stream; MTIA
  // device events whose queue is their tid (dma_request) count in the kernel-type and
  // idle-time breakdowns only. HTA's own test values for mtia_trace_single_rank (kernel time
  // 13,328,071 µs, idle 5,649,476, compute 7,305,597, non-compute 372,998) are exactly the
  // breakdown without them, and its kernel-type sum (7,304,578) the one with them.
  std::vector<const TraceEvent*> args_stream_gpu;
  for (const TraceEvent* e : gpu) {
    if ((e->flags & kStreamFromTid) == 0) args_stream_gpu.push_back(e);
  }
  if (args_stream_gpu.empty()) {
    report.warnings.push_back("rank " + std::to_string(trace.rank) +
                              ": no GPU operation with a stream argument; no temporal breakdown "
                              "or overlap for it (" +
                              trace.path + ")");
  } else {
    report.temporal.push_back(temporal_of(trace.rank, args_stream_gpu));
    // HTA asserts that the three parts of the kernel time are not negative, and stops.
    const TemporalRow& row = report.temporal.back();
    if (row.idle_us < 0 || row.compute_us < 0 || row.non_compute_us < 0) {
      report.refusal = "rank " + std::to_string(trace.rank) +
                       ": the temporal breakdown gives a negative time (idle " +
                       std::to_string(std::llround(row.idle_us)) + " us, compute " +
                       std::to_string(std::llround(row.compute_us)) + " us, non-compute " +
                       std::to_string(std::llround(row.non_compute_us)) +
                       " us); HolisticTraceAnalysis stops on an assertion here, so --hta has "
                       "no tables for these traces (" +
                       trace.path + ")";
    }
    report.overlap.push_back(overlap_of(trace.rank, args_stream_gpu));
  }
}

// The kernel-type table: each type's share of the summed kernel time, largest first, and the
// kernel rows in HTA's order.
void add_kernel_type_rows(const std::map<std::string, double>& type_sums, HtaReport& report) {
  double total = 0;
  for (const auto& [label, sum] : type_sums) total += sum;
  for (const auto& [label, sum] : type_sums) {
    report.kernel_types.push_back(
        KernelTypeRow{label, sum, round_like_numpy((sum / total) * 100, 1)});
  }
  std::stable_sort(
      report.kernel_types.begin(), report.kernel_types.end(),
      [](const KernelTypeRow& a, const KernelTypeRow& b) { return a.sum_us > b.sum_us; });
  std::stable_sort(
      report.kernels.begin(), report.kernels.end(), [](const KernelRow& a, const KernelRow& b) {
        return std::tie(a.kernel_type, a.name, a.rank) < std::tie(b.kernel_type, b.name, b.rank);
      });
}

}  // namespace

HtaReport analyze_hta(const TraceDirectory& directory, const HtaOptions& options) {
  HtaReport report;
  const std::size_t step_names = profiler_step_names(directory);
  const bool filter = step_names >= 2;
  if (step_names == 0) {
    report.warnings.push_back(
        "no ProfilerStep in the traces: nothing is filtered, and the whole trace is analysed as "
        "HTA does");
  } else if (step_names == 1) {
    report.warnings.push_back(
        "one ProfilerStep in the traces: nothing is filtered (HTA drops the last step only when "
        "there are two or more), and the whole trace is analysed");
  }
  double min_ts_us = std::numeric_limits<double>::infinity();
  for (const RankTrace& trace : directory.ranks) min_ts_us = std::min(min_ts_us, trace.min_ts_us);

  std::map<std::string, double> type_sums;
  std::set<int> idle_ranks(options.idle_ranks.begin(), options.idle_ranks.end());
  for (const RankTrace& trace : directory.ranks) {
    const HtaRows hta = hta_rows(trace, filter, min_ts_us);
    std::vector<const TraceEvent*> gpu;
    for (const TraceEvent& e : hta.rows) {
      if (e.stream != -1) gpu.push_back(&e);
    }
    if (gpu.empty()) {
      report.warnings.push_back("rank " + std::to_string(trace.rank) +
                                ": no GPU operations; left out of the HTA tables (" + trace.path +
                                ")");
      continue;
    }
    add_temporal_and_overlap(trace, gpu, report);
    add_kernel_type_times(gpu, type_sums);
    for (const KernelClass kernel_class : kAnalysedClasses) {
      add_kernel_rows(trace.rank, kernel_class, gpu, trace, options, report.kernels);
    }
    if (idle_ranks.erase(trace.rank) > 0) add_idle_rows(trace.rank, hta, options, report.idle);
  }
  for (const int rank : idle_ranks) {
    report.warnings.push_back("rank " + std::to_string(rank) +
                              ": no trace with GPU operations; no idle-time breakdown for it");
  }

  add_kernel_type_rows(type_sums, report);
  return report;
}

}  // namespace attune::profiler
