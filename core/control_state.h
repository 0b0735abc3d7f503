// ControlState: what the control plane knows of a campaign, folded from its events.
//
// Holds every projection (CampaignView) plus what decisions need and the projections do not
// show: each run's recipe, lifecycle and nodes, the proposals, the recipe hashes already run, the
// gate results of check runs. `evolve` is pure; the state is rebuilt by folding the ledger, which
// is how a campaign resumes after a crash. A value type; REQUIRES external synchronization.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "events/event.h"
#include "projections/campaign_view.h"

namespace attune {

enum class Phase : std::uint8_t {
  kNotOpened,
  kCalibrating,  // baseline runs until the band is set
  kSearching,    // the tuner proposes
  kShipping,     // stopped: checks of the leaders, then RecipeShipped
  kDone,         // shipped
};
const char* to_string(Phase phase);

struct RunState {
  RunId run_id = 0;
  ProposalId proposal_id = 0;
  RunPurpose purpose = RunPurpose::kSearch;
  std::string recipe;  // canonical text
  std::string recipe_hash;
  std::uint32_t gpus = 0;
  std::uint32_t steps = 0;
  double expected_gpu_hours = 0.0;
  bool profile = false;
  RunId retry_of_run_id = 0;
  RunId check_of_run_id = 0;
  std::string job_name;
  std::vector<std::string> exclude_nodes;

  bool submitted = false;
  std::string launcher_job_id;
  bool started = false;
  std::int64_t admitted_at_unix_ns = 0;
  std::vector<std::string> nodes;
  bool finished = false;
  std::int64_t released_at_unix_ns = 0;
  std::string final_state;
  std::string log_path;
  std::optional<RunMeasured> measured;
  std::optional<RunFailed> failed;
  std::optional<ProfileAnalyzed> profile_analyzed;  // the last analysis of its traces
  bool charged = false;

  bool in_flight() const { return !charged; }
  friend bool operator==(const RunState&, const RunState&) = default;
};

struct LearnedRuleRecord {
  std::uint64_t sequence = 0;
  LeverRuleLearned rule;
  friend bool operator==(const LearnedRuleRecord&, const LearnedRuleRecord&) = default;
};

struct ControlState {
  CampaignView view;
  std::map<RunId, RunState> runs;
  std::map<ProposalId, CandidateProposed> proposals;
  std::map<RunId, ConvergenceChecked> gate_results;  // by candidate run id (0 = baseline)
  std::uint32_t refusals_in_a_row = 0;               // refused proposals since the last admission
  // The latest event refused a launch for the budget: the tuner is not asked again until
  // something else happens (a run finishes). Kept in the state so that a resumed campaign asks
  // exactly when the uninterrupted one would.
  bool waiting_for_budget = false;
  bool stop_recorded = false;
  bool shipped = false;
  // The lever rules the campaign recorded once it shipped, with their sequence numbers.
  std::vector<LearnedRuleRecord> learned_rules;
  bool rules_learned() const { return !learned_rules.empty(); }

  ProposalId next_proposal_id() const {
    return proposals.empty() ? 1 : proposals.rbegin()->first + 1;
  }
  RunId next_run_id() const { return runs.empty() ? 1 : runs.rbegin()->first + 1; }
  std::uint32_t runs_in_flight() const;
  const RunState* run(RunId run_id) const;

  friend bool operator==(const ControlState&, const ControlState&) = default;
};

ControlState initial_control_state();
void evolve(ControlState& state, const Envelope& event);
ControlState fold_campaign(std::span<const Envelope> events);

Phase phase_of(const ControlState& state);

// The calibration runs measured so far, and how many more the band needs.
std::uint32_t calibration_runs_measured(const ControlState& state);
std::uint32_t calibration_runs_in_flight(const ControlState& state);

// One calibration run as the band sees it.
struct CalibrationEntry {
  RunId run_id = 0;
  std::optional<double> tokens_per_s_per_gpu;  // set once measured
  bool finished = false;                       // measured or failed
};

// What the band waits for. It is set from the first `runs` calibration runs measured (by run id).
// Where a minority of them more than halves their band (runs on slow nodes: leaving them out gives
// less than half the band; the fewest such runs, flagged_calibration_runs), the baseline runs once
// more on other nodes for each, and the band is set from the others and those runs that measured;
// if none did, from all of them, as before.
struct CalibrationPlan {
  std::vector<RunId> band_run_ids;     // empty until the band can be set
  std::uint32_t reruns_wanted = 0;     // runs still to launch in the outliers' places
  std::vector<RunId> outlier_run_ids;  // the runs on suspected slow nodes
};
CalibrationPlan plan_calibration(std::vector<CalibrationEntry> entries, std::uint32_t runs,
                                 double floor_fraction, double k);

// The campaign's calibration runs, each as the band sees it.
std::vector<CalibrationEntry> calibration_entries(const ControlState& state);

// The nodes the runs `runs` ran on, sorted, each once.
std::vector<std::string> nodes_of_runs(const ControlState& state, std::span<const RunId> runs);

// Appends to `into` the nodes of `nodes` it does not hold yet, in their order.
void append_nodes(std::vector<std::string>& into, std::span<const std::string> nodes);

// The nodes of the calibration runs the band left out (one of them is slow), sorted: every later
// launch is admitted asking to avoid them (decide), as far as the cluster keeps enough others.
std::vector<std::string> slow_node_suspects(const ControlState& state);

}  // namespace attune
