#include "events/recipe.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <system_error>
#include <utility>

#include "events/arg_catalog.h"
#include "events/assert.h"
#include "events/sha256.h"

namespace attune {
namespace {

// Launch scripts are a few kilobytes; anything this large is not a recipe.
constexpr std::size_t kRecipeBytesMax = std::size_t{1} << 20;

// ---- Shell words --------------------------------------------------------------------------------

struct Word {
  std::string text;              // after quote and escape removal
  int line = 0;                  // the line the word starts on, from 1
  bool quoted = false;           // some character came from quotes or a backslash escape
  std::size_t plain_prefix = 0;  // leading characters of text that were neither quoted nor escaped
  bool ends_command = false;     // a newline or ';' follows: a shell command ends here
  bool semicolon = false;        // the command ends with ';'
};

struct Failure {
  int line = 0;
  std::string message;
};

enum class Comments : std::uint8_t { kAllowed, kLiteral };

// Splits shell text into words, appending to `words`: one pass over the text, a member per kind
// of character that needs more than appending.
class WordSplitter {
 public:
  WordSplitter(std::string_view text, Comments comments, std::vector<Word>& words)
      : text_(text), comments_(comments), words_(words) {}

  // Returns the first failure, if any.
  std::optional<Failure> run() {
    while (i_ < text_.size()) {
      const char c = text_[i_];
      if (c == '\\') {
        backslash();
      } else if (c == '\n') {
        end_command();
        ++line_;
        ++i_;
      } else if (c == ';') {
        end_command();
        if (!words_.empty()) words_.back().semicolon = true;
        ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        end_word();
        ++i_;
      } else if (c == '#' && !in_word_ && comments_ == Comments::kAllowed) {
        while (i_ < text_.size() && text_[i_] != '\n') ++i_;
      } else if (c == '$' && no_op_substitution()) {
        // `$(: note)` runs the no-op command `:` and expands to nothing: a note in a command
        // line, such as the "$(: changed)" marks of a script attune ships.
      } else if (c == '\'') {
        if (auto failure = single_quoted()) return failure;
      } else if (c == '"') {
        if (auto failure = double_quoted()) return failure;
      } else {
        start_word();
        if (!current_.quoted) ++current_.plain_prefix;
        current_.text += c;
        ++i_;
      }
    }
    end_command();
    return std::nullopt;
  }

 private:
  void start_word() {
    if (in_word_) return;
    current_ = Word{};
    current_.line = line_;
    in_word_ = true;
    expands_arguments_ = false;
  }
  void end_word() {
    if (!in_word_) return;
    in_word_ = false;
    // "$@" passes on the script's own arguments, and a recipe is read with none: no word, as in
    // bash. A script attune ships ends its command with it. A '$@' in single quotes, or with its
    // '$' escaped, is the two characters themselves.
    if (expands_arguments_ && current_.plain_prefix == 0 && current_.text == "$@") return;
    words_.push_back(std::move(current_));
  }
  void end_command() {
    end_word();
    if (!words_.empty()) words_.back().ends_command = true;
  }

  // At "$(:" followed by a blank, with its ')' on this line: moves past it and returns true.
  bool no_op_substitution() {
    if (text_.substr(i_, 3) != "$(:" || i_ + 3 >= text_.size() ||
        (text_[i_ + 3] != ' ' && text_[i_ + 3] != '\t')) {
      return false;
    }
    const std::size_t close = text_.find(')', i_ + 3);
    const std::size_t newline = text_.find('\n', i_ + 3);
    if (close == std::string_view::npos || newline < close) return false;
    i_ = close + 1;
    return true;
  }

  // A backslash escapes the next character, or continues the line.
  void backslash() {
    std::size_t next = i_ + 1;
    while (next < text_.size() &&
           (text_[next] == ' ' || text_[next] == '\t' || text_[next] == '\r')) {
      ++next;
    }
    if (next == text_.size() || text_[next] == '\n') {
      // A line continuation. Blanks after the backslash are a common paste accident, so they are
      // tolerated rather than read as an escaped blank.
      if (next < text_.size()) ++line_;
      i_ = next + 1;
      return;
    }
    start_word();
    current_.quoted = true;
    current_.text += text_[i_ + 1];
    i_ += 2;
  }

