#include "core/decide.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "events/assert.h"
#include "gate/config_check.h"
#include "projections/audit.h"
#include "projections/baseline_band.h"
#include "projections/leader.h"
#include "projections/number_format.h"

namespace attune {
namespace {

ObjectiveClass worse_class(ObjectiveClass a, ObjectiveClass b) {
  auto rank = [](ObjectiveClass c) {
    switch (c) {
      case ObjectiveClass::kOther:
        return 0;
      case ObjectiveClass::kStructural:
        return 1;
      case ObjectiveClass::kSameMath:
        return 2;
      case ObjectiveClass::kNumeric:
        return 3;
    }
    return 3;
  };
  return rank(a) >= rank(b) ? a : b;
}

// The diff between two recipes with every change's class taken from the gate, never from the
// proposer (rule 3): as written (`effective` false), or only what changes the values Megatron
// will use (rule 2 counts levers on these).
std::vector<SettingChange> classified_diff(const Policy& policy, const Recipe& from,
                                           const Recipe& to, bool effective = false) {
  std::vector<SettingChange> diff =
      effective ? effective_changes(from, to) : diff_recipes(from, to);
  for (SettingChange& change : diff) {
    change.objective_class = classify_setting(policy, change.kind, change.name).objective_class;
  }
  return diff;
}

std::vector<Lever> levers_of(const LeverGroups& groups, const std::vector<SettingChange>& diff) {
  std::vector<Lever> levers;
  for (const SettingChange& change : diff) {
    const std::string name = groups.lever_of(change.name);
    auto found = std::find_if(levers.begin(), levers.end(),
                              [&](const Lever& lever) { return lever.name == name; });
    if (found == levers.end()) {
      levers.push_back(Lever{name, change.objective_class});
    } else {
      found->objective_class = worse_class(found->objective_class, change.objective_class);
    }
  }
  return levers;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// What admitting a proposal needs to know besides the state: the proposal as it will be
// recorded, and whether its launch is paid from the tuner's budget.
struct Admission {
  CandidateProposed proposed;
  bool charged_to_budget = false;
};

struct Refusal {
  RefusalReason reason = RefusalReason::kInvalid;
  std::string detail;
};

// One function per purpose: an Error is a defect of the caller, a Refusal a fact to record.
using AdmitResult = std::variant<std::monostate, Refusal, Error>;

AdmitResult admit_calibration(const ControlState& state, Phase phase, Admission& admission) {
  if (phase != Phase::kCalibrating) {
    return Refusal{RefusalReason::kInvalid, "calibration is over: the band is set"};
  }
  if (admission.proposed.recipe_hash != state.view.settings.baseline_recipe_hash) {
    return Refusal{RefusalReason::kInvalid, "a calibration run must run the baseline recipe"};
  }
  admission.charged_to_budget = !state.view.settings.budget_auto;
  return {};
}

// A recipe already run: the same canonical text, or the same values for Megatron (it differs
// only in defaults spelled out on one side).
std::optional<Refusal> duplicate_of_a_run(const ControlState& state, const std::string& hash,
                                          const Recipe& recipe) {
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kSearch && run.purpose != RunPurpose::kCalibration) continue;
    const std::string which = "run " + std::to_string(id) +
                              (run.purpose == RunPurpose::kCalibration ? " (the baseline)" : "");
    if (run.recipe_hash == hash) {
      return Refusal{RefusalReason::kDuplicate, "identical to the recipe of " + which +
                                                    " (canonical hash " + hash.substr(0, 12) + ")"};
    }
    const Result<Recipe> earlier = parse_recipe(run.recipe, "run recipe");
    if (earlier.ok() && effective_changes(earlier.value(), recipe).empty()) {
      return Refusal{RefusalReason::kDuplicate,
                     "the same values as the recipe of " + which +
                         ": it differs only in defaults written out on one side"};
    }
  }
  return std::nullopt;
}

// Rule 2: one lever, or one coupled set of parallel degrees, against the parent run. The ledger
// records the levers against the parent, so a reader can check it.
AdmitResult admit_search(const ControlState& state, Phase phase, const ProposeLaunch& command,
                         const DecideContext& context, Admission& admission) {
  if (phase != Phase::kSearching) {
    return Refusal{RefusalReason::kInvalid,
                   std::string("the campaign is ") + to_string(phase) + ", not searching"};
  }
  if (auto duplicate = duplicate_of_a_run(state, admission.proposed.recipe_hash, command.recipe)) {
    return *duplicate;
  }
  std::string parent_text = state.view.settings.baseline_recipe;
  if (command.parent_run_id != 0) {
    const RunState* parent = state.run(command.parent_run_id);
    if (parent == nullptr || parent->purpose == RunPurpose::kCheck) {
      return Refusal{RefusalReason::kInvalid,
                     "parent run " + std::to_string(command.parent_run_id) +
                         " is not a search or calibration run of this campaign"};
    }
    parent_text = parent->recipe;
  }
  Result<Recipe> parent = parse_recipe(parent_text, "parent recipe");
  if (!parent.ok()) return make_error(parent.error());
  const std::vector<Lever> levers = levers_of(
      context.lever_groups,
      classified_diff(context.policy, parent.value(), command.recipe, /*effective=*/true));
  admission.proposed.levers = levers;
  if (levers.empty()) {
    return Refusal{RefusalReason::kInvalid, "changes nothing against its parent run " +
                                                std::to_string(command.parent_run_id)};
  }
  // A black-box search draws whole configurations from its frozen space, as the paper's
  // baselines did: rule 2 binds only the tuners that diagnose.
  if (levers.size() > 1 && !state.view.settings.tuner_black_box) {
    std::vector<std::string> names;
    for (const Lever& lever : levers) names.push_back(lever.name);
    return Refusal{RefusalReason::kMultipleLevers,
                   "changes " + std::to_string(levers.size()) + " levers against run " +
                       std::to_string(command.parent_run_id) + " (" + join(names) +
                       "); one lever or one coupled set of parallel degrees per candidate"};
  }
  const ConfigCheckResult checked = check_config(context.policy, context.baseline, command.recipe);
  if (!checked.allowed) return Refusal{RefusalReason::kLayer1, refusal_summary(checked)};
  admission.charged_to_budget = true;
  return {};
}

// An infrastructure failure may be retried once, with the same recipe; two of them count as a
// recipe failure.
AdmitResult admit_retry(const ControlState& state, const ProposeLaunch& command,
                        Admission& admission) {
  const RunId retried = command.retry_of_run_id;
  const RunState* failed = state.run(retried);
  if (failed == nullptr || !failed->failed ||
      failed->failed->failure_class != FailureClass::kInfra) {
    return Refusal{RefusalReason::kInvalid,
                   "run " + std::to_string(retried) +
                       " did not fail on infrastructure: only such a run may be retried"};
  }
  if (failed->purpose == RunPurpose::kRetry) {
    return Refusal{RefusalReason::kInvalid,
                   "run " + std::to_string(retried) +
                       " is already a retry: two infrastructure failures count as a recipe "
                       "failure"};
  }
  for (const auto& [id, run] : state.runs) {
    if (run.retry_of_run_id == retried) {
      return Refusal{
          RefusalReason::kDuplicate,
          "run " + std::to_string(retried) + " was already retried as run " + std::to_string(id)};
    }
  }
  if (admission.proposed.recipe_hash != failed->recipe_hash) {
    return Refusal{RefusalReason::kInvalid, "a retry must run the failed run's recipe"};
  }
  admission.charged_to_budget = failed->purpose == RunPurpose::kSearch;
  return {};
}

// Check runs come after the stop and run their candidate's recipe; they are paid from the reserve
// and may overshoot it.
AdmitResult admit_check(const ControlState& state, Phase phase, const ProposeLaunch& command,
                        const Admission& admission) {
  if (phase != Phase::kShipping) {
    return Refusal{RefusalReason::kInvalid, "check runs come after the stop"};
  }
  const RunState* candidate = state.run(command.check_of_run_id);
  const std::string expected_hash = command.check_of_run_id == 0
                                        ? state.view.settings.baseline_recipe_hash
                                        : (candidate ? candidate->recipe_hash : std::string());
  if (admission.proposed.recipe_hash != expected_hash) {
    return Refusal{RefusalReason::kInvalid, "a check run must run its candidate's recipe"};
  }
  return {};
}

// What every launch must fit: the concurrency limit, and (unless paid from the reserve or the
// infrastructure account) the remaining budget less the reserve.
std::optional<Refusal> exceeds_limits(const ControlState& state, const ProposeLaunch& command,
                                      bool charged_to_budget) {
  const std::uint32_t in_flight = state.runs_in_flight();
  if (in_flight >= state.view.settings.concurrency) {
    return Refusal{RefusalReason::kConcurrency,
                   std::to_string(in_flight) + " runs in flight, at most " +
                       std::to_string(state.view.settings.concurrency)};
  }
  const Budget& budget = state.view.budget;
  if (charged_to_budget && command.expected_gpu_hours > budget.remaining_gpu_hours) {
    return Refusal{RefusalReason::kBudget,
                   "expected " + format_fixed(command.expected_gpu_hours, 2) +
                       " GPU-hours does not fit the remaining " +
                       format_fixed(budget.remaining_gpu_hours, 2) + " (budget " +
                       format_fixed(budget.budget_gpu_hours, 2) + ", spent " +
                       format_fixed(budget.tuner_gpu_hours, 2) + ", in flight " +
                       format_fixed(budget.in_flight_gpu_hours, 2) + ", reserve " +
                       format_fixed(budget.reserve_gpu_hours, 2) + ")"};
  }
  return std::nullopt;
}

CandidateProposed proposal_of(const ControlState& state, const ProposeLaunch& command,
                              const DecideContext& context) {
  CandidateProposed proposed;
  proposed.proposal_id = state.next_proposal_id();
  proposed.purpose = command.purpose;
  proposed.recipe = canonical_text(command.recipe);
  proposed.recipe_hash = recipe_hash(command.recipe);
  proposed.diff = classified_diff(context.policy, context.baseline, command.recipe);
  proposed.levers = levers_of(context.lever_groups, proposed.diff);
  proposed.hypothesis = command.hypothesis;
  proposed.profile = command.profile;
  proposed.retry_of_run_id = command.retry_of_run_id;
  proposed.check_of_run_id = command.check_of_run_id;
  proposed.parent_run_id = command.parent_run_id;
  return proposed;
}

LaunchAdmitted admitted_launch(const ControlState& state, const ProposeLaunch& command,
                               ProposalId proposal_id) {
  const CampaignOpened& settings = state.view.settings;
  LaunchAdmitted admitted;
  admitted.proposal_id = proposal_id;
  admitted.run_id = state.next_run_id();
  admitted.purpose = command.purpose;
  admitted.gpus = settings.gpu_count;
  admitted.steps = command.steps != 0                      ? command.steps
                   : command.purpose == RunPurpose::kCheck ? settings.check_steps
                                                           : settings.steps_per_run;
  admitted.expected_gpu_hours = command.expected_gpu_hours;
  // Every launch after the band avoids the nodes of a calibration run it left out (one is slow),
  // as far as the launcher keeps enough other nodes.
  admitted.exclude_nodes = command.exclude_nodes;
  append_nodes(admitted.exclude_nodes, slow_node_suspects(state));
  admitted.job_name = job_name_for(state.view.campaign_id, admitted.run_id);
  return admitted;
}

// A proposal is recorded whatever becomes of it: then either its refusal or its admission.
Result<std::vector<Body>> decide_propose(const ControlState& state, const ProposeLaunch& command,
                                         const DecideContext& context) {
  const Phase phase = phase_of(state);
  if (phase == Phase::kNotOpened) return make_error("the campaign is not opened");
  Admission admission{proposal_of(state, command, context), false};
  AdmitResult admitted;
  if (phase == Phase::kDone) {
    admitted = Refusal{RefusalReason::kInvalid, "the campaign has shipped"};
  } else {
    switch (command.purpose) {
      case RunPurpose::kCalibration:
        admitted = admit_calibration(state, phase, admission);
        break;
      case RunPurpose::kSearch:
        admitted = admit_search(state, phase, command, context, admission);
        break;
      case RunPurpose::kRetry:
        admitted = admit_retry(state, command, admission);
        break;
      case RunPurpose::kCheck:
        admitted = admit_check(state, phase, command, admission);
        break;
    }
  }
  if (const Error* error = std::get_if<Error>(&admitted)) return *error;
  if (std::holds_alternative<std::monostate>(admitted)) {
    if (auto limit = exceeds_limits(state, command, admission.charged_to_budget)) {
      admitted = std::move(*limit);
    }
  }
  const ProposalId proposal_id = admission.proposed.proposal_id;
  std::vector<Body> events{std::move(admission.proposed)};
  if (Refusal* refusal = std::get_if<Refusal>(&admitted)) {
    events.push_back(LaunchRefused{proposal_id, refusal->reason, std::move(refusal->detail)});
  } else {
    events.push_back(admitted_launch(state, command, proposal_id));
  }
  return events;
}

// The verdict on a finished search or retry run, against the leader and the band.
VerdictRecorded search_verdict(const ControlState& state, const ReportFinished& command) {
  const BaselineBand& band = state.view.baseline_band;
  const Leader& leader = state.view.leader;
  VerdictRecorded verdict;
  verdict.run_id = command.run_id;
  verdict.leader_before = leader.run_id;
  verdict.leader_after = leader.run_id;
  verdict.band_fraction = band.band_fraction;
  const RunMeasured* measured = std::get_if<RunMeasured>(&command.outcome);
  if (!measured) {
    verdict.verdict = Verdict::kFailed;
    return verdict;
  }
  verdict.gain_fraction =
      gain_fraction_of(measured->tokens_per_sec_per_gpu, band.mean_tokens_per_s_per_gpu);
  if (beats_by_more_than_band(measured->tokens_per_sec_per_gpu, leader.tokens_per_s_per_gpu,
                              band.mean_tokens_per_s_per_gpu, band.band_fraction)) {
    verdict.verdict = Verdict::kNewLeader;
    verdict.leader_after = command.run_id;
  } else {
    verdict.verdict = Verdict::kNotBetter;
  }
  return verdict;
}

// A finished calibration run: a measured one's verdict, and the band once plan_calibration can set
// it (this run's outcome included, charged `gpu_hours`).
void add_calibration_events(const ControlState& state, const ReportFinished& command,
                            double gpu_hours, std::vector<Body>& events) {
  const CampaignOpened& settings = state.view.settings;
  const RunMeasured* measured = std::get_if<RunMeasured>(&command.outcome);
  if (measured) {
    events.push_back(VerdictRecorded{command.run_id, Verdict::kCalibration, 0.0, 0, 0,
                                     state.view.baseline_band.band_fraction});
  }
  std::vector<CalibrationEntry> entries = calibration_entries(state);
  for (CalibrationEntry& entry : entries) {
    if (entry.run_id != command.run_id) continue;
    entry.finished = true;
    if (measured) entry.tokens_per_s_per_gpu = measured->tokens_per_sec_per_gpu;
  }
  const CalibrationPlan plan = plan_calibration(entries, settings.calibration_runs,
                                                settings.band_floor_fraction, settings.band_k);
  if (plan.band_run_ids.empty()) return;
  std::vector<double> throughputs;
  std::vector<double> launch_gpu_hours;
  for (const RunId id : plan.band_run_ids) {
    if (id == command.run_id) {
      throughputs.push_back(measured->tokens_per_sec_per_gpu);
      launch_gpu_hours.push_back(gpu_hours);
      continue;
    }
    const RunState* run = state.run(id);
    ATTUNE_ASSERT(run != nullptr && run->measured, "the band is set from measured runs");
    throughputs.push_back(run->measured->tokens_per_sec_per_gpu);
    launch_gpu_hours.push_back(
        gpu_hours_of(run->gpus, run->admitted_at_unix_ns, run->released_at_unix_ns));
  }
  BandSet set;
  set.calibration_run_ids = plan.band_run_ids;
  set.mean_tokens_per_sec_per_gpu = mean_of(throughputs);
  set.rsd = relative_std_dev(throughputs);
  set.band_fraction = band_fraction_of(settings.band_floor_fraction, settings.band_k, set.rsd);
  set.mean_launch_gpu_hours = mean_of(launch_gpu_hours);
  set.budget_gpu_hours = settings.budget_auto ? auto_budget_gpu_hours(set.mean_launch_gpu_hours)
                                              : settings.budget_gpu_hours;
  events.push_back(set);
}

Result<std::vector<Body>> decide_finished(const ControlState& state,
                                          const ReportFinished& command) {
  const RunState* run = state.run(command.run_id);
  if (run == nullptr)
    return make_error("finished report for unknown run " + std::to_string(command.run_id));
  if (run->finished || run->charged) {
    return make_error("run " + std::to_string(command.run_id) + " has already finished");
  }
  ATTUNE_ASSERT(!run->charged, "a run is charged once");
  std::vector<Body> events;
  events.push_back(JobFinished{command.run_id, command.released_at_unix_ns, command.final_state,
                               command.facts_source, command.log_path});
  // A job released before it was ever admitted to the cluster costs nothing.
  const std::int64_t admitted_at =
      run->started ? run->admitted_at_unix_ns : command.released_at_unix_ns;
  const std::int64_t released_at = std::max(admitted_at, command.released_at_unix_ns);

  const RunMeasured* measured = std::get_if<RunMeasured>(&command.outcome);
  const RunFailed* failed = std::get_if<RunFailed>(&command.outcome);
  if (measured) {
    RunMeasured body = *measured;
    body.run_id = command.run_id;
    events.push_back(body);
  } else {
    RunFailed body = *failed;
    body.run_id = command.run_id;
    events.push_back(body);
  }
  const bool infra = failed && failed->failure_class == FailureClass::kInfra;
  // An infrastructure failure is the cluster's, the retry's included; two of them only make the
  // recipe count as failed.
  const Account account = infra ? Account::kInfra : Account::kTuner;
  const double gpu_hours = gpu_hours_of(run->gpus, admitted_at, released_at);
  ATTUNE_ASSERT(std::isfinite(gpu_hours) && gpu_hours >= 0.0,
                "a charge is GPUs times a non-negative time");
  events.push_back(
      Charged{command.run_id, account, run->gpus, admitted_at, released_at, gpu_hours});

  if (run->purpose == RunPurpose::kSearch || run->purpose == RunPurpose::kRetry) {
    if (state.view.baseline_band.band_set) events.push_back(search_verdict(state, command));
  } else if (run->purpose == RunPurpose::kCalibration && !state.view.baseline_band.band_set) {
    add_calibration_events(state, command, gpu_hours, events);
  }
  return events;
}

}  // namespace

