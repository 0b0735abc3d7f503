#include "core/progress.h"

#include <sstream>

#include "projections/number_format.h"

namespace attune {
namespace {

std::string run_line(const ControlState& state, RunId run_id) {
  const RunState* run = state.run(run_id);
  auto row = state.view.ledger.rows.find(run_id);
  if (run == nullptr || row == state.view.ledger.rows.end()) return "";
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
  return line.str();
}

std::string gate_line(const ConvergenceChecked& checked) {
  const char* verdict = !checked.has_verdict                             ? "no verdict"
                        : checked.layer1_passed && checked.layer2_passed ? "passed"
                                                                         : "failed";
  return "gate on run " + std::to_string(checked.candidate_run_id) + ": " + verdict +
         (checked.reason.empty() ? "" : " (" + checked.reason + ")");
}

}  // namespace

std::vector<std::string> progress_lines(const ControlState& state, const Envelope& event) {
  std::vector<std::string> lines;
  if (const auto* verdict = std::get_if<VerdictRecorded>(&event.body)) {
    lines.push_back(run_line(state, verdict->run_id));
  } else if (const auto* failed = std::get_if<RunFailed>(&event.body)) {
    // Search runs get their line with their verdict.
    const RunState* run = state.run(failed->run_id);
    if (run && run->purpose != RunPurpose::kSearch && run->purpose != RunPurpose::kRetry) {
      lines.push_back(run_line(state, failed->run_id));
    }
  } else if (const auto* band = std::get_if<BandSet>(&event.body)) {
    lines.push_back("band set: baseline " + format_fixed(band->mean_tokens_per_sec_per_gpu, 1) +
                    " tokens/s/GPU, rsd " + format_percent(band->rsd, 2) + ", band " +
                    format_percent(band->band_fraction, 2) + ", budget " +
                    format_fixed(band->budget_gpu_hours, 1) + " GPU-hours");
  } else if (const auto* stop = std::get_if<StopRecorded>(&event.body)) {
    lines.push_back(std::string("stop (") + to_string(stop->reason) + "): " + stop->evidence);
  } else if (const auto* refused = std::get_if<LaunchRefused>(&event.body)) {
    lines.push_back("refused proposal " + std::to_string(refused->proposal_id) + " (" +
                    to_string(refused->reason) + "): " + refused->detail);
  } else if (const auto* checked = std::get_if<ConvergenceChecked>(&event.body)) {
    lines.push_back(gate_line(*checked));
  }
  std::erase(lines, std::string());
  return lines;
}

}  // namespace attune
