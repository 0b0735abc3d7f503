#include "core/progress.h"

#include <cmath>
#include <optional>
#include <sstream>

#include "projections/baseline_band.h"
#include "projections/number_format.h"
#include "projections/run_rows.h"
#include "projections/text_table.h"

namespace attune {
namespace {

// A run's nodes shown in its line; a large allocation is summarised.
constexpr std::size_t kOutlierNodesShown = 3;

// Progress lines fit a terminal of this width; a change that does not fit is cut with "…".
constexpr std::size_t kLineColumns = 100;
constexpr std::size_t kMinChangeColumns = 16;

// Since the campaign's first cluster admission (the paper's wall-clock), as h:mm.
std::optional<std::int64_t> first_admission(const ControlState& state) {
  std::optional<std::int64_t> first;
  for (const auto& [id, run] : state.runs) {
    if (run.started && (!first || run.admitted_at_unix_ns < *first))
      first = run.admitted_at_unix_ns;
  }
  return first;
}

std::string clock_text(double hours) {
  const auto minutes = static_cast<long long>(hours * 60.0 + 0.5);
  const long long m = minutes % 60;
  return std::to_string(minutes / 60) + ":" + (m < 10 ? "0" : "") + std::to_string(m);
}

// "elapsed 1:05, budget ETA 3:40": the time since the first admission and, at the rate GPU-hours
// have been charged so far, the time until the budget is spent. Virtual time on the simulator.
std::string time_text(const ControlState& state, const Envelope& event) {
  const auto first = first_admission(state);
  if (!first || event.recorded_at_unix_ns < *first) return "";
  const double hours = static_cast<double>(event.recorded_at_unix_ns - *first) / 3.6e12;
  std::string text = "elapsed " + clock_text(hours);
  // The tuner's budget left (in flight included: it is being spent) at the tuner's pace so far;
  // checks draw on the reserve and are not part of either.
  const Budget& budget = state.view.budget;
  if (hours > 0 && budget.tuner_gpu_hours > 0 && budget.budget_gpu_hours > 0) {
    const double left = budget.remaining_gpu_hours + budget.in_flight_gpu_hours;
    text += ", budget ETA " + clock_text(left / (budget.tuner_gpu_hours / hours));
  }
  if (state.view.settings.launcher == "sim") text += " (virtual)";
  return text;
}

std::string run_line(const ControlState& state, RunId run_id, const Envelope& event) {
  const RunState* run = state.run(run_id);
  auto row = state.view.ledger.rows.find(run_id);
  if (run == nullptr || row == state.view.ledger.rows.end()) return "";
  std::string prefix = "run " + std::to_string(run_id) + " [" + to_string(run->purpose) + "] ";
  if (run->purpose == RunPurpose::kSearch) {
    const RunId parent = row->second.parent_run_id;
    prefix +=
        "from " + (parent == 0 ? std::string("baseline") : "run " + std::to_string(parent)) + ": ";
  }
  std::ostringstream suffix;
  if (run->measured) {
    suffix << " | " << format_fixed(run->measured->tokens_per_sec_per_gpu, 1) << " tokens/s/GPU";
  } else if (run->failed) {
    suffix << " | " << failure_text(run->failed->failure_class, run->failed->cause);
  }
  auto verdict = state.view.leader.verdicts.find(run_id);
  if (verdict != state.view.leader.verdicts.end()) {
    const Verdict v = verdict->second.verdict;
    if (v != Verdict::kFailed && v != Verdict::kCalibration) {
      suffix << " | " << to_string(v) << " "
             << format_signed_percent(verdict->second.gain_fraction, 1);
    }
  }
  if (state.view.budget.budget_auto && !state.view.baseline_band.band_set) {
    suffix << " | budget set at the band";
  } else {
    suffix << " | " << format_fixed(state.view.budget.remaining_gpu_hours, 1) << " GPU-h left";
  }
  const std::string change =
      short_change(change_against_parent(row->second, state.view.ledger.rows));
  const std::size_t fixed = display_width(prefix) + display_width(suffix.str());
  const std::size_t room =
      kLineColumns > fixed + kMinChangeColumns ? kLineColumns - fixed : kMinChangeColumns;
  std::string line = prefix + cut_to_width(change, room) + suffix.str();
  // The second line: the time, and the hypothesis the run tested.
  std::string second = time_text(state, event);
  const auto proposal = state.proposals.find(run->proposal_id);
  if (proposal != state.proposals.end() && !proposal->second.hypothesis.bottleneck.empty()) {
    const Hypothesis& why = proposal->second.hypothesis;
    second += (second.empty() ? "" : "; ") + std::string("tested ") + why.bottleneck + " (" +
              format_signed_percent(why.expected_gain_fraction, 1) + " expected)";
  }
  if (!second.empty()) line += "\n  " + cut_to_width(second, kLineColumns - 2);
  return line;
}

std::string job_line(const ControlState& state, RunId run_id, const Envelope& event,
                     const std::string& what) {
  const RunState* run = state.run(run_id);
  if (run == nullptr) return "";
  std::string line = "run " + std::to_string(run_id) + " [" + to_string(run->purpose) + "] " + what;
  if (const std::string time = time_text(state, event); !time.empty()) line += " | " + time;
  return line;
}

std::string gate_line(const ConvergenceChecked& checked) {
  const char* verdict = !checked.has_verdict                             ? "no verdict"
                        : checked.layer1_passed && checked.layer2_passed ? "passed"
                                                                         : "failed";
  return "gate on run " + std::to_string(checked.candidate_run_id) + ": " + verdict +
         (checked.reason.empty() ? "" : " (" + checked.reason + ")");
}

// A calibration run so far from the others that it alone sets most of the band (a run on a slow
// node): the band was set without it, from a run on other nodes in its place, or with it, where
// that run failed. Empty when no single run more than halves the band.
std::string calibration_outlier_line(const ControlState& state) {
  const std::optional<CalibrationOutlier> outlier = calibration_outlier(state.view.baseline_band);
  if (!outlier) return "";
  const RunState* run = state.run(outlier->run_id);
  std::string nodes;
  const std::size_t count = run == nullptr ? 0 : run->nodes.size();
  for (std::size_t i = 0; i < count && i < kOutlierNodesShown; ++i) {
    nodes += (nodes.empty() ? "" : ",") + run->nodes[i];
  }
  if (count > kOutlierNodesShown) {
    nodes += " and " + std::to_string(count - kOutlierNodesShown) + " more";
  }
  const double value = outlier->tokens_per_s_per_gpu;
  const std::string said = "calibration run " + std::to_string(outlier->run_id) + " measured " +
                           format_fixed(value, 1) + " tokens/s/GPU, " +
                           format_percent(std::abs(value / outlier->others_mean - 1.0), 1) +
                           (value < outlier->others_mean ? " below" : " above") +
                           " the others' mean" + (nodes.empty() ? "" : " (nodes " + nodes + ")");
  if (outlier->left_out && outlier->left_out_run_ids.size() > 1) {
    return said + ": slow nodes? The baseline ran once more on other nodes for each of " +
           left_out_runs_text(*outlier) + ", and the band, " +
           format_percent(outlier->band_without_fraction, 2) +
           ", and the baseline's mean leave them out";
  }
  if (outlier->left_out) {
    return said + ": a slow node? The baseline ran once more on other nodes, and the band, " +
           format_percent(outlier->band_without_fraction, 2) +
           ", and the baseline's mean leave that run out";
  }
  return said + ": without it the band would be " +
         format_percent(outlier->band_without_fraction, 2) + ", not " +
         format_percent(state.view.baseline_band.band_fraction, 2) +
         ". One run this far from the others (a slow node?) widens the band for every "
         "candidate";
}

}  // namespace

std::vector<std::string> progress_lines(const ControlState& state, const Envelope& event) {
  std::vector<std::string> lines;
  if (const auto* submitted = std::get_if<JobSubmitted>(&event.body)) {
    lines.push_back(job_line(state, submitted->run_id, event, "submitted"));
  } else if (const auto* started = std::get_if<JobStarted>(&event.body)) {
    const std::size_t nodes = started->nodes.size();
    lines.push_back(
        job_line(state, started->run_id, event,
                 "started on " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes")));
  } else if (const auto* verdict = std::get_if<VerdictRecorded>(&event.body)) {
    lines.push_back(run_line(state, verdict->run_id, event));
  } else if (const auto* measured = std::get_if<RunMeasured>(&event.body)) {
    // Search and retry runs get their line with their verdict, calibration runs with theirs;
    // a gate check run is never judged.
    const RunState* run = state.run(measured->run_id);
    if (run && run->purpose == RunPurpose::kCheck) {
      lines.push_back(run_line(state, measured->run_id, event));
    }
  } else if (const auto* failed = std::get_if<RunFailed>(&event.body)) {
    // Search runs get their line with their verdict.
    const RunState* run = state.run(failed->run_id);
    if (run && run->purpose != RunPurpose::kSearch && run->purpose != RunPurpose::kRetry) {
      lines.push_back(run_line(state, failed->run_id, event));
    }
  } else if (const auto* band = std::get_if<BandSet>(&event.body)) {
    lines.push_back("band set: baseline " + format_fixed(band->mean_tokens_per_sec_per_gpu, 1) +
                    " tokens/s/GPU, rsd " + format_percent(band->rsd, 2) + ", band " +
                    format_percent(band->band_fraction, 2) + ", budget " +
                    format_fixed(band->budget_gpu_hours, 1) + " GPU-hours");
    lines.push_back(calibration_outlier_line(state));
  } else if (const auto* stop = std::get_if<StopRecorded>(&event.body)) {
    lines.push_back(std::string("stop (") + to_string(stop->reason) + "): " + stop->evidence);
  } else if (const auto* refused = std::get_if<LaunchRefused>(&event.body)) {
    lines.push_back("refused proposal " + std::to_string(refused->proposal_id) + " (" +
                    to_string(refused->reason) + "): " + refused->detail);
  } else if (const auto* checked = std::get_if<ConvergenceChecked>(&event.body)) {
    lines.push_back(gate_line(*checked));
  }
  std::erase(lines, std::string());
  // Every line fits the terminal: a long one continues on indented lines.
  for (std::string& line : lines) line = wrap_words(line, kLineColumns, "  ");
  return lines;
}

}  // namespace attune
