#include "core/react.h"

#include <algorithm>
#include <set>

#include "events/assert.h"
#include "gate/resolved_args.h"
#include "gate/shipping_rule.h"
#include "projections/number_format.h"

namespace attune {
namespace {

constexpr std::int64_t kNsPerMinute = 60'000'000'000;
constexpr double kNsPerSecond = 1e9;

// ---- Effects of the news -----------------------------------------------------------------------

void add_effects(const ControlState& state, const Envelope& event,
                 std::vector<Reaction>& reactions) {
  if (const auto* admitted = std::get_if<LaunchAdmitted>(&event.body)) {
    reactions.push_back(SubmitRun{admitted->run_id});
  } else if (const auto* started = std::get_if<JobStarted>(&event.body)) {
    const RunState* run = state.run(started->run_id);
    if (run != nullptr && run->in_flight()) reactions.push_back(WatchRun{started->run_id});
  }
}

ProposeLaunch baseline_launch(RunPurpose purpose, std::uint32_t steps,
                              const ReactContext& context) {
  ProposeLaunch launch;
  launch.purpose = purpose;
  launch.recipe = context.baseline;
  launch.steps = steps;
  launch.expected_gpu_hours = context.estimate(context.baseline, purpose, steps);
  return launch;
}

bool any_refused(std::span<const Envelope> news) {
  return std::any_of(news.begin(), news.end(), [](const Envelope& event) {
    return std::holds_alternative<LaunchRefused>(event.body);
  });
}

// ---- Calibrating -------------------------------------------------------------------------------

// The first calibration launches all failed the same way (every one out of memory, say): the
// baseline does not work here, and the rest of the calibration would only spend more.
std::optional<Reaction> stop_on_repeated_failure(const ControlState& state,
                                                 std::uint32_t measured) {
  if (measured != 0) return std::nullopt;
  std::uint32_t failed = 0;
  std::optional<FailureClass> same;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kCalibration || !run.failed ||
        run.failed->failure_class == FailureClass::kInfra) {
      continue;
    }
    if (same && *same != run.failed->failure_class) return std::nullopt;
    same = run.failed->failure_class;
    ++failed;
  }
  if (failed < kCalibrationSameFailuresStop) return std::nullopt;
  StopRecorded stop;
  stop.reason = StopReason::kOperator;
  stop.evidence = "calibration stopped: the first " + std::to_string(failed) +
                  " baseline launches all failed (" + to_string(*same) +
                  "); the baseline does not run here";
  return Command(RecordStop{stop});
}

std::optional<Reaction> calibrate(const ControlState& state, std::span<const Envelope> news,
                                  const ReactContext& context) {
  const CampaignOpened& settings = state.view.settings;
  std::uint32_t launched = 0;
  std::set<std::string> used_nodes;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kCalibration) continue;
    ++launched;
    used_nodes.insert(run.nodes.begin(), run.nodes.end());
  }
  const std::uint32_t measured = calibration_runs_measured(state);
  const std::uint32_t in_flight = calibration_runs_in_flight(state);
  const CalibrationPlan plan =
      plan_calibration(calibration_entries(state), settings.calibration_runs,
                       settings.band_floor_fraction, settings.band_k);
  const bool rerun = plan.reruns_wanted > 0;
  if (measured + in_flight >= settings.calibration_runs && !rerun) return std::nullopt;
  if (std::optional<Reaction> stop = stop_on_repeated_failure(state, measured)) return stop;
  if (!rerun && launched >= settings.calibration_runs * kCalibrationLaunchesPerRunMax) {
    if (in_flight != 0) return std::nullopt;
    StopRecorded stop;
    stop.reason = StopReason::kOperator;
    stop.evidence = "calibration failed: " + std::to_string(launched - measured) + " of " +
                    std::to_string(launched) + " baseline launches produced no measurement";
    return Command(RecordStop{stop});
  }
  // A launch refused just now (the budget) waits for a run to finish.
  if (any_refused(news)) return std::nullopt;
  if (state.runs_in_flight() >= settings.concurrency) return std::nullopt;
  // Distinct node allocations: avoid the nodes earlier calibration runs used. A run in an
  // outlier's place asks first to avoid the outliers' nodes (a slow one among them), so that a
  // cluster too small to avoid every used node still keeps it off those.
  ProposeLaunch launch = baseline_launch(RunPurpose::kCalibration, settings.steps_per_run, context);
  launch.exclude_nodes = nodes_of_runs(state, plan.outlier_run_ids);
  append_nodes(launch.exclude_nodes,
               std::vector<std::string>(used_nodes.begin(), used_nodes.end()));
  return Command(std::move(launch));
}

