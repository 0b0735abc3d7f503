#include "adapters/profiler/stage_diagnosis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

namespace attune::profiler {
namespace {

constexpr double kUsPerMs = 1000.0;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int kComputeLane = kCommKindCount;  // sweep lane of compute; comm kinds use 0..6

struct Span {
  double begin = 0;
  double end = 0;
};

struct Op {
  double begin = 0;
  double end = 0;
  int lane = kComputeLane;
};

double clipped_length(const std::vector<Span>& spans, double begin, double end) {
  double total = 0;
  for (const Span& s : spans)
    total += std::max(0.0, std::min(s.end, end) - std::max(s.begin, begin));
  return total;
}

// The timeline of one rank's GPU: operations by lane, plus the host-bound and idle spans.
struct Timeline {
  std::vector<Op> ops;  // sorted by begin
  std::vector<Span> host_bound;
  std::vector<Span> idle;  // gaps that are not host-bound, open-ended ones included
};

Timeline timeline_of(const RankTrace& trace) {
  Timeline t;
  std::unordered_map<std::int64_t, double> launch_us;
  for (const TraceEvent& e : trace.events) {
    if (!e.gpu_row() && e.correlation >= 0) launch_us[e.correlation] = e.ts_us;
  }
  std::vector<std::pair<Op, double>> ops;  // with the launch time; -inf when unknown, so the
                                           // gap it ends counts as idle, not host-bound
  for (const TraceEvent& e : trace.events) {
    if (e.cat != CatClass::kKernel || e.stream == -1 || e.dur_us < 0) continue;
    const int lane = e.comm == CommKind::kNone ? kComputeLane : static_cast<int>(e.comm);
    const auto launch = launch_us.find(e.correlation);
    ops.push_back({Op{e.ts_us, e.ts_us + e.dur_us, lane},
                   launch == launch_us.end() ? -kInfinity : launch->second});
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
  // Gaps of the union; the operation that ends a gap says whether the host was late.
  double busy_until = -kInfinity;
  for (std::size_t i = 0; i < ops.size();) {
    const double gap_end = ops[i].first.begin;
    double first_launch = kInfinity;
    std::size_t j = i;
    for (; j < ops.size() && ops[j].first.begin == gap_end; ++j) {
      first_launch = std::min(first_launch, ops[j].second);
    }
    if (gap_end > busy_until) {
      const double host_until = std::clamp(first_launch, busy_until, gap_end);
      if (host_until > busy_until) t.host_bound.push_back({busy_until, host_until});
      if (gap_end > host_until) t.idle.push_back({host_until, gap_end});
    }
    for (std::size_t k = i; k < j; ++k) busy_until = std::max(busy_until, ops[k].first.end);
    i = j;
  }
  t.idle.push_back({ops.empty() ? -kInfinity : busy_until, kInfinity});
  for (auto& [op, launch] : ops) t.ops.push_back(op);
  return t;
}

// Compute and exposed communication within [begin, end): an elementary sweep over the lanes.
void add_busy_time(const Timeline& t, double begin, double end, StepBreakdown& step) {
  struct Point {
    double time;
    int lane;
    int delta;
  };
  std::vector<Point> points;
  for (const Op& op : t.ops) {
    if (op.end <= begin || op.begin >= end) continue;
    points.push_back({std::max(op.begin, begin), op.lane, +1});
    points.push_back({std::min(op.end, end), op.lane, -1});
  }
  std::sort(points.begin(), points.end(),
            [](const Point& a, const Point& b) { return a.time < b.time; });
  std::array<int, kCommKindCount + 1> active{};
  double compute_us = 0;
  std::array<double, kCommKindCount> exposed_us{};
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    active[points[i].lane] += points[i].delta;
    const double length = points[i + 1].time - points[i].time;
    if (length <= 0) continue;
    if (active[kComputeLane] > 0) {
      compute_us += length;
      continue;
    }
    int kinds = 0;
    for (int k = 0; k < kCommKindCount; ++k) kinds += active[k] > 0 ? 1 : 0;
    for (int k = 0; k < kCommKindCount && kinds > 0; ++k) {
      if (active[k] > 0) exposed_us[k] += length / kinds;
    }
  }
  step.compute_ms = compute_us / kUsPerMs;
  for (int k = 0; k < kCommKindCount; ++k) step.exposed_comm_ms[k] = exposed_us[k] / kUsPerMs;
}

StepBreakdown step_of(const Timeline& t, std::string name, double begin, double end) {
  StepBreakdown step;
  step.name = std::move(name);
  step.step_ms = (end - begin) / kUsPerMs;
  add_busy_time(t, begin, end, step);
  step.host_bound_ms = clipped_length(t.host_bound, begin, end) / kUsPerMs;
  step.idle_ms = clipped_length(t.idle, begin, end) / kUsPerMs;
  return step;
}

StepBreakdown mean_of(const std::vector<StepBreakdown>& steps) {
  StepBreakdown mean;
  mean.name = "mean";
  const double n = static_cast<double>(steps.size());
  for (const StepBreakdown& s : steps) {
    mean.step_ms += s.step_ms / n;
    mean.compute_ms += s.compute_ms / n;
    for (int k = 0; k < kCommKindCount; ++k) mean.exposed_comm_ms[k] += s.exposed_comm_ms[k] / n;
    mean.host_bound_ms += s.host_bound_ms / n;
    mean.idle_ms += s.idle_ms / n;
  }
  return mean;
}

// The time a stage spends on its own work: the step less its pipeline waits and idle time.
double own_work_ms(const StepBreakdown& s) {
  return s.step_ms - s.exposed_comm_ms[static_cast<int>(CommKind::kPpP2p)] - s.idle_ms;
}

}  // namespace

namespace {

// One traced stage: each ProfilerStep's breakdown and their mean; the whole trace as one step
// where it marks none (with a warning).
StageDiagnosis diagnose_stage(int stage, const RankTrace* trace, const Timeline& timeline,
                              std::vector<std::string>& warnings) {
  StageDiagnosis stage_diagnosis;
  stage_diagnosis.stage = stage;
  stage_diagnosis.rank = true_rank(*trace);
  stage_diagnosis.path = trace->path;
  std::vector<const TraceEvent*> steps;
  for (const TraceEvent& e : trace->events) {
    // The CPU annotation; its GPU-side span (gpu_user_annotation) is the same step.
    if (e.profiler_step() && !e.gpu_row() && (e.flags & kGpuAnnotation) == 0 && e.dur_us > 0) {
      steps.push_back(&e);
    }
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->ts_us < b->ts_us; });
  for (const TraceEvent* step : steps) {
    stage_diagnosis.steps.push_back(
        step_of(timeline, trace->names[step->name_id], step->ts_us, step->ts_us + step->dur_us));
  }
  if (steps.empty()) {
    warnings.push_back("rank " + std::to_string(true_rank(*trace)) +
                       ": no ProfilerStep in the trace; the whole trace is taken as "
                       "one step (" +
                       trace->path + ")");
    double last_end = -kInfinity;
    for (const Op& op : timeline.ops) last_end = std::max(last_end, op.end);
    stage_diagnosis.steps.push_back(
        step_of(timeline, "trace", timeline.ops.front().begin, last_end));
  }
  stage_diagnosis.mean = mean_of(stage_diagnosis.steps);
  return stage_diagnosis;
}

// The slowest stage's largest cost: host-bound time, an exposed communication kind or idle time.
std::string largest_cost(const StageDiagnosis& slowest) {
  std::string cost = "host_bound";
  double cost_ms = slowest.mean.host_bound_ms;
  for (int k = 0; k < kCommKindCount; ++k) {
    if (slowest.mean.exposed_comm_ms[k] > cost_ms) {
      cost = comm_kind_name(static_cast<CommKind>(k));
      cost_ms = slowest.mean.exposed_comm_ms[k];
    }
  }
  if (slowest.mean.idle_ms > cost_ms) cost = "idle";
  return cost + " on stage " + std::to_string(slowest.stage);
}

}  // namespace

