// The text half of render.h.
#include <string>
#include <vector>

#include "events/assert.h"
#include "projections/baseline_band.h"
#include "projections/number_format.h"
#include "projections/render.h"
#include "projections/text_table.h"

namespace attune {

namespace {

constexpr int kThroughputDecimals = 1;
constexpr int kPercentDecimals = 2;
constexpr int kGpuHoursDecimals = 2;
constexpr int kAuditGpuHoursDecimals = 6;

// Labels are padded to one width so the values line up.
std::string line(const std::string& label, const std::string& value) {
  constexpr std::size_t kLabelWidth = 10;
  ATTUNE_ASSERT(label.size() < kLabelWidth, "labels fit their column");
  std::string out = label;
  out.append(kLabelWidth - label.size(), ' ');
  return out + one_line(value) + "\n";
}

std::string throughput_text(double tokens_per_s_per_gpu) {
  return format_fixed(tokens_per_s_per_gpu, kThroughputDecimals);
}

std::string gpu_hours_text(double gpu_hours) { return format_fixed(gpu_hours, kGpuHoursDecimals); }

std::string campaign_line(const CampaignView& view) {
  if (!view.opened) return "(not opened)";
  const CampaignOpened& s = view.settings;
  return view.campaign_id + " \"" + s.name + "\" (tuner " + s.tuner + ", launcher " + s.launcher +
         ")";
}

std::string workload_line(const CampaignOpened& s) {
  return s.model + " on " + s.hardware + ", " + std::to_string(s.gpu_count) + " GPUs, seq " +
         std::to_string(s.seq_length) + ", global batch " + std::to_string(s.global_batch) + ", " +
         s.precision;
}

// Live, the figures are over every calibration run measured; set, over the runs the band names
// (all of them where it names none).
std::string baseline_line(const BaselineBand& band) {
  const std::size_t runs =
      band.band_set && !band.band_run_ids.empty() ? band.band_run_ids.size() : band.samples.size();
  return throughput_text(band.mean_tokens_per_s_per_gpu) + " tokens/s/GPU \xC2\xB1 " +
         format_percent(band.rsd_fraction, kPercentDecimals) + " over " + std::to_string(runs) +
         " calibration runs; band " + format_percent(band.band_fraction, kPercentDecimals) +
         (band.band_set ? " (set)" : " (live)");
}

std::string leader_line(const Leader& leader) {
  const std::string who = leader.run_id == 0 ? "baseline" : "run " + std::to_string(leader.run_id);
  return who + ": " + throughput_text(leader.tokens_per_s_per_gpu) + " tokens/s/GPU, " +
         format_signed_percent(leader.gain_fraction, kPercentDecimals) + " over the baseline";
}

std::string budget_line(const Budget& b) {
  return gpu_hours_text(b.budget_gpu_hours) + " GPU-h" + (b.budget_auto ? " (auto)" : "") +
         ": tuner " + gpu_hours_text(b.tuner_gpu_hours) + ", in flight " +
         gpu_hours_text(b.in_flight_gpu_hours) + ", remaining " +
         gpu_hours_text(b.remaining_gpu_hours) + "; reserve " +
         gpu_hours_text(b.reserve_gpu_hours) + " (checks " + gpu_hours_text(b.checks_gpu_hours) +
         ", left " + gpu_hours_text(b.reserve_left_gpu_hours) + "); infra " +
         gpu_hours_text(b.infra_gpu_hours) + "; overshoot " +
         gpu_hours_text(b.overshoot_gpu_hours) +
         (b.llm_turns == 0
              ? std::string()
              : "; LLM $" + format_fixed(b.llm_cost_usd, 2) + " over " +
                    std::to_string(b.llm_turns) + " turns (" + std::to_string(b.llm_input_tokens) +
                    " in, " + std::to_string(b.llm_output_tokens) + " out tokens)");
}

std::string state_line(const StopStatus& stop) {
  std::string out = to_string(stop.state);
  if (stop.stop) {
    out += " (" + std::string(to_string(stop.stop->reason)) + ", event " +
           std::to_string(stop.stop_sequence) + ")";
  }
  if (stop.shipped) {
    out += stop.shipped->is_baseline
               ? std::string(": the baseline")
               : ": run " + std::to_string(stop.shipped->run_id) + ", " +
                     format_signed_percent(stop.shipped->gain_fraction, kPercentDecimals);
  }
  if (stop.stop && !stop.stop->evidence.empty()) out += "; evidence: " + stop.stop->evidence;
  return out;
}

std::string runs_line(const LedgerTable& ledger) {
  std::size_t by_purpose[4] = {0, 0, 0, 0};
  std::size_t measured = 0;
  std::size_t failed = 0;
  for (const auto& [run_id, row] : ledger.rows) {
    ++by_purpose[static_cast<std::size_t>(row.purpose)];
    if (row.tokens_per_s_per_gpu) ++measured;
    if (row.failure_class) ++failed;
  }
  return std::to_string(ledger.rows.size()) + " launched (" +
         std::to_string(by_purpose[static_cast<std::size_t>(RunPurpose::kCalibration)]) +
         " calibration, " +
         std::to_string(by_purpose[static_cast<std::size_t>(RunPurpose::kSearch)]) + " search, " +
         std::to_string(by_purpose[static_cast<std::size_t>(RunPurpose::kRetry)]) + " retry, " +
         std::to_string(by_purpose[static_cast<std::size_t>(RunPurpose::kCheck)]) + " check), " +
         std::to_string(measured) + " measured, " + std::to_string(failed) + " failed, " +
         std::to_string(ledger.refused.size()) + " refused";
}

// What the events say of themselves; the hash chain is the caller's to verify (it needs keys).
std::string audit_line(const Audit& audit) {
  if (audit.findings.empty()) return "consistent";
  return std::to_string(audit.findings.size()) +
         (audit.findings.size() == 1 ? " finding" : " findings") + " (attune audit)";
}

std::string classes_text(const std::vector<ObjectiveClass>& classes) {
  if (classes.empty()) return "-";
  std::string out;
  for (ObjectiveClass value : classes) {
    if (!out.empty()) out += "+";
    out += to_string(value);
  }
  return out;
}

std::string outcome_text(const LedgerRow& row) {
  if (row.tokens_per_s_per_gpu) return throughput_text(*row.tokens_per_s_per_gpu);
  if (row.failure_class) return to_string(*row.failure_class);
  return "-";
}

bool is_judged(const std::optional<Verdict>& verdict) {
  return verdict == Verdict::kNewLeader || verdict == Verdict::kNotBetter;
}

std::string charged_text(const LedgerRow& row) {
  return row.charge_count == 0 ? "-" : gpu_hours_text(row.gpu_hours_charged);
}

std::string links_text(const LedgerRow& row) {
  std::string out;
  const auto add = [&out](const std::string& text) { out += (out.empty() ? "" : ", ") + text; };
  if (row.retry_of_run_id != 0) add("retry of " + std::to_string(row.retry_of_run_id));
  if (row.retried_by_run_id != 0) add("retried by " + std::to_string(row.retried_by_run_id));
  if (row.check_of_run_id != 0) add("check of " + std::to_string(row.check_of_run_id));
  return out.empty() ? "-" : out;
}

std::string hypothesis_text(const Hypothesis& h) {
  if (h.bottleneck.empty() && h.mechanism.empty() && h.expected_gain_fraction == 0.0) return "-";
  std::string out = h.bottleneck;
  if (!h.mechanism.empty()) out += (out.empty() ? "" : ": ") + h.mechanism;
  return out + " (expects " + format_signed_percent(h.expected_gain_fraction, 1) + ")";
}

}  // namespace

std::string render_status_text(const CampaignView& view) {
  std::string out = line("campaign", campaign_line(view));
  if (view.opened) out += line("workload", workload_line(view.settings));
  out += line("baseline", baseline_line(view.baseline_band));
  if (const auto outlier = calibration_outlier(view.baseline_band)) {
    const std::string run = "calibration run " + std::to_string(outlier->run_id) + " (" +
                            throughput_text(outlier->tokens_per_s_per_gpu) + " tokens/s/GPU)";
    const bool several = outlier->left_out_run_ids.size() > 1;
    out += line("outlier",
                !outlier->left_out
                    ? run + " alone widens the band: " +
                          format_percent(outlier->band_without_fraction, kPercentDecimals) +
                          " without it"
                : several ? left_out_runs_text(*outlier) +
                                " left out of the band: runs on other nodes replaced them"
                          : run + " left out of the band: a run on other nodes replaced it");
  }
  out += line("leader", leader_line(view.leader));
  out += line("budget", budget_line(view.budget));
  out += line("state", state_line(view.stop));
  out += line("runs", runs_line(view.ledger));
  out += line("events", audit_line(view.audit));
  return out;
}

std::string render_ledger_text(const CampaignView& view) {
  TextTable runs({{"run", Align::kRight},
                  {"purpose"},
                  {"change"},
                  {"class"},
                  {"tokens/s/GPU", Align::kRight},
                  {"verdict"},
                  {"gain", Align::kRight},
                  {"GPU-h", Align::kRight},
                  {"account"},
                  {"link"},
                  {"hypothesis"}});
  for (const auto& [run_id, row] : view.ledger.rows) {
    runs.add_row(
        {std::to_string(run_id), to_string(row.purpose), row.diff_summary,
         classes_text(row.objective_classes), outcome_text(row),
         row.verdict ? to_string(*row.verdict) : "-",
         is_judged(row.verdict) ? format_signed_percent(row.gain_fraction, kPercentDecimals) : "-",
         charged_text(row), row.account ? to_string(*row.account) : "-", links_text(row),
         hypothesis_text(row.hypothesis)});
  }
  std::string out = runs.render();
  if (!view.ledger.refused.empty()) {
    TextTable refused({{"proposal", Align::kRight},
                       {"event", Align::kRight},
                       {"reason"},
                       {"change"},
                       {"detail"}});
    for (const RefusedProposal& entry : view.ledger.refused) {
      refused.add_row({std::to_string(entry.proposal_id), std::to_string(entry.sequence),
                       to_string(entry.reason),
                       entry.diff_summary.empty() ? "-" : entry.diff_summary,
                       entry.detail.empty() ? "-" : entry.detail});
    }
    out += "\nrefused proposals\n" + refused.render();
  }
  return out;
}

std::string render_audit_text(const CampaignView& view) {
  const Audit& audit = view.audit;
  std::string out = "audit of campaign " + one_line(view.campaign_id) + ": " +
                    std::to_string(audit.event_count) + " events, ";
  out += audit.findings.empty() ? std::string("clean\n")
                                : std::to_string(audit.findings.size()) +
                                      (audit.findings.size() == 1 ? " finding\n" : " findings\n");
  for (const AuditFinding& finding : audit.findings) {
    out += "event " + std::to_string(finding.sequence) + ": " + one_line(finding.message) + "\n";
  }
  TextTable charges({{"event", Align::kRight},
                     {"run", Align::kRight},
                     {"account"},
                     {"gpus", Align::kRight},
                     {"admitted_at_unix_ns", Align::kRight},
                     {"released_at_unix_ns", Align::kRight},
                     {"gpu_hours", Align::kRight}});
  for (const ChargeEntry& charge : audit.charges) {
    charges.add_row({std::to_string(charge.sequence), std::to_string(charge.run_id),
                     to_string(charge.account), std::to_string(charge.gpus),
                     std::to_string(charge.admitted_at_unix_ns),
                     std::to_string(charge.released_at_unix_ns),
                     format_fixed(charge.gpu_hours, kAuditGpuHoursDecimals)});
  }
  out += "\ncharges\n" + charges.render();
  if (!audit.llm_charges.empty()) {
    TextTable llm({{"event", Align::kRight},
                   {"actor"},
                   {"turn", Align::kRight},
                   {"model"},
                   {"tokens in", Align::kRight},
                   {"tokens out", Align::kRight},
                   {"usd", Align::kRight}});
    double total = 0.0;
    for (const LlmChargeEntry& entry : audit.llm_charges) {
      llm.add_row({std::to_string(entry.sequence), entry.actor, std::to_string(entry.turn),
                   entry.model, std::to_string(entry.input_tokens),
                   std::to_string(entry.output_tokens), format_fixed(entry.cost_usd, 4)});
      total += entry.cost_usd;
    }
    out += "\nLLM charges (total $" + format_fixed(total, 2) + ")\n" + llm.render();
  }
  TextTable refusals(
      {{"event", Align::kRight}, {"proposal", Align::kRight}, {"reason"}, {"detail"}});
  for (const RefusalEntry& refusal : audit.refusals) {
    refusals.add_row({std::to_string(refusal.sequence), std::to_string(refusal.proposal_id),
                      to_string(refusal.reason), refusal.detail.empty() ? "-" : refusal.detail});
  }
  out += "\nrefused launches\n" + refusals.render();
  TextTable denied({{"event", Align::kRight}, {"actor"}, {"object"}, {"rule"}});
  for (const AccessDeniedEntry& entry : audit.access_denied) {
    denied.add_row({std::to_string(entry.sequence), entry.actor, entry.object, entry.rule});
  }
  out += "\naccess denied\n" + denied.render();
  return out;
}

}  // namespace attune