  // '...': every character literal, newlines included.
  std::optional<Failure> single_quoted() {
    const int open_line = line_;
    start_word();
    current_.quoted = true;
    const std::size_t close = text_.find('\'', i_ + 1);
    if (close == std::string_view::npos) return Failure{open_line, "unterminated ' quote"};
    for (std::size_t k = i_ + 1; k < close; ++k) {
      if (text_[k] == '\n') ++line_;
      current_.text += text_[k];
    }
    i_ = close + 1;
    return std::nullopt;
  }

  // "...": a backslash escapes " \ $ ` and continues a line; everything else is literal.
  std::optional<Failure> double_quoted() {
    const int open_line = line_;
    start_word();
    current_.quoted = true;
    ++i_;
    while (i_ < text_.size()) {
      const char d = text_[i_];
      const char e = i_ + 1 < text_.size() ? text_[i_ + 1] : '\0';
      if (d == '"') {
        ++i_;
        return std::nullopt;
      }
      if (d == '\\' && e == '\n') {
        ++line_;
        i_ += 2;
      } else if (d == '\\' && (e == '"' || e == '\\' || e == '$' || e == '`')) {
        current_.text += e;
        i_ += 2;
      } else {
        if (d == '\n') ++line_;
        if (d == '$' && e == '@') expands_arguments_ = true;
        current_.text += d;
        ++i_;
      }
    }
    return Failure{open_line, "unterminated \" quote"};
  }

