// CampaignRuntime: the thin shell that runs one campaign from open to shipped recipe.
//
// The rules live in pure functions: decide() (core/decide.h) turns a command into events, evolve()
// folds them, react() (core/react.h) says what follows. The shell executes: it turns launcher
// reports into commands (reading the run's log and traces), runs every command through decide(),
// appends the events to the ledger (durably) and folds them, then asks react() what follows and
// performs it (submit a run, watch it, ask the tuner, read two check logs to judge, learn), until
// react() names nothing. Side effects happen only after the append that called for them returned.
// Launcher reports that arrive while the shell is busy wait in an inbox. Everything happens on
// the scheduler's thread, so a campaign on the virtual scheduler is a deterministic function of
// its seeds.
//
// Crash recovery: resume() folds the ledger and reconciles every admitted run that has not
// finished with the launcher (reattach by job name, or submit one the cluster never saw). A job
// is never submitted twice. The environment variable ATTUNE_CRASH_AFTER_EVENT=N makes the
// process exit abruptly right after the append that records event N (a testing hook).
//
// REQUIRES: the store, scheduler, launcher, metrics source and tuner outlive the runtime.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/control_state.h"
#include "core/decide.h"
#include "core/lever_groups.h"
#include "core/ports.h"
#include "core/react.h"
#include "core/scheduler.h"
#include "events/event_store.h"
#include "gate/convergence.h"
#include "gate/policy.h"

namespace attune {

// Limits of the loop, each with its unit in the name.
inline constexpr std::uint32_t kProposalsPerStepMax = 64;  // tuner answers before other news
inline constexpr std::size_t kInboxReportsMax = 4096;      // launcher reports waiting their turn

struct RuntimeOptions {
  // One line per finished run and per decision that matters; empty to stay quiet.
  std::function<void(const std::string&)> progress;
  std::uint64_t crash_after_event = 0;  // 0: off (see ATTUNE_CRASH_AFTER_EVENT)
  ConvergenceThresholds convergence;
  // Reads profiled runs' traces; null records only the trace paths.
  const TraceAnalyzer* trace_analyzer = nullptr;
  // The lever groups decide() counts levers with; null: the built-in groups.
  const LeverGroups* lever_groups = nullptr;
  // What a shipped campaign established about its levers (recorded as LeverRuleLearned events,
  // once); empty: the campaign learns nothing.
  std::function<std::vector<LeverRuleLearned>(const ControlState&)> learn_rules;
};

// What became of a proposal made through CampaignRuntime::propose.
struct ProposalOutcome {
  ProposalId proposal_id = 0;  // 0: nothing was proposed (the search was already over)
  bool admitted = false;
  RunId run_id = 0;          // when admitted
  std::string refusal;       // when refused: the reason ("duplicate", "layer1", ...)
  std::string detail;        // the refusal's detail, or why the search is over
  bool search_over = false;  // the campaign no longer searches (stopped, shipping or shipped)
};

class CampaignRuntime {
 public:
  CampaignRuntime(EventStore& store, std::string campaign_id, Policy policy, Recipe baseline,
                  Scheduler& scheduler, Launcher& launcher, const MetricsSource& metrics,
                  Tuner& tuner, RuntimeOptions options);
  ~CampaignRuntime();
  CampaignRuntime(const CampaignRuntime&) = delete;
  CampaignRuntime& operator=(const CampaignRuntime&) = delete;

  // Records CampaignOpened as the campaign's first event, with the tuner's kind and the lever
  // groups' hash filled in.
  Status open(CampaignOpened opened);
  // Folds the ledger, checks that the lever groups are the ones the campaign opened with, and
  // reconciles admitted, unfinished runs with the launcher.
  Status resume();
  // Runs the scheduler until the campaign has shipped a recipe (or an operating error stops it).
  Status run();

  const ControlState& state() const;

  // An interactive tuner's commands (the control socket), on the scheduler's thread only, while
  // run() runs. The same rules as for a built-in tuner's answers apply: a proposal goes through
  // decide() and is admitted or refused (and the refusal recorded); a proposal that cannot fit
  // the remaining budget with nothing in flight stops the search as budget-spent.
  ProposalOutcome propose(const TunerProposal& proposal, const std::string& actor);
  Status record_stop(const TunerStop& stop, const std::string& actor);
  // Facts for the ledger: AccessDenied goes through decide(); ToolCalled and LlmCharged are kept
  // as they are.
  Status record(std::vector<Body> facts, const std::string& actor);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// ATTUNE_CRASH_AFTER_EVENT from the environment; 0 when unset or invalid.
std::uint64_t crash_after_event_from_environment();

}  // namespace attune
