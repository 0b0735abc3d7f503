// Reads the fields of a TOML document for the simulator's data files (models, hardware) and
// reports the first problem as one line naming the file, the line and the key:
//   "my-model.toml:7: key 'moe.router_topk' expects an integer >= 1, found 0"
//   "my-model.toml:9: unknown key 'moe.router_top_k'"
//
// Internal to adapters/model: the TOML library stays out of the public headers. Usage: open a
// document, read every field it may hold, then call finish(), which also reports unknown keys.
// Not thread-safe; one reader per document.
#pragma once

#include <toml++/toml.h>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "events/result.h"

namespace attune::sim {

class TomlFields {
 public:
  // Parses `text`; a syntax error is kept and reported by finish().
  TomlFields(std::string_view text, std::string_view source);

  // Each reader takes a dotted key ("moe.router_topk"), marks it known and leaves `out` unchanged
  // when the key is absent. A required key that is absent is an error.
  void read(std::string_view key, std::string& out, bool required);
  void read(std::string_view key, bool& out, bool required);
  void read(std::string_view key, int& out, bool required, int minimum);
  void read(std::string_view key, double& out, bool required, double minimum,
            double maximum = 1e300);

  // Whether the document holds the key (a table or a value).
  bool has(std::string_view key) const;

  // A problem found by the caller about a key it read (e.g. two fields that disagree).
  void fail_at(std::string_view key, const std::string& what);

  // The first problem: a syntax, type or value error, else an unknown key (a misspelt key is
  // reported where it stands), else a missing required key.
  Status finish();

 private:
  const toml::node* find(std::string_view key) const;
  int line_of(const toml::node* node) const;
  void fail(int line, std::string_view key, const std::string& what);
  void note_missing(std::string_view key);
  void collect_unknown(const toml::table& table, const std::string& prefix);

  std::string source_;
  toml::table root_;
  std::set<std::string, std::less<>> known_;
  std::optional<std::string> error_;
  std::optional<std::string> missing_;
};

}  // namespace attune::sim