  std::string_view text_;
  Comments comments_;
  std::vector<Word>& words_;
  std::size_t i_ = 0;
  int line_ = 1;
  Word current_;
  bool in_word_ = false;
  bool expands_arguments_ = false;  // the word holds an unescaped "$@" in double quotes
};

// Splits shell text into words. Appends to `words`; returns the first failure, if any.
std::optional<Failure> split_words(std::string_view text, Comments comments,
                                   std::vector<Word>& words) {
  return WordSplitter(text, comments, words).run();
}

bool is_shell_safe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == '/' || c == ':' || c == ',' || c == '+' || c == '@' ||
         c == '%';
}

// The word as the shell reads it back: bare when safe, else single-quoted. `equals_safe`: '=' is
// safe too (a word after the command, which the shell never takes for an assignment).
std::string quote_word(std::string_view word, bool equals_safe = false) {
  bool safe = !word.empty();
  for (const char c : word) safe = safe && (is_shell_safe(c) || (equals_safe && c == '='));
  if (safe) return std::string(word);
  std::string quoted = "'";
  for (const char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string joined;
  for (const std::string& word : words) {
    if (!joined.empty()) joined += ' ';
    joined += quote_word(word);
  }
  return joined;
}

// ---- Names and values ---------------------------------------------------------------------------

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool valid_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (const char c : name) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

// A flag name after its "--": a letter, digit or '_' first, then also '-' and '.'.
bool valid_flag_name(std::string_view name) {
  if (name.empty() || !is_name_char(name[0])) return false;
  for (const char c : name) {
    if (!is_name_char(c) && c != '-' && c != '.') return false;
  }
  return true;
}

bool is_flag_word(std::string_view word) { return word.starts_with("--"); }

std::optional<std::string> canonical_int(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  // Python's int() takes single underscores between digits ("9_765_625"), as argparse does.
  std::string digits;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_' && i > 0 && i + 1 < text.size() && text[i - 1] != '_' && text[i + 1] != '_') {
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    digits += c;
  }
  text = digits;
  while (text.size() > 1 && text[0] == '0') text.remove_prefix(1);
  if (text == "0") return "0";
  return (negative ? "-" : "") + std::string(text);
}

std::optional<std::string> canonical_float(std::string_view text) {
  // from_chars reads what Python's float() reads (decimal, exponent, inf, nan) but a '+'.
  if (text.starts_with('+')) {
    text.remove_prefix(1);
    if (text.starts_with('+') || text.starts_with('-')) return std::nullopt;
  }
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  ATTUNE_ASSERT(written.ec == std::errc(), "a double always formats");
  return std::string(buffer, written.ptr);
}

// The canonical form of one value of `info`, or what was expected instead.
Result<std::string> canonical_value(const ArgInfo& info, std::string_view spelling,
                                    std::string_view text) {
  std::string value(text);
  if (info.value_kind == ArgValueKind::kInt) {
    std::optional<std::string> normalised = canonical_int(text);
    if (!normalised) {
      return make_error(std::string(spelling) + " expects an integer, found '" + value + "'");
    }
    value = *normalised;
  } else if (info.value_kind == ArgValueKind::kFloat) {
    std::optional<std::string> normalised = canonical_float(text);
    if (!normalised) {
      return make_error(std::string(spelling) + " expects a float, found '" + value + "'");
    }
    value = *normalised;
  }
  if (info.choices.empty()) return value;
  for (const std::string& choice : info.choices) {
    // Compare normalised forms so "03" matches the int choice "3".
    const bool numeric = info.value_kind == ArgValueKind::kInt;
    if (value == (numeric ? canonical_int(choice).value_or(choice) : choice)) return value;
  }
  std::string allowed;
  for (const std::string& choice : info.choices) allowed += (allowed.empty() ? "" : "|") + choice;
  return make_error(std::string(spelling) + " expects one of " + allowed + ", found '" + value +
                    "'");
}

Status check_value_count(const ArgInfo& info, std::string_view spelling, std::size_t count) {
  const std::string name(spelling);
  if (count >= info.value_count_min && count <= info.value_count_max) return Ok{};
  if (!info.multi_value) return make_error(name + " expects a value, found none");
  if (info.value_count_min == info.value_count_max) {
    return make_error(name + " expects " + std::to_string(info.value_count_min) +
                      " values, found " + std::to_string(count));
  }
  return make_error(name + " expects at least " + std::to_string(info.value_count_min) +
                    (info.value_count_min == 1 ? " value" : " values") + ", found " +
                    (count == 0 ? std::string("none") : std::to_string(count)));
}

Status check_not_flag_like(std::string_view spelling, std::string_view value) {
  if (!is_flag_word(value)) return Ok{};
  return make_error(std::string(spelling) + " value may not begin with '--', found '" +
                    std::string(value) + "'");
}

// The canonical value of a catalog flag given the words that followed it.
Result<std::string> canonical_values(const ArgInfo& info, std::string_view spelling,
                                     const std::vector<std::string>& texts) {
  if (Status count = check_value_count(info, spelling, texts.size()); !count.ok()) {
    return make_error(count.error());
  }
  std::vector<std::string> values;
  for (const std::string& text : texts) {
    Result<std::string> value = canonical_value(info, spelling, text);
    if (!value.ok()) return make_error(value.error());
    values.push_back(std::move(value).value());
  }
  if (!info.multi_value) return values.empty() ? std::string() : values.front();
  return join_words(values);
}

// "--name" for a flag given with any number of leading dashes, or why it is not a flag name.
Result<std::string> flag_spelling(std::string_view flag) {
  std::string_view name = flag;
  while (name.starts_with('-')) name.remove_prefix(1);
  if (!valid_flag_name(name)) {
    return make_error("invalid flag name '" + std::string(flag) + "'");
  }
  return "--" + std::string(name);
}

ObjectiveClass flag_class(std::string_view flag) {
  const ArgInfo* info = ArgCatalog::megatron().find(flag);
  return info == nullptr ? ObjectiveClass::kNumeric : info->objective_class;
}

// ---- Parsing ------------------------------------------------------------------------------------

enum class Section : std::uint8_t { kEnv, kCommand, kFlags };

// Where a setting was first given, to report a repeat.
struct FirstSeen {
  std::string spelling;
  int line = 0;
};

// The position of '=' when the word is a shell assignment NAME=VALUE (the name part unquoted).
std::optional<std::size_t> assignment_equals(const Word& word) {
  const std::size_t equals = word.text.find('=');
  if (is_flag_word(word.text) || equals == std::string::npos || equals >= word.plain_prefix) {
    return std::nullopt;
  }
  return equals;
}

// The command words as shell words that read back as command words, not as a keyword.
std::string command_text(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) {
    if (!text.empty()) text += ' ';
    text += text.empty() && word == "export" ? "'export'" : quote_word(word);
  }
  return text;
}

