// `attune leaderboard add|show`: TrainingThroughputBench, the fastest recipe that passed the gate
// for each model x accelerator x GPU count x workload, kept in a RocksDB store of its own.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "adapters/model/layout.h"
#include "events/leaderboard_store.h"
#include "events/recipe.h"
#include "gate/config_check.h"
#include "projections/leaderboard.h"
#include "projections/number_format.h"
#include "projections/text_table.h"
#include "tools/attune/campaign_figures.h"
#include "tools/attune/campaign_session.h"
#include "tools/attune/cli.h"
#include "tools/attune/report.h"
#include "tools/attune/report_parts.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kLeaderboardSchemaVersion = 1;

// $ATTUNE_LEADERBOARD, else $XDG_DATA_HOME/attune/leaderboard, else
// ~/.local/share/attune/leaderboard.
std::string default_board() {
  if (const char* env = std::getenv("ATTUNE_LEADERBOARD"); env != nullptr && *env != '\0') {
    return env;
  }
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    return (fs::path(xdg) / "attune" / "leaderboard").string();
  }
  const char* home = std::getenv("HOME");
  return (fs::path(home != nullptr ? home : ".") / ".local/share/attune/leaderboard").string();
}

std::string gate_line(const ConvergenceChecked& g) {
  return "run " + std::to_string(g.candidate_run_id) + " (check run " +
         std::to_string(g.check_run_id) + "): layer 1 " + (g.layer1_passed ? "passed" : "failed") +
         ", layer 2 " + (g.layer2_passed ? "passed" : "failed") +
         (g.reason.empty() ? "" : " (" + g.reason + ")");
}

// A shipped baseline is the fastest known recipe when nothing cleared the band. It passes the gate
// against itself: layer 2 compares a recipe with itself, and layer 1 on (baseline, baseline)
// validates it under the campaign's policy (its frozen settings and known stack defects).
std::string baseline_refusal(const ReportData& d, const std::string& db,
                             std::vector<std::string>& evidence) {
  auto policy = load_policy(d.view.settings, db);
  if (!policy.ok()) return policy.error();
  auto baseline = parse_recipe(d.view.settings.baseline_recipe, "the baseline recipe");
  if (!baseline.ok()) return baseline.error();
  const ConfigCheckResult itself = check_config(policy.value(), baseline.value(), baseline.value());
  if (!itself.allowed)
    return "the shipped baseline fails layer 1 on itself: " + refusal_summary(itself);
  evidence.push_back("the baseline shipped: " + d.view.stop.shipped->evidence);
  evidence.push_back("baseline: layer 1 on itself passed under policy " +
                     d.view.settings.policy_name);
  return "";
}

// Why the campaign's shipped recipe may not enter the leaderboard; empty when it may. `evidence`
// gets the gate's verdicts that admit it.
std::string refusal(const ReportData& d, const std::string& db,
                    std::vector<std::string>& evidence) {
  if (d.chain_word != "verified") {
    return "the ledger's hash chain is " + d.chain_word +
           (d.chain_reason.empty() ? "" : " (" + d.chain_reason + ")");
  }
  if (!d.view.stop.shipped) return "the campaign has not shipped a recipe yet";
  const RecipeShipped& shipped = *d.view.stop.shipped;
  if (shipped.is_baseline) return baseline_refusal(d, db, evidence);
  for (const ConvergenceChecked& g : d.gate) evidence.push_back(gate_line(g));
  for (const ConvergenceChecked& g : d.gate) {
    if (g.candidate_run_id == shipped.run_id && g.has_verdict && g.layer1_passed &&
        g.layer2_passed) {
      return "";
    }
  }
  return "the shipped run " + std::to_string(shipped.run_id) + " has no passed gate verdict";
}

LeaderboardEntry entry_of(const ReportData& d, const std::string& db,
                          std::vector<std::string> evidence) {
  const CampaignOpened& s = d.view.settings;
  const RecipeShipped& shipped = *d.view.stop.shipped;
  LeaderboardEntry e;
  e.model = s.model;
  e.hardware = s.hardware;
  e.gpu_count = s.gpu_count;
  e.seq_length = s.seq_length;
  e.global_batch = s.global_batch;
  e.precision = s.precision;
  e.data = s.data;
  e.launcher = s.launcher;
  e.framework = "Megatron-LM " + std::string(sim::kMegatronRulesCommit.substr(0, 12));
  // A shipped baseline's throughput is its calibration mean.
  e.tokens_per_s_per_gpu = shipped.is_baseline ? d.economics.baseline_tokens_per_s_per_gpu
                                               : shipped.tokens_per_sec_per_gpu;
  e.baseline_tokens_per_s_per_gpu = d.economics.baseline_tokens_per_s_per_gpu;
  e.gain_fraction = shipped.gain_fraction;
  e.mfu = d.economics.shipped_mfu.value_or(0.0);
  e.usd_per_million_tokens = d.economics.shipped_usd_per_million_tokens.value_or(0.0);
  e.usd_per_gpu_hour = s.usd_per_gpu_hour;
  e.campaign_id = d.view.campaign_id;
  e.ledger_head_hash = d.head_hash;
  std::error_code ec;
  const fs::path absolute = fs::absolute(db, ec);
  e.ledger_path = ec ? db : absolute.lexically_normal().string();
  e.gate_verdicts = std::move(evidence);
  e.recipe = shipped.recipe;
  e.recipe_hash = shipped.recipe_hash;
  e.added_at_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  return e;
}

