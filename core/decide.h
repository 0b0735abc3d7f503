// The campaign's decisions: decide(state, command) -> events. Pure.
//
// Commands are requests in the imperative, from the tuner (ProposeLaunch, RecordStop) or from an
// adapter reporting what happened (ReportSubmitted, ReportStarted, ReportFinished, ...).
// decide() never reads a clock, a file or the network: the time, the policy and the baseline
// arrive in the DecideContext. Its answer is the list of event bodies to append, which includes
// refusals (LaunchRefused) — a refused proposal is a fact the ledger keeps. An Error means the
// command contradicts the ledger (a report about an unknown or finished run): a defect of the
// caller, recorded nowhere.
//
// The rules enforced here are the paper's rules, whatever tuner is plugged in: calibration before
// search; charging every launch from admission to release; infrastructure failures on their own
// account and retried once on other nodes; refusal of duplicates, of more than one lever or
// coupled set, of layer-1 refusals, of launches that do not fit the budget less the reserve, and
// of more than `concurrency` runs in flight; verdicts against the leader by the band.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/control_state.h"
#include "core/lever_groups.h"
#include "events/event.h"
#include "events/recipe.h"
#include "events/result.h"
#include "gate/policy.h"

namespace attune {

// The budget, when "auto", is this many mean calibration launches, rounded up to 10 GPU-hours.
inline constexpr double kAutoBudgetLaunches = 30.0;
inline constexpr double kAutoBudgetRoundingGpuHours = 10.0;
// A calibration may need more launches than runs when some fail; it gives up beyond this.
inline constexpr std::uint32_t kCalibrationLaunchesPerRunMax = 3;
// Calibration stops once this many baseline launches failed the same way, none measured.
inline constexpr std::uint32_t kCalibrationSameFailuresStop = 3;

// What decide() needs besides the state, all of it fixed for the campaign: the gate's policy
// (its hash recorded in CampaignOpened), the baseline recipe, the lever groups that count the
// levers of a candidate (their hash recorded too), and the time.
struct DecideContext {
  const Policy& policy;
  const Recipe& baseline;
  const LeverGroups& lever_groups;
  std::int64_t now_unix_ns = 0;
};

struct ProposeLaunch {
  RunPurpose purpose = RunPurpose::kSearch;
  Recipe recipe;
  RunId parent_run_id = 0;  // the run whose recipe this changes (0 = the baseline)
  Hypothesis hypothesis;
  bool profile = false;
  RunId retry_of_run_id = 0;
  RunId check_of_run_id = 0;  // for a check run: the candidate (0 = the baseline's reference)
  std::uint32_t steps = 0;
  double expected_gpu_hours = 0.0;  // the launcher's estimate for this launch
  std::vector<std::string> exclude_nodes;
};

struct ReportSubmitted {
  RunId run_id = 0;
  std::string launcher_job_id;
  std::int64_t at_unix_ns = 0;
};

struct ReportStarted {
  RunId run_id = 0;
  std::int64_t admitted_at_unix_ns = 0;
  std::vector<std::string> nodes;
};

struct ReportFinished {
  RunId run_id = 0;
  std::int64_t released_at_unix_ns = 0;
  std::string final_state;
  std::string facts_source;
  std::string log_path;
  std::variant<RunMeasured, RunFailed> outcome;
};

struct ReportProfile {
  ProfileAnalyzed profile;
};

struct RecordStop {
  StopRecorded stop;
};

struct RecordGateResult {
  ConvergenceChecked result;
};

struct RecordShipment {
  RecipeShipped shipped;
};

struct RecordAccessDenied {
  AccessDenied denied;
};

// What a shipped campaign established about its levers; recorded once.
struct RecordLearnedRules {
  std::vector<LeverRuleLearned> rules;
};

using Command = std::variant<ProposeLaunch, ReportSubmitted, ReportStarted, ReportFinished,
                             ReportProfile, RecordStop, RecordGateResult, RecordShipment,
                             RecordAccessDenied, RecordLearnedRules>;

Result<std::vector<Body>> decide(const ControlState& state, const Command& command,
                                 const DecideContext& context);

// The job name of a run: deterministic from campaign and run id, so that after a crash the
// launcher finds a job it submitted and did not record.
std::string job_name_for(const std::string& campaign_id, RunId run_id);

// The auto budget sized from the mean calibration launch cost.
double auto_budget_gpu_hours(double mean_launch_gpu_hours);

}  // namespace attune
