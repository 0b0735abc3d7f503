// CampaignSession: one campaign in this process, from its CampaignOpened event to its summary.
//
// It builds everything the campaign runs on from the opened event (the workload, the gate's policy
// re-read and checked against its recorded hash, the baseline, the tuner, then the launcher and
// its clock: the simulated cluster on a virtual clock, local processes or Slurm jobs in real
// time), owns the runtime over a ledger the caller holds, and finishes the campaign (the learned
// rules appended to the catalog, the summary beside the ledger, the campaign's events compacted).
// One object serves `attune campaign run`, `attune campaign resume` and the in-process campaigns
// of `attune compare`. REQUIRES: the store outlives the session; one thread drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "adapters/launcher/slurm/slurm_launcher.h"
#include "adapters/metrics/log_metrics_source.h"
#include "adapters/model/workload.h"
#include "adapters/profiler/kineto_trace_analyzer.h"
#include "adapters/world/world.h"
#include "core/campaign_file.h"
#include "core/ports.h"
#include "core/runtime.h"
#include "core/scheduler.h"
#include "events/event_store.h"
#include "gate/policy.h"

namespace attune::cli {

struct SessionOptions {
  // Progress lines (runs submitted, started and finished, decisions) on stderr; off for compare.
  bool progress = true;
  // Record what the campaign established as lever rules and append them to the catalog.
  bool learn = true;
  // A Slurm campaign's launcher options (the campaign file's, or those recorded beside the ledger).
  std::optional<SlurmLauncherOptions> slurm;
  // Where a simulated campaign's virtual clock starts (a resumed one: at its last event).
  std::int64_t start_unix_ns = 0;
};

class CampaignSession {
 public:
  // Builds the campaign's adapters; the tuner first, so that its bad settings stop the campaign
  // before the launcher creates anything under `db`. Nothing touches the ledger yet.
  static Result<std::unique_ptr<CampaignSession>> build(const CampaignOpened& opened,
                                                        std::string db, std::string campaign_id,
                                                        SessionOptions options);
  ~CampaignSession();
  CampaignSession(const CampaignSession&) = delete;
  CampaignSession& operator=(const CampaignSession&) = delete;

  // Puts the runtime over the ledger (it writes nothing yet). REQUIRES: called once, before
  // open() or resume().
  void attach(EventStore& store);
  // Records the campaign's CampaignOpened as its first event.
  Status open(const CampaignOpened& opened);
  // Folds the ledger and reattaches to the campaign's jobs.
  Status resume();
  // After run(): the learned rules recorded by this process appended to the catalog, the
  // summary beside the ledger, and the finished campaign's events compacted.
  Status finish();

  CampaignRuntime& runtime() { return *runtime_; }
  Scheduler& scheduler() { return *scheduler_; }
  Launcher& launcher() { return *launcher_; }
  const ControlState& state() const { return runtime_->state(); }

 private:
  CampaignSession() = default;
  Status build_tuner(const CampaignOpened& opened);
  Status build_launcher(const CampaignOpened& opened);

  EventStore* store_ = nullptr;
  std::string db_;
  std::string campaign_id_;
  SessionOptions options_;
  std::uint64_t first_sequence_ = 0;  // the ledger's version when this process took it up
  sim::Workload workload_;
  Policy policy_;
  Recipe baseline_;
  sim::StackProfile stack_;  // the simulated cluster's stack ([cluster] stack)
  LogMetricsSource metrics_;
  std::unique_ptr<Tuner> tuner_;
  std::unique_ptr<sim::World> world_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Launcher> launcher_;
  std::shared_ptr<const Launcher*> launcher_slot_;  // the LLM tuner reads logs through it
  std::unique_ptr<profiler::KinetoTraceAnalyzer> trace_analyzer_;
  std::unique_ptr<CampaignRuntime> runtime_;
};

// Reads the campaign's learned-rules catalog into the opened event, so that the ledger records
// what the tuner read and a resumed campaign reads the same. A catalog that does not parse is an
// error naming its line.
Status attach_learned_rules(const CampaignSpec& spec, CampaignOpened& opened);
// The policy a campaign recorded, re-read (relative to the ledger `db`) and checked against the
// hash recorded when it opened: a policy is fixed for the whole campaign.
Result<Policy> load_policy(const CampaignOpened& opened, const std::string& db);

// Records the policy's path relative to the ledger and the learned-rules catalog's as an absolute
// path, so that `campaign resume` finds both from any working folder (and the policy after the
// ledger and the policy moved together).
void record_paths_for_resume(const std::string& db, CampaignOpened& opened);

// The Slurm launcher's options from a campaign file, and where they are kept beside the ledger.
SlurmLauncherOptions slurm_options_of(const CampaignSpec& spec);
std::string slurm_options_path(const std::string& db, const std::string& campaign_id);

// One progress line on stdout, whole: the runtime and an agent's supervisor both print.
void print_progress_line(const std::string& line);

}  // namespace attune::cli
