#include "events/arg_catalog.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "events/split.h"

namespace attune {

// Defined in the source generated from events/data/megatron_args.tsv (tools/embed_text.cmake).
extern const char kMegatronArgsTsv[];
extern const std::size_t kMegatronArgsTsv_size;

namespace {

constexpr std::size_t kColumnCount = 6;
constexpr std::size_t kRowCountMax = 10000;  // the real table has under a thousand rows
constexpr std::string_view kHeaderLine = "flag\ttype\tdefault\tgroup\tclass\tnotes";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool valid_spelling(std::string_view spelling) {
  if (spelling.size() < 3 || !spelling.starts_with("--") || !is_name_char(spelling[2])) {
    return false;
  }
  for (const char c : spelling.substr(2)) {
    if (!is_name_char(c) && c != '-' && c != '.') return false;
  }
  return true;
}

Result<ObjectiveClass> parse_class(std::string_view text) {
  if (text == "structural") return ObjectiveClass::kStructural;
  if (text == "same-math") return ObjectiveClass::kSameMath;
  if (text == "numeric") return ObjectiveClass::kNumeric;
  if (text == "other") return ObjectiveClass::kOther;
  return make_error("expected class structural, same-math, numeric or other, found '" +
                    std::string(text) + "'");
}

// The argparse dest: "dest=NAME" in the notes when given, else the canonical spelling without its
// dashes, with '-' read as '_' (argparse's own rule).
std::string derive_dest(std::string_view canonical, std::string_view notes) {
  const std::size_t at = notes.find("dest=");
  if (at != std::string_view::npos) {
    std::size_t end = at + 5;
    while (end < notes.size() && is_name_char(notes[end])) ++end;
    if (end > at + 5) return std::string(notes.substr(at + 5, end - at - 5));
  }
  std::string dest(canonical.substr(2));
  for (char& c : dest) {
    if (c == '-') c = '_';
  }
  return dest;
}

// Fills the type-derived fields of `info` from its type column, e.g. "str nargs=+ choices=a|b".
Status parse_type(std::string_view text, ArgInfo& info) {
  const std::vector<std::string_view> words = split_fields(text, ' ');
  const std::string_view base = words.front();
  if (base.empty()) return make_error("expected a type, found nothing");
  const bool is_switch = base.starts_with("bool(");
  if (is_switch) {
    if (base != "bool(store_true)" && base != "bool(store_false)" && base != "bool(--x/--no-x)") {
      return make_error("unknown switch type '" + std::string(base) + "'");
    }
    info.value_kind = ArgValueKind::kSwitch;
    info.negatable = base == "bool(--x/--no-x)";
    info.takes_value = false;
    info.value_count_min = 0;
    info.value_count_max = 0;
  } else if (base == "int") {
    info.value_kind = ArgValueKind::kInt;
  } else if (base == "float") {
    info.value_kind = ArgValueKind::kFloat;
  } else {
    info.value_kind = ArgValueKind::kText;
  }
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string_view word = words[i];
    if (word.starts_with("nargs=") && !is_switch && !info.multi_value) {
      const std::string_view nargs = word.substr(6);
      info.multi_value = true;
      if (nargs == "+") {
        info.value_count_min = 1;
        info.value_count_max = ArgInfo::kValueCountUnbounded;
      } else if (nargs == "*") {
        info.value_count_min = 0;
        info.value_count_max = ArgInfo::kValueCountUnbounded;
      } else if (nargs.size() == 1 && nargs[0] >= '2' && nargs[0] <= '9') {
        info.value_count_min = static_cast<std::size_t>(nargs[0] - '0');
        info.value_count_max = info.value_count_min;
      } else {
        return make_error("unsupported nargs '" + std::string(nargs) + "'");
      }
    } else if (word.starts_with("choices=") && !is_switch && info.choices.empty()) {
      for (const std::string_view choice : split_fields(word.substr(8), '|')) {
        if (choice.empty()) return make_error("empty choice in '" + std::string(word) + "'");
        info.choices.emplace_back(choice);
      }
    } else {
      return make_error("unexpected '" + std::string(word) + "' in type '" + std::string(text) +
                        "'");
    }
  }
  return Ok{};
}

// Fills the spelling fields of `info` from the flag column; the type must be parsed first.
Status parse_spellings(std::string_view text, ArgInfo& info) {
  for (const std::string_view spelling : split_fields(text, '|')) {
    if (!valid_spelling(spelling)) {
      return make_error("expected a flag spelling like --name, found '" + std::string(spelling) +
                        "'");
    }
    info.spellings.emplace_back(spelling);
  }
  info.canonical = info.spellings.front();
  if (info.negatable) {
    // For argparse's BooleanOptionalAction the table lists "--x|--no-x": the second spelling
    // negates the first, it is not an alias.
    if (info.spellings.size() != 2 || info.spellings[1] != "--no-" + info.canonical.substr(2)) {
      return make_error("expected '--x|--no-x' for a bool(--x/--no-x) row, found '" +
                        std::string(text) + "'");
    }
    info.negation = info.spellings[1];
    info.spellings.pop_back();
  }
  return Ok{};
}

Result<ArgInfo> parse_row(std::string_view line) {
  const std::vector<std::string_view> columns = split_fields(line, '\t');
  if (columns.size() != kColumnCount) {
    return make_error("expected " + std::to_string(kColumnCount) +
                      " tab-separated columns, found " + std::to_string(columns.size()));
  }
  ArgInfo info;
  if (Status status = parse_type(columns[1], info); !status.ok()) return make_error(status.error());
  if (Status status = parse_spellings(columns[0], info); !status.ok()) {
    return make_error(status.error());
  }
  Result<ObjectiveClass> objective_class = parse_class(columns[4]);
  if (!objective_class.ok()) return make_error(objective_class.error());
  info.objective_class = *objective_class;
  info.type_text = columns[1];
  info.default_text = columns[2];
  info.group = columns[3];
  info.notes = columns[5];
  info.dest = derive_dest(info.canonical, info.notes);
  return info;
}

}  // namespace

