#include "core/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include "gate/config_check.h"
#include "gate/resolved_args.h"
#include "gate/shipping_rule.h"
#include "projections/ledger_table.h"
#include "projections/number_format.h"

namespace attune {

std::uint64_t crash_after_event_from_environment() {
  const char* text = std::getenv("ATTUNE_CRASH_AFTER_EVENT");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  return end != nullptr && *end == '\0' ? value : 0;
}

struct CampaignRuntime::Impl {
  EventStore& store;
  std::string campaign_id;
  Policy policy;
  Recipe baseline;
  Scheduler& scheduler;
  Launcher& launcher;
  const MetricsSource& metrics;
  Tuner& tuner;
  RuntimeOptions options;

  ControlState state = initial_control_state();
  std::optional<Error> fatal;  // an operating error that ends run()
  bool stepping = false;       // step() is not re-entered from its own reactions
  bool step_again = false;

  Impl(EventStore& store_in, std::string campaign_id_in, Policy policy_in, Recipe baseline_in,
       Scheduler& scheduler_in, Launcher& launcher_in, const MetricsSource& metrics_in,
       Tuner& tuner_in, RuntimeOptions options_in)
      : store(store_in),
        campaign_id(std::move(campaign_id_in)),
        policy(std::move(policy_in)),
        baseline(std::move(baseline_in)),
        scheduler(scheduler_in),
        launcher(launcher_in),
        metrics(metrics_in),
        tuner(tuner_in),
        options(std::move(options_in)) {}

  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }

  void set_fatal(const std::string& message) {
    if (!fatal) fatal = make_error(message);
    scheduler.stop();
  }

  // Appends events to the ledger, folds them, and reacts. The only place state changes.
  Status append(std::vector<Body> bodies, const std::string& actor) {
    if (bodies.empty()) return Ok{};
    std::vector<NewEvent> events;
    events.reserve(bodies.size());
    for (Body& body : bodies) {
      events.push_back(NewEvent{scheduler.now_unix_ns(), actor, std::move(body)});
    }
    const std::uint64_t version = state.view.last_sequence;
    auto appended = store.append(campaign_id, version, std::move(events));
    if (!appended.ok()) return make_error(appended.error());
    for (const Envelope& envelope : appended.value()) evolve(state, envelope);
    if (options.crash_after_event != 0 && version < options.crash_after_event &&
        state.view.last_sequence >= options.crash_after_event) {
      ::_exit(86);  // abrupt: no destructors, no flush; the append above is already durable
    }
    for (const Envelope& envelope : appended.value()) react(envelope);
    return Ok{};
  }

  Status apply(const Command& command, const std::string& actor) {
    const DecideContext context{policy, baseline, scheduler.now_unix_ns()};
    auto bodies = decide(state, command, context);
    if (!bodies.ok()) return make_error(bodies.error());
    return append(std::move(bodies).value(), actor);
  }

  void apply_or_die(const Command& command, const std::string& actor) {
    Status status = apply(command, actor);
    if (!status.ok()) set_fatal(status.error());
  }

  LaunchSpec spec_of(const RunState& run) const {
    LaunchSpec spec;
    spec.campaign_id = campaign_id;
    spec.run_id = run.run_id;
    spec.job_name = run.job_name;
    spec.purpose = run.purpose;
    spec.recipe = run.recipe;
    spec.gpus = run.gpus;
    spec.steps = run.steps;
    spec.profile = run.profile;
    spec.exclude_nodes = run.exclude_nodes;
    return spec;
  }

