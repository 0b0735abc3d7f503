// What a report shows, gathered from the ledger in one pass (report.h).
#include <algorithm>

#include "events/recipe.h"
#include "events/sha256.h"
#include "tools/attune/campaign_figures.h"
#include "tools/attune/campaign_session.h"
#include "tools/attune/cli.h"
#include "tools/attune/report.h"

namespace attune::cli {
namespace {

// Layer 1 of the gate on each checked candidate against the baseline, under the policy the
// campaign recorded (re-read and checked against its hash).
std::vector<Layer1Table> layer1_tables(const ReportData& data, const std::string& db) {
  std::vector<Layer1Table> tables;
  const CampaignView& view = data.view;
  auto policy = load_policy(view.settings, db);
  auto baseline = parse_recipe(view.settings.baseline_recipe, "the baseline recipe");
  for (const ConvergenceChecked& checked : data.gate) {
    Layer1Table table;
    table.candidate_run_id = checked.candidate_run_id;
    const auto row = view.ledger.rows.find(checked.candidate_run_id);
    if (!policy.ok()) {
      table.note = policy.error();
    } else if (!baseline.ok()) {
      table.note = baseline.error();
    } else if (row == view.ledger.rows.end()) {
      table.note = "run " + std::to_string(checked.candidate_run_id) + " is not in the ledger";
    } else {
      auto candidate = parse_recipe(row->second.recipe, "the candidate recipe");
      if (candidate.ok()) {
        table.result = check_config(policy.value(), baseline.value(), candidate.value());
      } else {
        table.note = candidate.error();
      }
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

// Folds one event into the report's own series, after the view has taken it.
void observe(ReportData& data, const Envelope& event, double& cumulative, double& band_at) {
  if (const auto* charged = std::get_if<Charged>(&event.body)) {
    cumulative += charged->gpu_hours > 0 ? charged->gpu_hours : 0.0;
    data.cumulative_gpu_hours[charged->run_id] = cumulative;
  } else if (const auto* checked = std::get_if<ConvergenceChecked>(&event.body)) {
    data.gate.push_back(*checked);
  } else if (const auto* measured = std::get_if<RunMeasured>(&event.body)) {
    if (!measured->loss_curve.empty()) data.loss_curves[measured->run_id] = measured->loss_curve;
  } else if (const auto* profile = std::get_if<ProfileAnalyzed>(&event.body)) {
    data.profiles[profile->run_id] = *profile;
  } else if (std::holds_alternative<BandSet>(event.body)) {
    band_at = cumulative;
  }
}

// The leader over the GPU-hours: the baseline mean from the band on, stepping up at each new
// leader's own mark (the GPU-hours charged when it was), on to the end of the spending.
std::vector<std::pair<double, double>> leader_line(const ReportData& d, double band_at,
                                                   double end) {
  std::vector<std::pair<double, double>> line;
  if (!d.view.baseline_band.band_set) return line;
  std::vector<std::pair<double, double>> leaders;  // (GPU-hours, tokens/s/GPU)
  for (const RunRow& row : d.rows) {
    const auto at = d.cumulative_gpu_hours.find(row.run_id);
    if (row.verdict == Verdict::kNewLeader && row.tokens_per_s_per_gpu &&
        at != d.cumulative_gpu_hours.end()) {
      leaders.emplace_back(at->second, *row.tokens_per_s_per_gpu);
    }
  }
  std::sort(leaders.begin(), leaders.end());
  line.emplace_back(band_at, d.view.baseline_band.mean_tokens_per_s_per_gpu);
  for (const auto& [hours, tokens] : leaders) {
    // A run measured before the band was set is judged at the band; a leader always beats the
    // one before it, so the line never steps down.
    const double at = std::max(hours, band_at);
    if (tokens <= line.back().second) continue;
    line.emplace_back(at, line.back().second);
    line.emplace_back(at, tokens);
  }
  line.emplace_back(std::max(end, line.back().first), line.back().second);
  return line;
}

}  // namespace

RunId baseline_check_before(const CampaignView& view, RunId check_run_id) {
  RunId found = 0;
  for (const auto& [id, row] : view.ledger.rows) {
    if (id >= check_run_id && check_run_id != 0) break;
    if (row.purpose == RunPurpose::kCheck && row.diff.empty()) found = id;
  }
  return found;
}

Result<ReportData> gather_report(const EventStore& store, const std::string& campaign_id,
                                 const std::string& db) {
  auto chain = verify_campaign_chain(store, campaign_id);
  if (!chain.ok()) return make_error(chain.error());
  ReportData data;
  data.chain_word = chain->word;
  data.chain_reason = chain->reason;
  data.view = initial_view();
  double cumulative = 0.0;
  double band_at = 0.0;
  Digest head{};
  Status status = store.for_each(campaign_id, [&](Envelope&& event) {
    head = event.hash;
    evolve(data.view, event);
    observe(data, event, cumulative, band_at);
  });
  if (!status.ok()) return make_error(status.error());
  if (!data.view.opened) return make_error("campaign " + campaign_id + " has no CampaignOpened");
  data.head_hash = to_hex(head);
  data.efficiency = efficiency_of(data.view.settings);
  data.rows = run_rows(data.view, data.efficiency);
  data.economics = economics_of(data.view, data.efficiency);
  data.leader_line = leader_line(data, band_at, cumulative);
  std::erase_if(data.loss_curves, [&](const auto& entry) {
    const auto row = data.view.ledger.rows.find(entry.first);
    return row == data.view.ledger.rows.end() || row->second.purpose != RunPurpose::kCheck;
  });
  data.layer1 = layer1_tables(data, db);
  return data;
}

}  // namespace attune::cli