// ---- Infrastructure retries --------------------------------------------------------------------

enum class RetryStep { kNone, kWait, kReaction };

// The retry, on other nodes, of the first search run that failed on infrastructure and has not
// been retried. A retry the budget cannot pay for is not launched: while searching with nothing
// in flight the budget is spent (a stop); with runs in flight it waits; after the stop the run
// stays failed.
RetryStep infra_retry(const ControlState& state, std::optional<Reaction>& out) {
  const bool searching = phase_of(state) == Phase::kSearching;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kSearch || !run.failed ||
        run.failed->failure_class != FailureClass::kInfra) {
      continue;
    }
    const bool retried = std::any_of(state.runs.begin(), state.runs.end(), [&](const auto& other) {
      return other.second.retry_of_run_id == id;
    });
    if (retried) continue;
    if (run.expected_gpu_hours > state.view.budget.remaining_gpu_hours) {
      if (!searching) continue;
      if (state.runs_in_flight() != 0) return RetryStep::kWait;
      out = Command(RecordStop{
          search_stop(state, StopReason::kBudgetSpent,
                      "the remaining " + format_fixed(state.view.budget.remaining_gpu_hours, 2) +
                          " GPU-hours do not fit the retry of run " + std::to_string(id))});
      return RetryStep::kReaction;
    }
    auto recipe = parse_recipe(run.recipe, "run " + std::to_string(id));
    ATTUNE_ASSERT(recipe.ok(), "a recorded run's recipe parses");
    ProposeLaunch launch;
    launch.purpose = RunPurpose::kRetry;
    launch.recipe = std::move(recipe).value();
    launch.retry_of_run_id = id;
    launch.steps = run.steps;
    launch.profile = run.profile;
    launch.expected_gpu_hours = run.expected_gpu_hours;
    launch.exclude_nodes = run.nodes;
    if (!run.failed->node.empty()) launch.exclude_nodes.push_back(run.failed->node);
    const auto proposal = state.proposals.find(run.proposal_id);
    if (proposal != state.proposals.end()) launch.hypothesis = proposal->second.hypothesis;
    out = Command(std::move(launch));
    return RetryStep::kReaction;
  }
  return RetryStep::kNone;
}

// ---- Searching ---------------------------------------------------------------------------------

std::optional<Reaction> search(const ControlState& state, const ReactContext& context) {
  const CampaignOpened& settings = state.view.settings;
  if (state.runs_in_flight() >= settings.concurrency) return std::nullopt;
  std::optional<Reaction> retry;
  if (infra_retry(state, retry) == RetryStep::kReaction) return retry;
  if (state.waiting_for_budget) return std::nullopt;  // until a run in flight finishes
  if (state.refusals_in_a_row >= kRefusalsInARowMax) {
    return Command(RecordStop{search_stop(
        state, StopReason::kTunerStopped,
        "the tuner's last " + std::to_string(kRefusalsInARowMax) + " proposals were refused")});
  }
  if (context.tuner_idle) return std::nullopt;
  return AskTuner{};
}

// ---- Shipping ----------------------------------------------------------------------------------

// The check runs of a candidate (0 = the baseline's reference run) and their retries, in order.
std::vector<const RunState*> check_runs_of(const ControlState& state, RunId candidate) {
  std::vector<const RunState*> runs;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose == RunPurpose::kCheck && run.check_of_run_id == candidate) {
      runs.push_back(&run);
    }
    if (run.purpose == RunPurpose::kRetry && run.retry_of_run_id != 0) {
      const RunState* original = state.run(run.retry_of_run_id);
      if (original && original->purpose == RunPurpose::kCheck &&
          original->check_of_run_id == candidate) {
        runs.push_back(&run);
      }
    }
  }
  return runs;
}

// Where the check of a candidate stands.
struct CheckStatus {
  enum class Kind { kInFlight, kFinished, kNoVerdict, kLaunch } kind = Kind::kInFlight;
  const RunState* run = nullptr;           // kFinished: the run that counts
  std::vector<std::string> exclude_nodes;  // kLaunch: the nodes of the failed attempt
};