Result<Diagnosis> diagnose_stages(const TraceDirectory& directory) {
  Diagnosis diagnosis;
  // Stages: pipeline positions when every trace names one, else the rank order.
  std::vector<std::pair<int, const RankTrace*>> staged;
  bool positions = true;
  for (const RankTrace& trace : directory.ranks) positions &= pipeline_position(trace).has_value();
  for (std::size_t i = 0; i < directory.ranks.size(); ++i) {
    const RankTrace& trace = directory.ranks[i];
    const int stage = positions ? pipeline_position(trace)->stage : static_cast<int>(i);
    staged.emplace_back(stage, &trace);
  }
  std::stable_sort(staged.begin(), staged.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [stage, trace] : staged) {
    if (!diagnosis.stages.empty() && diagnosis.stages.back().stage == stage) {
      diagnosis.warnings.push_back("stage " + std::to_string(stage) + ": rank " +
                                   std::to_string(true_rank(*trace)) +
                                   " is a second trace of it; only rank " +
                                   std::to_string(diagnosis.stages.back().rank) + " is used");
      continue;
    }
    const Timeline timeline = timeline_of(*trace);
    if (timeline.ops.empty()) {
      diagnosis.warnings.push_back("rank " + std::to_string(true_rank(*trace)) +
                                   ": no GPU kernels, memcpys or memsets; stage " +
                                   std::to_string(stage) + " left out (" + trace->path + ")");
      continue;
    }
    diagnosis.stages.push_back(diagnose_stage(stage, trace, timeline, diagnosis.warnings));
  }
  if (diagnosis.stages.empty()) {
    return make_error(directory.path + ": no traced rank has a GPU kernel, memcpy or memset");
  }
  for (std::size_t i = 1; i < diagnosis.stages.size(); ++i) {
    if (own_work_ms(diagnosis.stages[i].mean) >
        own_work_ms(diagnosis.stages[diagnosis.slowest].mean)) {
      diagnosis.slowest = i;
    }
  }
  diagnosis.largest_cost = largest_cost(diagnosis.stages[diagnosis.slowest]);
  return diagnosis;
}

ProfileAnalyzed profile_analyzed(const Diagnosis& diagnosis) {
  ProfileAnalyzed event;
  for (const StageDiagnosis& s : diagnosis.stages) {
    StageBreakdown stage;
    stage.stage = static_cast<std::uint32_t>(s.stage);
    stage.step_ms = s.mean.step_ms;
    stage.compute_ms = s.mean.compute_ms;
    for (int k = 1; k < kCommKindCount; ++k) {
      const double exposed_ms = s.mean.exposed_comm_ms[k];
      if (exposed_ms > 0) {
        stage.exposed_comm.push_back(
            CommTime{comm_kind_name(static_cast<CommKind>(k)), exposed_ms});
      }
    }
    stage.host_bound_ms = s.mean.host_bound_ms;
    stage.idle_ms = s.mean.idle_ms;
    event.stages.push_back(std::move(stage));
    event.trace_paths.push_back(s.path);
  }
  event.slowest_stage = static_cast<std::uint32_t>(diagnosis.stages[diagnosis.slowest].stage);
  event.largest_cost = diagnosis.largest_cost;
  return event;
}

}  // namespace attune::profiler
