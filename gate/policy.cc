#include "gate/policy.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <tuple>
#include <utility>

#include "events/arg_catalog.h"
#include "events/recipe.h"
#include "events/sha256.h"
#include "gate/toml_names.h"

namespace attune {
namespace {

constexpr std::string_view kAbsent = "absent";

bool is_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

std::optional<ObjectiveClass> parse_class(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, ObjectiveClass>, 4> kClasses = {{
      {"structural", ObjectiveClass::kStructural},
      {"same-math", ObjectiveClass::kSameMath},
      {"numeric", ObjectiveClass::kNumeric},
      {"other", ObjectiveClass::kOther},
  }};
  for (const auto& [name, value] : kClasses) {
    if (name == text) return value;
  }
  return std::nullopt;
}

std::optional<ComponentTest> parse_component_test(std::string_view text) {
  if (text == "passed") return ComponentTest::kPassed;
  if (text == "untested") return ComponentTest::kUntested;
  if (text == "failed") return ComponentTest::kFailed;
  return std::nullopt;
}

// The text of a scalar TOML value: strings as written, integers in decimal, floats in their
// shortest round-trip form, booleans as "true"/"false"; nullopt for anything else.
std::optional<std::string> scalar_text(const toml::node& node) {
  if (auto text = node.value_exact<std::string>()) return *text;
  if (auto integer = node.value_exact<std::int64_t>()) return std::to_string(*integer);
  if (auto boolean = node.value_exact<bool>()) return *boolean ? "true" : "false";
  if (auto real = node.value_exact<double>()) {
    std::array<char, 64> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), *real);
    return std::string(buffer.data(), result.ptr);
  }
  return std::nullopt;
}

