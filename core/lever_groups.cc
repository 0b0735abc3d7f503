#include "core/lever_groups.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace attune {

extern const char kLeverGroupsToml[];
extern const std::size_t kLeverGroupsToml_size;

const LeverGroups& LeverGroups::builtin() {
  static const LeverGroups groups = [] {
    LeverGroups parsed;
    try {
      toml::table root = toml::parse(std::string_view(kLeverGroupsToml, kLeverGroupsToml_size),
                                     std::string_view("lever_groups.toml"));
      const toml::array* list = root["group"].as_array();
      if (list == nullptr) throw std::runtime_error("no [[group]] entries");
      for (const toml::node& entry : *list) {
        const toml::table* group = entry.as_table();
        const auto name = group ? (*group)["name"].value<std::string>() : std::nullopt;
        const toml::array* settings = group ? (*group)["settings"].as_array() : nullptr;
        if (!name || settings == nullptr)
          throw std::runtime_error("a group lacks name or settings");
        for (const toml::node& setting : *settings) {
          const auto text = setting.value<std::string>();
          if (!text) throw std::runtime_error("a setting is not a string");
          parsed.group_of_setting_[*text] = *name;
        }
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "attune: built-in lever_groups.toml is broken: %s\n", e.what());
      std::abort();
    }
    return parsed;
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
