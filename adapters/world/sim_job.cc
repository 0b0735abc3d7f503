#include "adapters/world/sim_job.h"

#include <algorithm>
#include <cmath>

#include "adapters/model/presets.h"
#include "adapters/world/kineto_writer.h"
#include "events/assert.h"

namespace attune::sim {
namespace {

constexpr double kArgumentsAtS = 8.0;  // imports, then validate_args prints

std::int64_t at_ns(std::int64_t start_unix_ns, double seconds) {
  return start_unix_ns + static_cast<std::int64_t>(std::llround(seconds * 1e9));
}

}  // namespace

SimJob::SimJob(const World& world, const Recipe& recipe, const SimJobRun& spec)
    : world_(world),
      recipe_(recipe),
      run_(world.simulate(recipe, spec.steps, spec.run_seed, spec.nodes, spec.profile, spec.fault)),
      writer_(world.workload(), recipe, run_, world.gpus_per_node()) {
  using Kind = LogPiece::Kind;
  const bool refused = run_.outcome == JobOutcome::kInvalidAtStartup;
  const double arguments_at = std::min(kArgumentsAtS, run_.startup_s);
  const bool died_in_startup = run_.outcome != JobOutcome::kCompleted &&
                               run_.outcome != JobOutcome::kHang && run_.failed_step == 0;
  if (!refused && !(died_in_startup && run_.end_s < arguments_at)) {
    pieces_.push_back({Kind::kArguments, 0, arguments_at});
  }
  if (!refused && !died_in_startup) pieces_.push_back({Kind::kTrainingStart, 0, run_.startup_s});
  double t = run_.startup_s;
  for (std::uint32_t step = 1; step <= run_.step_times_s.size(); ++step) {
    t += run_.step_times_s[step - 1];
    pieces_.push_back({Kind::kStep, step, t});
  }
  switch (run_.outcome) {
    case JobOutcome::kCompleted:
      pieces_.push_back({Kind::kCompletion, 0, run_.last_progress_s});
      break;
    case JobOutcome::kHang:
      break;
    default:
      pieces_.push_back({Kind::kFailure, 0, run_.end_s});
      break;
  }
  ATTUNE_ASSERT(
      std::is_sorted(pieces_.begin(), pieces_.end(),
                     [](const LogPiece& a, const LogPiece& b) { return a.at_s < b.at_s; }),
      "log pieces are in time order");
}

std::string SimJob::render(std::size_t index, std::int64_t now_unix_ns) {
  ATTUNE_ASSERT(index == rendered_ && index < pieces_.size(),
                "log pieces are rendered in order, once");
  ++rendered_;
  const LogPiece& piece = pieces_[index];
  switch (piece.kind) {
    case LogPiece::Kind::kArguments:
      return writer_.arguments_text();
    case LogPiece::Kind::kTrainingStart:
      return writer_.training_start_text(now_unix_ns);
    case LogPiece::Kind::kStep:
      return writer_.step_text(piece.step, now_unix_ns);
    case LogPiece::Kind::kCompletion:
      return writer_.completion_text(now_unix_ns);
    case LogPiece::Kind::kFailure:
      return writer_.failure_text(now_unix_ns);
  }
  return "";
}

bool SimJob::writes_traces() const {
  return run_.profiled && run_.step_times_s.size() >= run_.steps_requested &&
         !run_.prediction.stages.empty();
}

Result<std::vector<std::string>> SimJob::write_traces(const std::string& directory,
                                                      std::int64_t start_unix_ns) const {
  ATTUNE_ASSERT(writes_traces(), "only a profiled, completed job writes traces");
  return write_kineto_traces(directory, world_.workload(), recipe_, run_,
                             TraceOptions{world_.gpus_per_node(), start_unix_ns});
}

std::optional<int> SimJob::exit_code() const {
  if (run_.outcome == JobOutcome::kHang) return std::nullopt;
  return run_.outcome == JobOutcome::kCompleted ? 0 : kJobExitFailure;
}

Result<SimJobResult> run_sim_job(const World& world, const Recipe& recipe, const SimJobRun& spec,
                                 std::int64_t start_unix_ns, const std::string& trace_directory) {
  SimJob job(world, recipe, spec);
  SimJobResult result;
  for (std::size_t i = 0; i < job.pieces().size(); ++i) {
    const double at_s = job.pieces()[i].at_s;
    result.log += job.render(i, at_ns(start_unix_ns, at_s));
    result.log_growth.emplace_back(at_s, result.log.size());
  }
  if (!trace_directory.empty() && job.writes_traces()) {
    Result<std::vector<std::string>> paths = job.write_traces(trace_directory, start_unix_ns);
    if (!paths.ok()) return make_error(paths.error());
    result.trace_paths = std::move(paths).value();
  }
  result.exit_code = job.exit_code();
  result.run = job.run();
  return result;
}

}  // namespace attune::sim
