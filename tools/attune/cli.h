// Shared plumbing of the attune command line: one-line errors, ledger opening, output.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "events/event_store.h"
#include "events/ledger_key.h"
#include "events/result.h"

namespace CLI {
class App;
class FormatterBase;
}  // namespace CLI

namespace attune::cli {

// Exit codes: 0 success, 1 the command's answer is "no" (refused, inconsistent, failed),
// 2 bad input or an operating error.
constexpr int kExitOk = 0;
constexpr int kExitNo = 1;
constexpr int kExitError = 2;

// What the default terminal output fits.
constexpr std::size_t kTerminalWidth = 100;

// Help text with every line longer than `width` (more than 40) broken at spaces: a continuation
// starts under the line's description column (`column`, where CLI11 starts descriptions, or two
// spaces or more after its first word, within 40 columns), else under its first word.
std::string wrap_help(const std::string& text, std::size_t width, std::size_t column);

// CLI11's help formatter with wrap_help applied at kTerminalWidth; set on the app before its
// subcommands are added, so that every --help fits the terminal.
std::shared_ptr<CLI::FormatterBase> help_formatter();

// Prints "attune: MESSAGE" as one line on stderr and returns kExitError.
int fail(const std::string& message);

// Prints a command's --json output on stdout: an object gets "schema_version" (unless it has
// one), invalid UTF-8 from a log or ledger is replaced, two-space indent, then a newline.
void write_json_output(nlohmann::json out, int schema_version = 1);

// The user's keyring (events/ledger_key.h) and the folder beside it where anchors are mirrored.
Keyring user_keyring();
std::string anchor_mirror_root();

// Opens the ledger in `dir` read-only (views never write).
Result<std::unique_ptr<EventStore>> open_ledger_read_only(const std::string& dir);
// Opens (or creates) the ledger in `dir` for a campaign to write: its events keyed with the
// keyring's current key, created on first use (a line on stderr says where).
Result<std::unique_ptr<EventStore>> open_ledger_for_writing(const std::string& dir);

// The chain of a campaign verified with the user's keyring, as one word: "verified",
// "unverifiable" or "broken", and the first reason when it is not verified.
struct ChainVerdict {
  std::string word;
  std::string reason;
  ChainReport report;
};
Result<ChainVerdict> verify_campaign_chain(const EventStore& store, const std::string& campaign);

// The campaign to show: `requested` if given (it must exist), else the only campaign in the
// ledger; an error names the campaigns when there are several.
Result<std::string> pick_campaign(const EventStore& store,
                                  const std::optional<std::string>& requested);

// --db (required) and --campaign (default: the ledger's only campaign) for a command that reads
// one campaign of a ledger.
void add_ledger_options(CLI::App& command, std::string& db, std::optional<std::string>& campaign);

// Subcommand registration. Each sets `exit_code` when its command runs.
void add_view_commands(CLI::App& app, int& exit_code);          // status, replay, audit, ledger
void add_campaign_commands(CLI::App& app, int& exit_code);      // campaign run
void add_gate_commands(CLI::App& app, int& exit_code);          // gate converge
void add_metrics_command(CLI::App& app, int& exit_code);        // metrics LOG
void add_sim_commands(CLI::App& app, int& exit_code);           // sim predict, sim sweep
void add_sim_calibrate_command(CLI::App& sim, int& exit_code);  // sim calibrate
void add_trace_commands(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);  // compare     // trace breakdown
// propose, profile, wait, log, stop, hook stop|pre-tool, agent install|run
void add_agent_commands(CLI::App& app, int& exit_code);
void add_recipe_commands(CLI::App& app, int& exit_code);       // recipe show
void add_key_commands(CLI::App& app, int& exit_code);          // key show|rotate|export|import
void add_runs_command(CLI::App& app, int& exit_code);          // runs
void add_report_command(CLI::App& app, int& exit_code);        // report
void add_leaderboard_commands(CLI::App& app, int& exit_code);  // leaderboard add|show
// `attune status --socket PATH`: a live campaign's status from its control socket.
int live_status(const std::string& socket, bool as_json);
// Adds `check` (layer 1: the configuration check) to the `gate` subcommand.
void add_gate_check_command(CLI::App& gate, int& exit_code);

}  // namespace attune::cli