int line_of(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

// A setting as a policy row names it, resolved against the catalog.
struct NamedSetting {
  ChangeKind kind = ChangeKind::kFlag;
  std::string name;               // canonical flag spelling or env var name
  const ArgInfo* info = nullptr;  // the catalog row, for a flag the catalog has
  bool negated = false;           // named by the "--no-x" side of a --x/--no-x pair
};

// Builds a Policy from a parsed TOML table, reporting the first problem as one line.
class PolicyReader {
 public:
  PolicyReader(const toml::table& root, std::string source)
      : root_(root), source_(std::move(source)) {}

  Result<Policy> read() {
    Policy policy;
    if (auto e = unknown_keys(root_, "",
                              {"name", "model", "description", "frozen", "swap", "env", "defect",
                               "class_override"})) {
      return *e;
    }
    if (auto e = text(root_, "", "name", 1, true, policy.name)) return *e;
    if (auto e = text(root_, "", "model", 1, true, policy.model)) return *e;
    if (auto e = text(root_, "", "description", 1, false, policy.description)) return *e;
    // Overrides first: they declare the flags the catalog lacks that the other lists may name.
    if (auto e = each_row("class_override",
                          [&](const toml::table& row) { return read_override(row, policy); })) {
      return *e;
    }
    if (auto e =
            each_row("frozen", [&](const toml::table& row) { return read_frozen(row, policy); })) {
      return *e;
    }
    if (auto e = each_row("swap", [&](const toml::table& row) { return read_swap(row, policy); })) {
      return *e;
    }
    if (auto e = each_row("env", [&](const toml::table& row) { return read_env(row, policy); })) {
      return *e;
    }
    if (auto e =
            each_row("defect", [&](const toml::table& row) { return read_defect(row, policy); })) {
      return *e;
    }
    return policy;
  }

 private:
  using Failure = std::optional<Error>;

  Error error_at(int line, std::string_view section, std::string_view key,
                 const std::string& what) const {
    std::string where =
        section.empty() ? std::string(key) : "[[" + std::string(section) + "]] " + std::string(key);
    return make_error(source_ + ":" + std::to_string(line) + ": " + where + ": " + one_line(what));
  }

  Failure unknown_keys(const toml::table& table, std::string_view section,
                       const std::set<std::string_view>& known) const {
    for (const auto& [key, node] : table) {
      if (known.contains(key.str())) continue;
      std::string expected;
      for (std::string_view k : known) expected += (expected.empty() ? "" : ", ") + std::string(k);
      return error_at(line_of(node), section, key.str(),
                      "unknown key (expected one of " + expected + ")");
    }
    return std::nullopt;
  }

  Failure text(const toml::table& table, std::string_view section, std::string_view key,
               int table_line, bool required, std::string& out) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      return required ? Failure(error_at(table_line, section, key, "missing, expected a string"))
                      : std::nullopt;
    }
    auto value = node->value_exact<std::string>();
    if (!value)
      return error_at(line_of(*node), section, key,
                      "expected a string, found " + toml_type_name(*node));
    if (value->empty())
      return error_at(line_of(*node), section, key, "expected a non-empty string");
    out = *value;
    return std::nullopt;
  }

  Failure objective_class(const toml::table& table, std::string_view section, int table_line,
                          ObjectiveClass& out) const {
    std::string word;
    if (auto e = text(table, section, "class", table_line, true, word)) return e;
    std::optional<ObjectiveClass> parsed = parse_class(word);
    if (!parsed) {
      return error_at(line_of(*table.get("class")), section, "class",
                      "expected structural, same-math, numeric or other, found '" + word + "'");
    }
    out = *parsed;
    return std::nullopt;
  }

  template <typename ReadRow>
  Failure each_row(std::string_view section, ReadRow read_row) const {
    const toml::node* node = root_.get(section);
    if (node == nullptr) return std::nullopt;
    const toml::array* rows = node->as_array();
    if (rows == nullptr || !rows->is_array_of_tables()) {
      return error_at(line_of(*node), "", section,
                      "expected an array of tables ([[" + std::string(section) + "]]), found " +
                          toml_type_name(*node));
    }
    if (rows->size() > kPolicyRowsMax) {
      return error_at(line_of(*node), "", section,
                      "more than " + std::to_string(kPolicyRowsMax) + " rows");
    }
    for (const toml::node& row : *rows) {
      if (auto e = read_row(*row.as_table())) return e;
    }
    return std::nullopt;
  }

  // Resolves a setting name; a flag must be in the catalog or declared by a class override.
  Failure setting_name(std::string_view written, int line, std::string_view section,
                       std::string_view key, const Policy& policy, bool declaring,
                       NamedSetting& out) const {
    out = NamedSetting{};
    if (!written.starts_with('-')) {
      if (!is_env_name(written)) {
        return error_at(line, section, key,
                        "expected a flag (--name) or an environment variable name, found '" +
                            std::string(written) + "'");
      }
      out.kind = ChangeKind::kEnv;
      out.name = std::string(written);
      return std::nullopt;
    }
    out.kind = ChangeKind::kFlag;
    out.info = ArgCatalog::megatron().find(written, &out.negated);
    out.name = canonical_flag_name(written);
    if (out.name == "--") {
      return error_at(line, section, key,
                      "expected a flag name, found '" + std::string(written) + "'");
    }
    if (out.info == nullptr && !declaring && policy.find_class_override(out.name) == nullptr) {
      return error_at(line, section, key,
                      "'" + std::string(written) +
                          "' is not a Megatron-LM flag of the catalog; give a flag the catalog "
                          "lacks a [[class_override]] row first");
    }
    return std::nullopt;
  }

  // Normalises a value for `setting` as parse_recipe would; "absent" gives nullopt.
  Failure setting_value(const NamedSetting& setting, const toml::node& node,
                        std::string_view section, std::string_view key,
                        std::optional<std::string>& out) const {
    std::optional<std::string> written = scalar_text(node);
    if (!written) {
      return error_at(line_of(node), section, key,
                      "expected a string, number or boolean, found " + toml_type_name(node));
    }
    if (*written == kAbsent) {
      out.reset();
      return std::nullopt;
    }
    if (setting.kind == ChangeKind::kEnv || setting.info == nullptr) {
      out = *written;
      return std::nullopt;
    }
    if (!setting.info->takes_value) {
      if (*written != "true" && *written != "false") {
        return error_at(line_of(node), section, key,
                        setting.name + " is a switch: expected true, false or \"absent\", found '" +
                            *written + "'");
      }
      const bool on = (*written == "true") != setting.negated;
      out = on ? "true" : "false";
      return std::nullopt;
    }
    Recipe scratch;
    if (Status set = set_flag(scratch, setting.name, *written); !set.ok()) {
      return error_at(line_of(node), section, key, set.error());
    }
    out = scratch.flags.at(setting.name);
    return std::nullopt;
  }

  Failure read_override(const toml::table& row, Policy& policy) const {
    constexpr std::string_view kSection = "class_override";
    const int line = line_of(row);
    if (auto e = unknown_keys(row, kSection, {"setting", "class", "reason"})) return e;
    std::string written;
    if (auto e = text(row, kSection, "setting", line, true, written)) return e;
    NamedSetting setting;
    if (auto e = setting_name(written, line_of(*row.get("setting")), kSection, "setting", policy,
                              true, setting)) {
      return e;
    }
    if (setting.kind != ChangeKind::kFlag) {
      return error_at(line_of(*row.get("setting")), kSection, "setting",
                      "expected a flag; an environment variable takes its class from [[env]]");
    }
    ClassOverride entry;
    entry.setting = setting.name;
    entry.line = line;
    if (auto e = objective_class(row, kSection, line, entry.objective_class)) return e;
    if (auto e = text(row, kSection, "reason", line, true, entry.reason)) return e;
    if (policy.find_class_override(entry.setting) != nullptr) {
      return error_at(line, kSection, "setting", "duplicate row for " + entry.setting);
    }
    policy.class_overrides.push_back(std::move(entry));
    return std::nullopt;
  }

  Failure read_frozen(const toml::table& row, Policy& policy) const {
    constexpr std::string_view kSection = "frozen";
    const int line = line_of(row);
    if (auto e = unknown_keys(row, kSection, {"setting", "value", "reason"})) return e;
    std::string written;
    if (auto e = text(row, kSection, "setting", line, true, written)) return e;
    NamedSetting setting;
    if (auto e = setting_name(written, line_of(*row.get("setting")), kSection, "setting", policy,
                              false, setting)) {
      return e;
    }
    FrozenSetting entry;
    entry.kind = setting.kind;
    entry.setting = setting.name;
    entry.line = line;
    if (const toml::node* value_node = row.get("value")) {
      std::optional<std::string> value;
      if (auto e = setting_value(setting, *value_node, kSection, "value", value)) return e;
      entry.pin = value ? FrozenPin::kValue : FrozenPin::kAbsent;
      entry.value = value.value_or("");
    } else {
      entry.pin = FrozenPin::kBaseline;
    }
    if (auto e = text(row, kSection, "reason", line, true, entry.reason)) return e;
    if (policy.find_frozen(entry.kind, entry.setting) != nullptr) {
      return error_at(line, kSection, "setting", "duplicate row for " + entry.setting);
    }
    policy.frozen.push_back(std::move(entry));
    return std::nullopt;
  }

  Failure read_swap(const toml::table& row, Policy& policy) const {
    constexpr std::string_view kSection = "swap";
    const int line = line_of(row);
    if (auto e = unknown_keys(row, kSection, {"setting", "values", "component_test", "note"})) {
      return e;
    }
    std::string written;
    if (auto e = text(row, kSection, "setting", line, true, written)) return e;
    NamedSetting setting;
    if (auto e = setting_name(written, line_of(*row.get("setting")), kSection, "setting", policy,
                              false, setting)) {
      return e;
    }
    SameMathSwap entry;
    entry.kind = setting.kind;
    entry.setting = setting.name;
    entry.line = line;
    const toml::node* values_node = row.get("values");
    if (values_node == nullptr) {
      return error_at(line, kSection, "values", "missing, expected an array of values");
    }
    const toml::array* values = values_node->as_array();
    if (values == nullptr || values->empty()) {
      return error_at(line_of(*values_node), kSection, "values",
                      "expected a non-empty array of values, found " +
                          (values ? std::string("an empty array") : toml_type_name(*values_node)));
    }
    if (values->size() > kPolicySwapValuesMax) {
      return error_at(line_of(*values_node), kSection, "values",
                      "more than " + std::to_string(kPolicySwapValuesMax) + " values");
    }
    for (const toml::node& value_node : *values) {
      std::optional<std::string> value;
      if (auto e = setting_value(setting, value_node, kSection, "values", value)) return e;
      if (std::find(entry.values.begin(), entry.values.end(), value) == entry.values.end()) {
        entry.values.push_back(std::move(value));
      }
    }
    std::string test_word;
    if (auto e = text(row, kSection, "component_test", line, true, test_word)) return e;
    std::optional<ComponentTest> test = parse_component_test(test_word);
    if (!test) {
      return error_at(line_of(*row.get("component_test")), kSection, "component_test",
                      "expected passed, untested or failed, found '" + test_word + "'");
    }
    entry.component_test = *test;
    if (auto e = text(row, kSection, "note", line, false, entry.note)) return e;
    if (policy.find_swap(entry.kind, entry.setting) != nullptr) {
      return error_at(line, kSection, "setting", "duplicate row for " + entry.setting);
    }
    policy.swaps.push_back(std::move(entry));
    return std::nullopt;
  }

  Failure read_env(const toml::table& row, Policy& policy) const {
    constexpr std::string_view kSection = "env";
    const int line = line_of(row);
    if (auto e = unknown_keys(row, kSection, {"name", "class", "note"})) return e;
    EnvClass entry;
    entry.line = line;
    if (auto e = text(row, kSection, "name", line, true, entry.name)) return e;
    std::string_view stem = entry.name;
    if (stem.ends_with('*')) stem.remove_suffix(1);
    if (!is_env_name(stem)) {
      return error_at(line_of(*row.get("name")), kSection, "name",
                      "expected an environment variable name or a prefix ending in '*', found '" +
                          entry.name + "'");
    }
    if (auto e = objective_class(row, kSection, line, entry.objective_class)) return e;
    if (auto e = text(row, kSection, "note", line, false, entry.note)) return e;
    for (const EnvClass& other : policy.env) {
      if (other.name == entry.name) {
        return error_at(line, kSection, "name", "duplicate row for " + entry.name);
      }
    }
    policy.env.push_back(std::move(entry));
    return std::nullopt;
  }

  Failure read_defect(const toml::table& row, Policy& policy) const {
    constexpr std::string_view kSection = "defect";
    const int line = line_of(row);
    if (auto e = unknown_keys(row, kSection, {"when", "reason"})) return e;
    KnownDefect entry;
    entry.line = line;
    const toml::node* when_node = row.get("when");
    if (when_node == nullptr) {
      return error_at(line, kSection, "when", "missing, expected a table of setting = value");
    }
    const toml::table* when = when_node->as_table();
    if (when == nullptr || when->empty()) {
      return error_at(line_of(*when_node), kSection, "when",
                      "expected a non-empty table of setting = value, found " +
                          (when ? std::string("an empty table") : toml_type_name(*when_node)));
    }
    if (when->size() > kPolicyDefectConditionsMax) {
      return error_at(line_of(*when_node), kSection, "when",
                      "more than " + std::to_string(kPolicyDefectConditionsMax) + " conditions");
    }
    for (const auto& [key, value_node] : *when) {
      const int key_line = static_cast<int>(key.source().begin.line) > 0
                               ? static_cast<int>(key.source().begin.line)
                               : line_of(value_node);
      NamedSetting setting;
      if (auto e = setting_name(key.str(), key_line, kSection, "when", policy, false, setting)) {
        return e;
      }
      DefectCondition condition;
      condition.kind = setting.kind;
      condition.setting = setting.name;
      if (auto e = setting_value(setting, value_node, kSection, "when", condition.value)) return e;
      for (const DefectCondition& other : entry.conditions) {
        if (other.kind == condition.kind && other.setting == condition.setting) {
          return error_at(key_line, kSection, "when",
                          "two conditions on " + condition.setting + " (another spelling?)");
        }
      }
      entry.conditions.push_back(std::move(condition));
    }
    std::sort(entry.conditions.begin(), entry.conditions.end(),
              [](const DefectCondition& a, const DefectCondition& b) {
                return std::tie(a.kind, a.setting) < std::tie(b.kind, b.setting);
              });
    if (auto e = text(row, kSection, "reason", line, true, entry.reason)) return e;
    policy.defects.push_back(std::move(entry));
    return std::nullopt;
  }

  const toml::table& root_;
  std::string source_;
};

}  // namespace

