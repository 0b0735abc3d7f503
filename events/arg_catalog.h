// The Megatron-LM argument catalog: every command-line flag of the pinned Megatron-LM commit, with
// its spellings, argparse type, default, the dest name printed in Megatron's "arguments" block, and
// its objective class (structural, same-math, numeric, other).
//
// The table is events/data/megatron_args.tsv, compiled into the binary; ArgCatalog::megatron()
// parses it once, on first use. A catalog is immutable after construction, so any thread may read
// it without synchronization. Pointers it hands out live as long as the catalog (for megatron(),
// the whole program).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"
#include "events/result.h"

namespace attune {

// How a flag's values are read and normalised.
enum class ArgValueKind : std::uint8_t {
  kSwitch,  // takes no value: store_true, store_false, --x/--no-x
  kInt,     // a decimal integer
  kFloat,   // a real number
  kText,    // anything else (str, enum, Megatron's custom types): kept as written
};

// One argparse action, i.e. one row of the table.
struct ArgInfo {
  static constexpr std::size_t kValueCountUnbounded = std::numeric_limits<std::size_t>::max();

  std::string canonical;               // the first spelling: "--tensor-model-parallel-size"
  std::vector<std::string> spellings;  // every alias, canonical first; never the negation
  std::string negation;                // "--no-x" for a --x/--no-x row, else empty
  std::string type_text;               // the table's type column: "int nargs=+", "bool(...)"
  std::string default_text;            // argparse's default as the table writes it: "None", "1"
  std::string group;                   // argparse group: "transformer configuration"
  ObjectiveClass objective_class = ObjectiveClass::kNumeric;
  std::string dest;   // attribute name in Megatron's args ("perform_initialization")
  std::string notes;  // free text from the table
  ArgValueKind value_kind = ArgValueKind::kText;
  bool takes_value = true;           // false exactly for switches
  bool multi_value = false;          // nargs=+, nargs=* or nargs=N
  bool negatable = false;            // a --x/--no-x pair (argparse BooleanOptionalAction)
  std::size_t value_count_min = 1;   // 0 for switches and nargs=*
  std::size_t value_count_max = 1;   // 0 for switches; kValueCountUnbounded for + and *
  std::vector<std::string> choices;  // allowed values; empty means any value of the type
};

class ArgCatalog {
 public:
  // The catalog of events/data/megatron_args.tsv. Parsed on first call (thread-safe); aborts if the
  // compiled-in table does not parse, since that is a build defect, not bad input.
  static const ArgCatalog& megatron();

  // Parses a table in the megatron_args.tsv format: '#' comment lines, one header line, then six
  // tab-separated columns per row. The error names the line and what was expected.
  static Result<ArgCatalog> parse(std::string_view tsv);

  // The row with this spelling (an alias, or the --no-x negation of a --x/--no-x row), with or
  // without leading dashes; nullptr when no row has it. When `negated` is given it is set to
  // whether the spelling was the negation.
  const ArgInfo* find(std::string_view spelling, bool* negated = nullptr) const;

  // The first row (in table order) whose dest is `dest`; nullptr when none. Two rows share a dest
  // when a store_true and a store_false flag write the same attribute.
  const ArgInfo* find_by_dest(std::string_view dest) const;

  // Every row, in table order.
  std::span<const ArgInfo> all() const { return rows_; }

 private:
  struct SpellingEntry {
    std::size_t row = 0;
    bool negated = false;
  };

  std::vector<ArgInfo> rows_;
  std::map<std::string, SpellingEntry, std::less<>> by_spelling_;
  std::map<std::string, std::size_t, std::less<>> by_dest_;
};

}  // namespace attune