// A setting given a second time (under any of its spellings), named with where it came first.
std::optional<Failure> given_twice(const std::map<std::string, FirstSeen>& seen,
                                   const std::string& setting, const std::string& spelling,
                                   int line) {
  const auto first = seen.find(setting);
  if (first == seen.end()) return std::nullopt;
  std::string message = spelling + " given twice";
  if (first->second.spelling != spelling) {
    message +=
        " (as " + first->second.spelling + " on line " + std::to_string(first->second.line) + ")";
  }
  return Failure{line, message};
}

// One flag at words[i] and the words that belong to it, into `recipe`; `i` moves past them.
// `seen` holds the settings already given, keyed by their canonical spelling.
std::optional<Failure> read_flag(const std::vector<Word>& words, std::size_t& i,
                                 std::map<std::string, FirstSeen>& seen, Recipe& recipe) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  const Word& word = words[i];
  const std::string& text = word.text;
  // A word after ';' begins another command: never a flag's value.
  const auto after_semicolon = [&](std::size_t at) { return at > 0 && words[at - 1].semicolon; };
  const std::size_t equals = text.find('=');
  const bool attached = equals != std::string::npos;
  const std::string spelling = text.substr(0, equals);
  if (!valid_flag_name(std::string_view(spelling).substr(2))) {
    return Failure{word.line, "invalid flag '" + spelling + "'"};
  }
  bool negated = false;
  const ArgInfo* info = catalog.find(spelling, &negated);
  const std::string setting = info != nullptr ? info->canonical : spelling;
  if (std::optional<Failure> twice = given_twice(seen, setting, spelling, word.line)) return twice;
  seen[setting] = FirstSeen{spelling, word.line};
  ++i;

  // The words that belong to this flag, with their lines.
  std::vector<std::string> texts;
  std::vector<int> lines;
  if (attached) {
    texts.push_back(text.substr(equals + 1));
    lines.push_back(word.line);
    if (Status status = check_not_flag_like(spelling, texts.back()); !status.ok()) {
      return Failure{word.line, status.error()};
    }
  } else if (info == nullptr || info->takes_value) {
    // A flag missing from the catalog takes every word up to the next flag, as a launch
    // script passed them (a fork's nargs flag, e.g. --step-batch-size-schedule 0:16 2.4B:320).
    const bool many = info == nullptr || info->multi_value;
    while (i < words.size() && !is_flag_word(words[i].text) && !after_semicolon(i) &&
           (many || texts.empty())) {
      texts.push_back(words[i].text);
      lines.push_back(words[i].line);
      ++i;
    }
  }

  if (info == nullptr) {
    recipe.flags[spelling] = join_words(texts);
  } else if (!info->takes_value) {
    if (attached) {
      return Failure{word.line, spelling + " takes no value, found '" + texts.front() + "'"};
    }
    if (i < words.size() && !is_flag_word(words[i].text) && !after_semicolon(i)) {
      return Failure{words[i].line, spelling + " takes no value, found '" + words[i].text + "'"};
    }
    recipe.flags[negated ? info->negation : info->canonical] = "";
  } else {
    if (Status count = check_value_count(*info, spelling, texts.size()); !count.ok()) {
      return Failure{word.line, count.error()};
    }
    std::vector<std::string> values;
    for (std::size_t k = 0; k < texts.size(); ++k) {
      Result<std::string> value = canonical_value(*info, spelling, texts[k]);
      if (!value.ok()) return Failure{lines[k], value.error()};
      values.push_back(std::move(value).value());
    }
    recipe.flags[info->canonical] = info->multi_value ? join_words(values) : values.front();
  }
  return std::nullopt;
}

