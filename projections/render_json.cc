// The JSON half of render.h.
#include <cstdint>
#include <optional>

#include "projections/render.h"

namespace attune {

namespace {

using nlohmann::json;

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid.
std::size_t utf8_sequence_length(const std::string& text, std::size_t i) {
  const auto byte = [&text](std::size_t at) { return static_cast<unsigned char>(text[at]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  std::uint32_t code_point = 0;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code_point = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code_point = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code_point < kMinimum[length] || code_point > 0x10FFFF) return 0;  // overlong, too large
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;            // surrogate
  return length;
}

// The ledger's strings are bytes; JSON needs UTF-8, so invalid bytes become U+FFFD.
std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

json strings_json(const std::vector<std::string>& values) {
  json out = json::array();
  for (const std::string& value : values) out.push_back(valid_utf8(value));
  return out;
}

template <typename T>
json optional_json(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json setting_change_json(const SettingChange& change) {
  return {{"kind", to_string(change.kind)},
          {"name", valid_utf8(change.name)},
          {"before", change.before_present ? json(valid_utf8(change.before)) : json(nullptr)},
          {"after", change.after_present ? json(valid_utf8(change.after)) : json(nullptr)},
          {"objective_class", to_string(change.objective_class)}};
}

json hypothesis_json(const Hypothesis& hypothesis) {
  return {{"bottleneck", valid_utf8(hypothesis.bottleneck)},
          {"mechanism", valid_utf8(hypothesis.mechanism)},
          {"expected_gain_fraction", hypothesis.expected_gain_fraction}};
}

json ledger_row_json(const LedgerRow& row) {
  json diff = json::array();
  for (const SettingChange& change : row.diff) diff.push_back(setting_change_json(change));
  json classes = json::array();
  for (ObjectiveClass value : row.objective_classes) classes.push_back(to_string(value));
  json levers = json::array();
  for (const Lever& lever : row.levers) {
    levers.push_back(
        {{"name", valid_utf8(lever.name)}, {"objective_class", to_string(lever.objective_class)}});
  }
  return {
      {"run_id", row.run_id},
      {"proposal_id", row.proposal_id},
      {"purpose", to_string(row.purpose)},
      {"gpus", row.gpus},
      {"expected_gpu_hours", row.expected_gpu_hours},
      {"admitted_sequence", row.admitted_sequence},
      {"recipe", valid_utf8(row.recipe)},
      {"recipe_hash", valid_utf8(row.recipe_hash)},
      {"diff", diff},
      {"diff_summary", valid_utf8(row.diff_summary)},
      {"objective_classes", classes},
      {"levers", levers},
      {"hypothesis", hypothesis_json(row.hypothesis)},
      {"profile", row.profile},
      {"admitted_at_unix_ns", optional_json(row.admitted_at_unix_ns)},
      {"released_at_unix_ns", optional_json(row.released_at_unix_ns)},
      {"nodes", strings_json(row.nodes)},
      {"tokens_per_s_per_gpu", optional_json(row.tokens_per_s_per_gpu)},
      {"failure_class", row.failure_class ? json(to_string(*row.failure_class)) : json(nullptr)},
      {"failure_message", valid_utf8(row.failure_message)},
      {"failure_cause", row.failure_class ? json(to_string(row.failure_cause)) : json(nullptr)},
      {"verdict", row.verdict ? json(to_string(*row.verdict)) : json(nullptr)},
      {"gain_fraction", row.verdict ? json(row.gain_fraction) : json(nullptr)},
      {"charge_count", row.charge_count},
      {"gpu_hours_charged", row.gpu_hours_charged},
      {"account", row.account ? json(to_string(*row.account)) : json(nullptr)},
      {"retry_of_run_id", row.retry_of_run_id},
      {"retried_by_run_id", row.retried_by_run_id},
      {"check_of_run_id", row.check_of_run_id},
  };
}

json counts_json(const CampaignView& view) {
  std::size_t measured = 0;
  std::size_t failed = 0;
  json by_purpose = {{"calibration", 0}, {"search", 0}, {"check", 0}, {"retry", 0}};
  for (const auto& [run_id, row] : view.ledger.rows) {
    if (row.tokens_per_s_per_gpu) ++measured;
    if (row.failure_class) ++failed;
    by_purpose[to_string(row.purpose)] = by_purpose[to_string(row.purpose)].get<std::size_t>() + 1;
  }
  return {{"launches", view.ledger.rows.size()},
          {"launches_by_purpose", by_purpose},
          {"measured", measured},
          {"failures", failed},
          {"refusals", view.ledger.refused.size()},
          {"access_denied", view.audit.access_denied.size()},
          {"audit_findings", view.audit.findings.size()}};
}

}  // namespace

json to_json(const CampaignOpened& settings) {
  return {
      {"name", valid_utf8(settings.name)},
      {"model", valid_utf8(settings.model)},
      {"hardware", valid_utf8(settings.hardware)},
      {"gpu_count", settings.gpu_count},
      {"seq_length", settings.seq_length},
      {"global_batch", settings.global_batch},
      {"precision", valid_utf8(settings.precision)},
      {"data", valid_utf8(settings.data)},
      {"baseline_recipe_hash", valid_utf8(settings.baseline_recipe_hash)},
      {"policy_name", valid_utf8(settings.policy_name)},
      {"policy_hash", valid_utf8(settings.policy_hash)},
      {"budget_auto", settings.budget_auto},
      {"budget_gpu_hours", settings.budget_gpu_hours},
      {"reserve_checks", settings.reserve_checks},
      {"concurrency", settings.concurrency},
      {"steps_per_run", settings.steps_per_run},
      {"window_first_step", settings.window_first_step},
      {"window_last_step", settings.window_last_step},
      {"check_steps", settings.check_steps},
      {"hang_timeout_minutes", settings.hang_timeout_minutes},
      {"band_floor_fraction", settings.band_floor_fraction},
      {"band_k", settings.band_k},
      {"calibration_runs", settings.calibration_runs},
      {"tuner", valid_utf8(settings.tuner)},
      {"seed", settings.seed},
      {"reality_seed", settings.reality_seed},
      {"sim_stack", valid_utf8(settings.sim_stack)},
      {"campaign_file_hash", valid_utf8(settings.campaign_file_hash)},
      {"launcher", valid_utf8(settings.launcher)},
      {"policy_path", valid_utf8(settings.policy_path)},
      {"job_template", valid_utf8(settings.job_template)},
      {"expected_seconds_per_step", settings.expected_seconds_per_step},
  };
}

// The calibration run that alone sets most of the band, or null.
json outlier_json(const BaselineBand& band) {
  const std::optional<CalibrationOutlier> outlier = calibration_outlier(band);
  if (!outlier) return nullptr;
  return {{"run_id", outlier->run_id},
          {"tokens_per_s_per_gpu", outlier->tokens_per_s_per_gpu},
          {"others_mean_tokens_per_s_per_gpu", outlier->others_mean},
          {"band_without_fraction", outlier->band_without_fraction},
          {"left_out", outlier->left_out},
          {"left_out_run_ids", outlier->left_out_run_ids}};
}

json to_json(const BaselineBand& band) {
  json samples = json::array();
  for (const CalibrationSample& sample : band.samples) {
    samples.push_back(
        {{"run_id", sample.run_id}, {"tokens_per_s_per_gpu", sample.tokens_per_s_per_gpu}});
  }
  return {{"band_set", band.band_set},
          {"calibration_runs", samples},
          {"mean_tokens_per_s_per_gpu", band.mean_tokens_per_s_per_gpu},
          {"rsd_fraction", band.rsd_fraction},
          {"band_fraction", band.band_fraction},
          {"band_floor_fraction", band.band_floor_fraction},
          {"band_k", band.band_k},
          {"band_run_ids", band.band_run_ids},
          {"mean_launch_gpu_hours", band.mean_launch_gpu_hours},
          {"calibration_outlier", outlier_json(band)}};
}

json to_json(const Leader& leader) {
  json history = json::array();
  for (const LeaderChange& change : leader.history) {
    history.push_back({{"sequence", change.sequence},
                       {"previous_run_id", change.previous_run_id},
                       {"run_id", change.run_id},
                       {"tokens_per_s_per_gpu", change.tokens_per_s_per_gpu},
                       {"gain_fraction", change.gain_fraction}});
  }
  json verdicts = json::array();
  for (const auto& [run_id, verdict] : leader.verdicts) {
    verdicts.push_back({{"run_id", verdict.run_id},
                        {"verdict", to_string(verdict.verdict)},
                        {"tokens_per_s_per_gpu", verdict.tokens_per_s_per_gpu},
                        {"gain_fraction", verdict.gain_fraction},
                        {"leader_before", verdict.leader_before},
                        {"leader_after", verdict.leader_after},
                        {"band_fraction", verdict.band_fraction},
                        {"sequence", verdict.sequence}});
  }
  return {{"run_id", leader.run_id},
          {"is_baseline", leader.run_id == 0},
          {"tokens_per_s_per_gpu", leader.tokens_per_s_per_gpu},
          {"gain_fraction", leader.gain_fraction},
          {"history", history},
          {"verdicts", verdicts}};
}

json to_json(const Budget& budget) {
  return {{"budget_auto", budget.budget_auto},
          {"budget_gpu_hours", budget.budget_gpu_hours},
          {"mean_launch_gpu_hours", budget.mean_launch_gpu_hours},
          {"reserve_gpu_hours", budget.reserve_gpu_hours},
          {"tuner_gpu_hours", budget.tuner_gpu_hours},
          {"checks_gpu_hours", budget.checks_gpu_hours},
          {"infra_gpu_hours", budget.infra_gpu_hours},
          {"charged_gpu_hours", budget.charged_gpu_hours},
          {"in_flight_gpu_hours", budget.in_flight_gpu_hours},
          {"remaining_gpu_hours", budget.remaining_gpu_hours},
          {"reserve_left_gpu_hours", budget.reserve_left_gpu_hours},
          {"overshoot_gpu_hours", budget.overshoot_gpu_hours},
          {"llm_turns", budget.llm_turns},
          {"llm_input_tokens", budget.llm_input_tokens},
          {"llm_output_tokens", budget.llm_output_tokens},
          {"llm_cost_usd", budget.llm_cost_usd}};
}

json to_json(const StopStatus& stop) {
  json out = {{"state", to_string(stop.state)}, {"stop", nullptr}, {"shipped", nullptr}};
  if (stop.stop) {
    out["stop"] = {{"sequence", stop.stop_sequence},
                   {"reason", to_string(stop.stop->reason)},
                   {"leader_run_id", stop.stop->leader_run_id},
                   {"levers_tested", strings_json(stop.stop->levers_tested)},
                   {"last_diagnosis", valid_utf8(stop.stop->last_diagnosis)},
                   {"evidence", valid_utf8(stop.stop->evidence)}};
  }
  if (stop.shipped) {
    out["shipped"] = {{"sequence", stop.shipped_sequence},
                      {"run_id", stop.shipped->run_id},
                      {"is_baseline", stop.shipped->is_baseline},
                      {"recipe", valid_utf8(stop.shipped->recipe)},
                      {"recipe_hash", valid_utf8(stop.shipped->recipe_hash)},
                      {"tokens_per_s_per_gpu", stop.shipped->tokens_per_sec_per_gpu},
                      {"gain_fraction", stop.shipped->gain_fraction},
                      {"evidence", valid_utf8(stop.shipped->evidence)}};
  }
  return out;
}

json to_json(const LedgerTable& ledger) {
  json runs = json::array();
  for (const auto& [run_id, row] : ledger.rows) runs.push_back(ledger_row_json(row));
  json refused = json::array();
  for (const RefusedProposal& entry : ledger.refused) {
    refused.push_back({{"sequence", entry.sequence},
                       {"proposal_id", entry.proposal_id},
                       {"reason", to_string(entry.reason)},
                       {"detail", valid_utf8(entry.detail)},
                       {"diff_summary", valid_utf8(entry.diff_summary)}});
  }
  return {{"runs", runs}, {"refused", refused}};
}

json to_json(const Audit& audit) {
  json findings = json::array();
  for (const AuditFinding& finding : audit.findings) {
    findings.push_back({{"sequence", finding.sequence}, {"message", valid_utf8(finding.message)}});
  }
  json charges = json::array();
  for (const ChargeEntry& charge : audit.charges) {
    charges.push_back({{"sequence", charge.sequence},
                       {"run_id", charge.run_id},
                       {"account", to_string(charge.account)},
                       {"gpus", charge.gpus},
                       {"admitted_at_unix_ns", charge.admitted_at_unix_ns},
                       {"released_at_unix_ns", charge.released_at_unix_ns},
                       {"gpu_hours", charge.gpu_hours}});
  }
  json refusals = json::array();
  for (const RefusalEntry& refusal : audit.refusals) {
    refusals.push_back({{"sequence", refusal.sequence},
                        {"proposal_id", refusal.proposal_id},
                        {"reason", to_string(refusal.reason)},
                        {"detail", valid_utf8(refusal.detail)}});
  }
  json denied = json::array();
  for (const AccessDeniedEntry& entry : audit.access_denied) {
    denied.push_back({{"sequence", entry.sequence},
                      {"actor", valid_utf8(entry.actor)},
                      {"object", valid_utf8(entry.object)},
                      {"rule", valid_utf8(entry.rule)}});
  }
  json llm = json::array();
  for (const LlmChargeEntry& entry : audit.llm_charges) {
    llm.push_back({{"sequence", entry.sequence},
                   {"actor", valid_utf8(entry.actor)},
                   {"turn", entry.turn},
                   {"model", valid_utf8(entry.model)},
                   {"input_tokens", entry.input_tokens},
                   {"output_tokens", entry.output_tokens},
                   {"cost_usd", entry.cost_usd}});
  }
  return {{"clean", audit.findings.empty()},
          {"llm_charges", llm},
          {"event_count", audit.event_count},
          {"findings", findings},
          {"charges", charges},
          {"refusals", refusals},
          {"access_denied", denied}};
}

json to_json(const CampaignView& view) {
  return {{"campaign_id", valid_utf8(view.campaign_id)},
          {"opened", view.opened},
          {"event_count", view.event_count},
          {"last_sequence", view.last_sequence},
          {"settings", to_json(view.settings)},
          {"baseline", to_json(view.baseline_band)},
          {"leader", to_json(view.leader)},
          {"budget", to_json(view.budget)},
          {"stop", to_json(view.stop)},
          {"ledger", to_json(view.ledger)},
          {"audit", to_json(view.audit)},
          {"counts", counts_json(view)}};
}

}  // namespace attune
