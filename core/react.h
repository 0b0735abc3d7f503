// The campaign's reactions: react(state, news, context) -> what the runtime does next. Pure.
//
// decide() says what a command means and evolve() folds what happened; react() is the process
// manager beside them. Given the state after an append and the events that append recorded, it
// names the side effects those events call for (submit an admitted run, watch a started one)
// and then at most one next step of the campaign's phase:
//   calibrating: the next baseline run, on nodes no earlier calibration run used, while a launch
//     slot is free; a stop when the calibration has used every launch it may;
//   searching: the retry of a search run that failed on infrastructure, on other nodes; a stop
//     when that retry cannot fit the budget with nothing in flight, or when the tuner's last
//     kRefusalsInARowMax proposals were refused; otherwise a question to the tuner while a launch
//     slot is free;
//   shipping: once no search run is in flight and their infrastructure failures are retried, the
//     shipping rule: the baseline's reference check run, each candidate's check run (once more on
//     other nodes after an infrastructure failure), the judgement of a finished check run, and the
//     shipment;
//   done: the lessons of the campaign, once.
// The runtime performs the effects, runs each command through decide(), appends its events and
// calls react() again, until react() names nothing: the campaign then waits for news (a launcher
// report, a timer, an agent's command). react() never reads a clock, a file or the network: the
// launcher's cost estimate and what the tuner said since the last news arrive in the context.
//
// The rules for the tuner's answers (answer_reaction) and for the runtime's two watches on a
// running job (hang and early abort) are pure functions here too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/control_state.h"
#include "core/decide.h"
#include "core/ports.h"
#include "events/event.h"
#include "events/recipe.h"
#include "events/result.h"
#include "gate/convergence.h"
#include "gate/policy.h"

namespace attune {

// Limits of the reactions, each with its unit in the name.
inline constexpr std::uint32_t kRefusalsInARowMax = 200;           // then the tuner is stopped
inline constexpr std::uint32_t kCheckAttemptsPerCandidateMax = 2;  // infra retries of a check

// ---- What react() names ---------------------------------------------------------------------

// Hand an admitted run to the launcher.
struct SubmitRun {
  RunId run_id = 0;
  friend bool operator==(const SubmitRun&, const SubmitRun&) = default;
};
// Watch a started run: cancel it after hang_timeout_minutes of log silence, and (a black-box
// search's early abort) when it runs slower than the tuner's fraction of the leader.
struct WatchRun {
  RunId run_id = 0;
  friend bool operator==(const WatchRun&, const WatchRun&) = default;
};
// Ask the tuner for its next answer (then answer_reaction() says what the answer means).
struct AskTuner {
  friend bool operator==(const AskTuner&, const AskTuner&) = default;
};
// Read the logs of a finished check run and of the baseline's reference check run, and judge
// the candidate (judge_check()).
struct JudgeCheck {
  RunId candidate_run_id = 0;
  RunId check_run_id = 0;
  RunId reference_run_id = 0;
  friend bool operator==(const JudgeCheck&, const JudgeCheck&) = default;
};
// Distil what the shipped campaign established into lever rules (RecordLearnedRules).
struct LearnRules {
  friend bool operator==(const LearnRules&, const LearnRules&) = default;
};

using Reaction = std::variant<Command, SubmitRun, WatchRun, AskTuner, JudgeCheck, LearnRules>;

// The launcher's estimate of a launch's GPU-hours: a function of its arguments only.
using LaunchEstimate =
    std::function<double(const Recipe& recipe, RunPurpose purpose, std::uint32_t steps)>;

struct ReactContext {
  const Recipe& baseline;
  const LaunchEstimate& estimate;
  // The tuner answered "nothing now" since the last news: it is not asked again until news.
  bool tuner_idle = false;
  // An interactive tuner (an external agent) may answer "nothing now" while it thinks: that does
  // not end its search.
  bool tuner_waits_for_input = false;
  // The campaign learns lever rules once it has shipped (and has not asked for them yet).
  bool learn_rules = false;
};

// What follows the events `news` just appended: their effects, in order, then at most one next
// step of the campaign (a Command, AskTuner, JudgeCheck or LearnRules), always last.
std::vector<Reaction> react(const ControlState& state, std::span<const Envelope> news,
                            const ReactContext& context);

// What a tuner's answer means: a search launch, a stop (the tuner's own, or the budget's when
// the proposal cannot fit with nothing in flight, or "nothing left to propose"), or nothing (the
// tuner waits for a run in flight, or for its agent).
std::optional<Command> answer_reaction(const ControlState& state, const TunerAnswer& answer,
                                       const ReactContext& context);

// The search launch of a tuner's proposal, with the launcher's estimate.
ProposeLaunch search_launch(const ControlState& state, TunerProposal proposal,
                            const LaunchEstimate& estimate);

// The stop that ends the search for `reason`, naming the leader and every lever proposed.
StopRecorded search_stop(const ControlState& state, StopReason reason, std::string evidence);

// ---- Judging a check run -----------------------------------------------------------------------

// What the runtime read for a check: the two logs (an Error when a log could not be read).
struct CheckLogs {
  Result<std::string> check_log = make_error("not read");
  Result<std::string> reference_log = make_error("not read");
};

// The gate on a candidate's finished check run against the baseline's reference check run:
// layer 1 again on the fully resolved arguments of both logs, then layer 2 on their loss curves.
ConvergenceChecked judge_check(const ControlState& state, const JudgeCheck& check,
                               const CheckLogs& logs, const Policy& policy, const Recipe& baseline,
                               const ConvergenceThresholds& thresholds);

// ---- Watching a running job --------------------------------------------------------------------

// When a run started at `admitted_at_unix_ns` whose log last grew at `last_progress_unix_ns`
// (nullopt: not yet) is hung: hang_timeout_minutes after its last sign of life.
std::int64_t hang_deadline_unix_ns(std::int64_t admitted_at_unix_ns,
                                   std::optional<std::int64_t> last_progress_unix_ns,
                                   std::uint32_t hang_timeout_minutes);

// The throughput a black-box search run must reach to escape the early abort, and how often to
// look (one leader step); nullopt when the run is not pruned (not a search run, no fraction, no
// throughput to compare with).
struct PruneWatch {
  double floor_tokens_per_s_per_gpu = 0.0;
  std::int64_t interval_ns = 0;
};
std::optional<PruneWatch> prune_watch(const ControlState& state, RunId run_id,
                                      std::optional<double> leader_fraction);

}  // namespace attune
