#include "adapters/metrics/log_metrics_source.h"

#include "adapters/metrics/run_reading.h"
#include "events/sha256.h"

namespace attune {

RunOutcome LogMetricsSource::measure(const std::string& log_text, const JobReport& finished,
                                     const MeasureSpec& spec) const {
  const MegatronLog log = read_megatron_log(log_text);
  JobOutcome job;
  job.final_state = finished.final_state;
  job.log_silent = spec.log_went_silent;
  job.pruned = spec.pruned;
  MeasureRequest request;
  request.window = StepWindow{spec.window_first_step, spec.window_last_step};
  request.seq_length = spec.seq_length;
  request.gpus = spec.gpus;
  const RunReading reading = read_run(log, job, request);

  RunFailed failed;
  failed.run_id = finished.run_id;
  switch (reading.kind) {
    case ReadingKind::kMeasured: {
      const Measurement& m = *reading.measurement;
      RunMeasured measured;
      measured.run_id = finished.run_id;
      measured.tokens_per_sec_per_gpu = m.tokens_per_s_per_gpu;
      measured.step_times_ms = m.series.step_times_ms;
      measured.window_rsd = m.window_rsd;
      for (const MemoryPeak& peak : m.peak_memory.peaks) {
        measured.peak_memory_gib_by_stage.push_back(peak.max_reserved_gib);
      }
      measured.loss_curve = m.series.loss_curve;
      std::string block;
      for (const std::string& line : m.arguments.lines) block += line + "\n";
      measured.resolved_args_hash = block.empty() ? "" : to_hex(sha256(block));
      return measured;
    }
    case ReadingKind::kFailed:
      failed.failure_class = reading.failure->failure_class;
      // "suspected: " marks an infra class the log alone could not prove; the retry rule decides.
      failed.message = (reading.failure->suspected ? "suspected: " : "") + reading.failure->message;
      failed.cause = reading.failure->cause;
      return failed;
    case ReadingKind::kBadRequest:
    case ReadingKind::kIncomplete:
      // A job that ended without a complete window is a failed run: what the log shows decides.
      failed.failure_class = spec.pruned            ? FailureClass::kPruned
                             : spec.log_went_silent ? FailureClass::kHang
                                                    : FailureClass::kCrash;
      if (spec.log_went_silent && !spec.pruned) failed.cause = FailureCause::kNoProgress;
      failed.message = "no complete measurement window: " + reading.reason;
      return failed;
  }
  return failed;
}

std::optional<double> LogMetricsSource::steady_throughput(const std::string& log_text,
                                                          const MeasureSpec& spec,
                                                          std::uint32_t steps) const {
  const MegatronLog log = read_megatron_log(log_text);
  MeasureRequest request;
  request.window = StepWindow{spec.window_first_step, spec.window_first_step + steps - 1};
  request.seq_length = spec.seq_length;
  request.gpus = spec.gpus;
  JobOutcome job;
  job.final_state = "COMPLETED";  // judge the steps written so far as a finished window
  const RunReading reading = read_run(log, job, request);
  if (reading.kind != ReadingKind::kMeasured) return std::nullopt;
  return reading.measurement->tokens_per_s_per_gpu;
}

}  // namespace attune
