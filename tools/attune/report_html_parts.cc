// The report's HTML sections: summary, shipped diff, gate evidence, stage profiles, runs.
#include <algorithm>
#include <set>
#include <sstream>

#include "projections/ledger_table.h"
#include "projections/number_format.h"
#include "tools/attune/report.h"
#include "tools/attune/report_parts.h"

namespace attune::cli {

std::string left_out_note(const ReportData& d) {
  const std::optional<CalibrationOutlier> outlier = calibration_outlier(d.view.baseline_band);
  if (!outlier || !outlier->left_out) return "";
  if (outlier->left_out_run_ids.size() > 1) {
    return " (" + left_out_runs_text(*outlier) +
           " left out: slow nodes? Runs on other nodes replaced them)";
  }
  return " (calibration run " + std::to_string(outlier->run_id) +
         " left out: a slow node? A run on other nodes replaced it)";
}

namespace {

std::string cell(const std::string& text, bool number = false) {
  return std::string(number ? "<td class=\"n\">" : "<td>") + html_escape(text) + "</td>";
}

std::string row_of(std::initializer_list<std::string> header_cells, bool header) {
  std::string out = "<tr>";
  for (const std::string& text : header_cells) {
    out += header ? "<th>" + html_escape(text) + "</th>" : cell(text);
  }
  return out + "</tr>";
}

std::string maybe_percent(const std::optional<double>& value) {
  return value ? format_percent(*value, 1) : "-";
}

std::string maybe_usd(const std::optional<double>& value, int decimals) {
  return value ? "$" + format_fixed(*value, decimals) : "no price given";
}

std::string shipped_text(const CampaignView& view) {
  if (!view.stop.shipped) return "nothing yet (the campaign has not finished)";
  const RecipeShipped& shipped = *view.stop.shipped;
  if (shipped.is_baseline) return "the baseline recipe (" + shipped.evidence + ")";
  return "run " + std::to_string(shipped.run_id) + ": " +
         format_fixed(shipped.tokens_per_sec_per_gpu, 1) + " tokens/s/GPU, " +
         format_signed_percent(shipped.gain_fraction, 2) + " over the baseline";
}

}  // namespace

std::string html_summary(const ReportData& d) {
  const CampaignOpened& s = d.view.settings;
  const Budget& b = d.view.budget;
  const Economics& e = d.economics;
  std::ostringstream out;
  out << "<table class=\"summary\">";
  auto line = [&](const std::string& key, const std::string& value) {
    out << "<tr><th>" << html_escape(key) << "</th><td>" << html_escape(value) << "</td></tr>";
  };
  line("workload", s.model + " on " + std::to_string(s.gpu_count) + " x " + s.hardware + ", seq " +
                       std::to_string(s.seq_length) + ", global batch " +
                       std::to_string(s.global_batch) + ", " + s.precision +
                       (s.data.empty() ? "" : ", " + s.data));
  line("tuner", s.tuner + ", seed " + std::to_string(s.seed) + ", launcher " + s.launcher);
  line("shipped", shipped_text(d.view));
  line("baseline", format_fixed(d.view.baseline_band.mean_tokens_per_s_per_gpu, 1) +
                       " tokens/s/GPU, rsd " +
                       format_percent(d.view.baseline_band.rsd_fraction, 2) + ", band " +
                       format_percent(d.view.baseline_band.band_fraction, 2) + left_out_note(d));
  line("MFU", maybe_percent(e.baseline_mfu) + " baseline, " + maybe_percent(e.shipped_mfu) +
                  " shipped (model FLOPs over the dense " + s.precision + " peak)");
  line("cost per million tokens", maybe_usd(e.baseline_usd_per_million_tokens, 3) + " baseline, " +
                                      maybe_usd(e.shipped_usd_per_million_tokens, 3) + " shipped");
  line("GPU-hours", "tuner " + format_fixed(b.tuner_gpu_hours, 1) + ", checks " +
                        format_fixed(b.checks_gpu_hours, 1) + " (reserve " +
                        format_fixed(b.reserve_gpu_hours, 1) + "), infrastructure " +
                        format_fixed(b.infra_gpu_hours, 1) + ", budget " +
                        format_fixed(b.budget_gpu_hours, 1));
  line("tuning cost",
       format_fixed(e.tuning_gpu_hours, 1) + " GPU-hours, " + maybe_usd(e.tuning_usd, 0));
  line("payback", e.payback_hours
                      ? format_fixed(*e.payback_hours, 1) + " hours of training on " +
                            std::to_string(e.gpu_count) + " GPUs with the shipped recipe"
                      : "none: the baseline ships");
  line("ledger", "chain " + d.chain_word +
                     (d.chain_reason.empty() ? "" : " (" + d.chain_reason + ")") + ", head " +
                     d.head_hash + ", " + std::to_string(d.view.event_count) + " events");
  out << "</table>\n";
  return out.str();
}

std::string html_diff(const ReportData& d) {
  std::ostringstream out;
  out << "<h2>The shipped recipe against the baseline</h2>\n";
  const auto& shipped = d.view.stop.shipped;
  const auto row = shipped ? d.view.ledger.rows.find(shipped->run_id) : d.view.ledger.rows.end();
  if (!shipped || shipped->is_baseline || row == d.view.ledger.rows.end()) {
    out << "<p>No change: the baseline recipe ships.</p>\n";
    return out.str();
  }
  out << "<table class=\"diff\">" << row_of({"setting", "baseline", "shipped", "class"}, true);
  for (const SettingChange& change : row->second.diff) {
    out << row_of(
        {change.name, side_text(change.before_present, change.before),
         side_text(change.after_present, change.after), to_string(change.objective_class)},
        false);
  }
  out << "</table>\n";
  return out.str();
}

namespace {

std::string layer1_html(const Layer1Table& table) {
  std::ostringstream out;
  if (!table.result) {
    out << "<p>Layer 1 cannot be shown again: " << html_escape(table.note) << "</p>";
    return out.str();
  }
  out << "<table class=\"layer1\">"
      << row_of({"setting", "baseline", "candidate", "class", "verdict", "rule"}, true);
  for (const CheckedChange& c : table.result->changes) {
    out << row_of({c.change.name, side_text(c.change.before_present, c.change.before),
                   side_text(c.change.after_present, c.change.after),
                   to_string(c.change.objective_class), to_string(c.verdict), to_string(c.rule)},
                  false);
  }
  for (const ConfigRefusal& refusal : table.result->refusals) {
    out << "<tr class=\"refused\"><td colspan=\"6\">" << html_escape(refusal.message)
        << "</td></tr>";
  }
  out << "</table>";
  return out.str();
}

}  // namespace

std::string html_gate(const ReportData& d) {
  std::ostringstream out;
  out << "<h2>The gate's evidence</h2>\n";
  if (d.gate.empty()) out << "<p>No candidate reached the gate.</p>\n";
  for (std::size_t i = 0; i < d.gate.size(); ++i) {
    const ConvergenceChecked& g = d.gate[i];
    const bool passed = g.has_verdict && g.layer1_passed && g.layer2_passed;
    out << "<section class=\"gate\" data-candidate=\"" << g.candidate_run_id << "\"><h3>Run "
        << g.candidate_run_id << ": "
        << (passed          ? "passed"
            : g.has_verdict ? "failed"
                            : "no verdict")
        << "</h3>\n<p>layer 1 " << (g.layer1_passed ? "passed" : "failed") << ", layer 2 "
        << (g.layer2_passed ? "passed" : "failed")
        << (g.reason.empty() ? "" : ": " + html_escape(g.reason)) << "</p>\n";
    if (i < d.layer1.size()) out << layer1_html(d.layer1[i]) << "\n";
    if (!g.checks.empty()) {
      out << "<table class=\"layer2\">"
          << row_of({"check", "measured", "threshold", "passed"}, true);
      for (const ConvergenceCheck& c : g.checks) {
        out << "<tr>" << cell(c.name) << cell(format_fixed(c.measured, 4), true)
            << cell(format_fixed(c.threshold, 4), true) << cell(c.passed ? "yes" : "no") << "</tr>";
      }
      out << "</table>\n";
    }
    const RunId base_run = baseline_check_before(d.view, g.check_run_id);
    const auto base = d.loss_curves.find(base_run);
    const auto cand = d.loss_curves.find(g.check_run_id);
    if (base != d.loss_curves.end() && cand != d.loss_curves.end()) {
      out << "<p class=\"legend\"><span class=\"swatch loss-baseline\"></span> baseline check (run "
          << base_run << ") <span class=\"swatch loss-candidate\"></span> candidate check (run "
          << g.check_run_id << ")</p>\n"
          << html_loss_chart(base->second, cand->second, base_run, g.check_run_id) << "\n";
    }
    out << "</section>\n";
  }
  return out.str();
}

std::string html_profiles(const ReportData& d) {
  if (d.profiles.empty()) return "";
  std::set<std::string> kinds;
  double widest = 1;
  for (const auto& [run, profile] : d.profiles) {
    for (const StageBreakdown& stage : profile.stages) {
      for (const CommTime& comm : stage.exposed_comm) kinds.insert(comm.kind);
      widest = std::max(widest, stage.step_ms);
    }
  }
  std::ostringstream out;
  out << "<h2>Where the time goes (profiled runs)</h2>\n<p class=\"legend\"><span class=\"swatch "
         "compute\"></span> compute ";
  for (const std::string& kind : kinds) {
    out << "<span class=\"swatch comm-" << html_escape(kind) << "\"></span> " << html_escape(kind)
        << " (exposed) ";
  }
  out << "<span class=\"swatch host\"></span> host-bound <span class=\"swatch idle\"></span> "
         "idle</p>\n";
  for (const auto& [run, profile] : d.profiles) {
    const double height = 22.0 * profile.stages.size() + 8;
    out << "<h3>Run " << run << ": largest cost " << html_escape(profile.largest_cost)
        << "</h3>\n<svg class=\"stages\" data-profile-run=\"" << run << "\" viewBox=\"0 0 760 "
        << format_fixed(height, 0) << "\">";
    for (std::size_t i = 0; i < profile.stages.size(); ++i) {
      const StageBreakdown& stage = profile.stages[i];
      double x = 80;
      const double y = 4 + 22.0 * i;
      auto bar = [&](const std::string& cls, double ms, const std::string& what) {
        const double w = ms / widest * 660;
        if (w <= 0) return;
        out << "<rect class=\"" << cls << "\" x=\"" << format_fixed(x, 1) << "\" y=\""
            << format_fixed(y, 1) << "\" width=\"" << format_fixed(w, 1)
            << "\" height=\"18\"><title>stage " << stage.stage << " " << html_escape(what) << ": "
            << format_fixed(ms, 2) << " ms</title></rect>";
        x += w;
      };
      out << "<text x=\"4\" y=\"" << format_fixed(y + 14, 1) << "\">stage " << stage.stage
          << "</text>";
      bar("compute", stage.compute_ms, "compute");
      for (const CommTime& comm : stage.exposed_comm) {
        bar("comm-" + html_escape(comm.kind), comm.exposed_ms, comm.kind + " exposed");
      }
      bar("host", stage.host_bound_ms, "host-bound");
      bar("idle", stage.idle_ms, "idle");
    }
    out << "</svg>\n";
  }
  return out.str();
}

std::string html_runs(const ReportData& d) {
  std::ostringstream out;
  out << "<h2>Runs</h2>\n<table class=\"runs\">"
      << row_of({"run", "purpose", "parent", "change against its parent", "failure", "tokens/s/GPU",
                 "TFLOP/s/GPU", "MFU", "GPU-h", "verdict", "gain"},
                true);
  auto fixed = [](const std::optional<double>& v) { return v ? format_fixed(*v, 1) : "-"; };
  for (const RunRow& r : d.rows) {
    out << "<tr data-row-run=\"" << r.run_id << "\"" << (r.shipped ? " class=\"shipped\"" : "")
        << ">" << cell(std::to_string(r.run_id), true) << cell(to_string(r.purpose))
        << cell(!r.parent        ? "-"
                : *r.parent == 0 ? "baseline"
                                 : std::to_string(*r.parent),
                true)
        << cell(r.change) << cell(failure_text(r)) << cell(fixed(r.tokens_per_s_per_gpu), true)
        << cell(fixed(r.tflops_per_gpu), true) << cell(maybe_percent(r.mfu), true)
        << cell(format_fixed(r.gpu_hours, 1), true) << cell(r.verdict ? to_string(*r.verdict) : "-")
        << cell(r.gain_fraction ? format_signed_percent(*r.gain_fraction, 1) : "-", true)
        << "</tr>";
  }
  out << "</table>\n";
  return out.str();
}

std::string html_style() {
  return "body{font:14px/1.4 system-ui,sans-serif;margin:24px;max-width:1100px;color:#222}"
         "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:2px 6px;"
         "text-align:left;vertical-align:top}td.n{text-align:right}"
         "table.summary th{background:#f4f4f4}tr.shipped{background:#eef7ee}"
         "tr.refused td{color:#a00}tr.hot{background:#fff4c0}"
         "svg{max-width:100%;height:auto;display:block}svg text{font-size:11px;fill:#444}"
         ".axes line{stroke:#555}.axes line.grid{stroke:#e6e6e6}.legend svg{display:inline-block;"
         "vertical-align:middle}.band{fill:#cfe3ff;opacity:.6}"
         ".leader{fill:none;stroke:#1b7f3a;stroke-width:2}"
         ".mark{stroke:#222;stroke-width:.6}.mark.hot{stroke-width:3}.shipped{stroke:#000;"
         "stroke-width:2}.calibration{fill:#999}.new-leader{fill:#1b7f3a}.not-better{fill:#6aa0d8}"
         ".check{fill:#8a5cc2}.pending{fill:#fff}.fail-oom{fill:#d62728}.fail-hang{fill:#ff7f0e}"
         ".fail-crash{fill:#8c564b}.fail-infra{fill:#e377c2}.fail-pruned{fill:#bcbd22}"
         ".loss-baseline{fill:none;stroke:#555;stroke-width:2}"
         ".loss-candidate{fill:none;stroke:#d62728;stroke-width:1.5;stroke-dasharray:5 3}"
         ".compute{fill:#4c78a8}.host{fill:#f58518}.idle{fill:#ddd}[class^=comm-]{fill:#e45756}"
         ".comm-tp{fill:#e45756}.comm-ep_a2a{fill:#b279a2}.comm-pp_p2p{fill:#72b7b2}"
         ".comm-dp{fill:#54a24b}.comm-cp{fill:#eeca3b}"
         ".swatch{display:inline-block;width:12px;height:12px;vertical-align:middle}"
         ".swatch.band{background:#cfe3ff}.swatch.leader{background:#1b7f3a}"
         ".swatch.loss-baseline{background:#555}.swatch.loss-candidate{background:#d62728}"
         ".swatch.compute{background:#4c78a8}.swatch.host{background:#f58518}"
         ".swatch.idle{background:#ddd}span.swatch[class*=comm-]{background:#e45756}"
         ".legend span{margin-right:8px}";
}

// Hovering a mark lights its row in the runs table and the other way round; the page records that
// it ran (data-marks) so that a test of the rendered page can tell.
std::string html_script() {
  return "(function(){var marks=document.querySelectorAll('circle.mark[data-run]');"
         "function light(run,on){document.querySelectorAll('[data-run=\"'+run+'\"],"
         "[data-row-run=\"'+run+'\"]').forEach(function(e){e.classList.toggle('hot',on);});}"
         "document.querySelectorAll('[data-run],[data-row-run]').forEach(function(e){"
         "var run=e.getAttribute('data-run')||e.getAttribute('data-row-run');"
         "e.addEventListener('mouseenter',function(){light(run,true);});"
         "e.addEventListener('mouseleave',function(){light(run,false);});});"
         "document.body.setAttribute('data-marks',String(marks.length));})();";
}

}  // namespace attune::cli
