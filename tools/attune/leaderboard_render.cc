// The leaderboard as text (100 columns), Markdown, self-contained HTML and JSON.
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "projections/leaderboard.h"
#include "projections/number_format.h"
#include "projections/text_table.h"
#include "tools/attune/report_parts.h"

namespace attune::cli {

namespace {

std::string mfu_text(double mfu) { return mfu > 0 ? format_percent(mfu, 1) : "-"; }
std::string usd_text(double usd) { return usd > 0 ? "$" + format_fixed(usd, 3) : "-"; }

// A Markdown table cell: one line, pipes escaped, <, > and & as entities.
std::string md_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '|':
        out += "\\|";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\n':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_leaderboard_text(const std::vector<LeaderboardRow>& rows) {
  if (rows.empty()) return "the leaderboard is empty (attune leaderboard add admits a campaign)\n";
  TextTable table({{"model"},
                   {"on"},
                   {"GPU"},
                   {"GPUs", Align::kRight},
                   {"seq", Align::kRight},
                   {"gbs", Align::kRight},
                   {"tok/s/GPU", Align::kRight},
                   {"MFU", Align::kRight},
                   {"$/Mtok", Align::kRight},
                   {"gain", Align::kRight},
                   {"ledger head"}});
  for (const LeaderboardRow& row : rows) {
    const LeaderboardEntry& e = row.best;
    table.add_row({e.model, e.launcher, e.hardware, std::to_string(e.gpu_count),
                   std::to_string(e.seq_length), std::to_string(e.global_batch),
                   format_fixed(e.tokens_per_s_per_gpu, 1), mfu_text(e.mfu),
                   usd_text(e.usd_per_million_tokens), format_signed_percent(e.gain_fraction, 1),
                   e.ledger_head_hash.substr(0, 12)});
  }
  return table.render();
}

std::string render_leaderboard_md(const std::vector<LeaderboardRow>& rows) {
  std::ostringstream out;
  out << "# TrainingThroughputBench\n\nThe fastest recipe that passed the correctness gate for "
         "each "
         "model, accelerator, GPU count and workload.\n\n";
  out << "| model | accelerator | GPUs | workload | measured on | tokens/s/GPU | MFU | "
         "$ per million tokens | gain over its baseline | campaign | ledger head |\n"
         "|---|---|---:|---|---|---:|---:|---:|---:|---|---|\n";
  for (const LeaderboardRow& row : rows) {
    const LeaderboardEntry& e = row.best;
    out << "| " << md_cell(e.model) << " | " << md_cell(e.hardware) << " | " << e.gpu_count << " | "
        << md_cell(workload_text(e)) << " | " << md_cell(e.launcher) << " | "
        << format_fixed(e.tokens_per_s_per_gpu, 1) << " | " << mfu_text(e.mfu) << " | "
        << usd_text(e.usd_per_million_tokens) << " | " << format_signed_percent(e.gain_fraction, 1)
        << " | " << md_cell(e.campaign_id) << " | `" << e.ledger_head_hash.substr(0, 16) << "` |\n";
  }
  for (const LeaderboardRow& row : rows) {
    const LeaderboardEntry& e = row.best;
    out << "\n## " << e.model << " on " << e.gpu_count << " x " << e.hardware << "\n\n"
        << "- workload: " << workload_text(e) << "\n- measured on: " << e.launcher << ", checked "
        << "against " << e.framework << "\n- campaign " << e.campaign_id << ", ledger "
        << e.ledger_path << ", head `" << e.ledger_head_hash << "`\n";
    for (const std::string& verdict : e.gate_verdicts) out << "- gate: " << verdict << "\n";
    const std::string fence = markdown_fence_for(e.recipe);
    out << "\n"
        << fence << "sh\n"
        << e.recipe << (e.recipe.ends_with('\n') ? "" : "\n") << fence << "\n";
  }
  return out.str();
}

std::string render_leaderboard_html(const std::vector<LeaderboardRow>& rows) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<title>TrainingThroughputBench</title>\n<style>body{font:14px/1.4 system-ui,sans-serif;"
         "margin:24px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
         "text-align:left}td.n{text-align:right}pre{background:#f6f6f6;padding:8px;"
         "white-space:pre-wrap}</style>\n</head>\n<body>\n<h1>TrainingThroughputBench</h1>\n"
         "<table>\n<tr><th>model</th><th>accelerator</th><th>GPUs</th><th>workload</th>"
         "<th>tokens/s/GPU</th><th>MFU</th><th>$ per million tokens</th><th>gain</th>"
         "<th>evidence</th><th>recipe</th></tr>\n";
  for (const LeaderboardRow& row : rows) {
    const LeaderboardEntry& e = row.best;
    out << "<tr data-campaign=\"" << html_escape(e.campaign_id) << "\"><td>" << html_escape(e.model)
        << "</td><td>" << html_escape(e.hardware) << "</td><td class=\"n\">" << e.gpu_count
        << "</td><td>" << html_escape(workload_text(e)) << "</td><td class=\"n\">"
        << format_fixed(e.tokens_per_s_per_gpu, 1) << "</td><td class=\"n\">" << mfu_text(e.mfu)
        << "</td><td class=\"n\">" << usd_text(e.usd_per_million_tokens) << "</td><td class=\"n\">"
        << format_signed_percent(e.gain_fraction, 1) << "</td><td>campaign "
        << html_escape(e.campaign_id) << "<br>ledger head <code>"
        << html_escape(e.ledger_head_hash.substr(0, 16)) << "</code>";
    for (const std::string& verdict : e.gate_verdicts) out << "<br>gate: " << html_escape(verdict);
    out << "</td><td><details><summary>" << html_escape(e.recipe_hash.substr(0, 12))
        << "</summary><pre>" << html_escape(e.recipe) << "</pre></details></td></tr>\n";
  }
  out << "</table>\n</body>\n</html>\n";
  return out.str();
}

nlohmann::json leaderboard_json(const std::vector<LeaderboardRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const LeaderboardRow& row : rows) {
    const LeaderboardEntry& e = row.best;
    list.push_back({{"model", e.model},
                    {"hardware", e.hardware},
                    {"gpu_count", e.gpu_count},
                    {"seq_length", e.seq_length},
                    {"global_batch", e.global_batch},
                    {"precision", e.precision},
                    {"data", e.data},
                    {"launcher", e.launcher},
                    {"framework", e.framework},
                    {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
                    {"baseline_tokens_per_s_per_gpu", e.baseline_tokens_per_s_per_gpu},
                    {"gain_fraction", e.gain_fraction},
                    {"mfu", e.mfu > 0 ? nlohmann::json(e.mfu) : nlohmann::json(nullptr)},
                    {"usd_per_million_tokens", e.usd_per_million_tokens > 0
                                                   ? nlohmann::json(e.usd_per_million_tokens)
                                                   : nlohmann::json(nullptr)},
                    {"campaign_id", e.campaign_id},
                    {"ledger_head_hash", e.ledger_head_hash},
                    {"ledger_path", e.ledger_path},
                    {"gate_verdicts", e.gate_verdicts},
                    {"recipe", e.recipe},
                    {"recipe_hash", e.recipe_hash},
                    {"entries", row.entries}});
  }
  return {{"schema_version", 1}, {"rows", list}};
}

}  // namespace attune::cli
