#include "core/lever_groups.h"

#include <toml++/toml.h>

#include <algorithm>

#include "events/assert.h"
#include "events/sha256.h"

namespace attune {

extern const char kLeverGroupsToml[];
extern const std::size_t kLeverGroupsToml_size;

Result<LeverGroups> LeverGroups::parse(std::string_view toml_text, const std::string& source_name) {
  LeverGroups parsed;
  parsed.hash_ = to_hex(sha256(toml_text));
  toml::table root;
  try {
    root = toml::parse(toml_text, std::string_view(source_name));
  } catch (const toml::parse_error& e) {
    return make_error(source_name + ":" + std::to_string(e.source().begin.line) + ": " +
                      std::string(e.description()));
  }
  const toml::array* list = root["group"].as_array();
  if (list == nullptr) return make_error(source_name + ": no [[group]] entries");
  std::size_t index = 0;
  for (const toml::node& entry : *list) {
    ++index;
    const std::string where = source_name + ": group " + std::to_string(index);
    const toml::table* group = entry.as_table();
    const auto name = group ? (*group)["name"].value<std::string>() : std::nullopt;
    const toml::array* settings = group ? (*group)["settings"].as_array() : nullptr;
    if (!name || settings == nullptr) return make_error(where + ": needs name and settings");
    for (const toml::node& setting : *settings) {
      const auto text = setting.value<std::string>();
      if (!text) return make_error(where + " (" + *name + "): a setting is not a string");
      parsed.group_of_setting_[*text] = *name;
    }
  }
  return parsed;
}

const LeverGroups& LeverGroups::builtin() {
  static const LeverGroups groups = [] {
    auto parsed =
        parse(std::string_view(kLeverGroupsToml, kLeverGroupsToml_size), "lever_groups.toml");
    ATTUNE_ASSERT(parsed.ok(), parsed.ok() ? "" : parsed.error());
    return std::move(parsed).value();
  }();
  return groups;
}

std::string LeverGroups::lever_of(const std::string& setting) const {
  auto found = group_of_setting_.find(setting);
  return found == group_of_setting_.end() ? setting : found->second;
}

std::vector<std::string> LeverGroups::levers_of(std::span<const SettingChange> diff) const {
  std::vector<std::string> levers;
  for (const SettingChange& change : diff) {
    std::string lever = lever_of(change.name);
    if (std::find(levers.begin(), levers.end(), lever) == levers.end()) {
      levers.push_back(std::move(lever));
    }
  }
  return levers;
}

}  // namespace attune