std::string job_name_for(const std::string& campaign_id, RunId run_id) {
  return "attune-" + campaign_id + "-r" + std::to_string(run_id);
}

double auto_budget_gpu_hours(double mean_launch_gpu_hours) {
  const double raw = kAutoBudgetLaunches * mean_launch_gpu_hours;
  return std::max(kAutoBudgetRoundingGpuHours,
                  std::ceil(raw / kAutoBudgetRoundingGpuHours) * kAutoBudgetRoundingGpuHours);
}

Result<std::vector<Body>> decide(const ControlState& state, const Command& command,
                                 const DecideContext& context) {
  auto unfinished_run = [&](RunId run_id) -> Result<const RunState*> {
    const RunState* run = state.run(run_id);
    if (run == nullptr) return make_error("report for unknown run " + std::to_string(run_id));
    if (run->finished) return make_error("report for finished run " + std::to_string(run_id));
    return run;
  };
  return std::visit(
      [&](const auto& body) -> Result<std::vector<Body>> {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, ProposeLaunch>) {
          return decide_propose(state, body, context);
        } else if constexpr (std::is_same_v<T, ReportSubmitted>) {
          auto run = unfinished_run(body.run_id);
          if (!run.ok()) return make_error(run.error());
          if (run.value()->submitted) {
            return make_error("run " + std::to_string(body.run_id) + " was already submitted");
          }
          return std::vector<Body>{JobSubmitted{body.run_id, body.launcher_job_id,
                                                run.value()->job_name, body.at_unix_ns}};
        } else if constexpr (std::is_same_v<T, ReportStarted>) {
          auto run = unfinished_run(body.run_id);
          if (!run.ok()) return make_error(run.error());
          if (run.value()->started) {
            return make_error("run " + std::to_string(body.run_id) + " has already started");
          }
          return std::vector<Body>{JobStarted{body.run_id, body.admitted_at_unix_ns, body.nodes}};
        } else if constexpr (std::is_same_v<T, ReportFinished>) {
          return decide_finished(state, body);
        } else if constexpr (std::is_same_v<T, ReportProfile>) {
          if (!state.run(body.profile.run_id)) {
            return make_error("profile of unknown run " + std::to_string(body.profile.run_id));
          }
          return std::vector<Body>{body.profile};
        } else if constexpr (std::is_same_v<T, RecordStop>) {
          if (state.stop_recorded) return make_error("the campaign has already stopped");
          return std::vector<Body>{body.stop};
        } else if constexpr (std::is_same_v<T, RecordGateResult>) {
          if (phase_of(state) != Phase::kShipping) return make_error("no check outside shipping");
          return std::vector<Body>{body.result};
        } else if constexpr (std::is_same_v<T, RecordShipment>) {
          if (phase_of(state) != Phase::kShipping) {
            return make_error("a recipe ships only after the stop, once");
          }
          return std::vector<Body>{body.shipped};
        } else if constexpr (std::is_same_v<T, RecordAccessDenied>) {
          return std::vector<Body>{body.denied};
        } else {
          static_assert(std::is_same_v<T, RecordLearnedRules>);
          if (phase_of(state) != Phase::kDone) {
            return make_error("lever rules are learned once the campaign has shipped");
          }
          if (state.rules_learned()) return make_error("the campaign's lever rules are recorded");
          return std::vector<Body>(body.rules.begin(), body.rules.end());
        }
      },
      command);
}

}  // namespace attune
