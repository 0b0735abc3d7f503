// `attune campaign run`: opens a campaign from its campaign file in the ledger.
#include <CLI/CLI.hpp>

#include <iostream>
#include <nlohmann/json.hpp>

#include "core/campaign_file.h"
#include "projections/campaign_view.h"
#include "projections/render.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

// Simulated campaigns run on a virtual clock that starts here (2026-01-01T00:00:00Z), so the same
// seeds give the same bytes.
constexpr std::int64_t kVirtualEpochUnixNs = 1'767'225'600'000'000'000;

struct RunOptions {
  std::string campaign_file;
  std::string db = "attune-ledger";
  std::optional<std::uint64_t> seed;
  bool json = false;
};

int run_campaign(const RunOptions& options) {
  auto spec = parse_campaign_file(options.campaign_file);
  if (!spec.ok()) return fail(spec.error());
  if (options.seed) spec->seed = *options.seed;
  if (spec->launcher != "sim") {
    return fail(options.campaign_file + ": launcher '" + spec->launcher +
                "' is not available in this build; use launcher = \"sim\"");
  }
  const std::string campaign_id = campaign_id_for(spec.value());

  auto store = EventStore::open(options.db);
  if (!store.ok()) return fail(store.error());
  auto version = (*store)->version(campaign_id);
  if (!version.ok()) return fail(version.error());
  if (version.value() != 0) {
    return fail("campaign " + campaign_id + " already exists in " + options.db +
                " (same campaign file and seed); use another --db or --seed");
  }
  std::vector<NewEvent> events;
  events.push_back(NewEvent{kVirtualEpochUnixNs, "operator", campaign_opened(spec.value())});
  auto appended = (*store)->append(campaign_id, 0, std::move(events));
  if (!appended.ok()) return fail(appended.error());

  CampaignView view = fold(appended.value());
  if (options.json) {
    nlohmann::json out = to_json(view);
    out["ledger"] = options.db;
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << render_status_text(view);
    std::cout << "ledger: " << options.db << " (campaign " << campaign_id << ")\n";
  }
  return kExitOk;
}

}  // namespace

void add_campaign_commands(CLI::App& app, int& exit_code) {
  CLI::App* campaign = app.add_subcommand("campaign", "Run campaigns");
  campaign->require_subcommand(1);
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = campaign->add_subcommand(
      "run", "Open a campaign from a campaign file (TOML) in the ledger and print its status");
  run->add_option("CAMPAIGN.toml", options->campaign_file, "The campaign file")->required();
  run->add_option("--db", options->db, "Ledger folder (a RocksDB database)")->capture_default_str();
  run->add_option("--seed", options->seed, "Override the campaign file's seed");
  run->add_flag("--json", options->json, "Machine-readable output");
  run->callback([&exit_code, options] { exit_code = run_campaign(*options); });
}

}  // namespace attune::cli