CheckStatus check_status(const ControlState& state, RunId candidate) {
  const std::vector<const RunState*> runs = check_runs_of(state, candidate);
  CheckStatus status;
  for (const RunState* run : runs) {
    if (run->in_flight()) return status;
  }
  for (const RunState* run : runs) {
    if (run->measured || (run->failed && run->failed->failure_class != FailureClass::kInfra)) {
      status.kind = CheckStatus::Kind::kFinished;
      status.run = run;
      return status;
    }
  }
  if (runs.size() >= kCheckAttemptsPerCandidateMax) {
    status.kind = CheckStatus::Kind::kNoVerdict;
    return status;
  }
  status.kind = CheckStatus::Kind::kLaunch;
  if (!runs.empty()) status.exclude_nodes = runs.back()->nodes;
  return status;
}

Command check_launch(const ControlState& state, RunId candidate, const CheckStatus& status,
                     const ReactContext& context) {
  const std::uint32_t steps = state.view.settings.check_steps;
  ProposeLaunch launch = baseline_launch(RunPurpose::kCheck, steps, context);
  if (candidate != 0) {
    auto recipe = parse_recipe(state.run(candidate)->recipe, "run recipe");
    ATTUNE_ASSERT(recipe.ok(), "a recorded run's recipe parses");
    launch.recipe = std::move(recipe).value();
    launch.expected_gpu_hours = context.estimate(launch.recipe, RunPurpose::kCheck, steps);
  }
  launch.check_of_run_id = candidate;
  launch.exclude_nodes = status.exclude_nodes;
  return launch;
}

Command ship_baseline(const ControlState& state, std::string why) {
  RecipeShipped shipped;
  shipped.is_baseline = true;
  shipped.recipe = state.view.settings.baseline_recipe;
  shipped.recipe_hash = state.view.settings.baseline_recipe_hash;
  shipped.tokens_per_sec_per_gpu = state.view.baseline_band.mean_tokens_per_s_per_gpu;
  shipped.evidence = std::move(why);
  return RecordShipment{shipped};
}

ShippingInput shipping_input(const ControlState& state) {
  const BaselineBand& band = state.view.baseline_band;
  ShippingInput input;
  input.baseline_mean_tokens_per_s_per_gpu = band.mean_tokens_per_s_per_gpu;
  input.band_fraction = band.band_fraction;
  input.checks_max = state.view.settings.reserve_checks;
  for (const auto& [id, run] : state.runs) {
    if ((run.purpose == RunPurpose::kSearch || run.purpose == RunPurpose::kRetry) && run.measured) {
      input.candidates.push_back(
          ShippingCandidate{id, run.measured->tokens_per_sec_per_gpu, run.recipe_hash});
    }
  }
  for (const auto& [candidate, checked] : state.gate_results) {
    GateResult result;
    result.run_id = candidate;
    result.has_verdict = checked.has_verdict;
    result.layer1 = checked.layer1_passed ? LayerOutcome::kPassed : LayerOutcome::kFailed;
    result.layer2 = checked.layer2_passed ? LayerOutcome::kPassed : LayerOutcome::kFailed;
    input.gate_results.push_back(result);
  }
  return input;
}

// The next step of checking `candidate`: its reference run first, then its own check run.
std::optional<Reaction> check_next(const ControlState& state, RunId candidate,
                                   const ReactContext& context) {
  const CheckStatus reference = check_status(state, 0);
  switch (reference.kind) {
    case CheckStatus::Kind::kInFlight:
      return std::nullopt;
    case CheckStatus::Kind::kNoVerdict:
      return ship_baseline(state,
                           "the baseline's reference check run failed on infrastructure twice");
    case CheckStatus::Kind::kLaunch:
      return check_launch(state, 0, reference, context);
    case CheckStatus::Kind::kFinished:
      break;
  }
  if (!reference.run->measured) {
    return ship_baseline(state,
                         "the baseline's reference check run failed: no loss curve to compare");
  }
  const CheckStatus check = check_status(state, candidate);
  switch (check.kind) {
    case CheckStatus::Kind::kInFlight:
      return std::nullopt;
    case CheckStatus::Kind::kLaunch:
      return check_launch(state, candidate, check, context);
    case CheckStatus::Kind::kNoVerdict: {
      ConvergenceChecked result;
      result.candidate_run_id = candidate;
      result.has_verdict = false;
      result.reason = "both check runs failed on infrastructure";
      return Command(RecordGateResult{result});
    }
    case CheckStatus::Kind::kFinished:
      break;
  }
  return JudgeCheck{candidate, check.run->run_id, reference.run->run_id};
}

