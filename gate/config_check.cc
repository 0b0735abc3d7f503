#include "gate/config_check.h"

#include <algorithm>
#include <set>
#include <utility>

#include "events/arg_catalog.h"
#include "events/assert.h"
#include "gate/implied_args.h"

namespace attune {
namespace {

std::string shown(const std::optional<std::string>& value) {
  if (!value) return "absent";
  return value->empty() ? "''" : *value;
}

std::string class_text(const SettingClass& cls) { return to_string(cls.objective_class); }

// The value layer 1 judges: for a flag, the one Megatron will use (a silent rewrite applied).
std::optional<std::string> checked_value(const Recipe& recipe, ChangeKind kind,
                                         const std::string& name) {
  return kind == ChangeKind::kFlag ? resolved_flag_value(recipe, name)
                                   : effective_value(recipe, kind, name);
}

// Every setting a recipe gives, by canonical name: the two sides of a --x/--no-x pair are one.
void collect_settings(const Recipe& recipe, std::set<std::string>& flags,
                      std::set<std::string>& env) {
  for (const auto& [spelling, value] : recipe.flags) flags.insert(canonical_flag_name(spelling));
  for (const auto& [name, value] : recipe.env) env.insert(name);
}

std::string frozen_pin_text(const FrozenSetting& frozen) {
  switch (frozen.pin) {
    case FrozenPin::kValue:
      return "frozen at " + shown(frozen.value);
    case FrozenPin::kAbsent:
      return "frozen absent";
    case FrozenPin::kBaseline:
      return "frozen at the baseline's value";
  }
  return "frozen";
}

std::string values_text(const SameMathSwap& swap) {
  std::string out;
  for (const std::optional<std::string>& value : swap.values) {
    out += (out.empty() ? "" : ", ") + shown(value);
  }
  return out;
}

// Why a setting of this class is judged as it is, for the message.
std::string class_explanation(const Policy& policy, ChangeKind kind, const std::string& setting,
                              const SettingClass& cls) {
  if (kind == ChangeKind::kFlag) {
    if (const ClassOverride* override = policy.find_class_override(setting)) {
      return "policy " + policy.name + " classes it " + to_string(override->objective_class) +
             ": " + override->reason;
    }
  } else if (const EnvClass* entry = policy.find_env(setting)) {
    return "allowlisted by policy " + policy.name + " as " + to_string(entry->objective_class) +
           (entry->note.empty() ? "" : ": " + entry->note);
  }
  switch (cls.objective_class) {
    case ObjectiveClass::kStructural:
      return "placement or scheduling only";
    case ObjectiveClass::kSameMath:
      return "the same function by another path";
    case ObjectiveClass::kNumeric:
      return "numeric in the Megatron-LM argument table: it changes the training objective";
    case ObjectiveClass::kOther:
      return "not part of the training step; allowed and reported";
  }
  return "";
}

// A policy value, with "absent" (nullopt) read as the effective value of a flag not given.
std::optional<std::string> absent_as_default(const std::optional<std::string>& value,
                                             ChangeKind kind, std::string_view setting) {
  return value ? value : default_value(kind, setting);
}

bool swap_allows(const SameMathSwap& swap, const std::optional<std::string>& value) {
  return std::any_of(swap.values.begin(), swap.values.end(),
                     [&](const std::optional<std::string>& allowed) {
                       return absent_as_default(allowed, swap.kind, swap.setting) == value;
                     });
}

CheckedChange judge_change(const Policy& policy, SettingChange change) {
  CheckedChange checked;
  const SettingClass cls = classify_setting(policy, change.kind, change.name);
  change.objective_class = cls.objective_class;
  const std::string head = change.name + " (" + class_text(cls) + "): ";
  const std::string values =
      ": " +
      shown(change.before_present ? std::optional<std::string>(change.before) : std::nullopt) +
      " -> " +
      shown(change.after_present ? std::optional<std::string>(change.after) : std::nullopt);
  const std::optional<std::string> after =
      change.after_present ? std::optional<std::string>(change.after) : std::nullopt;

  auto verdict = [&](CheckVerdict v, CheckRule rule, const std::string& why) {
    checked.verdict = v;
    checked.rule = rule;
    checked.message = head + to_string(rule) + values + ": " + why;
  };

  if (const FrozenSetting* frozen = policy.find_frozen(change.kind, change.name)) {
    verdict(CheckVerdict::kRefused, CheckRule::kFrozen,
            frozen_pin_text(*frozen) + " by policy " + policy.name + ": " + frozen->reason);
  } else if (!cls.listed) {
    verdict(CheckVerdict::kRefused, CheckRule::kUnlisted,
            change.kind == ChangeKind::kFlag
                ? "not a flag of the Megatron-LM catalog; unlisted means numeric"
                : "not allowlisted by policy " + policy.name + "; unlisted means numeric");
  } else if (cls.objective_class == ObjectiveClass::kNumeric) {
    verdict(CheckVerdict::kRefused, CheckRule::kNumeric,
            class_explanation(policy, change.kind, change.name, cls));
  } else if (cls.swap != nullptr && cls.swap->component_test != ComponentTest::kPassed) {
    verdict(CheckVerdict::kRefused, CheckRule::kSwapUntested,
            std::string("same-math swap whose component test is ") +
                to_string(cls.swap->component_test) + " on policy " + policy.name +
                "; only a passed test may run");
  } else if (cls.swap != nullptr && !swap_allows(*cls.swap, after)) {
    verdict(CheckVerdict::kRefused, CheckRule::kSwapValue,
            "same-math swap outside its allowed values (" + values_text(*cls.swap) + ")");
  } else if (cls.swap != nullptr) {
    verdict(CheckVerdict::kAllowed, CheckRule::kSwap,
            "same-math swap inside its allowed values, component test passed");
  } else if (cls.objective_class == ObjectiveClass::kOther) {
    verdict(CheckVerdict::kReported, CheckRule::kOther,
            class_explanation(policy, change.kind, change.name, cls));
  } else {
    verdict(CheckVerdict::kAllowed,
            cls.objective_class == ObjectiveClass::kStructural ? CheckRule::kStructural
                                                               : CheckRule::kSameMath,
            class_explanation(policy, change.kind, change.name, cls));
  }
  checked.change = std::move(change);
  return checked;
}

SettingChange make_change(ChangeKind kind, const std::string& name,
                          const std::optional<std::string>& before,
                          const std::optional<std::string>& after) {
  SettingChange change;
  change.kind = kind;
  change.name = name;
  change.before_present = before.has_value();
  change.before = before.value_or("");
  change.after_present = after.has_value();
  change.after = after.value_or("");
  return change;
}

// The refusal for a frozen setting the candidate holds at another value than its pin, or nullopt.
std::optional<ConfigRefusal> frozen_violation(const Policy& policy, const FrozenSetting& frozen,
                                              const Recipe& baseline, const Recipe& candidate) {
  std::optional<std::string> expected;
  switch (frozen.pin) {
    case FrozenPin::kValue:
      expected = frozen.value;
      break;
    case FrozenPin::kAbsent:
      expected = default_value(frozen.kind, frozen.setting);
      break;
    case FrozenPin::kBaseline:
      expected = checked_value(baseline, frozen.kind, frozen.setting);
      break;
  }
  const std::optional<std::string> actual = checked_value(candidate, frozen.kind, frozen.setting);
  if (actual == expected) return std::nullopt;
  const SettingClass cls = classify_setting(policy, frozen.kind, frozen.setting);
  ConfigRefusal refusal;
  refusal.setting = frozen.setting;
  refusal.objective_class = cls.objective_class;
  refusal.rule = CheckRule::kFrozen;
  refusal.message = frozen.setting + " (" + class_text(cls) +
                    "): frozen: " + frozen_pin_text(frozen) + " by policy " + policy.name +
                    ", the candidate has " + shown(actual) + ": " + frozen.reason;
  return refusal;
}

std::optional<ConfigRefusal> defect_match(const Policy& policy, const KnownDefect& defect,
                                          const Recipe& candidate) {
  for (const DefectCondition& condition : defect.conditions) {
    if (checked_value(candidate, condition.kind, condition.setting) !=
        absent_as_default(condition.value, condition.kind, condition.setting)) {
      return std::nullopt;
    }
  }
  ConfigRefusal refusal;
  refusal.rule = CheckRule::kDefect;
  std::string described;
  for (const DefectCondition& condition : defect.conditions) {
    const SettingClass cls = classify_setting(policy, condition.kind, condition.setting);
    const std::string term = condition.setting + "=" + shown(condition.value);
    refusal.setting += (refusal.setting.empty() ? "" : " ") + term;
    described += (described.empty() ? "" : " with ") + term + " (" + class_text(cls) + ")";
  }
  refusal.message =
      described + ": defect: a known stack defect of policy " + policy.name + ": " + defect.reason;
  return refusal;
}

// "; implied by CAUSE: NOTE" where a silent rewrite set the value on either side, else empty.
std::string implied_text(const Recipe& baseline, const Recipe& candidate, ChangeKind kind,
                         const std::string& name) {
  if (kind != ChangeKind::kFlag) return "";
  const ImpliedSettingRule* rule = implied_rule_for(name);
  if (rule == nullptr) return "";
  // A recipe that gives the setting itself changed it; the rewrite is not the cause.
  if (baseline.flags.contains(name) || candidate.flags.contains(name)) return "";
  if (!implied_value(*rule, baseline) && !implied_value(*rule, candidate)) return "";
  return "; implied by " + std::string(rule->cause) + ": " + std::string(rule->note);
}

}  // namespace

const char* to_string(CheckVerdict value) {
  switch (value) {
    case CheckVerdict::kAllowed:
      return "allowed";
    case CheckVerdict::kReported:
      return "reported";
    case CheckVerdict::kRefused:
      return "refused";
  }
  return "?";
}

const char* to_string(CheckRule value) {
  switch (value) {
    case CheckRule::kStructural:
      return "structural";
    case CheckRule::kSameMath:
      return "same-math";
    case CheckRule::kSwap:
      return "swap";
    case CheckRule::kOther:
      return "other";
    case CheckRule::kNumeric:
      return "numeric";
    case CheckRule::kUnlisted:
      return "unlisted";
    case CheckRule::kFrozen:
      return "frozen";
    case CheckRule::kSwapValue:
      return "swap-value";
    case CheckRule::kSwapUntested:
      return "swap-untested";
    case CheckRule::kDefect:
      return "defect";
    case CheckRule::kCommand:
      return "command";
  }
  return "?";
}

std::optional<std::string> default_value(ChangeKind kind, std::string_view setting) {
  if (kind == ChangeKind::kEnv) return std::nullopt;
  const ArgInfo* info = ArgCatalog::megatron().find(setting);
  if (info == nullptr) return std::nullopt;
  if (!info->takes_value) {
    if (!info->negatable) return "false";  // a plain switch that is not given
    if (info->default_text == "True") return "true";
    if (info->default_text == "False") return "false";
    return std::nullopt;
  }
  if (info->default_text.empty() || info->default_text == "None") return std::nullopt;
  Recipe scratch;
  if (!set_flag(scratch, info->canonical, info->default_text).ok()) return std::nullopt;
  return scratch.flags.at(info->canonical);
}

std::vector<SettingChange> effective_changes(const Recipe& from, const Recipe& to) {
  std::vector<SettingChange> out;
  for (SettingChange& change : diff_recipes(from, to)) {
    // A flag given on one side only, at the value the other side takes by default (a switch
    // reads "true"/"false" either way), changes nothing Megatron will use.
    if (change.before_present != change.after_present &&
        effective_value(from, change.kind, change.name) ==
            effective_value(to, change.kind, change.name)) {
      continue;
    }
    out.push_back(std::move(change));
  }
  return out;
}

std::optional<std::string> effective_value(const Recipe& recipe, ChangeKind kind,
                                           std::string_view setting) {
  if (kind == ChangeKind::kEnv) {
    const auto it = recipe.env.find(std::string(setting));
    if (it == recipe.env.end()) return std::nullopt;
    return it->second;
  }
  // A Recipe from parse_recipe is canonical already; matching every key by its catalog row keeps
  // a hand-built one with an alias or a "--no-x" key from hiding a change.
  const ArgCatalog& catalog = ArgCatalog::megatron();
  const ArgInfo* info = catalog.find(setting);
  for (const auto& [spelling, value] : recipe.flags) {
    bool negated = false;
    const ArgInfo* row = catalog.find(spelling, &negated);
    const bool same =
        info == nullptr ? row == nullptr && canonical_flag_name(spelling) == setting : row == info;
    if (!same) continue;
    if (info == nullptr || info->takes_value) return value;
    return negated ? "false" : "true";
  }
  return default_value(kind, setting);
}

SettingClass classify_setting(const Policy& policy, ChangeKind kind, std::string_view name) {
  // Policy rows name a flag by its canonical spelling; a caller may hold an alias or "--no-x".
  const std::string setting =
      kind == ChangeKind::kFlag ? canonical_flag_name(name) : std::string(name);
  SettingClass cls;
  cls.swap = policy.find_swap(kind, setting);
  if (kind == ChangeKind::kEnv) {
    if (const EnvClass* entry = policy.find_env(setting)) {
      cls.objective_class = entry->objective_class;
      cls.listed = true;
    } else if (cls.swap != nullptr) {
      cls.objective_class = ObjectiveClass::kSameMath;
      cls.listed = true;
    }
    return cls;
  }
  if (const ClassOverride* override = policy.find_class_override(setting)) {
    cls.objective_class = override->objective_class;
    cls.listed = true;
  } else if (cls.swap != nullptr) {
    cls.objective_class = ObjectiveClass::kSameMath;
    cls.listed = true;
  } else if (const ArgInfo* info = ArgCatalog::megatron().find(setting)) {
    cls.objective_class = info->objective_class;
    cls.listed = true;
  }
  return cls;
}

ConfigCheckResult check_config(const Policy& policy, const Recipe& baseline,
                               const Recipe& candidate) {
  ConfigCheckResult result;
  if (baseline.command != candidate.command) {
    result.refusals.push_back({"command", std::nullopt, CheckRule::kCommand,
                               "command: command: '" + baseline.command + "' -> '" +
                                   candidate.command +
                                   "': a different program or script is a different training run"});
  }

  std::set<std::string> flags;
  std::set<std::string> env;
  collect_settings(baseline, flags, env);
  collect_settings(candidate, flags, env);
  for (const ImpliedSettingRule& rule : implied_setting_rules()) flags.emplace(rule.setting);
  std::vector<ConfigRefusal> implied_refusals;
  auto judge_all = [&](ChangeKind kind, const std::set<std::string>& names) {
    for (const std::string& name : names) {
      const std::optional<std::string> before = checked_value(baseline, kind, name);
      const std::optional<std::string> after = checked_value(candidate, kind, name);
      if (before == after) continue;
      CheckedChange checked = judge_change(policy, make_change(kind, name, before, after));
      const std::string implied = implied_text(baseline, candidate, kind, name);
      checked.message += implied;
      if (checked.verdict == CheckVerdict::kRefused) {
        // A rewrite is listed after the changes the recipe itself makes.
        (implied.empty() ? result.refusals : implied_refusals)
            .push_back({name, checked.change.objective_class, checked.rule, checked.message});
      }
      result.changes.push_back(std::move(checked));
    }
  };
  judge_all(ChangeKind::kFlag, flags);
  judge_all(ChangeKind::kEnv, env);
  result.refusals.insert(result.refusals.end(), implied_refusals.begin(), implied_refusals.end());

  for (const FrozenSetting& frozen : policy.frozen) {
    const bool refused_as_change =
        std::any_of(result.changes.begin(), result.changes.end(), [&](const CheckedChange& c) {
          return c.change.kind == frozen.kind && c.change.name == frozen.setting;
        });
    if (refused_as_change) continue;
    if (std::optional<ConfigRefusal> refusal =
            frozen_violation(policy, frozen, baseline, candidate)) {
      result.refusals.push_back(std::move(*refusal));
    }
  }
  for (const KnownDefect& defect : policy.defects) {
    if (std::optional<ConfigRefusal> refusal = defect_match(policy, defect, candidate)) {
      result.refusals.push_back(std::move(*refusal));
    }
  }
  result.allowed = result.refusals.empty();
  // Every refused change has its refusal; refusals may also come from frozen values and defects.
  ATTUNE_ASSERT(static_cast<std::size_t>(std::count_if(result.changes.begin(), result.changes.end(),
                                                       [](const CheckedChange& c) {
                                                         return c.verdict == CheckVerdict::kRefused;
                                                       })) <= result.refusals.size(),
                "every refused change has its refusal");
  return result;
}

std::string refusal_summary(const ConfigCheckResult& result) {
  if (result.refusals.empty()) return "";
  std::string summary = result.refusals.front().message;
  const std::size_t more = result.refusals.size() - 1;
  if (more > 0) {
    summary += " (and " + std::to_string(more) + " more refusal" + (more == 1 ? "" : "s") + ")";
  }
  return summary;
}

}  // namespace attune
