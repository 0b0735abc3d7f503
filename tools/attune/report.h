// `attune report`: one campaign as a self-contained HTML page (inline SVG and script, nothing
// fetched) or as Markdown for a pull request, rebuilt from the ledger alone.
//
// gather_report() reads the campaign's events once and keeps what the report shows beside the
// folded view: the cumulative GPU-hours at each run's charge, the leader's line over them, the
// gate's verdicts, the check runs' loss curves, the profiled runs' stage breakdowns, and layer 1
// of the gate re-run on each checked candidate under the campaign's recorded policy. The
// renderers are pure: the same data always gives the same bytes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "events/event.h"
#include "events/event_store.h"
#include "events/result.h"
#include "gate/config_check.h"
#include "projections/campaign_view.h"
#include "projections/run_rows.h"

namespace attune::cli {

struct Layer1Table {
  RunId candidate_run_id = 0;
  std::optional<ConfigCheckResult> result;
  std::string note;  // why there is no result (the policy file moved or changed)
};

struct ReportData {
  CampaignView view;
  Efficiency efficiency;
  std::vector<RunRow> rows;
  Economics economics;
  std::string chain_word;  // verified, unverifiable, broken
  std::string chain_reason;
  std::string head_hash;                               // hex of the last event's hash
  std::map<RunId, double> cumulative_gpu_hours;        // every charge so far, at the run's last
  std::vector<std::pair<double, double>> leader_line;  // (cumulative GPU-hours, tokens/s/GPU)
  std::vector<ConvergenceChecked> gate;                // in event order
  std::map<RunId, std::vector<double>> loss_curves;    // check runs'
  std::map<RunId, ProfileAnalyzed> profiles;           // profiled runs'
  std::vector<Layer1Table> layer1;                     // one per checked candidate
};

Result<ReportData> gather_report(const EventStore& store, const std::string& campaign_id,
                                 const std::string& db);

std::string render_report_html(const ReportData& data);
std::string render_report_md(const ReportData& data);

// The check run of the baseline whose loss curve a candidate's check is compared with: the last
// check run with an empty diff admitted before `check_run_id`; 0 when there is none.
RunId baseline_check_before(const CampaignView& view, RunId check_run_id);

}  // namespace attune::cli
