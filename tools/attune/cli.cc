#include "tools/attune/cli.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace attune::cli {

int fail(const std::string& message) {
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::cerr << "attune: " << line << "\n";
  return kExitError;
}

Result<std::unique_ptr<EventStore>> open_ledger_read_only(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return make_error("no ledger at " + dir + ": no such directory");
  }
  EventStore::Options options;
  options.read_only = true;
  return EventStore::open(dir, options);
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
  return campaigns->front();
}

}  // namespace attune::cli
