// RunReading: what one run's log amounts to for the campaign: a measurement, a failure class,
// or neither.
//
// Pure; the single place that orders the questions, so the CLI and the campaign agree:
//   1. a failure class (failure_class.h)             -> kFailed: no measurement, whatever the
//   window
//   2. settings the caller must fix: no sequence length or GPU count, an empty window
//                                                    -> kBadRequest
//   3. a log that stops before the window's last step -> kIncomplete
//   4. a window that reaches into the warm-up or misses the log interval -> kBadRequest (judged
//      only on a log that reaches the window's end: one that stops early may not show its
//      log interval)
//   5. a window line missing, cut or garbled, or reporting no time -> kIncomplete
//   6. otherwise                                     -> kMeasured
#pragma once

#include <optional>
#include <string>

#include "adapters/metrics/failure_class.h"
#include "adapters/metrics/measurement.h"
#include "adapters/metrics/megatron_log.h"

namespace attune {

enum class ReadingKind : std::uint8_t { kMeasured, kFailed, kBadRequest, kIncomplete };

const char* to_string(ReadingKind kind);

struct RunReading {
  ReadingKind kind = ReadingKind::kIncomplete;
  std::optional<Measurement> measurement;  // kMeasured
  std::optional<Failure> failure;          // kFailed
  std::string reason;                      // kBadRequest, kIncomplete: one line
};

RunReading read_run(const MegatronLog& log, const JobOutcome& job, const MeasureRequest& request);

}  // namespace attune
