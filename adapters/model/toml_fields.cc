#include "adapters/model/toml_fields.h"

#include <cmath>
#include <sstream>

#include "gate/toml_names.h"

namespace attune::sim {
namespace {

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

TomlFields::TomlFields(std::string_view text, std::string_view source) : source_(source) {
  try {
    root_ = toml::parse(text, std::string(source));
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    std::string what(e.description());
    error_ = source_ + ":" + std::to_string(begin.line) + ": " + what;
  }
}

const toml::node* TomlFields::find(std::string_view key) const { return root_.at_path(key).node(); }

bool TomlFields::has(std::string_view key) const { return find(key) != nullptr; }

int TomlFields::line_of(const toml::node* node) const {
  return node ? static_cast<int>(node->source().begin.line) : 0;
}

void TomlFields::fail(int line, std::string_view key, const std::string& what) {
  if (error_) return;
  const std::string where = line > 0 ? source_ + ":" + std::to_string(line) : source_;
  error_ = where + ": key '" + std::string(key) + "' " + what;
}

void TomlFields::note_missing(std::string_view key) {
  if (!missing_) missing_ = source_ + ": key '" + std::string(key) + "' is required and missing";
}

void TomlFields::fail_at(std::string_view key, const std::string& what) {
  fail(line_of(find(key)), key, what);
}

void TomlFields::read(std::string_view key, std::string& out, bool required) {
  known_.emplace(key);
  const toml::node* node = find(key);
  if (!node) {
    if (required) note_missing(key);
    return;
  }
  if (!node->is_string()) {
    fail(line_of(node), key, "expects a string, found " + toml_type_name(*node));
    return;
  }
  out = node->as_string()->get();
}

void TomlFields::read(std::string_view key, bool& out, bool required) {
  known_.emplace(key);
  const toml::node* node = find(key);
  if (!node) {
    if (required) note_missing(key);
    return;
  }
  if (!node->is_boolean()) {
    fail(line_of(node), key, "expects true or false, found " + toml_type_name(*node));
    return;
  }
  out = node->as_boolean()->get();
}

void TomlFields::read(std::string_view key, int& out, bool required, int minimum) {
  known_.emplace(key);
  const toml::node* node = find(key);
  if (!node) {
    if (required) note_missing(key);
    return;
  }
  if (!node->is_integer()) {
    fail(line_of(node), key,
         "expects an integer >= " + std::to_string(minimum) + ", found " + toml_type_name(*node));
    return;
  }
  const std::int64_t value = node->as_integer()->get();
  if (value < minimum || value > 1'000'000'000) {
    fail(line_of(node), key,
         "expects an integer >= " + std::to_string(minimum) + ", found " + std::to_string(value));
    return;
  }
  out = static_cast<int>(value);
}

void TomlFields::read(std::string_view key, double& out, bool required, double minimum,
                      double maximum) {
  known_.emplace(key);
  const toml::node* node = find(key);
  if (!node) {
    if (required) note_missing(key);
    return;
  }
  double value = 0;
  if (node->is_integer()) {
    value = static_cast<double>(node->as_integer()->get());
  } else if (node->is_floating_point()) {
    value = node->as_floating_point()->get();
  } else {
    fail(line_of(node), key, "expects a number, found " + toml_type_name(*node));
    return;
  }
  if (!std::isfinite(value) || value < minimum || value > maximum) {
    std::string range = "a number >= " + number_text(minimum);
    if (maximum < 1e300) range += " and <= " + number_text(maximum);
    fail(line_of(node), key, "expects " + range + ", found " + number_text(value));
    return;
  }
  out = value;
}

void TomlFields::collect_unknown(const toml::table& table, const std::string& prefix) {
  for (const auto& [name, node] : table) {
    const std::string key = prefix + std::string(name.str());
    if (node.is_table()) {
      collect_unknown(*node.as_table(), key + ".");
      continue;
    }
    if (!known_.contains(key)) {
      fail(line_of(&node), key, "is unknown");
      return;
    }
  }
}

Status TomlFields::finish() {
  if (!error_) collect_unknown(root_, "");
  if (error_) return make_error(*error_);
  if (missing_) return make_error(*missing_);
  return Ok{};
}

}  // namespace attune::sim