  void react(const Envelope& envelope) {
    if (const auto* admitted = std::get_if<LaunchAdmitted>(&envelope.body)) {
      const RunState* run = state.run(admitted->run_id);
      Status submitted = launcher.submit(spec_of(*run));
      if (!submitted.ok())
        set_fatal("submitting run " + std::to_string(run->run_id) + ": " + submitted.error());
    } else if (const auto* started = std::get_if<JobStarted>(&envelope.body)) {
      watch_for_hang(started->run_id);
      watch_for_prune(started->run_id);
    } else if (const auto* verdict = std::get_if<VerdictRecorded>(&envelope.body)) {
      report_run(verdict->run_id);
    } else if (const auto* failed = std::get_if<RunFailed>(&envelope.body)) {
      const RunState* run = state.run(failed->run_id);
      if (run && run->purpose != RunPurpose::kSearch && run->purpose != RunPurpose::kRetry) {
        report_run(failed->run_id);
      }
    } else if (const auto* band = std::get_if<BandSet>(&envelope.body)) {
      say("band set: baseline " + format_fixed(band->mean_tokens_per_sec_per_gpu, 1) +
          " tokens/s/GPU, rsd " + format_percent(band->rsd, 2) + ", band " +
          format_percent(band->band_fraction, 2) + ", budget " +
          format_fixed(band->budget_gpu_hours, 1) + " GPU-hours");
    } else if (const auto* stop = std::get_if<StopRecorded>(&envelope.body)) {
      say(std::string("stop (") + to_string(stop->reason) + "): " + stop->evidence);
    } else if (const auto* refused = std::get_if<LaunchRefused>(&envelope.body)) {
      say("refused proposal " + std::to_string(refused->proposal_id) + " (" +
          to_string(refused->reason) + "): " + refused->detail);
    } else if (const auto* checked = std::get_if<ConvergenceChecked>(&envelope.body)) {
      say("gate on run " + std::to_string(checked->candidate_run_id) + ": " +
          (!checked->has_verdict                              ? "no verdict"
           : checked->layer1_passed && checked->layer2_passed ? "passed"
                                                              : "failed") +
          (checked->reason.empty() ? "" : " (" + checked->reason + ")"));
    }
  }

  void report_run(RunId run_id) {
    if (!options.progress) return;
    const RunState* run = state.run(run_id);
    auto row = state.view.ledger.rows.find(run_id);
    if (run == nullptr || row == state.view.ledger.rows.end()) return;
    std::ostringstream line;
    line << "run " << run_id << " [" << to_string(run->purpose) << "] " << row->second.diff_summary;
    const auto proposal = state.proposals.find(run->proposal_id);
    if (proposal != state.proposals.end() && !proposal->second.hypothesis.bottleneck.empty()) {
      line << " | " << proposal->second.hypothesis.bottleneck << " ("
           << format_signed_percent(proposal->second.hypothesis.expected_gain_fraction, 1)
           << " expected)";
    }
    if (run->measured) {
      line << " | " << format_fixed(run->measured->tokens_per_sec_per_gpu, 1) << " tokens/s/GPU";
    } else if (run->failed) {
      line << " | " << to_string(run->failed->failure_class);
    }
    auto verdict = state.view.leader.verdicts.find(run_id);
    if (verdict != state.view.leader.verdicts.end()) {
      line << " | " << to_string(verdict->second.verdict);
      if (verdict->second.verdict != Verdict::kFailed &&
          verdict->second.verdict != Verdict::kCalibration) {
        line << " " << format_signed_percent(verdict->second.gain_fraction, 1);
      }
    }
    line << " | " << format_fixed(state.view.budget.remaining_gpu_hours, 1) << " GPU-hours left";
    say(line.str());
  }

  // ---- Launcher reports -----------------------------------------------------------------

  void on_report(const JobReport& report) {
    const RunState* run = state.run(report.run_id);
    if (run == nullptr || run->charged) return;  // late news of a run already closed
    const std::uint64_t before = state.view.last_sequence;
    switch (report.kind) {
      case JobReport::Kind::kSubmitted:
        if (!run->submitted) {
          apply_or_die(ReportSubmitted{report.run_id, report.launcher_job_id, report.at_unix_ns},
                       "launcher:" + launcher.name());
        }
        break;
      case JobReport::Kind::kStarted:
        if (!run->started) {
          apply_or_die(ReportStarted{report.run_id, report.at_unix_ns, report.nodes},
                       "launcher:" + launcher.name());
        }
        break;
      case JobReport::Kind::kFinished:
        finish(report);
        break;
    }
    // Only news steps the campaign: a repeated report (after a resume) changes nothing.
    if (state.view.last_sequence != before) step();
  }

