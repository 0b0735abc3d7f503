// The report as one self-contained HTML page: inline CSS, SVG and script, nothing fetched.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "projections/number_format.h"
#include "tools/attune/report.h"
#include "tools/attune/report_parts.h"

namespace attune::cli {
namespace {

constexpr double kChartWidthPx = 760;
constexpr double kChartHeightPx = 340;
constexpr double kLeftPx = 64;
constexpr double kRightPx = 16;
constexpr double kTopPx = 16;
constexpr double kBottomPx = 44;

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double value, int decimals = 1) { return format_fixed(value, decimals); }

// Linear map of [lo, hi] onto [a, b].
struct Scale {
  double lo, hi, a, b;
  double operator()(double v) const { return hi > lo ? a + (v - lo) / (hi - lo) * (b - a) : a; }
};

// A round step for about `count` ticks over `span`.
double tick_step(double span, int count) {
  if (!(span > 0)) return 1;
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * power) return m * power;
  }
  return 10 * power;
}

// Enough decimals that ticks `step` apart print apart (a step is 1, 2 or 5 x 10^k).
int tick_decimals(double step) {
  return step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
}

std::string axes(const Scale& x, const Scale& y, const std::string& x_label,
                 const std::string& y_label) {
  std::ostringstream svg;
  svg << "<g class=\"axes\"><line x1=\"" << num(kLeftPx) << "\" y1=\"" << num(y.b) << "\" x2=\""
      << num(kLeftPx) << "\" y2=\"" << num(y.a) << "\"/><line x1=\"" << num(x.a) << "\" y1=\""
      << num(y.a) << "\" x2=\"" << num(x.b) << "\" y2=\"" << num(y.a) << "\"/>";
  const double xs = tick_step(x.hi - x.lo, 8);
  for (double v = x.lo; v <= x.hi + 1e-9; v += xs) {
    svg << "<text x=\"" << num(x(v)) << "\" y=\"" << num(y.a + 16) << "\" text-anchor=\"middle\">"
        << num(v, tick_decimals(xs)) << "</text>";
  }
  const double ys = tick_step(y.hi - y.lo, 6);
  for (double v = y.lo; v <= y.hi + 1e-9; v += ys) {
    svg << "<text x=\"" << num(kLeftPx - 6) << "\" y=\"" << num(y(v) + 4)
        << "\" text-anchor=\"end\">" << num(v, tick_decimals(ys))
        << "</text><line class=\"grid\" x1=\"" << num(x.a) << "\" y1=\"" << num(y(v)) << "\" x2=\""
        << num(x.b) << "\" y2=\"" << num(y(v)) << "\"/>";
  }
  svg << "<text x=\"" << num((x.a + x.b) / 2) << "\" y=\"" << num(kChartHeightPx - 6)
      << "\" text-anchor=\"middle\">" << escape(x_label) << "</text><text transform=\"translate(14,"
      << num((y.a + y.b) / 2) << ") rotate(-90)\" text-anchor=\"middle\">" << escape(y_label)
      << "</text></g>";
  return svg.str();
}

std::string mark_class(const RunRow& row) {
  if (row.failure_class) return std::string("fail-") + to_string(*row.failure_class);
  if (row.purpose == RunPurpose::kCheck) return "check";
  return row.verdict ? to_string(*row.verdict) : "pending";
}

std::string mark_title(const RunRow& row) {
  std::string title = "run " + std::to_string(row.run_id) + " (" + to_string(row.purpose) + "): ";
  title += row.tokens_per_s_per_gpu ? num(*row.tokens_per_s_per_gpu) + " tokens/s/GPU"
           : row.failure_class      ? failure_text(row)
                                    : std::string("no result");
  if (row.gain_fraction) title += ", " + format_signed_percent(*row.gain_fraction, 1);
  return title + "; " + row.change;
}

