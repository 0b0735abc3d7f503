// The ports: what the control plane needs from the outside world, as interfaces.
//
// Adapters implement them (adapters/launcher/{sim,local,slurm}, adapters/metrics,
// adapters/tuner/...). The runtime calls them on the scheduler's thread only; an adapter that
// works on other threads hands its reports back through Scheduler::schedule_at. Nothing here
// owns anything: the runtime's caller owns every adapter and keeps it alive while it runs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/control_state.h"
#include "events/event.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune {

// ---- Launcher -----------------------------------------------------------------------------

struct LaunchSpec {
  std::string campaign_id;
  RunId run_id = 0;
  std::string job_name;  // deterministic from campaign and run id
  RunPurpose purpose = RunPurpose::kSearch;
  std::string recipe;  // canonical text
  std::uint32_t gpus = 0;
  std::uint32_t steps = 0;
  bool profile = false;
  std::vector<std::string> exclude_nodes;
};

struct JobReport {
  enum class Kind : std::uint8_t { kSubmitted, kStarted, kFinished };
  Kind kind = Kind::kSubmitted;
  RunId run_id = 0;
  std::string launcher_job_id;     // kSubmitted
  std::int64_t at_unix_ns = 0;     // submission, cluster admission or release
  std::vector<std::string> nodes;  // kStarted
  std::string final_state;         // kFinished: COMPLETED, FAILED, OUT_OF_MEMORY, CANCELLED, ...
  std::string facts_source;        // kFinished: sim, local, sacct, squeue, jobcomp
  std::string log_path;            // kFinished
  std::string cancel_reason;       // kFinished after cancel(): "hang", "early-abort", ...
  std::vector<std::string> trace_paths;  // kFinished, profiled runs
  // kFinished: the launcher's own I/O failed (a log or script it could not write, a full disk),
  // so nothing is known of the run's recipe. The runtime records nothing and stops; a resume
  // takes the run up again.
  std::string launcher_error;
};

class Launcher {
 public:
  using Listener = std::function<void(const JobReport&)>;
  virtual ~Launcher() = default;

  virtual std::string name() const = 0;
  virtual void set_listener(Listener listener) = 0;
  // Submits the job. The launcher then reports kSubmitted, kStarted and kFinished, in that order,
  // through the listener, on the scheduler's thread.
  virtual Status submit(const LaunchSpec& spec) = 0;
  // Ends a running or queued job; the launcher reports kFinished with the reason.
  virtual void cancel(RunId run_id, const std::string& reason) = 0;
  // After a restart: finds the job by its name and resumes reporting on it. Returns false when
  // the cluster never saw the job (it may then be submitted).
  virtual Result<bool> reattach(const LaunchSpec& spec) = 0;
  // When the job's log last grew; nullopt while it has not started or after it finished.
  virtual std::optional<std::int64_t> last_progress_unix_ns(RunId run_id) const = 0;
  // The launcher's estimate of a launch's cost, for admission.
  virtual double expected_gpu_hours(const LaunchSpec& spec) const = 0;
  // The text of a job's log.
  virtual Result<std::string> read_log(const std::string& log_path) const = 0;
  // What a running job's log holds now (a launcher on a virtual clock shows what the job has
  // written by the scheduler's time).
  // Errors where the launcher cannot tell (then nothing is pruned).
  virtual Result<std::string> read_log_so_far(RunId run_id) const {
    (void)run_id;
    return make_error("this launcher cannot read a running job's log");
  }
};

// ---- Metrics ------------------------------------------------------------------------------

struct MeasureSpec {
  std::uint32_t seq_length = 0;
  std::uint32_t gpus = 0;
  std::uint32_t window_first_step = 4;
  std::uint32_t window_last_step = 13;
  bool log_went_silent = false;  // the run was cancelled for log silence
  bool pruned = false;           // the run was cancelled by the early-abort pruner
};

using RunOutcome = std::variant<RunMeasured, RunFailed>;

class MetricsSource {
 public:
  virtual ~MetricsSource() = default;
  // The measurement, or the failure class, that a finished job's log and final state give.
  virtual RunOutcome measure(const std::string& log_text, const JobReport& finished,
                             const MeasureSpec& spec) const = 0;
  // tokens/s/GPU over the first `steps` steps of the measurement window of a job still running;
  // nullopt until the log holds them.
  virtual std::optional<double> steady_throughput(const std::string& log_text,
                                                  const MeasureSpec& spec,
                                                  std::uint32_t steps) const = 0;
};

// ---- Profiler -----------------------------------------------------------------------------

// Reads a profiled run's traces into the per-stage breakdown the tuner sees: compute, exposed
// communication by kind, host-bound time and idle time per pipeline stage, the slowest stage and
// its largest exposed cost. A pure function of the files' contents.
class TraceAnalyzer {
 public:
  virtual ~TraceAnalyzer() = default;
  // `trace_paths` as a finished job reported them. The result's run_id and trace_paths are the
  // caller's to set.
  virtual Result<ProfileAnalyzed> analyze(const std::vector<std::string>& trace_paths) const = 0;
};

// ---- Tuner --------------------------------------------------------------------------------

// A read-only view of the campaign: the ledger's state, the baseline, and the time.
struct TunerView {
  const ControlState& state;
  const Recipe& baseline;
  std::int64_t now_unix_ns = 0;
};

struct TunerProposal {
  Recipe recipe;
  RunId parent_run_id = 0;  // the run whose recipe it changes (0 = the baseline)
  Hypothesis hypothesis;
  bool profile = false;
};

struct TunerStop {
  std::string evidence;
  std::vector<std::string> levers_tested;
  std::string last_diagnosis;
};

struct TunerWait {};  // nothing to propose until a run in flight finishes

using TunerAnswer = std::variant<TunerProposal, TunerStop, TunerWait>;

inline constexpr std::uint32_t kPruneSteadySteps = 4;

class Tuner {
 public:
  virtual ~Tuner() = default;
  virtual std::string name() const = 0;
  // Must be a function of the view (and the tuner's seed), so that a resumed campaign asks the
  // same questions and gets the same answers.
  virtual TunerAnswer next(const TunerView& view) = 0;
  // A black-box search's early abort: a search run slower than this fraction of the leader after
  // kPruneSteadySteps steady steps is cancelled and scored zero. nullopt: never pruned.
  virtual std::optional<double> prune_below_leader_fraction() const { return std::nullopt; }
  // Facts the tuner asks the ledger to keep (ToolCalled, LlmCharged, AccessDenied), taken by the
  // runtime after every next() and appended as the tuner's events ("tuner:<name>").
  virtual std::vector<Body> take_events() { return {}; }
  // An interactive tuner (an external agent on the control socket) answers TunerWait while its
  // agent thinks: the runtime then keeps the campaign open rather than stopping the search, and
  // the agent's commands reach the runtime through CampaignRuntime::propose and record_stop.
  virtual bool waits_for_input() const { return false; }
  // A black-box search draws whole configurations from a frozen space (the paper's baselines):
  // rule 2 (one lever per candidate) does not bind it. Recorded in CampaignOpened.
  virtual bool black_box() const { return false; }
  // Where a tuner that works for a long time per answer (an LLM over HTTP) says what it does;
  // the runtime hands it its own progress output (empty: quiet).
  virtual void set_progress(std::function<void(const std::string&)> progress) { (void)progress; }
};

}  // namespace attune