std::optional<Reaction> ship(const ControlState& state, const ReactContext& context) {
  for (const auto& [id, run] : state.runs) {
    if (run.in_flight() && run.purpose != RunPurpose::kCheck) return std::nullopt;
  }
  // A search run that failed on infrastructure after the stop still gets its retry.
  std::optional<Reaction> retry;
  if (infra_retry(state, retry) == RetryStep::kReaction) return retry;
  if (!state.view.baseline_band.band_set) {
    return ship_baseline(state, "the band was never set: no calibrated baseline to beat");
  }
  auto decision = decide_shipping(shipping_input(state));
  ATTUNE_ASSERT(decision.ok(), "the shipping rule's input comes from the ledger");
  if (const auto* next = std::get_if<CheckNext>(&decision.value())) {
    return check_next(state, next->run_id, context);
  }
  const Ship& decided = std::get<Ship>(decision.value());
  RecipeShipped shipped;
  shipped.run_id = decided.run_id;
  shipped.is_baseline = decided.is_baseline;
  shipped.evidence = decided.evidence;
  shipped.gain_fraction = decided.gain_fraction;
  shipped.tokens_per_sec_per_gpu = decided.tokens_per_s_per_gpu;
  if (decided.is_baseline) {
    shipped.recipe = state.view.settings.baseline_recipe;
    shipped.recipe_hash = state.view.settings.baseline_recipe_hash;
  } else {
    const RunState* run = state.run(decided.run_id);
    ATTUNE_ASSERT(run != nullptr, "the shipping rule ships a run of the campaign");
    shipped.recipe = run->recipe;
    shipped.recipe_hash = run->recipe_hash;
  }
  return Command(RecordShipment{shipped});
}

