// KinetoTraceAnalyzer: the TraceAnalyzer port over the Kineto analyzer of this folder. A profiled
// run's traces sit in one directory (one file per traced pipeline stage); the paths a launcher
// reports are relative to its root, the ledger's directory, unless absolute.
#pragma once

#include <string>
#include <vector>

#include "core/ports.h"

namespace attune::profiler {

class KinetoTraceAnalyzer final : public TraceAnalyzer {
 public:
  explicit KinetoTraceAnalyzer(std::string root) : root_(std::move(root)) {}
  // Errors: no paths, paths in more than one directory, and what reading the directory or
  // diagnosing its stages gives.
  Result<ProfileAnalyzed> analyze(const std::vector<std::string>& trace_paths) const override;

 private:
  std::string root_;
};

}  // namespace attune::profiler
