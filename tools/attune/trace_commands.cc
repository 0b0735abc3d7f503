// `attune trace breakdown DIR [--json] [--hta]`: what a directory of Kineto traces (one file per
// traced rank, plain or gzip) says about where the GPU time went. By default the per-pipeline-
// stage diagnosis the tuner records; with --hta the per-rank HTA tables (temporal breakdown,
// communication-computation overlap, kernel-type and per-kernel breakdown, idle-time breakdown)
// with HTA's numbers, and with --hta --json HTA's own column names. Warnings go to stderr.
// Exit 0 on success, 2 for bad input.
#include <CLI/CLI.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "adapters/profiler/hta_metrics.h"
#include "adapters/profiler/stage_diagnosis.h"
#include "adapters/profiler/trace_directory.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

using profiler::CommKind;
using profiler::kCommKindCount;

struct TraceOptions {
  std::string directory;
  bool json = false;
  bool hta = false;
};

std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::fixed, decimals);
  return std::string(buffer.data(), result.ptr);
}

// Whole numbers as JSON integers (as pandas writes int64 columns), NaN as null.
nlohmann::json number(double value) {
  if (!std::isfinite(value)) return nullptr;
  if (value == std::trunc(value) && std::abs(value) < 9e15) {
    return static_cast<std::int64_t>(value);
  }
  return value;
}

nlohmann::json hta_json(const profiler::HtaReport& r) {
  nlohmann::json out;
  out["temporal_breakdown"] = nlohmann::json::array();
  for (const auto& row : r.temporal) {
    out["temporal_breakdown"].push_back({{"rank", row.rank},
                                         {"idle_time(us)", number(row.idle_us)},
                                         {"compute_time(us)", number(row.compute_us)},
                                         {"non_compute_time(us)", number(row.non_compute_us)},
                                         {"kernel_time(us)", number(row.kernel_us)},
                                         {"idle_time_pctg", number(row.idle_pctg)},
                                         {"compute_time_pctg", number(row.compute_pctg)},
                                         {"non_compute_time_pctg", number(row.non_compute_pctg)}});
  }
  out["comm_comp_overlap"] = nlohmann::json::array();
  for (const auto& row : r.overlap) {
    out["comm_comp_overlap"].push_back(
        {{"rank", row.rank}, {"comp_comm_overlap_pctg", number(row.overlap_pctg)}});
  }
  nlohmann::json types = nlohmann::json::array();
  for (const auto& row : r.kernel_types) {
    types.push_back({{"kernel_type", row.kernel_type},
                     {"sum", number(row.sum_us)},
                     {"percentage", number(row.percentage)}});
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& row : r.kernels) {
    kernels.push_back({{"kernel_type", row.kernel_type},
                       {"name", row.name},
                       {"rank", row.rank},
                       {"sum (us)", number(row.sum_us)},
                       {"max (us)", number(row.max_us)},
                       {"min (us)", number(row.min_us)},
                       {"mean (us)", number(row.mean_us)},
                       {"stddev", number(row.stddev_us)}});
  }
  out["kernel_type_breakdown"] = {{"kernel_type", types}, {"kernel", kernels}};
  out["idle_time_breakdown"] = nlohmann::json::array();
  for (const auto& row : r.idle) {
    out["idle_time_breakdown"].push_back({{"rank", row.rank},
                                          {"stream", row.stream},
                                          {"idle_category", row.idle_category},
                                          {"idle_time", number(row.idle_us)},
                                          {"idle_time_ratio", number(row.idle_ratio)}});
  }
  return out;
}

void print_hta_text(const profiler::HtaReport& r) {
  std::printf("temporal breakdown (us)\n%6s %14s %14s %14s %14s %8s %8s %8s\n", "rank", "idle",
              "compute", "non_compute", "kernel_time", "idle%", "comp%", "non_c%");
  for (const auto& row : r.temporal) {
    std::printf("%6d %14s %14s %14s %14s %8s %8s %8s\n", row.rank, fixed(row.idle_us, 0).c_str(),
                fixed(row.compute_us, 0).c_str(), fixed(row.non_compute_us, 0).c_str(),
                fixed(row.kernel_us, 0).c_str(), fixed(row.idle_pctg, 2).c_str(),
                fixed(row.compute_pctg, 2).c_str(), fixed(row.non_compute_pctg, 2).c_str());
  }
  std::printf("\ncommunication-computation overlap\n%6s %12s\n", "rank", "overlap%");
  for (const auto& row : r.overlap) {
    std::printf("%6d %12s\n", row.rank, fixed(row.overlap_pctg, 2).c_str());
  }
  std::printf("\nkernel types, all ranks (us)\n");
  for (const auto& row : r.kernel_types) {
    std::printf("%14s %6s%%  %s\n", fixed(row.sum_us, 0).c_str(), fixed(row.percentage, 1).c_str(),
                row.kernel_type.c_str());
  }
  std::printf("\nkernels by type and rank (us)\n");
  for (const auto& row : r.kernels) {
    const std::string name = row.name.size() > 70 ? row.name.substr(0, 67) + "..." : row.name;
    std::printf("%-13s %4d %12s %10s  %s\n", row.kernel_type.c_str(), row.rank,
                fixed(row.sum_us, 0).c_str(), fixed(row.mean_us, 1).c_str(), name.c_str());
  }
  std::printf("\nidle time by stream (us)\n%6s %8s %-12s %12s %6s\n", "rank", "stream", "category",
              "idle", "ratio");
  for (const auto& row : r.idle) {
    std::printf("%6d %8lld %-12s %12s %6s\n", row.rank, static_cast<long long>(row.stream),
                row.idle_category.c_str(), fixed(row.idle_us, 0).c_str(),
                fixed(row.idle_ratio, 2).c_str());
  }
}

