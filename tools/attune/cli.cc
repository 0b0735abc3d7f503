#include "tools/attune/cli.h"

#include <CLI/CLI.hpp>

#include "events/assert.h"
#include "projections/text_table.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace attune::cli {

namespace {

// The column where a help line's description starts: the formatter's column when the line's
// name ends before it (CLI11 pads a name to that column, sometimes with one space only), else
// after its first word and two spaces or more; 0 when there is none within 40 columns.
std::size_t description_column(const std::string& line, std::size_t column) {
  if (line.rfind("  ", 0) == 0 && line.size() > column + 1 && line[2] != ' ' &&
      line[column - 1] == ' ' && line[column] != ' ') {
    return column;
  }
  const std::size_t first = line.find_first_not_of(' ');
  if (first == std::string::npos) return 0;
  const std::size_t gap = line.find("  ", first);
  if (gap == std::string::npos) return 0;
  const std::size_t description = line.find_first_not_of(' ', gap);
  return description != std::string::npos && description <= 40 ? description : 0;
}

class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    return wrap_help(CLI::Formatter::make_help(app, std::move(name), mode), kTerminalWidth,
                     get_column_width());
  }
};

}  // namespace

std::string wrap_help(const std::string& text, std::size_t width, std::size_t column) {
  ATTUNE_ASSERT(width > 40 && column > 2 && column < width, "help wraps at more than 40 columns");
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (display_width(line) <= width) {
      out += line;
    } else {
      // wrap_words continues a line at its own indent plus the one given.
      const std::size_t lead = line.find_first_not_of(' ');
      const std::size_t at = description_column(line, column);
      out += wrap_words(line, width, std::string(at > lead ? at - lead : 0, ' '));
    }
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

std::shared_ptr<CLI::FormatterBase> help_formatter() {
  return std::make_shared<WrappingFormatter>();
}

void add_ledger_options(CLI::App& command, std::string& db, std::optional<std::string>& campaign) {
  command.add_option("--db", db, "Ledger folder (a RocksDB database)")->required();
  command.add_option("--campaign", campaign, "Campaign id (default: the ledger's only campaign)");
}

void write_json_output(nlohmann::json out, int schema_version) {
  if (out.is_object() && !out.contains("schema_version")) out["schema_version"] = schema_version;
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

int fail(const std::string& message) {
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::cerr << "attune: " << line << "\n";
  return kExitError;
}

Keyring user_keyring() { return Keyring(Keyring::default_dir()); }

std::string anchor_mirror_root() {
  const std::string keys = Keyring::default_dir();
  return keys.empty() ? "" : (std::filesystem::path(keys).parent_path() / "anchors").string();
}

Result<std::unique_ptr<EventStore>> open_ledger_read_only(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return make_error("cannot read the ledger at " + dir + ": " + ec.message());
    }
    return make_error("no ledger at " + dir + ": no such directory");
  }
  EventStore::Options options;
  options.read_only = true;
  options.anchor_mirror_root = anchor_mirror_root();
  return EventStore::open(dir, options);
}

Result<std::unique_ptr<EventStore>> open_ledger_for_writing(const std::string& dir) {
  const Keyring keyring = user_keyring();
  const bool existed = !keyring.dir().empty() && keyring.current(false).ok();
  auto key = keyring.current(true);
  if (!key.ok()) return make_error("the ledger key: " + key.error());
  if (!existed) {
    std::cerr << wrap_words("attune: created the ledger key " + key->id + " in " + keyring.dir() +
                                " (keep it; audits verify the ledger with it)",
                            kTerminalWidth, "  ")
              << "\n";
  }
  EventStore::Options options;
  options.key = key.value();
  options.anchor_mirror_root = anchor_mirror_root();
  return EventStore::open(dir, options);
}

Result<ChainVerdict> verify_campaign_chain(const EventStore& store, const std::string& campaign) {
  auto report = store.verify_chain(campaign, user_keyring().lookup());
  if (!report.ok()) return make_error(report.error());
  ChainVerdict verdict;
  verdict.report = std::move(report).value();
  if (!verdict.report.ok()) {
    verdict.word = "broken";
    verdict.reason = verdict.report.findings.front();
  } else if (!verdict.report.verified()) {
    verdict.word = "unverifiable";
    verdict.reason = verdict.report.unverifiable.front();
  } else {
    verdict.word = "verified";
  }
  return verdict;
}

Result<std::string> pick_campaign(const EventStore& store,
                                  const std::optional<std::string>& requested) {
  Result<std::vector<std::string>> campaigns = store.list_campaigns();
  if (!campaigns.ok()) return make_error(campaigns.error());
  if (requested) {
    if (std::find(campaigns->begin(), campaigns->end(), *requested) == campaigns->end()) {
      return make_error("unknown campaign '" + *requested + "' (the ledger holds " +
                        std::to_string(campaigns->size()) + " campaign(s))");
    }
    return *requested;
  }
  if (campaigns->empty()) return make_error("the ledger holds no campaign");
  if (campaigns->size() > 1) {
    std::string names;
    for (const std::string& name : campaigns.value()) names += (names.empty() ? "" : ", ") + name;
    return make_error("the ledger holds several campaigns; pick one with --campaign: " + names);
  }
  // An id read from the ledger becomes file names: one that could leave the ledger's folder is
  // a damaged or forged key.
  if (!is_valid_campaign_id(campaigns->front())) {
    return make_error("the ledger names a campaign '" + campaigns->front() +
                      "' that is not a valid id (damaged or forged)");
  }
  return campaigns->front();
}

}  // namespace attune::cli
