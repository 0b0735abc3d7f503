// `attune runs`: one row per run of a campaign, rebuilt from the ledger (read-only).
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "projections/run_rows.h"
#include "tools/attune/campaign_figures.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

constexpr int kRunsSchemaVersion = 1;

struct RunsOptions {
  std::string db;
  std::optional<std::string> campaign;
  std::string format = "table";
  bool json = false;
  bool wide = false;
  bool verbose = false;
};

int run_runs(const RunsOptions& options) {
  const std::string format = options.json ? "json" : options.format;
  if (format != "table" && format != "csv" && format != "json") {
    return fail("--format: expected table, csv or json, found '" + format + "'");
  }
  auto loaded = load_campaign(options.db, options.campaign);
  if (!loaded.ok()) return fail(loaded.error());
  const EventStore& store = *loaded->store;
  const std::string& campaign_id = loaded->campaign_id;
  auto view = fold_campaign(store, campaign_id);
  if (!view.ok()) return fail(view.error());
  const Efficiency efficiency = efficiency_of(view->settings);
  const std::vector<RunRow> rows = run_rows(view.value(), efficiency);
  if (format == "json") {
    const nlohmann::json out = {{"schema_version", kRunsSchemaVersion},
                                {"campaign_id", campaign_id},
                                {"runs", runs_to_json(rows)},
                                {"economics", to_json(economics_of(view.value(), efficiency))}};
    write_json_output(out);
  } else if (format == "csv") {
    std::cout << render_runs_csv(rows);
  } else {
    std::cout << render_runs_text(rows, options.wide ? 0 : kTerminalWidth, options.verbose);
  }
  return kExitOk;
}

}  // namespace

void add_runs_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<RunsOptions>();
  CLI::App* runs = app.add_subcommand(
      "runs",
      "One row per run of a campaign, from the ledger: purpose, parent, what it changed against "
      "its parent, failure class, tokens/s/GPU, model TFLOP/s/GPU, MFU, GPU-hours, verdict, gain");
  add_ledger_options(*runs, options->db, options->campaign);
  runs->add_option("--format", options->format,
                   "table (fits 100 columns; the change is cut), csv (every column) or json")
      ->capture_default_str();
  runs->add_flag("--json", options->json, "The same as --format json");
  runs->add_flag("--wide", options->wide, "The table with every column and the whole change");
  runs->add_flag("--verbose", options->verbose,
                 "The table within 100 columns, a long change continued on the next lines");
  runs->callback([&exit_code, options] { exit_code = run_runs(*options); });
}

}  // namespace attune::cli