nlohmann::json step_json(const profiler::StepBreakdown& s) {
  nlohmann::json exposed = nlohmann::json::object();
  for (int k = 1; k < kCommKindCount; ++k) {
    exposed[profiler::comm_kind_name(static_cast<CommKind>(k))] = s.exposed_comm_ms[k];
  }
  return {{"name", s.name},
          {"step_ms", s.step_ms},
          {"compute_ms", s.compute_ms},
          {"exposed_comm_ms", exposed},
          {"host_bound_ms", s.host_bound_ms},
          {"idle_ms", s.idle_ms}};
}

// One line per stage, in 100 columns: milliseconds per step, exposed communication by kind.
void print_diagnosis_text(const profiler::Diagnosis& d) {
  std::printf("%5s %4s %8s %8s", "stage", "rank", "step_ms", "compute");
  for (int k = 1; k < kCommKindCount; ++k) {
    std::printf(" %7s", profiler::comm_kind_name(static_cast<CommKind>(k)));
  }
  std::printf(" %8s %8s %5s\n", "host", "idle", "steps");
  for (const auto& s : d.stages) {
    std::printf("%5d %4d %8s %8s", s.stage, s.rank, fixed(s.mean.step_ms, 2).c_str(),
                fixed(s.mean.compute_ms, 2).c_str());
    for (int k = 1; k < kCommKindCount; ++k) {
      std::printf(" %7s", fixed(s.mean.exposed_comm_ms[k], 2).c_str());
    }
    std::printf(" %8s %8s %5zu\n", fixed(s.mean.host_bound_ms, 2).c_str(),
                fixed(s.mean.idle_ms, 2).c_str(), s.steps.size());
  }
  std::printf("slowest stage: %d (rank %d); largest exposed cost: %s\n", d.stages[d.slowest].stage,
              d.stages[d.slowest].rank, d.largest_cost.c_str());
}

int run_breakdown(const TraceOptions& options) {
  Result<profiler::TraceDirectory> directory = profiler::read_trace_directory(options.directory);
  if (!directory) return fail(directory.error());
  for (const std::string& warning : directory->warnings) {
    std::cerr << "attune: warning: " << warning << "\n";
  }
  if (options.hta) {
    const profiler::HtaReport report = profiler::analyze_hta(*directory);
    for (const std::string& warning : report.warnings) {
      std::cerr << "attune: warning: " << warning << "\n";
    }
    if (!report.refusal.empty()) return fail(report.refusal);
    if (report.temporal.empty()) {
      return fail(options.directory + ": no traced rank has a GPU operation");
    }
    if (options.json) {
      write_json_output(hta_json(report));
    } else {
      print_hta_text(report);
    }
    return kExitOk;
  }
  Result<profiler::Diagnosis> diagnosis = profiler::diagnose_stages(*directory);
  if (!diagnosis) return fail(diagnosis.error());
  for (const std::string& warning : diagnosis->warnings) {
    std::cerr << "attune: warning: " << warning << "\n";
  }
  if (options.json) {
    nlohmann::json out;
    out["stages"] = nlohmann::json::array();
    for (const auto& s : diagnosis->stages) {
      nlohmann::json steps = nlohmann::json::array();
      for (const auto& step : s.steps) steps.push_back(step_json(step));
      out["stages"].push_back({{"stage", s.stage},
                               {"rank", s.rank},
                               {"trace", s.path},
                               {"mean", step_json(s.mean)},
                               {"steps", steps}});
    }
    out["slowest_stage"] = diagnosis->stages[diagnosis->slowest].stage;
    out["largest_cost"] = diagnosis->largest_cost;
    write_json_output(std::move(out));
  } else {
    print_diagnosis_text(*diagnosis);
  }
  return kExitOk;
}

}  // namespace

void add_trace_commands(CLI::App& app, int& exit_code) {
  CLI::App* trace = app.add_subcommand("trace", "Analyse PyTorch profiler (Kineto) traces");
  trace->require_subcommand(1);
  auto options = std::make_shared<TraceOptions>();
  CLI::App* breakdown = trace->add_subcommand(
      "breakdown",
      "Where the GPU time went in a directory of Kineto traces (one *.json or *.json.gz file per "
      "traced rank). Default: per pipeline stage and ProfilerStep, compute, exposed communication "
      "by kind (tp, ep_a2a, pp_p2p, dp, cp, unknown), host-bound and idle time in ms (the mean "
      "over steps), the slowest stage and its largest exposed cost. Warnings go to stderr. Exit "
      "0 on success, 2 for bad input.");
  breakdown->add_option("DIR", options->directory, "Directory of trace files")->required();
  breakdown->add_flag("--hta", options->hta,
                      "Per-rank tables as Meta's HolisticTraceAnalysis computes them (temporal "
                      "breakdown, comm-comp overlap, kernel-type and per-kernel breakdown, idle-"
                      "time breakdown of rank 0), in µs");
  breakdown->add_flag("--json", options->json,
                      "Machine-readable output; with --hta, HTA's column names under "
                      "temporal_breakdown, comm_comp_overlap, kernel_type_breakdown and "
                      "idle_time_breakdown; NaN as null");
  breakdown->callback([options, &exit_code] { exit_code = run_breakdown(*options); });
}

}  // namespace attune::cli