  void finish(const JobReport& report) {
    const RunState* run = state.run(report.run_id);
    MeasureSpec spec;
    spec.seq_length = state.view.settings.seq_length;
    spec.gpus = run->gpus;
    spec.window_first_step = state.view.settings.window_first_step;
    spec.window_last_step = run->purpose == RunPurpose::kCheck
                                ? std::min(state.view.settings.window_last_step, run->steps)
                                : state.view.settings.window_last_step;
    spec.log_went_silent = report.cancel_reason == "hang";
    spec.pruned = report.cancel_reason == "pruned";
    auto log = launcher.read_log(report.log_path);
    RunOutcome outcome = log.ok() ? metrics.measure(log.value(), report, spec)
                                  : RunOutcome(RunFailed{report.run_id, FailureClass::kInfra,
                                                         "no log: " + log.error(), ""});
    ReportFinished finished;
    finished.run_id = report.run_id;
    finished.released_at_unix_ns = report.at_unix_ns;
    finished.final_state = report.final_state;
    finished.facts_source = report.facts_source;
    finished.log_path = report.log_path;
    finished.outcome = std::move(outcome);
    apply_or_die(finished, "control-plane");
    if (!report.trace_paths.empty() && !fatal) {
      // The traces of a profiled run, recorded so that replay shows what the tuner could see.
      ProfileAnalyzed profile;
      if (options.trace_analyzer != nullptr) {
        auto analyzed = options.trace_analyzer->analyze(report.trace_paths);
        if (analyzed.ok()) {
          profile = std::move(analyzed).value();
        } else {
          profile.largest_cost = "not analysed: " + analyzed.error();
        }
      }
      profile.run_id = report.run_id;
      profile.trace_paths = report.trace_paths;
      apply_or_die(ReportProfile{profile}, "profiler");
    }
  }

  // A black-box search's early abort (Tuner::prune_below_leader_fraction): once a search run's
  // log holds kPruneSteadySteps steps of its measurement window, the run is cancelled, and scored
  // zero, when it is slower than that fraction of the leader. Looked at once per leader step.
  void watch_for_prune(RunId run_id) {
    const std::optional<double> fraction = tuner.prune_below_leader_fraction();
    const RunState* run = state.run(run_id);
    if (!fraction || run == nullptr || run->purpose != RunPurpose::kSearch || !run->in_flight()) {
      return;
    }
    const CampaignOpened& settings = state.view.settings;
    const double leader = state.view.leader.run_id == 0
                              ? state.view.baseline_band.mean_tokens_per_s_per_gpu
                              : state.view.leader.tokens_per_s_per_gpu;
    if (leader <= 0 || run->gpus == 0) return;
    const double step_s = static_cast<double>(settings.global_batch) * settings.seq_length /
                          (leader * static_cast<double>(run->gpus));
    const auto interval_ns = static_cast<std::int64_t>(std::max(1.0, step_s) * 1e9);
    scheduler.schedule_after(interval_ns, [this, run_id, fraction, leader] {
      const RunState* current = state.run(run_id);
      if (current == nullptr || current->finished || !current->in_flight()) return;
      auto text = launcher.read_log_so_far(run_id);
      if (!text.ok()) return;  // this launcher cannot tell: nothing is pruned
      MeasureSpec spec;
      spec.seq_length = state.view.settings.seq_length;
      spec.gpus = current->gpus;
      spec.window_first_step = state.view.settings.window_first_step;
      spec.window_last_step = state.view.settings.window_last_step;
      const std::optional<double> steady =
          metrics.steady_throughput(text.value(), spec, kPruneSteadySteps);
      if (!steady) {
        watch_for_prune(run_id);
      } else if (*steady < *fraction * leader) {
        say("run " + std::to_string(run_id) + ": " + format_fixed(*steady, 1) +
            " tokens/s/GPU over " + std::to_string(kPruneSteadySteps) + " steady steps, below " +
            format_fixed(*fraction * leader, 1) + " (" + format_fixed(*fraction, 2) +
            " x the leader): pruned");
        launcher.cancel(run_id, "pruned");
      }
    });
  }

  void watch_for_hang(RunId run_id) {
    const std::int64_t timeout_ns =
        static_cast<std::int64_t>(state.view.settings.hang_timeout_minutes) * 60'000'000'000;
    const RunState* run = state.run(run_id);
    if (run == nullptr || !run->in_flight()) return;
    const std::int64_t since =
        launcher.last_progress_unix_ns(run_id).value_or(run->admitted_at_unix_ns);
    const std::int64_t deadline = std::max(since + timeout_ns, scheduler.now_unix_ns() + 1);
    scheduler.schedule_at(deadline, [this, run_id, timeout_ns] {
      const RunState* current = state.run(run_id);
      if (current == nullptr || current->finished || !current->in_flight()) return;
      const auto progress = launcher.last_progress_unix_ns(run_id);
      const std::int64_t since = progress.value_or(current->admitted_at_unix_ns);
      if (scheduler.now_unix_ns() - since >= timeout_ns) {
        say("run " + std::to_string(run_id) + ": no log progress for " +
            std::to_string(state.view.settings.hang_timeout_minutes) + " minutes, cancelling");
        launcher.cancel(run_id, "hang");
      } else {
        watch_for_hang(run_id);
      }
    });
  }