std::optional<Reaction> next_step(const ControlState& state, std::span<const Envelope> news,
                                  const ReactContext& context) {
  switch (phase_of(state)) {
    case Phase::kNotOpened:
      return std::nullopt;
    case Phase::kCalibrating:
      return calibrate(state, news, context);
    case Phase::kSearching:
      return search(state, context);
    case Phase::kShipping:
      return ship(state, context);
    case Phase::kDone:
      if (context.learn_rules && !state.rules_learned()) return LearnRules{};
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::vector<Reaction> react(const ControlState& state, std::span<const Envelope> news,
                            const ReactContext& context) {
  std::vector<Reaction> reactions;
  for (const Envelope& event : news) add_effects(state, event, reactions);
  if (std::optional<Reaction> next = next_step(state, news, context)) {
    reactions.push_back(std::move(*next));
  }
  return reactions;
}

ProposeLaunch search_launch(const ControlState& state, TunerProposal proposal,
                            const LaunchEstimate& estimate) {
  ProposeLaunch launch;
  launch.purpose = RunPurpose::kSearch;
  launch.recipe = std::move(proposal.recipe);
  launch.parent_run_id = proposal.parent_run_id;
  launch.hypothesis = std::move(proposal.hypothesis);
  launch.profile = proposal.profile;
  launch.steps = state.view.settings.steps_per_run;
  launch.expected_gpu_hours =
      estimate(launch.recipe, RunPurpose::kSearch, state.view.settings.steps_per_run);
  return launch;
}

StopRecorded search_stop(const ControlState& state, StopReason reason, std::string evidence) {
  StopRecorded stop;
  stop.reason = reason;
  stop.leader_run_id = state.view.leader.run_id;
  stop.evidence = std::move(evidence);
  std::set<std::string> levers;
  for (const auto& [id, proposal] : state.proposals) {
    for (const Lever& lever : proposal.levers) levers.insert(lever.name);
  }
  stop.levers_tested.assign(levers.begin(), levers.end());
  return stop;
}

std::optional<Command> answer_reaction(const ControlState& state, const TunerAnswer& answer,
                                       const ReactContext& context) {
  if (const auto* proposal = std::get_if<TunerProposal>(&answer)) {
    ProposeLaunch launch = search_launch(state, *proposal, context.estimate);
    // Nothing in flight and the launch cannot fit: the budget is spent.
    if (launch.expected_gpu_hours > state.view.budget.remaining_gpu_hours &&
        state.runs_in_flight() == 0) {
      return RecordStop{search_stop(state, StopReason::kBudgetSpent,
                                    "the remaining " +
                                        format_fixed(state.view.budget.remaining_gpu_hours, 2) +
                                        " GPU-hours do not fit another launch")};
    }
    return launch;
  }
  if (const auto* stop = std::get_if<TunerStop>(&answer)) {
    StopRecorded record;
    record.reason = StopReason::kTunerStopped;
    record.leader_run_id = state.view.leader.run_id;
    record.levers_tested = stop->levers_tested;
    record.last_diagnosis = stop->last_diagnosis;
    record.evidence = stop->evidence;
    return RecordStop{record};
  }
  if (state.runs_in_flight() == 0 && !context.tuner_waits_for_input) {
    return RecordStop{
        search_stop(state, StopReason::kTunerStopped, "the tuner has nothing left to propose")};
  }
  return std::nullopt;
}

ConvergenceChecked judge_check(const ControlState& state, const JudgeCheck& judged,
                               const CheckLogs& logs, const Policy& policy, const Recipe& baseline,
                               const ConvergenceThresholds& thresholds_in) {
  const RunState* check = state.run(judged.check_run_id);
  const RunState* reference = state.run(judged.reference_run_id);
  ATTUNE_ASSERT(check != nullptr && reference != nullptr && reference->measured,
                "a check is judged against a measured reference run of the campaign");
  ConvergenceChecked result;
  result.candidate_run_id = judged.candidate_run_id;
  result.check_run_id = check->run_id;
  result.has_verdict = true;
  if (!check->measured) {
    result.reason = std::string("the check run failed: ") +
                    to_string(check->failed->failure_class) + ": " + check->failed->message;
    return result;
  }
  // Layer 1 again, on the fully resolved arguments of both check runs.
  if (!logs.check_log.ok() || !logs.reference_log.ok()) {
    result.reason = "cannot read a check run's log";
    return result;
  }
  auto check_args = parse_resolved_args(logs.check_log.value(), check->log_path);
  auto reference_args = parse_resolved_args(logs.reference_log.value(), reference->log_path);
  auto check_recipe = parse_recipe(check->recipe, "check recipe");
  if (!check_args.ok() || !reference_args.ok() || !check_recipe.ok()) {
    result.reason =
        "no resolved arguments block: " + (!check_args.ok()       ? check_args.error()
                                           : !reference_args.ok() ? reference_args.error()
                                                                  : check_recipe.error());
    return result;
  }
  const ResolvedRun reference_run{reference_args.value(), baseline, baseline.env};
  const ResolvedRun candidate_run{check_args.value(), check_recipe.value(), check_recipe->env};
  const ResolvedComparison resolved = compare_resolved(policy, reference_run, candidate_run);
  result.layer1_passed = resolved.passed;
  result.checks.push_back(ConvergenceCheck{"layer1_resolved_arguments",
                                           static_cast<double>(resolved.failures.size()), 0.0,
                                           resolved.passed});
  // Layer 2 on the loss curves of the same length.
  ConvergenceThresholds thresholds = thresholds_in;
  thresholds.expected_steps = state.view.settings.check_steps;
  const ConvergenceResult converged =
      compare_loss_curves(reference->measured->loss_curve, check->measured->loss_curve, thresholds);
  result.layer2_passed = converged.passed;
  for (const ConvergenceCheckResult& one : converged.checks) {
    result.checks.push_back(ConvergenceCheck{one.name, one.measured, one.threshold, one.passed});
  }
  if (!resolved.passed) {
    result.reason = "layer 1 on resolved arguments: " + resolved.failures.front().message;
  } else if (!converged.passed) {
    result.reason = "layer 2: " + converged.reason;
  }
  return result;
}

std::int64_t hang_deadline_unix_ns(std::int64_t admitted_at_unix_ns,
                                   std::optional<std::int64_t> last_progress_unix_ns,
                                   std::uint32_t hang_timeout_minutes) {
  return last_progress_unix_ns.value_or(admitted_at_unix_ns) +
         static_cast<std::int64_t>(hang_timeout_minutes) * kNsPerMinute;
}

std::optional<PruneWatch> prune_watch(const ControlState& state, RunId run_id,
                                      std::optional<double> leader_fraction) {
  const RunState* run = state.run(run_id);
  if (!leader_fraction || run == nullptr || run->purpose != RunPurpose::kSearch ||
      !run->in_flight()) {
    return std::nullopt;
  }
  const CampaignOpened& settings = state.view.settings;
  const double leader = state.view.leader.run_id == 0
                            ? state.view.baseline_band.mean_tokens_per_s_per_gpu
                            : state.view.leader.tokens_per_s_per_gpu;
  if (leader <= 0 || run->gpus == 0) return std::nullopt;
  const double step_s = static_cast<double>(settings.global_batch) * settings.seq_length /
                        (leader * static_cast<double>(run->gpus));
  PruneWatch watch;
  watch.floor_tokens_per_s_per_gpu = *leader_fraction * leader;
  watch.interval_ns = static_cast<std::int64_t>(std::max(1.0, step_s) * kNsPerSecond);
  return watch;
}

}  // namespace attune
