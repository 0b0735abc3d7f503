// Properties of the analyzer's arithmetic on generated GPU timelines: the interval merge, the
// temporal breakdown, the overlap and the kernel-type table (HTA's definitions), and the per-stage
// diagnosis. Times are whole microseconds, as Kineto writes them after HTA's rounding, so sums are
// exact in double precision and the identities are checked with ==.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "adapters/profiler/hta_metrics.h"
#include "adapters/profiler/stage_diagnosis.h"

namespace attune::profiler {
namespace {

constexpr int kTimeMaxUs = 100'000;
constexpr int kDurationMaxUs = 5'000;
constexpr int kOpsMax = 60;

rc::Gen<Interval> gen_interval() {
  return rc::gen::apply(
      [](int ts, int dur) {
        return Interval{static_cast<double>(ts), static_cast<double>(ts + dur)};
      },
      rc::gen::inRange(0, kTimeMaxUs), rc::gen::inRange(0, kDurationMaxUs));
}

// Length of the union of `intervals`, by brute force over unit cells (the times are integers).
double union_length(const std::vector<Interval>& intervals) {
  std::vector<bool> covered(kTimeMaxUs + kDurationMaxUs + 1, false);
  for (const Interval& i : intervals) {
    for (int t = static_cast<int>(i.ts); t < static_cast<int>(i.end); ++t) covered[t] = true;
  }
  return static_cast<double>(std::count(covered.begin(), covered.end(), true));
}

double length(const std::vector<Interval>& groups) {
  double total = 0;
  for (const Interval& g : groups) total += g.end - g.ts;
  return total;
}

RC_GTEST_PROP(ProfilerProperties, MergedIntervalsAreSortedDisjointAndCoverTheInput, ()) {
  const auto intervals = *rc::gen::container<std::vector<Interval>>(gen_interval());
  const std::vector<Interval> merged = merge_intervals(intervals);
  RC_ASSERT(merged.size() <= intervals.size());
  RC_ASSERT(merged.empty() == intervals.empty());
  for (std::size_t i = 0; i < merged.size(); ++i) {
    RC_ASSERT(merged[i].ts <= merged[i].end);
    // Sorted and disjoint, with a gap between groups (touching intervals merge).
    if (i > 0) RC_ASSERT(merged[i - 1].end < merged[i].ts);
  }
  // Every input interval lies inside one group, and the groups cover no more than the input.
  for (const Interval& interval : intervals) {
    RC_ASSERT(std::any_of(merged.begin(), merged.end(), [&](const Interval& g) {
      return g.ts <= interval.ts && interval.end <= g.end;
    }));
  }
  RC_ASSERT(length(merged) == union_length(intervals));
  // Merging again changes nothing.
  const std::vector<Interval> again = merge_intervals(merged);
  RC_ASSERT(again.size() == merged.size());
}

// One GPU operation of a generated trace: its start, duration, stream and HTA type.
struct GeneratedOp {
  int ts_us = 0;
  int dur_us = 0;
  int stream = 7;
  KernelClass kernel = KernelClass::kComputation;
};

rc::Gen<GeneratedOp> gen_op() {
  return rc::gen::apply(
      [](int ts, int dur, int stream, KernelClass kernel) {
        return GeneratedOp{ts, dur, stream, kernel};
      },
      rc::gen::inRange(0, kTimeMaxUs), rc::gen::inRange(0, kDurationMaxUs),
      rc::gen::element(7, 20, 36),
      rc::gen::element(KernelClass::kComputation, KernelClass::kCommunication, KernelClass::kMemory,
                       KernelClass::kOther));
}

// A one-rank trace: a kernel (or sync) row per generated op, each launched by a runtime row
// 3 µs before it starts.
RankTrace trace_of(const std::vector<GeneratedOp>& ops) {
  RankTrace trace;
  trace.path = "generated";
  trace.names = {"gemm", "ncclDevKernel_SendRecv", "Memcpy DtoD (Device -> Device)", "Stream Sync",
                 "cudaLaunchKernel"};
  trace.comm_args.emplace_back();
  std::uint32_t index = 0;
  for (const GeneratedOp& op : ops) {
    const std::int64_t correlation = index + 1;
    TraceEvent launch;
    launch.ts_us = std::max(0, op.ts_us - 3);
    launch.dur_us = 2;
    launch.correlation = correlation;
    launch.index = index++;
    launch.name_id = 4;
    launch.cat = CatClass::kRuntime;
    trace.events.push_back(launch);
    TraceEvent row;
    row.ts_us = op.ts_us;
    row.dur_us = op.dur_us;
    row.stream = op.stream;
    row.correlation = correlation;
    row.index = index++;
    row.kernel = op.kernel;
    row.name_id = static_cast<std::uint32_t>(op.kernel);
    row.cat = op.kernel == KernelClass::kOther ? CatClass::kCudaSync : CatClass::kKernel;
    row.flags = kGpuRow;
    if (op.kernel == KernelClass::kCommunication) {
      row.comm = op.stream == 36 ? CommKind::kPpP2p : CommKind::kTp;
    }
    trace.events.push_back(row);
  }
  trace.event_count = trace.row_count = trace.events.size();
  for (const TraceEvent& e : trace.events) {
    trace.min_ts_us = std::min(trace.min_ts_us, e.ts_us);
    if (!e.gpu_row()) trace.min_cpu_ts_us = std::min(trace.min_cpu_ts_us, e.ts_us);
  }
  return trace;
}

std::vector<Interval> intervals_of(const std::vector<GeneratedOp>& ops,
                                   const std::vector<KernelClass>& classes) {
  std::vector<Interval> out;
  for (const GeneratedOp& op : ops) {
    if (std::find(classes.begin(), classes.end(), op.kernel) != classes.end()) {
      out.push_back({static_cast<double>(op.ts_us), static_cast<double>(op.ts_us + op.dur_us)});
    }
  }
  return out;
}

RC_GTEST_PROP(ProfilerProperties, TemporalBreakdownAndOverlapAddUp, ()) {
  const auto ops = *rc::gen::resize(
      kOpsMax, rc::gen::nonEmpty(rc::gen::container<std::vector<GeneratedOp>>(gen_op())));
  TraceDirectory directory;
  directory.path = "generated";
  directory.ranks.push_back(trace_of(ops));
  const HtaReport report = analyze_hta(directory);
  RC_ASSERT(report.temporal.size() == 1u);
  const TemporalRow& row = report.temporal[0];
  RC_ASSERT(row.idle_us + row.compute_us + row.non_compute_us == row.kernel_us);
  RC_ASSERT(row.idle_us >= 0);
  RC_ASSERT(row.compute_us >= 0);
  RC_ASSERT(row.non_compute_us >= 0);
  // The parts against brute force: compute is the union of compute kernels, busy time the union
  // of every GPU row (cuda_sync rows count as busy, as in HTA).
  const std::vector<KernelClass> all = {KernelClass::kComputation, KernelClass::kCommunication,
                                        KernelClass::kMemory, KernelClass::kOther};
  RC_ASSERT(row.compute_us == union_length(intervals_of(ops, {KernelClass::kComputation})));
  RC_ASSERT(row.kernel_us - row.idle_us == union_length(intervals_of(ops, all)));

  // Overlap: at most the communication time, NaN exactly when there is none.
  RC_ASSERT(report.overlap.size() == 1u);
  const double comm_us = union_length(intervals_of(ops, {KernelClass::kCommunication}));
  const bool any_comm = std::any_of(ops.begin(), ops.end(), [](const GeneratedOp& op) {
    return op.kernel == KernelClass::kCommunication;
  });
  if (!any_comm) {
    RC_ASSERT(std::isnan(report.overlap[0].overlap_pctg));
  } else if (comm_us > 0) {
    RC_ASSERT(report.overlap[0].overlap_pctg >= 0);
    RC_ASSERT(report.overlap[0].overlap_pctg <= 100);
  }

  // Kernel types: the pieces cover the union of compute, communication and memory once.
  double type_sum = 0;
  for (const KernelTypeRow& type : report.kernel_types) type_sum += type.sum_us;
  RC_ASSERT(type_sum ==
            union_length(intervals_of(ops, {KernelClass::kComputation, KernelClass::kCommunication,
                                            KernelClass::kMemory})));
}

RC_GTEST_PROP(ProfilerProperties, StageDiagnosisPartsAddUpToTheStep, ()) {
  const auto ops = *rc::gen::resize(
      kOpsMax, rc::gen::nonEmpty(rc::gen::container<std::vector<GeneratedOp>>(gen_op())));
  // Without OTHER rows only: the diagnosis does not count cuda_sync rows as GPU work.
  const bool any_work = std::any_of(ops.begin(), ops.end(), [](const GeneratedOp& op) {
    return op.kernel != KernelClass::kOther;
  });
  RC_PRE(any_work);
  TraceDirectory directory;
  directory.path = "generated";
  directory.ranks.push_back(trace_of(ops));
  const Result<Diagnosis> diagnosis = diagnose_stages(directory);
  RC_ASSERT(diagnosis.ok());
  RC_ASSERT(diagnosis->stages.size() == 1u);
  for (const StepBreakdown& step : diagnosis->stages[0].steps) {
    double parts_ms = step.compute_ms + step.host_bound_ms + step.idle_ms;
    for (const double exposed_ms : step.exposed_comm_ms) {
      RC_ASSERT(exposed_ms >= 0);
      parts_ms += exposed_ms;
    }
    RC_ASSERT(step.compute_ms >= 0);
    RC_ASSERT(step.host_bound_ms >= 0);
    RC_ASSERT(step.idle_ms >= 0);
    RC_ASSERT(std::abs(parts_ms - step.step_ms) <= 1e-9 * std::max(1.0, step.step_ms));
  }
}

}  // namespace
}  // namespace attune::profiler
