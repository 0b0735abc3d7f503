// The report as Markdown for a pull request (report.h): the same sections as the HTML, with a
// mermaid chart of each run's throughput and the leader's line.
#include <algorithm>
#include <sstream>

#include "projections/ledger_table.h"
#include "projections/number_format.h"
#include "projections/text_table.h"
#include "tools/attune/report.h"
#include "tools/attune/report_parts.h"

namespace attune::cli {

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : html_escape(one_line(text))) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string markdown_fence_for(const std::string& text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

namespace {

std::string md_percent(const std::optional<double>& v) { return v ? format_percent(*v, 1) : "-"; }
std::string md_usd(const std::optional<double>& v, int decimals) {
  return v ? "$" + format_fixed(*v, decimals) : "no price given";
}

void md_summary(std::ostringstream& out, const ReportData& d) {
  const CampaignOpened& s = d.view.settings;
  const Economics& e = d.economics;
  const Budget& b = d.view.budget;
  out << "# Campaign " << d.view.campaign_id << "\n\n"
      << "| | |\n|---|---|\n"
      << "| workload | " << markdown_cell(s.model) << " on " << s.gpu_count << " x "
      << markdown_cell(s.hardware) << ", seq " << s.seq_length << ", global batch "
      << s.global_batch << ", " << s.precision
      << (s.data.empty() ? "" : ", " + markdown_cell(s.data)) << " |\n| tuner | "
      << markdown_cell(s.tuner) << ", seed " << s.seed << " |\n| shipped | ";
  if (!d.view.stop.shipped) {
    out << "nothing yet";
  } else if (d.view.stop.shipped->is_baseline) {
    out << "the baseline recipe (" << markdown_cell(d.view.stop.shipped->evidence) << ")";
  } else {
    out << "run " << d.view.stop.shipped->run_id << ": "
        << format_fixed(d.view.stop.shipped->tokens_per_sec_per_gpu, 1) << " tokens/s/GPU, "
        << format_signed_percent(d.view.stop.shipped->gain_fraction, 2) << " over the baseline";
  }
  out << " |\n| baseline | " << format_fixed(d.view.baseline_band.mean_tokens_per_s_per_gpu, 1)
      << " tokens/s/GPU, band " << format_percent(d.view.baseline_band.band_fraction, 2)
      << markdown_cell(left_out_note(d)) << " |\n| MFU | " << md_percent(e.baseline_mfu)
      << " baseline, " << md_percent(e.shipped_mfu) << " shipped |\n| cost per million tokens | "
      << md_usd(e.baseline_usd_per_million_tokens, 3) << " baseline, "
      << md_usd(e.shipped_usd_per_million_tokens, 3) << " shipped |\n"
      << "| GPU-hours | tuner " << format_fixed(b.tuner_gpu_hours, 1) << ", checks "
      << format_fixed(b.checks_gpu_hours, 1) << ", infrastructure "
      << format_fixed(b.infra_gpu_hours, 1) << ", budget " << format_fixed(b.budget_gpu_hours, 1)
      << " |\n| tuning cost | " << format_fixed(e.tuning_gpu_hours, 1) << " GPU-hours, "
      << md_usd(e.tuning_usd, 0) << " |\n| payback | "
      << (e.payback_hours ? format_fixed(*e.payback_hours, 1) + " hours of training on " +
                                std::to_string(e.gpu_count) + " GPUs"
                          : std::string("none: the baseline ships"))
      << " |\n| ledger | chain " << d.chain_word << ", head `" << d.head_hash << "` |\n\n";
}

void md_chart(std::ostringstream& out, const ReportData& d) {
  double top = 1;
  for (const RunRow& r : d.rows) top = std::max(top, r.tokens_per_s_per_gpu.value_or(0));
  out << "## Throughput by run\n\n```mermaid\nxychart-beta\n  title \"tokens/s/GPU by run\"\n"
         "  x-axis [";
  for (std::size_t i = 0; i < d.rows.size(); ++i) out << (i ? ", " : "") << d.rows[i].run_id;
  out << "]\n  y-axis \"tokens/s/GPU\" 0 --> " << format_fixed(top * 1.1, 0) << "\n  bar [";
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    out << (i ? ", " : "") << format_fixed(d.rows[i].tokens_per_s_per_gpu.value_or(0), 1);
  }
  // The leader after each run: the baseline mean until a run clears the band.
  out << "]\n  line [";
  double leader = d.view.baseline_band.mean_tokens_per_s_per_gpu;
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    if (d.rows[i].verdict == Verdict::kNewLeader) leader = *d.rows[i].tokens_per_s_per_gpu;
    out << (i ? ", " : "") << format_fixed(leader, 1);
  }
  out << "]\n```\n\nBars: each run's tokens/s/GPU (0: failed). Line: the leader. A run leads "
         "when it beats the leader by more than the band, "
      << format_percent(d.view.baseline_band.band_fraction, 2) << " of the baseline mean ("
      << format_fixed(d.view.baseline_band.mean_tokens_per_s_per_gpu, 1)
      << "). The runs table gives each run's GPU-hours so far.\n\n";
}

