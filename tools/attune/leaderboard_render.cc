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
    out << "| " << markdown_cell(e.model) << " | " << markdown_cell(e.hardware) << " | "
        << e.gpu_count << " | " << markdown_cell(workload_text(e)) << " | "
        << markdown_cell(e.launcher) << " | " << format_fixed(e.tokens_per_s_per_gpu, 1) << " | "
        << mfu_text(e.mfu) << " | " << usd_text(e.usd_per_million_tokens) << " | "
        << format_signed_percent(e.gain_fraction, 1) << " | " << markdown_cell(e.campaign_id)
        << " | `" << e.ledger_head_hash.substr(0, 16) << "` |\n";
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
    nlohmann::json entry = leaderboard_entry_json(row.best);
    entry["entries"] = row.entries;
    list.push_back(std::move(entry));
  }
  return {{"schema_version", 1}, {"rows", list}};
}

}  // namespace attune::cli
