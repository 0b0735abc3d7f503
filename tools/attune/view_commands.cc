// Views rebuilt from the ledger: status, replay, audit, ledger export. They open the ledger
// read-only, so they work beside a running campaign and never change it.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "events/event_json.h"
#include "events/sha256.h"
#include "projections/campaign_view.h"
#include "projections/number_format.h"
#include "projections/render.h"
#include "projections/run_rows.h"
#include "projections/text_table.h"
#include "tools/attune/campaign_figures.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

// A line of `ledger export --format jsonl`: version 2 names throughput tokens_per_s_per_gpu.
constexpr int kExportSchemaVersion = 2;

// Where a wrapped line of a text view continues: under the value column of "label     value".
constexpr const char* kContinuation = "          ";

struct ViewOptions {
  std::string db;
  std::string socket;  // status only: a live campaign's control socket
  std::optional<std::string> campaign;
  bool json = false;
};

void add_common(CLI::App* command, ViewOptions& options, bool campaign_required) {
  command->add_option("--db", options.db, "Ledger folder (a RocksDB database)")->required();
  auto* campaign = command->add_option("--campaign", options.campaign, "Campaign id");
  if (campaign_required) campaign->required();
  command->add_flag("--json", options.json, "Machine-readable output");
}

Result<LoadedCampaign> load(const ViewOptions& options) {
  return load_campaign(options.db, options.campaign);
}

int run_status(const ViewOptions& options) {
  if (options.db.empty()) {
    const char* env = std::getenv("ATTUNE_SOCKET");
    if (!options.socket.empty() || (env != nullptr && *env != '\0')) {
      return live_status(options.socket, options.json);
    }
    return fail(
        "give --db (a ledger) or --socket (a live campaign's control socket; or set "
        "ATTUNE_SOCKET)");
  }
  if (!options.socket.empty()) return fail("give --db or --socket, not both");
  auto store = open_ledger_read_only(options.db);
  if (!store.ok()) return fail(store.error());
  std::vector<std::string> campaigns;
  if (options.campaign) {
    auto picked = pick_campaign(**store, options.campaign);
    if (!picked.ok()) return fail(picked.error());
    campaigns.push_back(picked.value());
  } else {
    auto all = (*store)->list_campaigns();
    if (!all.ok()) return fail(all.error());
    if (all->empty()) return fail("the ledger " + options.db + " holds no campaign");
    campaigns = all.value();
  }
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& campaign_id : campaigns) {
    auto view = fold_campaign(**store, campaign_id);
    if (!view.ok()) return fail(view.error());
    auto chain = verify_campaign_chain(**store, campaign_id);
    if (!chain.ok()) return fail(chain.error());
    if (options.json) {
      nlohmann::json one = to_json(view.value());
      one["chain"] = {{"verdict", chain->word}, {"reason", chain->reason}};
      out.push_back(std::move(one));
    } else {
      std::cout << wrap_words(render_status_text(view.value()) + "chain     " + chain->word +
                                  (chain->reason.empty() ? "" : " (" + chain->reason + ")"),
                              kTerminalWidth, kContinuation)
                << "\n";
      if (campaigns.size() > 1) std::cout << "\n";
    }
  }
  // One campaign's status as an object; several as {"campaigns": [...]}.
  if (options.json)
    write_json_output(options.campaign ? out.front() : nlohmann::json{{"campaigns", out}});
  return kExitOk;
}

nlohmann::json chain_json(const ChainVerdict& chain) {
  return {{"verdict", chain.word},
          {"ok", chain.report.ok()},
          {"verified", chain.report.verified()},
          {"events_verified", chain.report.events_verified},
          {"findings", chain.report.findings},
          {"unverifiable", chain.report.unverifiable}};
}

void print_chain(const ChainVerdict& chain, std::ostream& out) {
  out << "hash chain: " << chain.word << ", " << chain.report.events_verified << " events read\n";
  for (const std::string& finding : chain.report.findings) out << "  " << finding << "\n";
  for (const std::string& gap : chain.report.unverifiable) {
    out << "  unverifiable: " << gap << "\n";
  }
}

// A chain that is not verified answers "no": broken, or unverifiable without its key.
int chain_exit(const ChainVerdict& chain, const std::string& campaign_id) {
  if (chain.word == "verified") return kExitOk;
  std::cerr << "attune: the hash chain of campaign " << campaign_id << " is " << chain.word << ": "
            << chain.reason << "\n";
  return kExitNo;
}