  // ---- The decisions the runtime drives -------------------------------------------------

  double estimate(const Recipe& recipe, RunPurpose purpose, std::uint32_t steps) const {
    LaunchSpec spec;
    spec.campaign_id = campaign_id;
    spec.purpose = purpose;
    spec.recipe = canonical_text(recipe);
    spec.gpus = state.view.settings.gpu_count;
    spec.steps = steps;
    return launcher.expected_gpu_hours(spec);
  }

  ProposeLaunch baseline_launch(RunPurpose purpose, std::uint32_t steps) const {
    ProposeLaunch launch;
    launch.purpose = purpose;
    launch.recipe = baseline;
    launch.steps = steps;
    launch.expected_gpu_hours = estimate(baseline, purpose, steps);
    return launch;
  }

  void step() {
    if (stepping) {
      step_again = true;
      return;
    }
    stepping = true;
    // A step that moves the campaign to another phase (calibrated, stopped) is followed by a
    // step of the new phase at once.
    Phase before = phase_of(state);
    do {
      step_again = false;
      before = phase_of(state);
      if (!fatal) step_once();
    } while ((step_again || phase_of(state) != before) && !fatal);
    stepping = false;
  }

  void step_once() {
    switch (phase_of(state)) {
      case Phase::kNotOpened:
        set_fatal("the campaign is not opened");
        return;
      case Phase::kCalibrating:
        calibrate();
        return;
      case Phase::kSearching:
        search();
        return;
      case Phase::kShipping:
        ship();
        return;
      case Phase::kDone:
        scheduler.stop();
        return;
    }
  }

  void calibrate() {
    const CampaignOpened& settings = state.view.settings;
    std::uint32_t launched = 0;
    std::vector<std::string> used_nodes;
    for (const auto& [id, run] : state.runs) {
      if (run.purpose != RunPurpose::kCalibration) continue;
      ++launched;
      used_nodes.insert(used_nodes.end(), run.nodes.begin(), run.nodes.end());
    }
    const std::uint32_t measured = calibration_runs_measured(state);
    const std::uint32_t in_flight = calibration_runs_in_flight(state);
    if (measured + in_flight >= settings.calibration_runs) return;
    if (launched >= settings.calibration_runs * kCalibrationLaunchesPerRunMax) {
      if (in_flight == 0) {
        StopRecorded stop;
        stop.reason = StopReason::kOperator;
        stop.evidence = "calibration failed: " + std::to_string(launched - measured) + " of " +
                        std::to_string(launched) + " baseline launches produced no measurement";
        apply_or_die(RecordStop{stop}, "control-plane");
      }
      return;
    }
    while (!fatal && state.runs_in_flight() < settings.concurrency &&
           calibration_runs_measured(state) + calibration_runs_in_flight(state) <
               settings.calibration_runs) {
      // Distinct node allocations: avoid the nodes earlier calibration runs used.
      ProposeLaunch launch = baseline_launch(RunPurpose::kCalibration, settings.steps_per_run);
      std::sort(used_nodes.begin(), used_nodes.end());
      used_nodes.erase(std::unique(used_nodes.begin(), used_nodes.end()), used_nodes.end());
      launch.exclude_nodes = used_nodes;
      apply_or_die(launch, "control-plane");
      if (state.refusals_in_a_row > 0) break;  // refused (budget): wait for a run to finish
    }
  }

