// LogMetricsSource: the MetricsSource port over the Megatron log reader. A finished job's log
// text and its final state become a RunMeasured (window throughput, step times, per-stage peak
// memory, loss curve, hash of the resolved arguments) or a RunFailed with its class. Stateless.
#pragma once

#include "core/ports.h"

namespace attune {

class LogMetricsSource final : public MetricsSource {
 public:
  RunOutcome measure(const std::string& log_text, const JobReport& finished,
                     const MeasureSpec& spec) const override;
  std::optional<double> steady_throughput(const std::string& log_text, const MeasureSpec& spec,
                                          std::uint32_t steps) const override;
};

}  // namespace attune