std::optional<Failure> parse_words(const std::vector<Word>& words, Recipe& recipe) {
  Section section = Section::kEnv;
  bool in_export = false;
  std::vector<std::string> command_words;
  // Keyed by the setting (canonical spelling), so aliases and --x/--no-x count as one.
  std::map<std::string, FirstSeen> seen;
  std::size_t i = 0;
  for (const Word& word : words) {
    if (word.text.find('\n') != std::string::npos) {
      return Failure{word.line, "a quoted word spans lines; a recipe's values are one line each"};
    }
  }
  // A word after ';' begins another command: never a flag's value.
  const auto after_semicolon = [&](std::size_t at) { return at > 0 && words[at - 1].semicolon; };
  while (i < words.size()) {
    const Word& word = words[i];
    const std::string& text = word.text;
    if (section != Section::kEnv && after_semicolon(i)) {
      return Failure{word.line, "a second command after ';'; a recipe is one command"};
    }
    if (section == Section::kEnv) {
      if (!in_export && !word.quoted && text == "export") {
        if (word.ends_command) return Failure{word.line, "export expects NAME=VALUE"};
        in_export = true;
        ++i;
        continue;
      }
      // `set -e` and the like: the shell's own options, before the recipe's command.
      if (!in_export && !word.quoted && text == "set") {
        while (i < words.size() && !words[i].ends_command) ++i;
        ++i;
        continue;
      }
      if (const std::optional<std::size_t> equals = assignment_equals(word)) {
        const std::string name = text.substr(0, *equals);
        if (!valid_env_name(name)) {
          return Failure{word.line, "invalid environment variable name '" + name + "'"};
        }
        if (recipe.env.contains(name)) return Failure{word.line, name + " given twice"};
        recipe.env[name] = text.substr(*equals + 1);
        in_export = in_export && !word.ends_command;
        ++i;
        continue;
      }
      if (in_export) return Failure{word.line, "export expects NAME=VALUE, found '" + text + "'"};
      section = Section::kCommand;
    }
    if (section == Section::kCommand) {
      if (!is_flag_word(text)) {
        command_words.push_back(text);
        ++i;
        continue;
      }
      section = Section::kFlags;
    }
    if (!is_flag_word(text)) {
      return Failure{word.line, "stray word '" + text + "' after the flags started"};
    }

    if (auto failure = read_flag(words, i, seen, recipe)) return failure;
  }
  recipe.command = command_text(command_words);
  return std::nullopt;
}

template <typename Classify>
void diff_maps(const std::map<std::string, std::string>& before,
               const std::map<std::string, std::string>& after, ChangeKind kind, Classify classify,
               std::vector<SettingChange>& changes) {
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    SettingChange change;
    change.kind = kind;
    const bool take_before = a == after.end() || (b != before.end() && b->first <= a->first);
    const bool take_after = b == before.end() || (a != after.end() && a->first <= b->first);
    change.name = take_before ? b->first : a->first;
    if (take_before) {
      change.before_present = true;
      change.before = b->second;
      ++b;
    }
    if (take_after) {
      change.after_present = true;
      change.after = a->second;
      ++a;
    }
    if (change.before_present && change.after_present && change.before == change.after) continue;
    change.objective_class = classify(change.name);
    changes.push_back(std::move(change));
  }
}

}  // namespace

Result<Recipe> parse_recipe(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  if (text.size() > kRecipeBytesMax) {
    return make_error(source + ":1: recipe is larger than " + std::to_string(kRecipeBytesMax) +
                      " bytes");
  }
  std::vector<Word> words;
  if (std::optional<Failure> failure = split_words(text, Comments::kAllowed, words)) {
    return make_error(source + ":" + std::to_string(failure->line) + ": " + failure->message);
  }
  Recipe recipe;
  if (std::optional<Failure> failure = parse_words(words, recipe)) {
    return make_error(source + ":" + std::to_string(failure->line) + ": " + failure->message);
  }
  return recipe;
}

RecipeOrder recipe_order(std::string_view text) {
  RecipeOrder order;
  std::vector<Word> words;
  if (!parse_recipe(text, "").ok() || split_words(text, Comments::kAllowed, words)) return order;
  const ArgCatalog& catalog = ArgCatalog::megatron();
  bool flags_started = false;
  for (const Word& word : words) {
    if (is_flag_word(word.text)) {
      flags_started = true;
      const std::string spelling = word.text.substr(0, word.text.find('='));
      bool negated = false;
      const ArgInfo* info = catalog.find(spelling, &negated);
      order.flags.push_back(info == nullptr ? spelling
                                            : (negated ? info->negation : info->canonical));
    } else if (const std::optional<std::size_t> equals = assignment_equals(word);
               equals && !flags_started) {
      order.env.push_back(word.text.substr(0, *equals));
    }
  }
  return order;
}

std::string shell_quote(std::string_view word) { return quote_word(word); }

std::string shell_quote_argument(std::string_view word) { return quote_word(word, true); }

