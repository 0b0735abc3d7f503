// Layer 1 of the correctness gate, before launch: the configuration check of a candidate recipe
// against its baseline under a per-model policy.
//
// Each setting that differs between baseline and candidate gets a verdict:
//  - refused: a change to the command; to a frozen setting; to a numeric flag or env var; to a flag
//    the catalog lacks or an env var the policy does not list (unlisted means numeric); to a listed
//    same-math swap whose component test has not passed, or to a value outside its list;
//  - allowed: a structural or same-math change, or a listed swap inside its values;
//  - reported: a change to an "other" flag (logging, checkpointing, ...): allowed, but listed.
// On the candidate's full effective settings (not only the diff) it also refuses every known
// stack defect of the policy and every frozen setting that does not hold its frozen value. Run on
// (baseline, baseline) the check therefore validates the baseline itself.
//
// A setting Megatron rewrites silently from another flag (gate/implied_args.h: a CUDA graph
// implementation turns on the TE RNG tracker) is judged at the value Megatron will use, as if the
// recipe gave it, so that a candidate the check run's printed arguments would fail is refused
// before launch; its message names the flag that rewrites it.
//
// Settings are compared by their effective value, so spellings cannot hide a change: aliases are
// canonical in a Recipe already, a --x/--no-x pair is one setting, and a flag that is not given
// reads its catalog default (giving a flag its default value is no change).
//
// Every refusal is one line naming the setting, its class and the rule. All functions are pure
// and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"
#include "events/recipe.h"
#include "gate/policy.h"

namespace attune {

enum class CheckVerdict : std::uint8_t { kAllowed, kReported, kRefused };

enum class CheckRule : std::uint8_t {
  kStructural,    // allowed: placement or scheduling only
  kSameMath,      // allowed: a same-math flag the policy does not list as a swap
  kSwap,          // allowed: a listed swap, inside its values, component test passed
  kOther,         // reported: not part of the training step
  kNumeric,       // refused: changes the objective
  kUnlisted,      // refused: a flag the catalog lacks or an env var the policy does not list
  kFrozen,        // refused: the policy freezes the setting
  kSwapValue,     // refused: a listed swap outside its values
  kSwapUntested,  // refused: a listed swap whose component test has not passed
  kDefect,        // refused: a known stack defect of the model
  kCommand,       // refused: the launch command differs
};

const char* to_string(CheckVerdict value);
const char* to_string(CheckRule value);

// One setting that differs between baseline and candidate, judged. In `change`, before/after are
// effective values (a switch reads "true" or "false"; a flag that is not given reads its catalog
// default), present=false where there is none (a flag whose default is None, an env var not set),
// and objective_class is the class under the policy (unlisted: kNumeric).
struct CheckedChange {
  SettingChange change;
  CheckVerdict verdict = CheckVerdict::kRefused;
  CheckRule rule = CheckRule::kNumeric;
  std::string message;  // one line: "SETTING (CLASS): RULE: why"
};

// One reason the candidate is refused.
struct ConfigRefusal {
  std::string setting;  // a flag, an env var, "command", or a defect's conditions
  std::optional<ObjectiveClass> objective_class;  // nullopt for a command change or a defect
  CheckRule rule = CheckRule::kNumeric;
  std::string message;  // one line
};

struct ConfigCheckResult {
  bool allowed = false;                // no refusals
  std::vector<CheckedChange> changes;  // flags first, then env vars, each sorted by name
  // In the order: changes the recipe makes, settings Megatron rewrites from them, frozen
  // settings, defects.
  std::vector<ConfigRefusal> refusals;
};

ConfigCheckResult check_config(const Policy& policy, const Recipe& baseline,
                               const Recipe& candidate);

// One line for a LaunchRefused event: the first refusal, and how many more there are. Empty
// when the candidate is allowed.
std::string refusal_summary(const ConfigCheckResult& result);

// The class of a setting under `policy`; a flag may be given in any spelling. `listed` is false
// for a flag the catalog lacks and no override names, and for an env var no [[env]] row matches;
// the class is then kNumeric.
struct SettingClass {
  ObjectiveClass objective_class = ObjectiveClass::kNumeric;
  bool listed = false;
  const SameMathSwap* swap = nullptr;  // the policy's swap row for the setting, if any
};
SettingClass classify_setting(const Policy& policy, ChangeKind kind, std::string_view setting);

// The effective value of a setting in a recipe (see CheckedChange); `setting` is a flag in any
// spelling (a switch reads as its positive spelling, also when named "--no-x") or an env var.
std::optional<std::string> effective_value(const Recipe& recipe, ChangeKind kind,
                                           std::string_view setting);

// The effective value of a flag in a recipe that does not give it: its catalog default; nullopt
// for a flag whose default is None or that the catalog lacks, and for every env var.
std::optional<std::string> default_value(ChangeKind kind, std::string_view setting);

// The changes from `from` to `to` (diff_recipes) that change what Megatron will use: a flag
// written out at its catalog default on one side and not given on the other is no change, so
// rendering a recipe again without a default it spelled out changes no lever.
std::vector<SettingChange> effective_changes(const Recipe& from, const Recipe& to);

}  // namespace attune