// Throughput against cumulative GPU-hours: one mark per run, the leader's line, the band.
std::string throughput_chart(const ReportData& d) {
  double x_max = 1, y_max = 1;
  for (const auto& [run, hours] : d.cumulative_gpu_hours) x_max = std::max(x_max, hours);
  for (const RunRow& row : d.rows) y_max = std::max(y_max, row.tokens_per_s_per_gpu.value_or(0));
  const double mean = d.view.baseline_band.mean_tokens_per_s_per_gpu;
  const double band = d.view.baseline_band.band_fraction;
  y_max = std::max(y_max, mean * (1 + band));
  const Scale x{0, x_max * 1.04, kLeftPx, kChartWidthPx - kRightPx};
  const Scale y{0, y_max * 1.1, kChartHeightPx - kBottomPx, kTopPx};
  std::ostringstream svg;
  svg << "<svg id=\"throughput\" viewBox=\"0 0 " << num(kChartWidthPx) << " " << num(kChartHeightPx)
      << "\" role=\"img\" aria-label=\"throughput against cumulative GPU-hours\">"
      << axes(x, y, "cumulative GPU-hours charged", "tokens/s/GPU");
  if (mean > 0) {
    svg << "<rect class=\"band\" x=\"" << num(x.a) << "\" y=\"" << num(y(mean * (1 + band)))
        << "\" width=\"" << num(x.b - x.a) << "\" height=\"" << num(y(mean) - y(mean * (1 + band)))
        << "\"><title>baseline " << num(mean) << " tokens/s/GPU and its band ("
        << format_percent(band, 2) << ")</title></rect>";
  }
  if (!d.leader_line.empty()) {
    svg << "<polyline class=\"leader\" points=\"";
    for (const auto& [hours, tps] : d.leader_line)
      svg << num(x(hours)) << "," << num(y(tps)) << " ";
    svg << "\"><title>the leader</title></polyline>";
  }
  for (const RunRow& row : d.rows) {
    const auto at = d.cumulative_gpu_hours.find(row.run_id);
    const double hours = at != d.cumulative_gpu_hours.end() ? at->second : x_max;
    const double tps = row.tokens_per_s_per_gpu.value_or(0);
    svg << "<circle class=\"mark " << mark_class(row) << (row.shipped ? " shipped" : "")
        << "\" data-run=\"" << row.run_id << "\" cx=\"" << num(x(hours)) << "\" cy=\""
        << num(y(tps)) << "\" r=\"" << (row.shipped ? 7 : 5) << "\"><title>"
        << escape(mark_title(row)) << "</title></circle>";
  }
  svg << "</svg>";
  return svg.str();
}

std::string legend() {
  std::ostringstream out;
  out << "<p class=\"legend\">";
  for (const char* name : {"calibration", "new-leader", "not-better", "check", "fail-oom",
                           "fail-hang", "fail-crash", "fail-infra", "fail-pruned"}) {
    out << "<span><svg width=\"12\" height=\"12\"><circle class=\"mark " << name
        << "\" cx=\"6\" cy=\"6\" r=\"5\"/></svg> " << name << "</span> ";
  }
  out << "<span class=\"swatch band\"></span> band over the baseline "
      << "<span class=\"swatch leader\"></span> leader; failed runs lie on the axis</p>";
  return out.str();
}

}  // namespace

std::string html_escape(std::string_view text) { return escape(text); }
std::string html_loss_chart(const std::vector<double>& baseline,
                            const std::vector<double>& candidate, RunId baseline_run,
                            RunId candidate_run) {
  double lo = 1e300, hi = -1e300;
  std::size_t steps = 1;
  for (const auto* curve : {&baseline, &candidate}) {
    for (double v : *curve) {
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    steps = std::max(steps, curve->size());
  }
  if (lo > hi) lo = 0, hi = 1;
  const double pad = (hi - lo) * 0.05 + 1e-9;
  const Scale x{1, static_cast<double>(steps), kLeftPx, kChartWidthPx - kRightPx};
  const Scale y{lo - pad, hi + pad, kChartHeightPx - kBottomPx, kTopPx};
  std::ostringstream svg;
  svg << "<svg class=\"loss\" viewBox=\"0 0 " << num(kChartWidthPx) << " " << num(kChartHeightPx)
      << "\" role=\"img\" aria-label=\"loss curves\">" << axes(x, y, "step", "lm loss");
  auto line = [&](const std::vector<double>& curve, const char* cls, RunId run) {
    svg << "<polyline class=\"" << cls << "\" data-loss-run=\"" << run << "\" points=\"";
    for (std::size_t i = 0; i < curve.size(); ++i) {
      if (std::isfinite(curve[i])) svg << num(x(i + 1.0)) << "," << num(y(curve[i]), 2) << " ";
    }
    svg << "\"><title>run " << run << "</title></polyline>";
  };
  line(baseline, "loss-baseline", baseline_run);
  line(candidate, "loss-candidate", candidate_run);
  svg << "</svg>";
  return svg.str();
}

std::string render_report_html(const ReportData& d) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       << "<title>attune report: " << escape(d.view.campaign_id) << "</title>\n<style>"
       << html_style() << "</style>\n</head>\n<body data-campaign=\"" << escape(d.view.campaign_id)
       << "\" data-runs=\"" << d.rows.size() << "\">\n<h1>Campaign " << escape(d.view.campaign_id)
       << "</h1>\n"
       << html_summary(d) << "<h2>Throughput against GPU-hours</h2>\n"
       << throughput_chart(d) << "\n"
       << legend() << "\n"
       << html_diff(d) << html_gate(d) << html_profiles(d) << html_runs(d) << "<script>"
       << html_script() << "</script>\n</body>\n</html>\n";
  return html.str();
}

}  // namespace attune::cli