const char* to_string(ComponentTest value) {
  switch (value) {
    case ComponentTest::kPassed:
      return "passed";
    case ComponentTest::kUntested:
      return "untested";
    case ComponentTest::kFailed:
      return "failed";
  }
  return "?";
}

bool EnvClass::matches(std::string_view env_name) const {
  if (name.ends_with('*'))
    return env_name.starts_with(std::string_view(name).substr(0, name.size() - 1));
  return env_name == name;
}

const FrozenSetting* Policy::find_frozen(ChangeKind kind, std::string_view setting) const {
  for (const FrozenSetting& entry : frozen) {
    if (entry.kind == kind && entry.setting == setting) return &entry;
  }
  return nullptr;
}

const SameMathSwap* Policy::find_swap(ChangeKind kind, std::string_view setting) const {
  for (const SameMathSwap& entry : swaps) {
    if (entry.kind == kind && entry.setting == setting) return &entry;
  }
  return nullptr;
}

const ClassOverride* Policy::find_class_override(std::string_view flag) const {
  for (const ClassOverride& entry : class_overrides) {
    if (entry.setting == flag) return &entry;
  }
  return nullptr;
}

const EnvClass* Policy::find_env(std::string_view env_name) const {
  const EnvClass* best = nullptr;
  for (const EnvClass& entry : env) {
    if (!entry.matches(env_name)) continue;
    if (entry.name == env_name) return &entry;
    if (best == nullptr || entry.name.size() > best->name.size()) best = &entry;
  }
  return best;
}

std::string canonical_flag_name(std::string_view spelling, bool* negated) {
  bool is_negation = false;
  const ArgInfo* info = ArgCatalog::megatron().find(spelling, &is_negation);
  if (negated != nullptr) *negated = info != nullptr && is_negation;
  if (info != nullptr) return info->canonical;
  while (spelling.starts_with('-')) spelling.remove_prefix(1);
  return "--" + std::string(spelling);
}

Result<Policy> parse_policy(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return make_error(source + ":" + std::to_string(e.source().begin.line) +
                      ": invalid TOML: " + one_line(std::string(e.description())));
  }
  Result<Policy> policy = PolicyReader(root, source).read();
  if (!policy.ok()) return policy;
  policy->source = source;
  policy->hash = to_hex(sha256(text));
  return policy;
}

Policy default_policy() {
  Policy policy;
  policy.name = "default";
  policy.model = "*";
  policy.description = "The base classification of the Megatron-LM argument table only.";
  policy.source = "<built-in>";
  policy.hash = to_hex(sha256(std::string_view()));
  return policy;
}

}  // namespace attune
