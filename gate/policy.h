// A per-model correctness policy: what layer 1 of the gate adds to the base classification of
// events/data/megatron_args.tsv for one model. A policy is fixed per campaign (its hash is recorded
// when the campaign opens) and no tuner can edit it.
//
// A policy is a TOML file (gate/policies/*.toml):
//
//   name = "glm-4.5"                 # required
//   model = "glm-4.5"                # required; the model the lists were written for
//   description = "..."              # optional
//
//   [[frozen]]                       # a setting no candidate may change
//   setting = "--micro-batch-size"   # a flag in any spelling, or an environment variable
//   value = "1"                      # the frozen value, or "absent" (not given: the default);
//                                    # omitted: frozen at whatever the baseline has
//   reason = "..."                   # required
//
//   [[swap]]                         # a same-math swap: the same function by another path
//   setting = "--moe-token-dispatcher-type"
//   values = ["alltoall", "flex"]    # the values a candidate may choose ("absent" allowed)
//   component_test = "passed"        # "passed", "untested" or "failed"; only "passed" may run
//   note = "..."                     # optional
//
//   [[env]]                          # an allowlisted environment variable; unlisted = numeric
//   name = "NCCL_BUFFSIZE"           # a name, or a prefix ending in '*' ("SLURM_*")
//   class = "structural"             # structural, same-math, numeric or other
//   note = "..."                     # optional
//
//   [[defect]]                       # a known stack defect: a conjunction that is refused
//   when = { "--expert-tensor-parallel-size" = "8", "--expert-model-parallel-size" = "1" }
//   reason = "..."                   # required
//
//   [[class_override]]               # a flag whose class differs from the base table for this
//   model setting = "--use-precision-aware-optimizer" class = "numeric" reason = "..." # required
//
// "absent" means "as if not given" everywhere: a flag then has its catalog default (none when the
// default is None), an env var is unset. Values may be written as TOML strings, integers, floats
// or booleans; flag values are normalised as parse_recipe() normalises them ("1e-5" and 0.00001
// agree). A switch takes "true" or "false"; naming a --x/--no-x switch by its "--no-x" spelling
// inverts the value. A flag that the catalog lacks (a launcher's own flag) may be used only when a
// [[class_override]] row gives its class, so that a misspelt flag is an error rather than a rule
// that never fires.
//
// Errors are one line, "SOURCE:LINE: KEY: what was expected".
//
// Everything here is pure and thread-safe; a Policy is immutable after parsing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"
#include "events/result.h"

namespace attune {

constexpr std::size_t kPolicyRowsMax = 1000;            // rows per list ([[frozen]], [[env]], ...)
constexpr std::size_t kPolicyDefectConditionsMax = 16;  // conditions in one [[defect]]
constexpr std::size_t kPolicySwapValuesMax = 64;        // values of one [[swap]]

enum class ComponentTest : std::uint8_t { kPassed, kUntested, kFailed };

const char* to_string(ComponentTest value);

// How a frozen setting is pinned.
enum class FrozenPin : std::uint8_t {
  kValue,     // to `value`
  kAbsent,    // to not being given (a flag then takes its catalog default)
  kBaseline,  // to the baseline's value, whatever it is
};

// A setting a policy names. For a flag, `name` is the canonical spelling of its catalog row (or
// the spelling as written for a flag the catalog lacks); for an env var, the variable's name.
struct FrozenSetting {
  ChangeKind kind = ChangeKind::kFlag;
  std::string setting;
  FrozenPin pin = FrozenPin::kValue;
  std::string value;  // canonical; set only for FrozenPin::kValue
  std::string reason;
  int line = 0;
};

struct SameMathSwap {
  ChangeKind kind = ChangeKind::kFlag;
  std::string setting;
  std::vector<std::optional<std::string>> values;  // canonical; nullopt = "absent"
  ComponentTest component_test = ComponentTest::kUntested;
  std::string note;
  int line = 0;
};

struct EnvClass {
  std::string name;  // "NCCL_BUFFSIZE", or a prefix with its trailing '*': "SLURM_*"
  ObjectiveClass objective_class = ObjectiveClass::kNumeric;
  std::string note;
  int line = 0;

  bool matches(std::string_view env_name) const;
};

struct DefectCondition {
  ChangeKind kind = ChangeKind::kFlag;
  std::string setting;
  std::optional<std::string> value;  // canonical; nullopt = "absent"
};

struct KnownDefect {
  std::vector<DefectCondition> conditions;  // all must hold; sorted by setting
  std::string reason;
  int line = 0;
};

struct ClassOverride {
  std::string setting;  // a flag
  ObjectiveClass objective_class = ObjectiveClass::kNumeric;
  std::string reason;
  int line = 0;
};

struct Policy {
  std::string name;
  std::string model;
  std::string description;
  std::string source;  // the source name given to parse_policy, "<built-in>" for the default
  std::string hash;    // hex SHA-256 of the policy file's bytes
  std::vector<FrozenSetting> frozen;
  std::vector<SameMathSwap> swaps;
  std::vector<EnvClass> env;
  std::vector<KnownDefect> defects;
  std::vector<ClassOverride> class_overrides;

  // Lookups; nullptr when the policy does not name the setting.
  const FrozenSetting* find_frozen(ChangeKind kind, std::string_view setting) const;
  const SameMathSwap* find_swap(ChangeKind kind, std::string_view setting) const;
  const ClassOverride* find_class_override(std::string_view flag) const;
  // The exact entry for `env_name` if there is one, else the longest matching prefix entry.
  const EnvClass* find_env(std::string_view env_name) const;
};

// Parses a policy file's text; `source_name` (usually the path) prefixes every error.
Result<Policy> parse_policy(std::string_view text, std::string_view source_name);

// The built-in policy for a model without its own file: the base classification only (nothing
// frozen, no swaps, no defects, no environment variable allowlisted). Its hash is the SHA-256 of
// the empty file, as a campaign without a policy file records it.
Policy default_policy();

// The canonical name of a flag given in any spelling ("--tp" -> "--tensor-model-parallel-size"),
// with `negated` set when the spelling was the "--no-x" side of a --x/--no-x pair; the spelling
// with its leading dashes normalised to two when the catalog lacks it.
std::string canonical_flag_name(std::string_view spelling, bool* negated = nullptr);

}  // namespace attune