  // Infrastructure failures of search runs are retried once, on other nodes, by the control
  // plane itself.
  bool retry_infra_failures() {
    for (const auto& [id, run] : state.runs) {
      if (run.purpose != RunPurpose::kSearch || !run.failed ||
          run.failed->failure_class != FailureClass::kInfra) {
        continue;
      }
      const bool retried =
          std::any_of(state.runs.begin(), state.runs.end(),
                      [&](const auto& other) { return other.second.retry_of_run_id == id; });
      if (retried) continue;
      auto recipe = parse_recipe(run.recipe, "run " + std::to_string(id));
      if (!recipe.ok()) {
        set_fatal(recipe.error());
        return true;
      }
      ProposeLaunch launch;
      launch.purpose = RunPurpose::kRetry;
      launch.recipe = recipe.value();
      launch.retry_of_run_id = id;
      launch.steps = run.steps;
      launch.profile = run.profile;
      launch.expected_gpu_hours = run.expected_gpu_hours;
      launch.exclude_nodes = run.nodes;
      if (!run.failed->node.empty()) launch.exclude_nodes.push_back(run.failed->node);
      const auto proposal = state.proposals.find(run.proposal_id);
      if (proposal != state.proposals.end()) launch.hypothesis = proposal->second.hypothesis;
      if (launch.expected_gpu_hours > state.view.budget.remaining_gpu_hours) {
        // A retry the budget cannot pay for is not launched: while searching, with nothing in
        // flight, the budget is spent; after the stop, the run stays failed.
        if (phase_of(state) != Phase::kSearching) continue;
        if (state.runs_in_flight() == 0) {
          stop_search(StopReason::kBudgetSpent,
                      "the remaining " + format_fixed(state.view.budget.remaining_gpu_hours, 2) +
                          " GPU-hours do not fit the retry of run " + std::to_string(id));
          return true;
        }
        return false;  // wait for the runs in flight
      }
      apply_or_die(launch, "control-plane");
      return true;
    }
    return false;
  }

  void search() {
    const CampaignOpened& settings = state.view.settings;
    if (state.runs_in_flight() < settings.concurrency && retry_infra_failures()) return;
    for (std::uint32_t asked = 0;; ++asked) {
      if (fatal) return;
      if (asked == kProposalsPerStepMax) {
        // Every answer was refused: ask again in a later step (kRefusalsInARowMax ends it), so
        // that other news is not starved.
        if (state.runs_in_flight() == 0) scheduler.schedule_after(0, [this] { step(); });
        return;
      }
      if (phase_of(state) != Phase::kSearching) return;
      if (state.runs_in_flight() >= settings.concurrency) return;
      if (state.waiting_for_budget) return;  // until a run in flight finishes
      if (state.refusals_in_a_row >= kRefusalsInARowMax) {
        stop_search(
            StopReason::kTunerStopped,
            "the tuner's last " + std::to_string(kRefusalsInARowMax) + " proposals were refused");
        return;
      }
      TunerAnswer answer = tuner.next(TunerView{state, baseline, scheduler.now_unix_ns()});
      std::vector<Body> facts = tuner.take_events();
      if (!facts.empty()) {
        Status kept = append(std::move(facts), "tuner:" + tuner.name());
        if (!kept.ok()) return set_fatal(kept.error());
      }
      if (auto* proposal = std::get_if<TunerProposal>(&answer)) {
        ProposeLaunch launch = search_launch(std::move(*proposal));
        if (!launch_fits_or_stop(launch)) return;
        apply_or_die(launch, "tuner:" + tuner.name());
      } else if (auto* stop = std::get_if<TunerStop>(&answer)) {
        apply_or_die(RecordStop{tuner_stop(*stop)}, "tuner:" + tuner.name());
        return;
      } else {
        if (state.runs_in_flight() == 0 && !tuner.waits_for_input()) {
          stop_search(StopReason::kTunerStopped, "the tuner has nothing left to propose");
        }
        return;
      }
    }
  }