std::string flag_text(const std::string& flag, const std::string& value) {
  std::string text = flag;
  const ArgInfo* info = ArgCatalog::megatron().find(flag);
  if (info == nullptr || info->multi_value) {
    // Already a list of shell words (a flag missing from the catalog keeps its words so too).
    if (!value.empty()) text += " " + value;
  } else if (info->takes_value) {
    text += " " + quote_word(value);
  }
  return text;
}

std::string canonical_text(const Recipe& recipe) {
  std::string text;
  for (const auto& [name, value] : recipe.env) text += name + "=" + quote_word(value) + "\n";
  if (!recipe.command.empty()) text += recipe.command + "\n";
  for (const auto& [flag, value] : recipe.flags) text += flag_text(flag, value) + "\n";
  return text;
}

std::string recipe_hash(const Recipe& recipe) {
  const Digest digest = sha256(canonical_text(recipe));
  return to_hex(digest);
}

std::vector<SettingChange> diff_recipes(const Recipe& baseline, const Recipe& candidate) {
  std::vector<SettingChange> changes;
  diff_maps(baseline.flags, candidate.flags, ChangeKind::kFlag, flag_class, changes);
  diff_maps(
      baseline.env, candidate.env, ChangeKind::kEnv,
      [](std::string_view) { return ObjectiveClass::kNumeric; }, changes);
  return changes;
}

Status set_env(Recipe& recipe, std::string_view name, std::string_view value) {
  if (!valid_env_name(name)) {
    return make_error("'" + std::string(name) + "' is not an environment variable name");
  }
  if (value.find('\n') != std::string_view::npos || value.find('\r') != std::string_view::npos) {
    return make_error(std::string(name) +
                      ": a value spans lines; a recipe's values are one line each");
  }
  recipe.env[std::string(name)] = std::string(value);
  return Ok{};
}

Status set_flag(Recipe& recipe, std::string_view flag, std::string_view value) {
  Result<std::string> spelling = flag_spelling(flag);
  if (!spelling.ok()) return make_error(spelling.error());
  if (value.find('\n') != std::string_view::npos || value.find('\r') != std::string_view::npos) {
    return make_error(*spelling + ": a value spans lines; a recipe's values are one line each");
  }
  bool negated = false;
  const ArgInfo* info = ArgCatalog::megatron().find(*spelling, &negated);
  if (info == nullptr) {
    if (Status status = check_not_flag_like(*spelling, value); !status.ok()) return status;
    recipe.flags[*spelling] = value.empty() ? std::string() : quote_word(value);
    return Ok{};
  }
  if (!info->takes_value) {
    if (value != "" && value != "true" && value != "false") {
      return make_error(*spelling + " is a switch: expects true, false or nothing, found '" +
                        std::string(value) + "'");
    }
    const bool on = (value != "false") != negated;
    recipe.flags.erase(info->canonical);
    if (info->negatable) {
      recipe.flags.erase(info->negation);
      recipe.flags[on ? info->canonical : info->negation] = "";
    } else if (on) {
      recipe.flags[info->canonical] = "";
    }
    return Ok{};
  }
  std::vector<std::string> texts;
  if (info->multi_value) {
    std::vector<Word> words;
    if (std::optional<Failure> failure = split_words(value, Comments::kLiteral, words)) {
      return make_error(*spelling + " value has an " + failure->message);
    }
    for (Word& word : words) texts.push_back(std::move(word.text));
  } else {
    texts.emplace_back(value);
  }
  for (const std::string& text : texts) {
    if (Status status = check_not_flag_like(*spelling, text); !status.ok()) return status;
  }
  Result<std::string> canonical = canonical_values(*info, *spelling, texts);
  if (!canonical.ok()) return make_error(canonical.error());
  recipe.flags[info->canonical] = std::move(canonical).value();
  return Ok{};
}

Status remove_flag(Recipe& recipe, std::string_view flag) {
  Result<std::string> spelling = flag_spelling(flag);
  if (!spelling.ok()) return make_error(spelling.error());
  const ArgInfo* info = ArgCatalog::megatron().find(*spelling);
  std::size_t removed = 0;
  if (info == nullptr) {
    removed = recipe.flags.erase(*spelling);
  } else {
    removed = recipe.flags.erase(info->canonical);
    if (info->negatable) removed += recipe.flags.erase(info->negation);
  }
  if (removed == 0) return make_error(*spelling + " is not set");
  return Ok{};
}

}  // namespace attune
