// Silent rewrites of Megatron-LM's validate_args that can be computed from a recipe before launch:
// a flag of the candidate (say --cuda-graph-impl local) sets another setting (te_rng_tracker)
// that the recipe does not give. Layer 1 judges the rewritten setting as if the recipe had given
// it, so a candidate that the check run's printed arguments would fail is refused before it costs
// anything. Each rule was confirmed with Megatron-LM's own argument code (tools/megatron-oracle).
//
// All functions are pure and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/recipe.h"

namespace attune {

// One rule: Megatron sets the flag `setting` from `cause` where `fires` says so.
struct ImpliedSettingRule {
  std::string_view setting;  // the rewritten setting, by its own canonical flag
  std::string_view cause;    // the flag (or flags) that rewrite it, as shown in messages
  std::string_view note;     // what Megatron does, one clause
};
const std::vector<ImpliedSettingRule>& implied_setting_rules();

// The value a rule gives its setting in `recipe`, or nullopt where the rule does not fire and the
// setting keeps its own effective value.
std::optional<std::string> implied_value(const ImpliedSettingRule& rule, const Recipe& recipe);

// The value Megatron will use for `setting` in `recipe`: the implied value where a rule fires,
// else the effective value (config_check.h).
std::optional<std::string> resolved_flag_value(const Recipe& recipe, std::string_view setting);

// The rule for a setting, or nullptr.
const ImpliedSettingRule* implied_rule_for(std::string_view setting);

}  // namespace attune