  ProposeLaunch search_launch(TunerProposal proposal) const {
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

  // Nothing in flight and the next launch cannot fit: the budget is spent, and the search stops.
  bool launch_fits_or_stop(const ProposeLaunch& launch) {
    if (launch.expected_gpu_hours <= state.view.budget.remaining_gpu_hours ||
        state.runs_in_flight() != 0) {
      return true;
    }
    stop_search(StopReason::kBudgetSpent,
                "the remaining " + format_fixed(state.view.budget.remaining_gpu_hours, 2) +
                    " GPU-hours do not fit another launch");
    return false;
  }

  StopRecorded tuner_stop(const TunerStop& stop) const {
    StopRecorded record;
    record.reason = StopReason::kTunerStopped;
    record.leader_run_id = state.view.leader.run_id;
    record.levers_tested = stop.levers_tested;
    record.last_diagnosis = stop.last_diagnosis;
    record.evidence = stop.evidence;
    return record;
  }

  void stop_search(StopReason reason, const std::string& evidence) {
    StopRecorded stop;
    stop.reason = reason;
    stop.leader_run_id = state.view.leader.run_id;
    stop.evidence = evidence;
    std::set<std::string> levers;
    for (const auto& [id, proposal] : state.proposals) {
      for (const Lever& lever : proposal.levers) levers.insert(lever.name);
    }
    stop.levers_tested.assign(levers.begin(), levers.end());
    apply_or_die(RecordStop{stop}, "control-plane");
  }

  // ---- Shipping -------------------------------------------------------------------------

  // The check runs of a candidate (0 = the baseline's reference run), in run order.
  std::vector<const RunState*> check_runs_of(RunId candidate) const {
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

  // Launches (or waits for) the check run of `candidate`; returns the finished run that counts,
  // or nullptr while there is none yet. `no_verdict` is set when every attempt failed on
  // infrastructure.
  const RunState* check_run(RunId candidate, bool& no_verdict) {
    no_verdict = false;
    const std::vector<const RunState*> runs = check_runs_of(candidate);
    for (const RunState* run : runs) {
      if (run->in_flight()) return nullptr;
    }
    for (const RunState* run : runs) {
      if (run->measured || (run->failed && run->failed->failure_class != FailureClass::kInfra)) {
        return run;
      }
    }
    if (runs.size() >= kCheckAttemptsPerCandidateMax) {
      no_verdict = true;
      return nullptr;
    }
    const RunState* candidate_run = state.run(candidate);
    auto recipe = candidate == 0 ? Result<Recipe>(baseline)
                                 : parse_recipe(candidate_run->recipe, "run recipe");
    if (!recipe.ok()) {
      set_fatal(recipe.error());
      return nullptr;
    }
    ProposeLaunch launch;
    launch.purpose = RunPurpose::kCheck;
    launch.recipe = recipe.value();
    launch.check_of_run_id = candidate;
    launch.steps = state.view.settings.check_steps;
    launch.expected_gpu_hours =
        estimate(launch.recipe, RunPurpose::kCheck, state.view.settings.check_steps);
    if (!runs.empty()) launch.exclude_nodes = runs.back()->nodes;
    apply_or_die(launch, "control-plane");
    return nullptr;
  }

  ConvergenceChecked judge_check(RunId candidate, const RunState& check,
                                 const RunState& reference) {
    ConvergenceChecked result;
    result.candidate_run_id = candidate;
    result.check_run_id = check.run_id;
    result.has_verdict = true;
    if (!check.measured) {
      result.reason = std::string("the check run failed: ") +
                      to_string(check.failed->failure_class) + ": " + check.failed->message;
      return result;
    }
    // Layer 1 again, on the fully resolved arguments of both check runs.
    auto check_log = launcher.read_log(check.log_path);
    auto reference_log = launcher.read_log(reference.log_path);
    if (!check_log.ok() || !reference_log.ok()) {
      result.reason = "cannot read a check run's log";
      return result;
    }
    auto check_args = parse_resolved_args(check_log.value(), check.log_path);
    auto reference_args = parse_resolved_args(reference_log.value(), reference.log_path);
    auto check_recipe = parse_recipe(check.recipe, "check recipe");
    if (!check_args.ok() || !reference_args.ok() || !check_recipe.ok()) {
      result.reason =
          "no resolved arguments block: " + (!check_args.ok()       ? check_args.error()
                                             : !reference_args.ok() ? reference_args.error()
                                                                    : check_recipe.error());
      return result;
    }
    ResolvedRun reference_run{reference_args.value(), baseline, baseline.env};
    ResolvedRun candidate_run{check_args.value(), check_recipe.value(), check_recipe->env};
    const ResolvedComparison resolved = compare_resolved(policy, reference_run, candidate_run);
    result.layer1_passed = resolved.passed;
    result.checks.push_back(ConvergenceCheck{"layer1_resolved_arguments",
                                             static_cast<double>(resolved.failures.size()), 0.0,
                                             resolved.passed});
    // Layer 2 on the loss curves of the same length.
    ConvergenceThresholds thresholds = options.convergence;
    thresholds.expected_steps = state.view.settings.check_steps;
    const ConvergenceResult converged =
        compare_loss_curves(reference.measured->loss_curve, check.measured->loss_curve, thresholds);
    result.layer2_passed = converged.passed;
    for (const ConvergenceCheckResult& check_result : converged.checks) {
      result.checks.push_back(ConvergenceCheck{check_result.name, check_result.measured,
                                               check_result.threshold, check_result.passed});
    }
    if (!resolved.passed) {
      result.reason = "layer 1 on resolved arguments: " + resolved.failures.front().message;
    } else if (!converged.passed) {
      result.reason = "layer 2: " + converged.reason;
    }
    return result;
  }

  void ship() {
    for (const auto& [id, run] : state.runs) {
      if (run.in_flight() && run.purpose != RunPurpose::kCheck) return;  // let them finish
    }
    // A search run that failed on infrastructure after the stop still gets its retry.
    if (retry_infra_failures()) return;
    const BaselineBand& band = state.view.baseline_band;
    if (!band.band_set) {
      ship_baseline("the band was never set: no calibrated baseline to beat");
      return;
    }
    ShippingInput input;
    input.baseline_mean_tokens_per_s_per_gpu = band.mean_tokens_per_s_per_gpu;
    input.band_fraction = band.band_fraction;
    input.checks_max = state.view.settings.reserve_checks;
    for (const auto& [id, run] : state.runs) {
      if ((run.purpose == RunPurpose::kSearch || run.purpose == RunPurpose::kRetry) &&
          run.measured) {
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
    auto decision = decide_shipping(input);
    if (!decision.ok()) {
      set_fatal("shipping rule: " + decision.error());
      return;
    }
    if (const auto* next = std::get_if<CheckNext>(&decision.value())) {
      bool reference_no_verdict = false;
      const RunState* reference = check_run(0, reference_no_verdict);
      if (reference_no_verdict) {
        ship_baseline("the baseline's reference check run failed on infrastructure twice");
        return;
      }
      if (reference == nullptr) return;
      if (!reference->measured) {
        ship_baseline("the baseline's reference check run failed: no loss curve to compare");
        return;
      }
      bool no_verdict = false;
      const RunState* check = check_run(next->run_id, no_verdict);
      if (no_verdict) {
        ConvergenceChecked result;
        result.candidate_run_id = next->run_id;
        result.has_verdict = false;
        result.reason = "both check runs failed on infrastructure";
        apply_or_die(RecordGateResult{result}, "control-plane");
        step_again = true;
        return;
      }
      if (check == nullptr) return;
      apply_or_die(RecordGateResult{judge_check(next->run_id, *check, *reference)},
                   "control-plane");
      step_again = true;  // the shipping rule decides again with this result
      return;
    }
    const Ship& ship = std::get<Ship>(decision.value());
    RecipeShipped shipped;
    shipped.run_id = ship.run_id;
    shipped.is_baseline = ship.is_baseline;
    shipped.evidence = ship.evidence;
    shipped.gain_fraction = ship.gain_fraction;
    shipped.tokens_per_sec_per_gpu = ship.tokens_per_s_per_gpu;
    if (ship.is_baseline) {
      shipped.recipe = state.view.settings.baseline_recipe;
      shipped.recipe_hash = state.view.settings.baseline_recipe_hash;
    } else {
      const RunState* run = state.run(ship.run_id);
      shipped.recipe = run->recipe;
      shipped.recipe_hash = run->recipe_hash;
    }
    apply_or_die(RecordShipment{shipped}, "control-plane");
  }

  void ship_baseline(const std::string& why) {
    RecipeShipped shipped;
    shipped.is_baseline = true;
    shipped.recipe = state.view.settings.baseline_recipe;
    shipped.recipe_hash = state.view.settings.baseline_recipe_hash;
    shipped.tokens_per_sec_per_gpu = state.view.baseline_band.mean_tokens_per_s_per_gpu;
    shipped.evidence = why;
    apply_or_die(RecordShipment{shipped}, "control-plane");
  }
};

CampaignRuntime::CampaignRuntime(EventStore& store, std::string campaign_id, Policy policy,
                                 Recipe baseline, Scheduler& scheduler, Launcher& launcher,
                                 const MetricsSource& metrics, Tuner& tuner, RuntimeOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(campaign_id), std::move(policy),
                                   std::move(baseline), scheduler, launcher, metrics, tuner,
                                   std::move(options))) {
  Impl* impl = impl_.get();
  launcher.set_listener([impl](const JobReport& report) { impl->on_report(report); });
  tuner.set_progress(impl->options.progress);
}

CampaignRuntime::~CampaignRuntime() {
  impl_->launcher.set_listener(nullptr);
  impl_->tuner.set_progress(nullptr);
}

Status CampaignRuntime::open(const CampaignOpened& opened) {
  auto version = impl_->store.version(impl_->campaign_id);
  if (!version.ok()) return make_error(version.error());
  if (version.value() != 0) {
    return make_error("campaign " + impl_->campaign_id + " already exists in the ledger");
  }
  return impl_->append({opened}, "operator");
}

Status CampaignRuntime::resume() {
  Impl& impl = *impl_;
  impl.state = initial_control_state();
  Status folded = impl.store.for_each(impl.campaign_id,
                                      [&](const Envelope& event) { evolve(impl.state, event); });
  if (!folded.ok()) return folded;
  if (!impl.state.view.opened) {
    return make_error("campaign " + impl.campaign_id + " has no CampaignOpened event");
  }
  // Reconcile every admitted run that has not finished: reattach, or submit it if the cluster
  // never saw it (a crash between admission and submission).
  for (const auto& [id, run] : impl.state.runs) {
    if (!run.in_flight()) continue;
    if (run.finished) {
      return make_error("run " + std::to_string(id) + " finished but was never charged");
    }
    auto reattached = impl.launcher.reattach(impl.spec_of(run));
    if (!reattached.ok()) return make_error(reattached.error());
    if (!reattached.value()) {
      Status submitted = impl.launcher.submit(impl.spec_of(run));
      if (!submitted.ok()) return submitted;
    } else if (run.started) {
      impl.watch_for_hang(id);
      impl.watch_for_prune(id);
    }
  }
  return Ok{};
}

Status CampaignRuntime::run() {
  Impl& impl = *impl_;
  impl.scheduler.schedule_after(0, [&impl] { impl.step(); });
  // An interactive tuner's agent may be thinking while nothing is scheduled: wait for it.
  impl.scheduler.hold_open(impl.tuner.waits_for_input());
  impl.scheduler.run();
  impl.scheduler.hold_open(false);
  if (impl.fatal) return *impl.fatal;
  if (phase_of(impl.state) != Phase::kDone) {
    return make_error("the campaign stopped before shipping (" +
                      std::string(to_string(phase_of(impl.state))) + ")");
  }
  return Ok{};
}

const ControlState& CampaignRuntime::state() const { return impl_->state; }

ProposalOutcome CampaignRuntime::propose(const TunerProposal& proposal, const std::string& actor) {
  Impl& impl = *impl_;
  ProposalOutcome outcome;
  const Phase phase = phase_of(impl.state);
  if (phase == Phase::kShipping || phase == Phase::kDone) {
    outcome.search_over = true;
    outcome.detail = std::string("the campaign is ") + to_string(phase) + ", not searching";
    // Still recorded: decide() refuses it, and the ledger keeps the refusal.
  }
  ProposeLaunch launch = impl.search_launch(proposal);
  if (phase == Phase::kSearching && !impl.launch_fits_or_stop(launch)) {
    outcome.search_over = true;
    outcome.detail = "the budget is spent: the search stopped";
    return outcome;
  }
  outcome.proposal_id = impl.state.next_proposal_id();
  impl.apply_or_die(launch, actor);
  for (const auto& [id, run] : impl.state.runs) {
    if (run.proposal_id == outcome.proposal_id) {
      outcome.admitted = true;
      outcome.run_id = id;
    }
  }
  if (!outcome.admitted) {
    for (const RefusedProposal& refused : impl.state.view.ledger.refused) {
      if (refused.proposal_id != outcome.proposal_id) continue;
      outcome.refusal = to_string(refused.reason);
      outcome.detail = refused.detail;
    }
  }
  impl.step();
  return outcome;
}

Status CampaignRuntime::record_stop(const TunerStop& stop, const std::string& actor) {
  Impl& impl = *impl_;
  if (phase_of(impl.state) != Phase::kSearching) {
    return make_error(std::string("the campaign is ") + to_string(phase_of(impl.state)) +
                      ", not searching: there is no search to stop");
  }
  Status status = impl.apply(RecordStop{impl.tuner_stop(stop)}, actor);
  impl.step();
  return status;
}

Status CampaignRuntime::record(std::vector<Body> facts, const std::string& actor) {
  Impl& impl = *impl_;
  std::vector<Body> kept;
  for (Body& fact : facts) {
    if (auto* denied = std::get_if<AccessDenied>(&fact)) {
      Status status = impl.apply(RecordAccessDenied{*denied}, actor);
      if (!status.ok()) return status;
    } else if (std::holds_alternative<ToolCalled>(fact) ||
               std::holds_alternative<LlmCharged>(fact)) {
      Status status = impl.append({std::move(fact)}, actor);
      if (!status.ok()) return status;
    } else {
      return make_error(std::string("a tuner may not record ") + body_name(fact));
    }
  }
  return Ok{};
}

}  // namespace attune