struct AddOptions {
  std::string db;
  std::optional<std::string> campaign;
  std::string board;
  bool json = false;
};

int run_add(const AddOptions& options) {
  auto loaded = load_campaign(options.db, options.campaign);
  if (!loaded.ok()) return fail(loaded.error());
  const EventStore& store = *loaded->store;
  const std::string& campaign_id = loaded->campaign_id;
  auto data = gather_report(store, campaign_id, options.db);
  if (!data.ok()) return fail(data.error());
  std::vector<std::string> evidence;
  if (const std::string why = refusal(data.value(), options.db, evidence); !why.empty()) {
    std::cerr << "attune: leaderboard add refused for campaign " << campaign_id << ": " << why
              << "\n";
    return kExitNo;
  }
  const std::string board = options.board.empty() ? default_board() : options.board;
  auto leaderboard_store = LeaderboardStore::open(board, false);
  if (!leaderboard_store.ok()) return fail(leaderboard_store.error());
  const LeaderboardEntry entry = entry_of(data.value(), options.db, std::move(evidence));
  Status put = (*leaderboard_store)->put(entry);
  if (!put.ok()) return fail(put.error());
  if (options.json) {
    write_json_output({{"schema_version", kLeaderboardSchemaVersion},
                       {"admitted", true},
                       {"campaign_id", entry.campaign_id},
                       {"board", board},
                       {"tokens_per_s_per_gpu", entry.tokens_per_s_per_gpu},
                       {"gate_verdicts", entry.gate_verdicts}});
  } else {
    std::cout << "admitted  " << entry.model << " on " << entry.gpu_count << " x " << entry.hardware
              << ": " << format_fixed(entry.tokens_per_s_per_gpu, 1) << " tokens/s/GPU ("
              << format_signed_percent(entry.gain_fraction, 1) << ", campaign " << entry.campaign_id
              << ")\nboard     " << board << "\n";
  }
  return kExitOk;
}

struct ShowOptions {
  std::string board;
  std::string format = "text";
  bool json = false;
};

int run_show(const ShowOptions& options) {
  const std::string format = options.json ? "json" : options.format;
  if (format != "text" && format != "md" && format != "html" && format != "json") {
    return fail("--format: expected text, md, html or json, found '" + format + "'");
  }
  const std::string board = options.board.empty() ? default_board() : options.board;
  auto store = LeaderboardStore::open(board, true);
  if (!store.ok()) return fail(store.error());
  auto entries = (*store)->all();
  if (!entries.ok()) return fail(entries.error());
  const std::vector<LeaderboardRow> rows = leaderboard(entries.value());
  if (format == "json") {
    nlohmann::json out = leaderboard_json(rows);
    out["board"] = board;
    write_json_output(std::move(out));
  } else if (format == "md") {
    std::cout << render_leaderboard_md(rows);
  } else if (format == "html") {
    std::cout << render_leaderboard_html(rows);
  } else {
    std::cout << render_leaderboard_text(rows);
  }
  return kExitOk;
}

}  // namespace

void add_leaderboard_commands(CLI::App& app, int& exit_code) {
  CLI::App* board = app.add_subcommand(
      "leaderboard",
      "TrainingThroughputBench: the fastest recipe that passed the gate for each model x "
      "accelerator x GPU count x workload, in a store of its own ($ATTUNE_LEADERBOARD, else "
      "$XDG_DATA_HOME/attune/leaderboard, else ~/.local/share/attune/leaderboard)");
  board->require_subcommand(1);
  auto add_options = std::make_shared<AddOptions>();
  CLI::App* add = board->add_subcommand(
      "add",
      "Admit a campaign's shipped recipe: only one that passed the gate (a shipped baseline: "
      "layer 1 on itself), from a ledger whose hash chain verifies (exit 1 when refused, with "
      "the reason)");
  add_ledger_options(*add, add_options->db, add_options->campaign);
  add->add_option("--board", add_options->board, "Leaderboard folder (default: see above)");
  add->add_flag("--json", add_options->json, "Machine-readable output");
  add->callback([&exit_code, add_options] { exit_code = run_add(*add_options); });

  auto show_options = std::make_shared<ShowOptions>();
  CLI::App* show = board->add_subcommand(
      "show",
      "The leaderboard: per key the fastest recipe, its tokens/s/GPU, MFU, dollars per million "
      "tokens, gate verdicts, campaign and ledger head hash, and the recipe (md, html, json)");
  show->add_option("--board", show_options->board, "Leaderboard folder (default: see above)");
  show->add_option("--format", show_options->format,
                   "text (fits 100 columns, no recipes), md, html or json")
      ->capture_default_str();
  show->add_flag("--json", show_options->json, "The same as --format json");
  show->callback([&exit_code, show_options] { exit_code = run_show(*show_options); });
}

}  // namespace attune::cli