Result<ArgCatalog> ArgCatalog::parse(std::string_view tsv) {
  ArgCatalog catalog;
  bool header_seen = false;
  std::size_t line_number = 0;
  for (std::string_view line : split_fields(tsv, '\n')) {
    ++line_number;
    const std::string where = "line " + std::to_string(line_number) + ": ";
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty() || line.starts_with('#')) continue;
    if (!header_seen) {
      if (line != kHeaderLine) {
        return make_error(where + "expected the header '" + std::string(kHeaderLine) + "'");
      }
      header_seen = true;
      continue;
    }
    if (catalog.rows_.size() == kRowCountMax) {
      return make_error(where + "more than " + std::to_string(kRowCountMax) + " rows");
    }
    Result<ArgInfo> info = parse_row(line);
    if (!info.ok()) return make_error(where + info.error());
    const std::size_t row = catalog.rows_.size();
    for (const std::string& spelling : info->spellings) {
      if (!catalog.by_spelling_.emplace(spelling, SpellingEntry{row, false}).second) {
        return make_error(where + spelling + " is already a spelling of another row");
      }
    }
    if (info->negatable &&
        !catalog.by_spelling_.emplace(info->negation, SpellingEntry{row, true}).second) {
      return make_error(where + info->negation + " is already a spelling of another row");
    }
    catalog.by_dest_.emplace(info->dest,
                             row);  // keeps the first row for a shared dest
    catalog.rows_.push_back(std::move(info).value());
  }
  if (!header_seen) return make_error("line 1: expected the header, found an empty table");
  return catalog;
}

const ArgCatalog& ArgCatalog::megatron() {
  static const ArgCatalog catalog = [] {
    Result<ArgCatalog> parsed = parse(std::string_view(kMegatronArgsTsv, kMegatronArgsTsv_size));
    if (!parsed.ok()) {
      // The table is compiled in: a table that does not parse is a build defect.
      std::fprintf(stderr, "attune: events/data/megatron_args.tsv: %s\n", parsed.error().c_str());
      std::abort();
    }
    return std::move(parsed).value();
  }();
  return catalog;
}

const ArgInfo* ArgCatalog::find(std::string_view spelling, bool* negated) const {
  if (negated != nullptr) *negated = false;
  while (spelling.starts_with('-')) spelling.remove_prefix(1);
  if (spelling.empty()) return nullptr;
  const auto it = by_spelling_.find("--" + std::string(spelling));
  if (it == by_spelling_.end()) return nullptr;
  if (negated != nullptr) *negated = it->second.negated;
  return &rows_[it->second.row];
}

const ArgInfo* ArgCatalog::find_by_dest(std::string_view dest) const {
  const auto it = by_dest_.find(dest);
  return it == by_dest_.end() ? nullptr : &rows_[it->second];
}

}  // namespace attune
