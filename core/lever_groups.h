// LeverGroups: which changed settings count as one lever (rule 2 of the search discipline).
//
// The groups are data (core/data/lever_groups.toml, compiled in, or a file of the same form). A
// changed setting that no group lists is a lever of its own. decide() receives the groups in its
// context and a campaign records their hash when it opens, as it records its policy's: a resumed
// campaign counts levers as it did. Immutable after construction; safe to share between threads.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"
#include "events/result.h"

namespace attune {

class LeverGroups {
 public:
  // The compiled-in groups. Asserts that the embedded TOML parses (a build defect otherwise).
  static const LeverGroups& builtin();
  // Groups from TOML text; an error names `source_name`, the entry and what is wrong.
  static Result<LeverGroups> parse(std::string_view toml_text, const std::string& source_name);

  // The distinct levers a diff touches, in order of first appearance: a group's name, or the
  // setting's own name when no group lists it.
  std::vector<std::string> levers_of(std::span<const SettingChange> diff) const;

  // The group of a setting, or the setting itself.
  std::string lever_of(const std::string& setting) const;

  // Hex SHA-256 of the text the groups were read from.
  const std::string& hash() const { return hash_; }

 private:
  std::map<std::string, std::string> group_of_setting_;
  std::string hash_;
};

}  // namespace attune