int run_replay(const ViewOptions& options) {
  auto loaded = load(options);
  if (!loaded.ok()) return fail(loaded.error());
  auto chain = verify_campaign_chain(*loaded->store, loaded->campaign_id);
  if (!chain.ok()) return fail(chain.error());
  auto view = fold_campaign(*loaded->store, loaded->campaign_id);
  if (!view.ok()) return fail(view.error());
  if (options.json) {
    nlohmann::json out = to_json(view.value());
    out["chain"] = chain_json(chain.value());
    write_json_output(std::move(out));
  } else {
    // The runs as `attune runs` shows them; `attune runs --wide` and `ledger export` give all.
    std::ostringstream text;
    text << render_status_text(view.value()) << "\n"
         << render_runs_text(run_rows(view.value(), efficiency_of(view->settings)), kTerminalWidth,
                             false)
         << "\n";
    print_chain(chain.value(), text);
    std::cout << wrap_words(text.str(), kTerminalWidth, kContinuation);
  }
  return chain_exit(chain.value(), loaded->campaign_id);
}

// The audit's lists, each with its count: charges, LLM charges (with their total), refused
// launches, denied access and inconsistencies.
void print_audit_lists(const Audit& audit, std::ostream& text) {
  text << "charges (" << audit.charges.size() << "):\n";
  for (const ChargeEntry& charge : audit.charges) {
    text << "  #" << charge.sequence << " run " << charge.run_id << " " << to_string(charge.account)
         << " " << charge.gpus << " GPUs, admitted " << charge.admitted_at_unix_ns
         << " ns, released " << charge.released_at_unix_ns << " ns, "
         << format_fixed(charge.gpu_hours, 3) << " GPU-hours\n";
  }
  if (!audit.llm_charges.empty()) {
    double total_usd = 0.0;
    for (const LlmChargeEntry& entry : audit.llm_charges) total_usd += entry.cost_usd;
    text << "LLM charges (" << audit.llm_charges.size() << ", $" << format_fixed(total_usd, 4)
         << "):\n";
    for (const LlmChargeEntry& entry : audit.llm_charges) {
      text << "  #" << entry.sequence << " " << entry.actor << " turn " << entry.turn << " "
           << entry.model << ": " << entry.input_tokens << " input, " << entry.output_tokens
           << " output tokens, $" << format_fixed(entry.cost_usd, 4) << "\n";
    }
  }
  text << "refused launches (" << audit.refusals.size() << "):\n";
  for (const RefusalEntry& refusal : audit.refusals) {
    text << "  #" << refusal.sequence << " proposal " << refusal.proposal_id << " "
         << to_string(refusal.reason) << ": " << refusal.detail << "\n";
  }
  text << "access denied (" << audit.access_denied.size() << "):\n";
  for (const AccessDeniedEntry& denied : audit.access_denied) {
    text << "  #" << denied.sequence << " " << denied.actor << " tried " << denied.object << " ("
         << denied.rule << ")\n";
  }
  text << "inconsistencies (" << audit.findings.size() << "):\n";
  for (const AuditFinding& finding : audit.findings) {
    text << "  #" << finding.sequence << " " << finding.message << "\n";
  }
}