void md_layer1(std::ostringstream& out, const Layer1Table& table) {
  if (!table.result) {
    out << "Layer 1 cannot be shown again: " << markdown_cell(table.note) << "\n\n";
    return;
  }
  out << "| setting | baseline | candidate | class | verdict | rule |\n|---|---|---|---|---|---|\n";
  for (const CheckedChange& c : table.result->changes) {
    out << "| " << markdown_cell(c.change.name) << " | "
        << markdown_cell(side_text(c.change.before_present, c.change.before)) << " | "
        << markdown_cell(side_text(c.change.after_present, c.change.after)) << " | "
        << to_string(c.change.objective_class) << " | " << to_string(c.verdict) << " | "
        << to_string(c.rule) << " |\n";
  }
  out << "\n";
  for (const ConfigRefusal& refusal : table.result->refusals) {
    out << "- refused: " << markdown_cell(refusal.message) << "\n";
  }
  if (!table.result->refusals.empty()) out << "\n";
}

void md_gate(std::ostringstream& out, const ReportData& d) {
  out << "## The gate's evidence\n\n";
  if (d.gate.empty()) out << "No candidate reached the gate.\n\n";
  for (std::size_t i = 0; i < d.gate.size(); ++i) {
    const ConvergenceChecked& g = d.gate[i];
    out << "### Run " << g.candidate_run_id << ": layer 1 "
        << (g.layer1_passed ? "passed" : "failed") << ", layer 2 "
        << (g.layer2_passed ? "passed" : "failed") << "\n\n";
    if (!g.reason.empty()) out << markdown_cell(g.reason) << "\n\n";
    if (i < d.layer1.size()) md_layer1(out, d.layer1[i]);
    if (!g.checks.empty()) {
      out << "| check | measured | threshold | passed |\n|---|---:|---:|---|\n";
      for (const ConvergenceCheck& c : g.checks) {
        out << "| " << markdown_cell(c.name) << " | " << format_fixed(c.measured, 4) << " | "
            << format_fixed(c.threshold, 4) << " | " << (c.passed ? "yes" : "no") << " |\n";
      }
      out << "\n";
    }
    const RunId base_run = baseline_check_before(d.view, g.check_run_id);
    const auto base = d.loss_curves.find(base_run);
    const auto cand = d.loss_curves.find(g.check_run_id);
    if (base != d.loss_curves.end() && cand != d.loss_curves.end()) {
      out << "| step | baseline loss (run " << base_run << ") | candidate loss (run "
          << g.check_run_id << ") |\n|---:|---:|---:|\n";
      const std::size_t steps = std::max(base->second.size(), cand->second.size());
      for (std::size_t s = 0; s < steps; ++s) {
        out << "| " << s + 1 << " | "
            << (s < base->second.size() ? format_fixed(base->second[s], 4) : "-") << " | "
            << (s < cand->second.size() ? format_fixed(cand->second[s], 4) : "-") << " |\n";
      }
      out << "\n";
    }
  }
}

