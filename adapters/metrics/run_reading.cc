#include "adapters/metrics/run_reading.h"

#include <utility>

namespace attune {

const char* to_string(ReadingKind kind) {
  switch (kind) {
    case ReadingKind::kMeasured:
      return "measured";
    case ReadingKind::kFailed:
      return "failed";
    case ReadingKind::kBadRequest:
      return "bad request";
    case ReadingKind::kIncomplete:
      return "incomplete";
  }
  return "?";
}

RunReading read_run(const MegatronLog& log, const JobOutcome& job, const MeasureRequest& request) {
  RunReading out;
  if (std::optional<Failure> failure = classify_failure(log, job)) {
    out.kind = ReadingKind::kFailed;
    out.failure = std::move(failure);
    return out;
  }
  Result<MeasureSettings> settings = resolve_settings(log, request);
  if (!settings.ok()) {
    out.kind = ReadingKind::kBadRequest;
    out.reason = settings.error();
    return out;
  }
  // A log that stops early may not show its log interval; it is incomplete, whatever the window.
  if (log_reaches(log, request.window.last)) {
    if (Status window = check_window(log, settings.value()); !window.ok()) {
      out.kind = ReadingKind::kBadRequest;
      out.reason = window.error();
      return out;
    }
  }
  Result<Measurement> measurement = measure(log, settings.value());
  if (!measurement.ok()) {
    out.kind = ReadingKind::kIncomplete;
    out.reason = measurement.error();
    return out;
  }
  out.kind = ReadingKind::kMeasured;
  out.measurement = std::move(measurement).value();
  return out;
}

}  // namespace attune
