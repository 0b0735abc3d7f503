#include "adapters/profiler/kineto_trace_analyzer.h"

#include <filesystem>

#include "adapters/profiler/stage_diagnosis.h"
#include "adapters/profiler/trace_directory.h"

namespace attune::profiler {

namespace fs = std::filesystem;

Result<ProfileAnalyzed> KinetoTraceAnalyzer::analyze(
    const std::vector<std::string>& trace_paths) const {
  if (trace_paths.empty()) return make_error("the run reported no trace files");
  fs::path directory;
  fs::path shown;  // as the launcher reported it, so the ledger does not depend on where it is
  for (const std::string& path : trace_paths) {
    fs::path absolute = fs::path(path).is_absolute() ? fs::path(path) : fs::path(root_) / path;
    const fs::path parent = absolute.parent_path();
    if (directory.empty()) {
      directory = parent;
      shown = fs::path(path).parent_path();
    } else if (parent != directory) {
      return make_error("the run's traces are in more than one directory: " + directory.string() +
                        " and " + parent.string());
    }
  }
  // One thread: the control plane analyses a run's traces while its other jobs run.
  auto relative = [&](std::string message) {
    const std::string absolute = directory.string();
    for (std::size_t at = message.find(absolute); at != std::string::npos;
         at = message.find(absolute, at)) {
      message.replace(at, absolute.size(), shown.string());
      at += shown.string().size();
    }
    return message;
  };
  auto traces = read_trace_directory(directory.string(), 1);
  if (!traces.ok()) return make_error(relative(traces.error()));
  auto diagnosis = diagnose_stages(traces.value());
  if (!diagnosis.ok()) return make_error(shown.string() + ": " + relative(diagnosis.error()));
  return profile_analyzed(diagnosis.value());
}

}  // namespace attune::profiler
