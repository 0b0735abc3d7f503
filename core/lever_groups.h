// LeverGroups: which changed settings count as one lever (rule 2 of the search discipline).
//
// The groups are data (core/data/lever_groups.toml, compiled in). A changed setting that no group
// lists is a lever of its own. Immutable after construction; safe to share between threads.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "events/event.h"

namespace attune {

class LeverGroups {
 public:
  // The compiled-in groups. Asserts that the embedded TOML parses (a build defect otherwise).
  static const LeverGroups& builtin();

  // The distinct levers a diff touches, in order of first appearance: a group's name, or the
  // setting's own name when no group lists it.
  std::vector<std::string> levers_of(std::span<const SettingChange> diff) const;

  // The group of a setting, or the setting itself.
  std::string lever_of(const std::string& setting) const;

 private:
  std::map<std::string, std::string> group_of_setting_;
};

}  // namespace attune
