// The pieces the report's and the leaderboard's renderers share across their files: HTML and
// Markdown escaping, the report's HTML sections, and the leaderboard's formats. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "projections/leaderboard.h"
#include "tools/attune/report.h"

namespace attune::cli {

// &, <, > and " as entities: safe in element text and in double-quoted attributes.
std::string html_escape(std::string_view text);
// A Markdown table cell: one line, markup as HTML entities (no renderer reads a ledger string as
// HTML), pipes escaped.
std::string markdown_cell(const std::string& text);
// A code fence longer than any run of backticks in `text`, so that the text cannot end it.
std::string markdown_fence_for(const std::string& text);

// The report's sections (report_html_parts.cc) and its loss chart (report_html.cc).
// " (calibration run N left out: ...)" where the band left a slow node's run out, else "".
std::string left_out_note(const ReportData& d);

std::string html_summary(const ReportData& d);
std::string html_diff(const ReportData& d);
std::string html_gate(const ReportData& d);
std::string html_profiles(const ReportData& d);
std::string html_runs(const ReportData& d);
std::string html_style();
std::string html_script();
std::string html_loss_chart(const std::vector<double>& baseline,
                            const std::vector<double>& candidate, RunId baseline_run,
                            RunId candidate_run);

// The leaderboard (leaderboard_render.cc): text within 100 columns without recipes, Markdown
// and HTML with them, and JSON with schema_version.
std::string render_leaderboard_text(const std::vector<LeaderboardRow>& rows);
std::string render_leaderboard_md(const std::vector<LeaderboardRow>& rows);
std::string render_leaderboard_html(const std::vector<LeaderboardRow>& rows);
nlohmann::json leaderboard_json(const std::vector<LeaderboardRow>& rows);

}  // namespace attune::cli