int run_audit(const ViewOptions& options) {
  auto loaded = load(options);
  if (!loaded.ok()) return fail(loaded.error());
  auto chain = verify_campaign_chain(*loaded->store, loaded->campaign_id);
  if (!chain.ok()) return fail(chain.error());
  // A stream that does not decode is itself an inconsistency, reported by the chain check.
  CampaignView view = initial_view();
  if (chain->report.ok()) {
    auto folded = fold_campaign(*loaded->store, loaded->campaign_id);
    if (!folded.ok()) return fail(folded.error());
    view = std::move(folded).value();
  }
  const Audit& audit = view.audit;
  // Consistent only when the chain is verified too: without its key, it is unverifiable.
  const bool consistent = chain->report.verified() && audit.findings.empty();
  const std::string verdict = !chain->report.ok() || !audit.findings.empty() ? "inconsistent"
                              : consistent                                   ? "consistent"
                                                                             : "unverifiable";
  if (options.json) {
    // The audit's lists as the projections render them, with strings made valid UTF-8 (a
    // refused object cut at its size limit may end inside a character), then the chain check
    // and the verdict.
    nlohmann::json out = to_json(audit);
    out["campaign_id"] = loaded->campaign_id;
    out["consistent"] = consistent;
    out["verdict"] = verdict;
    out["chain"] = chain_json(chain.value());
    write_json_output(std::move(out));
  } else {
    std::ostringstream text;
    text << "audit of campaign " << loaded->campaign_id << "\n";
    print_chain(chain.value(), text);
    print_audit_lists(audit, text);
    text << verdict << "\n";
    std::cout << wrap_words(text.str(), kTerminalWidth, kContinuation);
  }
  if (!consistent) {
    std::cerr << "attune: campaign " << loaded->campaign_id << " is " << verdict << ": "
              << (!audit.findings.empty() ? audit.findings.front().message : chain->reason) << "\n";
    return kExitNo;
  }
  return kExitOk;
}

int run_export(const ViewOptions& options, const std::string& format, const std::string& output) {
  if (format != "jsonl" && format != "csv") {
    return fail("--format: expected jsonl or csv, found '" + format + "'");
  }
  auto loaded = load(options);
  if (!loaded.ok()) return fail(loaded.error());
  std::ofstream file;
  if (!output.empty()) {
    file.open(output, std::ios::binary | std::ios::trunc);
    if (!file) return fail(output + ": cannot write the export");
  }
  std::ostream& out = output.empty() ? std::cout : file;
  if (format == "csv") out << event_csv_header() << "\n";
  Status status = loaded->store->for_each(loaded->campaign_id, [&](const Envelope& event) {
    if (format == "csv") {
      out << event_to_csv_row(event) << "\n";
    } else {
      nlohmann::json line = event_to_json(event);
      line["schema_version"] = kExportSchemaVersion;
      out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
  });
  if (!status.ok()) return fail(status.error());
  out.flush();
  if (!out) return fail("writing the export failed");
  return kExitOk;
}

}  // namespace

void add_view_commands(CLI::App& app, int& exit_code) {
  auto status_options = std::make_shared<ViewOptions>();
  CLI::App* status = app.add_subcommand(
      "status",
      "Show a campaign's state rebuilt from the ledger (all campaigns without --campaign), or a "
      "live campaign's from its control socket");
  status->add_option("--db", status_options->db, "Ledger folder (a RocksDB database)");
  status->add_option("--campaign", status_options->campaign, "Campaign id");
  status->add_flag("--json", status_options->json, "Machine-readable output");
  status->add_option("--socket", status_options->socket,
                     "A live campaign's control socket (default with no --db: $ATTUNE_SOCKET)");
  status->callback([&exit_code, status_options] { exit_code = run_status(*status_options); });

  auto replay_options = std::make_shared<ViewOptions>();
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Verify the hash chain and rebuild every projection from the ledger; exit 1 if the chain "
      "is broken");
  add_common(replay, *replay_options, false);
  replay->callback([&exit_code, replay_options] { exit_code = run_replay(*replay_options); });

  auto audit_options = std::make_shared<ViewOptions>();
  CLI::App* audit = app.add_subcommand(
      "audit",
      "Verify the chain and list every charge (GPU-hours and LLM), refused launch and access "
      "denial; exit 1 on any "
      "inconsistency");
  add_common(audit, *audit_options, false);
  audit->callback([&exit_code, audit_options] { exit_code = run_audit(*audit_options); });

  CLI::App* ledger = app.add_subcommand("ledger", "Work with the ledger itself");
  ledger->require_subcommand(1);
  auto export_options = std::make_shared<ViewOptions>();
  auto format = std::make_shared<std::string>("jsonl");
  auto output = std::make_shared<std::string>();
  CLI::App* export_command = ledger->add_subcommand(
      "export", "Write every event of a campaign, decoded, as JSON lines or CSV");
  add_common(export_command, *export_options, false);
  export_command->add_option("--format", *format, "jsonl (default) or csv");
  export_command->add_option("--output,-o", *output, "Write to this file instead of stdout");
  export_command->callback([&exit_code, export_options, format, output] {
    exit_code = run_export(*export_options, *format, *output);
  });
}

}  // namespace attune::cli
