// Measurement: a run's window throughput and the figures around it, from a MegatronLog.
//
// Pure. A logged line at iteration i covers its log interval L, the iterations (i - L, i], and
// reports their average time. The window [first, last] (1-based iterations as Megatron prints
// them, inclusive) must be a union of such intervals, all logged. Its throughput is the
// aggregate
//     sum(global_batch * L * seq_length) / (sum(elapsed_ms * L) / 1000) / gpus
// over the window's lines: total tokens over total time, not a mean of per-step rates. Lines
// outside the window never count, and the window may not reach into Megatron's warm-up (the
// lines up to the first log-interval boundary; iterations 1-2 with --log-interval 1).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "adapters/metrics/megatron_log.h"
#include "events/result.h"

namespace attune {

struct StepWindow {
  std::uint64_t first = 4;
  std::uint64_t last = 13;

  friend bool operator==(const StepWindow&, const StepWindow&) = default;
};

// What the caller asks for; an absent figure defaults to the log's arguments block.
struct MeasureRequest {
  StepWindow window;
  std::optional<std::uint64_t> seq_length;  // default: the block's seq_length
  std::optional<std::uint64_t> gpus;        // default: the block's world_size
};

struct MeasureSettings {
  StepWindow window;
  std::uint64_t seq_length = 0;
  std::uint64_t gpus = 0;
  std::uint64_t log_interval = 1;

  friend bool operator==(const MeasureSettings&, const MeasureSettings&) = default;
};

// Per logged iteration, ascending.
struct IterationSeries {
  std::vector<std::uint64_t> iterations;
  std::vector<double> step_times_ms;  // each line's elapsed time per iteration
  std::vector<double> loss_curve;     // lm loss; NaN where it is NaN or the line has none
  // Megatron's counters summed over the log, each iteration once (the first line's counters are
  // repeated in the next line when it is not on a log-interval boundary).
  std::uint64_t skipped_iterations = 0;
  std::uint64_t nan_iterations = 0;
};

// kStage when the arguments block gives the layout (world_size, pipeline_model_parallel_size,
// default rank order tp-cp-ep-dp-pp); otherwise kRank, one peak per reporting rank.
enum class MemoryGrouping : std::uint8_t { kStage, kRank };

struct MemoryPeak {
  std::uint32_t index = 0;         // the stage or the rank
  double max_reserved_gib = 0.0;   // the allocator's peak hold on the device: what must fit
  double max_allocated_gib = 0.0;  // the tensors' peak
};

struct PeakMemory {
  MemoryGrouping grouping = MemoryGrouping::kRank;
  std::vector<MemoryPeak> peaks;  // ascending by index; only stages or ranks that reported
};

struct Measurement {
  MeasureSettings settings;
  double tokens_per_s_per_gpu = 0.0;
  std::vector<double> window_step_times_ms;  // the window's lines, in order
  double window_rsd = 0.0;  // sample standard deviation (n - 1) over the mean of those times
  IterationSeries series;
  PeakMemory peak_memory;
  ArgumentsBlock arguments;
};

// The arguments block's log_interval, else the greatest common divisor of the logged
// iterations after the first (1 when there are none).
std::uint64_t log_interval_of(const MegatronLog& log);

IterationSeries iteration_series_of(const MegatronLog& log, std::uint64_t log_interval);

PeakMemory peak_memory_of(const MegatronLog& log);

// Fills the request's gaps from the arguments block. Errors: the window is empty, or the
// sequence length or GPU count is neither given nor in the block, or is 0.
Result<MeasureSettings> resolve_settings(const MegatronLog& log, const MeasureRequest& request);

// Whether the log has an iteration line at `iteration` or later.
bool log_reaches(const MegatronLog& log, std::uint64_t iteration);

// Errors: the window is empty, reaches into the warm-up, or does not align with the log interval.
Status check_window(const MegatronLog& log, const MeasureSettings& settings);

// Errors, in this order: the log stops before the window's last step; those of check_window;
// one of the window's lines is missing, cut or garbled, or reports no time.
Result<Measurement> measure(const MegatronLog& log, const MeasureSettings& settings);

}  // namespace attune
