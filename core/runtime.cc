#include "core/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <deque>

#include "core/progress.h"
#include "events/assert.h"
#include "projections/number_format.h"

namespace attune {

// Rounds of react() in one settle: each round records events or makes the tuner or the shell
// answer, so a campaign settles in a few rounds per event; this many is a defect.
constexpr std::uint32_t kReactionRoundsPerSettleMax = 100'000;

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
  const LeverGroups& lever_groups;
  LaunchEstimate estimate;

  ControlState state = initial_control_state();
  std::optional<Error> fatal;  // an operating error that ends run()
  bool tuner_idle = false;     // the tuner answered "nothing now" since the last news
  bool rules_asked = false;    // LearnRules was performed in this process
  bool busy = false;           // settling: reports wait in the inbox
  std::deque<JobReport> inbox;

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
        options(std::move(options_in)),
        lever_groups(options.lever_groups ? *options.lever_groups : LeverGroups::builtin()) {
    estimate = [this](const Recipe& recipe, RunPurpose purpose, std::uint32_t steps) {
      LaunchSpec spec;
      spec.campaign_id = campaign_id;
      spec.purpose = purpose;
      spec.recipe = canonical_text(recipe);
      spec.gpus = state.view.settings.gpu_count;
      spec.steps = steps;
      return launcher.expected_gpu_hours(spec);
    };
  }

  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }

  void set_fatal(const std::string& message) {
    if (!fatal) fatal = make_error(message);
    scheduler.stop();
  }

  ReactContext context() const {
    ReactContext context{baseline, estimate};
    context.tuner_idle = tuner_idle;
    context.tuner_waits_for_input = tuner.waits_for_input();
    context.learn_rules = static_cast<bool>(options.learn_rules) && !rules_asked;
    return context;
  }

  // ---- The ledger: the only place state changes -----------------------------------------------

  // Appends events, folds them and says what they mean; returns the recorded envelopes.
  std::vector<Envelope> append(std::vector<Body> bodies, const std::string& actor) {
    if (bodies.empty() || fatal) return {};
    std::vector<NewEvent> events;
    events.reserve(bodies.size());
    for (Body& body : bodies) {
      events.push_back(NewEvent{scheduler.now_unix_ns(), actor, std::move(body)});
    }
    const std::uint64_t version = state.view.last_sequence;
    auto appended = store.append(campaign_id, version, std::move(events));
    if (!appended.ok()) {
      set_fatal(appended.error());
      return {};
    }
    for (const Envelope& envelope : appended.value()) {
      ATTUNE_ASSERT(envelope.sequence == state.view.last_sequence + 1,
                    "the ledger's sequence numbers run 1, 2, ... without a gap");
      ATTUNE_ASSERT(envelope.prev_hash == state.view.audit.last_hash,
                    "the chain links each event to the one before it");
      evolve(state, envelope);
    }
    if (options.crash_after_event != 0 && version < options.crash_after_event &&
        state.view.last_sequence >= options.crash_after_event) {
      ::_exit(86);  // abrupt: no destructors, no flush; the append above is already durable
    }
    for (const Envelope& envelope : appended.value()) {
      for (const std::string& line : progress_lines(state, envelope)) say(line);
    }
    return std::move(appended).value();
  }

  // Runs a command through decide() and appends its events.
  std::vector<Envelope> apply(const Command& command, const std::string& actor) {
    if (fatal) return {};
    const DecideContext decide_context{policy, baseline, lever_groups, scheduler.now_unix_ns()};
    auto bodies = decide(state, command, decide_context);
    if (!bodies.ok()) {
      set_fatal(bodies.error());
      return {};
    }
    return append(std::move(bodies).value(), actor);
  }

  // ---- Reactions ------------------------------------------------------------------------------

  // Performs what react() names until it names nothing: the campaign then waits for news.
  void settle(std::vector<Envelope> news) {
    std::uint32_t asked = 0;
    for (std::uint32_t round = 0; !fatal; ++round) {
      ATTUNE_ASSERT(round < kReactionRoundsPerSettleMax, "a campaign settles");
      const std::vector<Reaction> reactions = react(state, news, context());
      news.clear();
      if (reactions.empty()) break;
      for (const Reaction& reaction : reactions) {
        if (std::holds_alternative<AskTuner>(reaction) && asked++ == kProposalsPerStepMax) {
          // Every answer was refused: ask again in a later step (kRefusalsInARowMax ends it), so
          // that other news is not starved.
          if (state.runs_in_flight() == 0) {
            scheduler.schedule_after(0, [this] { pump(std::vector<Envelope>{}); });
          }
          return;
        }
        std::vector<Envelope> recorded = perform(reaction);
        news.insert(news.end(), recorded.begin(), recorded.end());
      }
    }
    if (phase_of(state) == Phase::kDone) scheduler.stop();
  }

  std::vector<Envelope> perform(const Reaction& reaction) {
    if (const auto* command = std::get_if<Command>(&reaction)) {
      return apply(*command, "control-plane");
    }
    if (const auto* submit = std::get_if<SubmitRun>(&reaction)) {
      const RunState* run = state.run(submit->run_id);
      Status submitted = launcher.submit(spec_of(*run));
      if (!submitted.ok()) {
        set_fatal("submitting run " + std::to_string(run->run_id) + ": " + submitted.error());
      }
      return {};
    }
    if (const auto* watch = std::get_if<WatchRun>(&reaction)) {
      watch_for_hang(watch->run_id);
      watch_for_prune(watch->run_id);
      return {};
    }
    if (std::holds_alternative<AskTuner>(reaction)) return ask_tuner();
    if (const auto* judge = std::get_if<JudgeCheck>(&reaction)) {
      CheckLogs logs;
      logs.check_log = launcher.read_log(state.run(judge->check_run_id)->log_path);
      logs.reference_log = launcher.read_log(state.run(judge->reference_run_id)->log_path);
      return apply(
          RecordGateResult{judge_check(state, *judge, logs, policy, baseline, options.convergence)},
          "control-plane");
    }
    ATTUNE_ASSERT(std::holds_alternative<LearnRules>(reaction), "every reaction is performed");
    rules_asked = true;
    return apply(RecordLearnedRules{options.learn_rules(state)}, "tuner:" + tuner.name());
  }

  std::vector<Envelope> ask_tuner() {
    TunerAnswer answer = tuner.next(TunerView{state, baseline, scheduler.now_unix_ns()});
    const std::string actor = "tuner:" + tuner.name();
    std::vector<Envelope> recorded = append(tuner.take_events(), actor);
    std::optional<Command> command = answer_reaction(state, answer, context());
    if (!command) {
      tuner_idle = true;
      return recorded;
    }
    // A stop for the budget is the control plane's decision, not the tuner's.
    const bool budget_stop = std::holds_alternative<RecordStop>(*command) &&
                             std::get<RecordStop>(*command).stop.reason == StopReason::kBudgetSpent;
    const bool nothing_left = std::holds_alternative<TunerWait>(answer);
    std::vector<Envelope> more =
        apply(*command, budget_stop || nothing_left ? "control-plane" : actor);
    recorded.insert(recorded.end(), more.begin(), more.end());
    return recorded;
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

  // ---- Launcher reports ---------------------------------------------------------------------

  void on_report(const JobReport& report) {
    if (inbox.size() >= kInboxReportsMax) {
      set_fatal("more than " + std::to_string(kInboxReportsMax) +
                " launcher reports are waiting: the launcher reports faster than runs start");
      return;
    }
    inbox.push_back(report);
    if (!busy) pump(std::nullopt);
  }

  // Settles after `news` (an agent's command, the start of run()), then takes the launcher's
  // reports in turn. Only news moves the campaign: a repeated report (after a resume) changes
  // nothing and settles nothing. Never re-entered: reports that arrive meanwhile wait.
  void pump(std::optional<std::vector<Envelope>> news) {
    ATTUNE_ASSERT(!busy, "the shell settles one thing at a time");
    busy = true;
    if (news) {
      tuner_idle = false;
      settle(std::move(*news));
    }
    while (!inbox.empty() && !fatal) {
      const JobReport next = std::move(inbox.front());
      inbox.pop_front();
      std::vector<Envelope> reported = take_report(next);
      if (reported.empty()) continue;
      tuner_idle = false;
      settle(std::move(reported));
    }
    busy = false;
  }

  std::vector<Envelope> take_report(const JobReport& report) {
    const RunState* run = state.run(report.run_id);
    if (run == nullptr || run->charged) return {};  // late news of a run already closed
    const std::string actor = "launcher:" + launcher.name();
    switch (report.kind) {
      case JobReport::Kind::kSubmitted:
        if (run->submitted) return {};
        return apply(ReportSubmitted{report.run_id, report.launcher_job_id, report.at_unix_ns},
                     actor);
      case JobReport::Kind::kStarted:
        if (run->started) return {};
        return apply(ReportStarted{report.run_id, report.at_unix_ns, report.nodes}, actor);
      case JobReport::Kind::kFinished:
        if (!report.launcher_error.empty()) {
          set_fatal("run " + std::to_string(report.run_id) + ": " + report.launcher_error +
                    "; nothing was recorded of the run: free the space or fix the cause, then "
                    "continue with attune campaign resume");
          return {};
        }
        return finish(report);
    }
    return {};
  }

  MeasureSpec measure_spec(const RunState& run) const {
    const CampaignOpened& settings = state.view.settings;
    MeasureSpec spec;
    spec.seq_length = settings.seq_length;
    spec.gpus = run.gpus;
    spec.window_first_step = settings.window_first_step;
    spec.window_last_step = run.purpose == RunPurpose::kCheck
                                ? std::min(settings.window_last_step, run.steps)
                                : settings.window_last_step;
    return spec;
  }

  // The measurement (or failure class) of a finished job, then the analysis of its traces.
  std::vector<Envelope> finish(const JobReport& report) {
    MeasureSpec spec = measure_spec(*state.run(report.run_id));
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
    std::vector<Envelope> news = apply(finished, "control-plane");
    if (report.trace_paths.empty() || fatal) return news;
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
    std::vector<Envelope> more = apply(ReportProfile{profile}, "profiler");
    news.insert(news.end(), more.begin(), more.end());
    return news;
  }

  // ---- Watches on running jobs ----------------------------------------------------------------

  // A black-box search's early abort (Tuner::prune_below_leader_fraction): once a search run's
  // log holds kPruneSteadySteps steps of its measurement window, the run is cancelled, and scored
  // zero, when it is slower than that fraction of the leader. Looked at once per leader step.
  void watch_for_prune(RunId run_id) {
    const auto watch = prune_watch(state, run_id, tuner.prune_below_leader_fraction());
    if (!watch) return;
    scheduler.schedule_after(watch->interval_ns, [this, run_id, watch = *watch] {
      const RunState* current = state.run(run_id);
      if (current == nullptr || current->finished || !current->in_flight()) return;
      auto text = launcher.read_log_so_far(run_id);
      if (!text.ok()) return;  // this launcher cannot tell: nothing is pruned
      MeasureSpec spec = measure_spec(*current);
      const std::optional<double> steady =
          metrics.steady_throughput(text.value(), spec, kPruneSteadySteps);
      if (!steady) {
        watch_for_prune(run_id);
      } else if (*steady < watch.floor_tokens_per_s_per_gpu) {
        say("run " + std::to_string(run_id) + ": " + format_fixed(*steady, 1) +
            " tokens/s/GPU over " + std::to_string(kPruneSteadySteps) + " steady steps, below " +
            format_fixed(watch.floor_tokens_per_s_per_gpu, 1) + ": pruned");
        launcher.cancel(run_id, "pruned");
      }
    });
  }

  void watch_for_hang(RunId run_id) {
    const RunState* run = state.run(run_id);
    if (run == nullptr || !run->in_flight()) return;
    const std::uint32_t minutes = state.view.settings.hang_timeout_minutes;
    const std::int64_t deadline = hang_deadline_unix_ns(
        run->admitted_at_unix_ns, launcher.last_progress_unix_ns(run_id), minutes);
    scheduler.schedule_at(std::max(deadline, scheduler.now_unix_ns() + 1), [this, run_id, minutes] {
      const RunState* current = state.run(run_id);
      if (current == nullptr || current->finished || !current->in_flight()) return;
      const std::int64_t now_deadline = hang_deadline_unix_ns(
          current->admitted_at_unix_ns, launcher.last_progress_unix_ns(run_id), minutes);
      if (scheduler.now_unix_ns() >= now_deadline) {
        say("run " + std::to_string(run_id) + ": no log progress for " + std::to_string(minutes) +
            " minutes, cancelling");
        launcher.cancel(run_id, "hang");
      } else {
        watch_for_hang(run_id);
      }
    });
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

Status CampaignRuntime::open(CampaignOpened opened) {
  Impl& impl = *impl_;
  auto version = impl.store.version(impl.campaign_id);
  if (!version.ok()) return make_error(version.error());
  if (version.value() != 0) {
    return make_error("campaign " + impl.campaign_id + " already exists in the ledger");
  }
  opened.tuner_black_box = impl.tuner.black_box();
  opened.lever_groups_hash = impl.lever_groups.hash();
  impl.append({std::move(opened)}, "operator");
  if (impl.fatal) return *impl.fatal;
  return Ok{};
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
  const std::string& recorded = impl.state.view.settings.lever_groups_hash;
  if (!recorded.empty() && recorded != impl.lever_groups.hash()) {
    return make_error("the lever groups differ from the ones campaign " + impl.campaign_id +
                      " opened with (hash " + recorded.substr(0, 12) + ", now " +
                      impl.lever_groups.hash().substr(0, 12) + "); a campaign's rules are fixed");
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
  impl.scheduler.schedule_after(0, [&impl] { impl.pump(std::vector<Envelope>{}); });
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
  Command command = search_launch(impl.state, proposal, impl.estimate);
  if (phase == Phase::kSearching) {
    command = *answer_reaction(impl.state, proposal, impl.context());
    if (std::holds_alternative<RecordStop>(command)) {
      impl.pump(impl.apply(command, "control-plane"));
      outcome.search_over = true;
      outcome.detail = "the budget is spent: the search stopped";
      return outcome;
    }
  }
  outcome.proposal_id = impl.state.next_proposal_id();
  std::vector<Envelope> news = impl.apply(command, actor);
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
  impl.pump(std::move(news));
  return outcome;
}

Status CampaignRuntime::record_stop(const TunerStop& stop, const std::string& actor) {
  Impl& impl = *impl_;
  if (phase_of(impl.state) != Phase::kSearching) {
    return make_error(std::string("the campaign is ") + to_string(phase_of(impl.state)) +
                      ", not searching: there is no search to stop");
  }
  const std::optional<Command> command =
      answer_reaction(impl.state, TunerAnswer(stop), impl.context());
  ATTUNE_ASSERT(command.has_value(), "a tuner's stop is a command");
  std::vector<Envelope> news = impl.apply(*command, actor);
  if (impl.fatal) return *impl.fatal;
  impl.pump(std::move(news));
  return Ok{};
}

Status CampaignRuntime::record(std::vector<Body> facts, const std::string& actor) {
  Impl& impl = *impl_;
  for (Body& fact : facts) {
    if (auto* denied = std::get_if<AccessDenied>(&fact)) {
      impl.apply(RecordAccessDenied{*denied}, actor);
    } else if (std::holds_alternative<ToolCalled>(fact) ||
               std::holds_alternative<LlmCharged>(fact)) {
      impl.append({std::move(fact)}, actor);
    } else {
      return make_error(std::string("a tuner may not record ") + body_name(fact));
    }
    if (impl.fatal) return *impl.fatal;
  }
  return Ok{};
}

}  // namespace attune