void md_runs(std::ostringstream& out, const ReportData& d) {
  out << "## Runs\n\n| run | purpose | parent | change against its parent | failure | tokens/s/GPU "
         "| TFLOP/s/GPU | MFU | GPU-h | GPU-h so far | verdict | gain |\n"
         "|---:|---|---:|---|---|---:|---:|---:|---:|---:|---|---:|\n";
  auto fixed = [](const std::optional<double>& v) { return v ? format_fixed(*v, 1) : "-"; };
  for (const RunRow& r : d.rows) {
    const auto so_far = d.cumulative_gpu_hours.find(r.run_id);
    out << "| " << r.run_id << (r.shipped ? " (shipped)" : "") << " | " << to_string(r.purpose)
        << " | "
        << (!r.parent        ? "-"
            : *r.parent == 0 ? "baseline"
                             : std::to_string(*r.parent))
        << " | " << markdown_cell(r.change) << " | " << failure_text(r) << " | "
        << fixed(r.tokens_per_s_per_gpu) << " | " << fixed(r.tflops_per_gpu) << " | "
        << md_percent(r.mfu) << " | " << format_fixed(r.gpu_hours, 1) << " | "
        << (so_far != d.cumulative_gpu_hours.end() ? format_fixed(so_far->second, 1) : "-") << " | "
        << (r.verdict ? to_string(*r.verdict) : "-") << " | "
        << (r.gain_fraction ? format_signed_percent(*r.gain_fraction, 1) : "-") << " |\n";
  }
  out << "\n";
}

void md_profiles(std::ostringstream& out, const ReportData& d) {
  if (d.profiles.empty()) return;
  out << "## Where the time goes (profiled runs)\n\n";
  for (const auto& [run, profile] : d.profiles) {
    out << "### Run " << run << ": largest cost " << markdown_cell(profile.largest_cost)
        << "\n\n| stage | step ms | compute ms | exposed communication ms | host-bound ms | idle "
           "ms "
           "|\n|---:|---:|---:|---|---:|---:|\n";
    for (const StageBreakdown& s : profile.stages) {
      std::string comm;
      for (const CommTime& c : s.exposed_comm) {
        comm += (comm.empty() ? "" : ", ") + c.kind + " " + format_fixed(c.exposed_ms, 2);
      }
      out << "| " << s.stage << " | " << format_fixed(s.step_ms, 2) << " | "
          << format_fixed(s.compute_ms, 2) << " | " << markdown_cell(comm.empty() ? "-" : comm)
          << " | " << format_fixed(s.host_bound_ms, 2) << " | " << format_fixed(s.idle_ms, 2)
          << " |\n";
    }
    out << "\n";
  }
}

}  // namespace

std::string render_report_md(const ReportData& d) {
  std::ostringstream out;
  md_summary(out, d);
  md_chart(out, d);
  out << "## The shipped recipe against the baseline\n\n";
  const auto& shipped = d.view.stop.shipped;
  const auto row = shipped ? d.view.ledger.rows.find(shipped->run_id) : d.view.ledger.rows.end();
  if (!shipped || shipped->is_baseline || row == d.view.ledger.rows.end()) {
    out << "No change: the baseline recipe ships.\n\n";
  } else {
    std::string lines;
    for (const SettingChange& c : row->second.diff) {
      if (c.before_present)
        lines += "- " + c.name + (c.before.empty() ? "" : " " + c.before) + "\n";
      if (c.after_present) lines += "+ " + c.name + (c.after.empty() ? "" : " " + c.after) + "\n";
    }
    const std::string fence = markdown_fence_for(lines);
    out << fence << "diff\n" << lines << fence << "\n\n";
  }
  md_gate(out, d);
  md_profiles(out, d);
  md_runs(out, d);
  return out.str();
}

}  // namespace attune::cli
