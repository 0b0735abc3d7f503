#include "adapters/metrics/measurement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string>

#include "events/assert.h"
#include "projections/baseline_band.h"

namespace attune {

namespace {

constexpr double kMbPerGib = 1024.0;  // Megatron's MB is 2^20 bytes
constexpr double kElapsedMsMin = 1e-3;
constexpr double kElapsedMsMax = 7.0 * 24 * 3600 * 1000;

std::string window_text(const StepWindow& window) {
  return std::to_string(window.first) + ":" + std::to_string(window.last);
}

const IterationLine* line_at(const MegatronLog& log, std::uint64_t iteration) {
  const auto found = std::lower_bound(
      log.iterations.begin(), log.iterations.end(), iteration,
      [](const IterationLine& line, std::uint64_t i) { return line.iteration < i; });
  if (found == log.iterations.end() || found->iteration != iteration) return nullptr;
  return &*found;
}

// The first iteration the window may include: after the first log-interval boundary, and after
// iteration 2 of the log with --log-interval 1 (megatron_lm.md §2.1, "Warm-up").
std::uint64_t earliest_window_start(const MegatronLog& log, std::uint64_t log_interval) {
  const std::uint64_t first_logged = log.iterations.empty() ? 1 : log.iterations.front().iteration;
  const std::uint64_t first_boundary =
      (first_logged + log_interval - 1) / log_interval * log_interval;
  return std::max(first_boundary, first_logged + 1) + 1;
}

Status check_window_shape(const StepWindow& window) {
  if (window.first < 1 || window.first > window.last) {
    return make_error("window " + window_text(window) + " is empty: it needs 1 <= first <= last");
  }
  return Ok{};
}

}  // namespace

std::uint64_t log_interval_of(const MegatronLog& log) {
  if (const auto interval = log.arguments.unsigned_value("log_interval"); interval && *interval) {
    return *interval;
  }
  std::uint64_t divisor = 0;
  for (std::size_t i = 1; i < log.iterations.size(); ++i) {
    divisor = std::gcd(divisor, log.iterations[i].iteration);
  }
  return divisor == 0 ? 1 : divisor;
}

IterationSeries iteration_series_of(const MegatronLog& log, std::uint64_t log_interval) {
  ATTUNE_ASSERT(log_interval > 0, "the log interval is positive");
  IterationSeries series;
  series.iterations.reserve(log.iterations.size());
  series.step_times_ms.reserve(log.iterations.size());
  series.loss_curve.reserve(log.iterations.size());
  for (std::size_t i = 0; i < log.iterations.size(); ++i) {
    const IterationLine& line = log.iterations[i];
    series.iterations.push_back(line.iteration);
    series.step_times_ms.push_back(line.elapsed_ms_per_iteration);
    series.loss_curve.push_back(line.lm_loss.value_or(std::numeric_limits<double>::quiet_NaN()));
    // Megatron does not reset its counters after the first iteration's line unless that is on a
    // boundary, so the next line counts those iterations again.
    const bool repeated_in_next =
        i == 0 && log.iterations.size() > 1 && line.iteration % log_interval != 0;
    if (!repeated_in_next) {
      series.skipped_iterations += line.skipped_iterations;
      series.nan_iterations += line.nan_iterations;
    }
  }
  return series;
}

PeakMemory peak_memory_of(const MegatronLog& log) {
  const ArgumentsBlock& arguments = log.arguments;
  const std::optional<std::uint64_t> stages =
      arguments.unsigned_value("pipeline_model_parallel_size");
  const std::optional<std::uint64_t> world = arguments.unsigned_value("world_size");
  const auto mapping = arguments.values.find("use_tp_pp_dp_mapping");
  const bool pipeline_outermost = mapping == arguments.values.end() || mapping->second == "False";
  bool by_stage = stages && world && *stages > 0 && *world % *stages == 0 && pipeline_outermost;
  for (const RankMemory& memory : log.memory) {
    if (by_stage && memory.rank >= *world) by_stage = false;  // the layout does not fit the log
  }

  std::map<std::uint32_t, MemoryPeak> peaks;
  for (const RankMemory& memory : log.memory) {
    const std::uint32_t index =
        by_stage ? static_cast<std::uint32_t>(memory.rank / (*world / *stages)) : memory.rank;
    MemoryPeak& peak = peaks.try_emplace(index, MemoryPeak{index, 0.0, 0.0}).first->second;
    peak.max_reserved_gib = std::max(peak.max_reserved_gib, memory.max_reserved_mb / kMbPerGib);
    peak.max_allocated_gib = std::max(peak.max_allocated_gib, memory.max_allocated_mb / kMbPerGib);
  }
  PeakMemory out;
  out.grouping = by_stage ? MemoryGrouping::kStage : MemoryGrouping::kRank;
  for (const auto& [index, peak] : peaks) out.peaks.push_back(peak);
  return out;
}

Result<MeasureSettings> resolve_settings(const MegatronLog& log, const MeasureRequest& request) {
  const std::optional<std::uint64_t> seq_length =
      request.seq_length ? request.seq_length : log.arguments.unsigned_value("seq_length");
  const std::optional<std::uint64_t> gpus =
      request.gpus ? request.gpus : log.arguments.unsigned_value("world_size");
  if (!seq_length) {
    return make_error(
        "sequence length unknown: not given, and the log's arguments block has no "
        "seq_length");
  }
  if (!gpus) {
    return make_error(
        "GPU count unknown: not given, and the log's arguments block has no "
        "world_size");
  }
  if (Status shape = check_window_shape(request.window); !shape.ok()) {
    return make_error(shape.error());
  }
  if (*seq_length == 0) return make_error("sequence length must be at least 1");
  if (*gpus == 0) return make_error("GPU count must be at least 1");
  return MeasureSettings{request.window, *seq_length, *gpus, log_interval_of(log)};
}

bool log_reaches(const MegatronLog& log, std::uint64_t iteration) {
  return !log.iterations.empty() && log.iterations.back().iteration >= iteration;
}

Status check_window(const MegatronLog& log, const MeasureSettings& settings) {
  const StepWindow& window = settings.window;
  const std::uint64_t interval = settings.log_interval;
  ATTUNE_ASSERT(interval > 0, "the log interval is positive");
  if (Status shape = check_window_shape(window); !shape.ok()) return shape;
  const std::uint64_t earliest = earliest_window_start(log, interval);
  if (window.first < earliest) {
    return make_error("window " + window_text(window) +
                      " reaches into Megatron's warm-up (the lines up to iteration " +
                      std::to_string(earliest - 1) + "); start at " + std::to_string(earliest) +
                      " or later");
  }
  if ((window.first - 1) % interval != 0 || window.last % interval != 0) {
    return make_error("window " + window_text(window) + " does not align with the log interval " +
                      std::to_string(interval) +
                      ": it must start right after, and end on, a "
                      "multiple of " +
                      std::to_string(interval));
  }
  return Ok{};
}

Result<Measurement> measure(const MegatronLog& log, const MeasureSettings& settings) {
  const StepWindow& window = settings.window;
  if (log.iterations.empty()) return make_error("the log has no iteration lines");
  if (!log_reaches(log, window.last)) {
    return make_error("the log stops at iteration " +
                      std::to_string(log.iterations.back().iteration) +
                      ", before the window's last step " + std::to_string(window.last));
  }
  if (Status valid = check_window(log, settings); !valid.ok()) return make_error(valid.error());

  const std::uint64_t interval = settings.log_interval;
  const auto interval_d = static_cast<double>(interval);
  Measurement out;
  double tokens = 0.0;
  double milliseconds = 0.0;
  for (std::uint64_t end = window.first - 1 + interval; end <= window.last; end += interval) {
    const IterationLine* line = line_at(log, end);
    if (line == nullptr) {
      return make_error("iteration " + std::to_string(end) + " of window " + window_text(window) +
                        " is missing from the log (not printed, or cut or garbled)");
    }
    if (line->elapsed_ms_per_iteration <= 0.0) {
      return make_error("iteration " + std::to_string(end) + " reports no elapsed time");
    }
    // No training step takes less than a microsecond or more than a week: such a time is a
    // damaged or forged line, and would print an infinite or vanishing throughput.
    if (line->elapsed_ms_per_iteration < kElapsedMsMin ||
        line->elapsed_ms_per_iteration > kElapsedMsMax) {
      return make_error("iteration " + std::to_string(end) + " reports an implausible elapsed " +
                        "time per iteration (" + std::to_string(line->elapsed_ms_per_iteration) +
                        " ms; expected 0.001 ms to a week)");
    }
    // Older Megatron-LM lines do not print the global batch size: the arguments block's then.
    const std::uint64_t global_batch =
        line->global_batch_size > 0 ? line->global_batch_size
                                    : log.arguments.unsigned_value("global_batch_size").value_or(0);
    if (global_batch == 0) {
      return make_error("iteration " + std::to_string(end) +
                        " prints no global batch size (an older Megatron-LM format), and the "
                        "arguments block has no global_batch_size");
    }
    tokens +=
        static_cast<double>(global_batch) * interval_d * static_cast<double>(settings.seq_length);
    milliseconds += line->elapsed_ms_per_iteration * interval_d;
    out.window_step_times_ms.push_back(line->elapsed_ms_per_iteration);
  }
  ATTUNE_ASSERT(!out.window_step_times_ms.empty() && milliseconds > 0.0,
                "a measured window has steps and time");

  out.settings = settings;
  out.tokens_per_s_per_gpu = tokens / (milliseconds / 1000.0) / static_cast<double>(settings.gpus);
  if (!std::isfinite(out.tokens_per_s_per_gpu)) {
    return make_error("window " + window_text(window) + " gives a throughput that is not finite");
  }
  out.window_rsd = relative_std_dev(out.window_step_times_ms);
  out.series = iteration_series_of(log, interval);
  out.peak_memory = peak_memory_of(log);
  out.arguments = log.arguments;
  return out;
}

}  // namespace attune
