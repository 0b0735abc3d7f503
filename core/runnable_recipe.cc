#include "core/runnable_recipe.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "events/arg_catalog.h"

namespace attune {
namespace {

// Names in the baseline's order first, then the rest in sorted order.
std::vector<std::string> ordered_names(const std::map<std::string, std::string>& present,
                                       const std::vector<std::string>& order) {
  std::vector<std::string> names;
  std::set<std::string> placed;
  for (const std::string& name : order) {
    if (present.contains(name) && placed.insert(name).second) names.push_back(name);
  }
  for (const auto& [name, value] : present) {
    if (placed.insert(name).second) names.push_back(name);
  }
  return names;
}

std::string change_comment(const SettingChange& change) {
  const std::string name = change.name;
  const auto shown = [&](const std::string& value) {
    if (change.kind == ChangeKind::kEnv) return name + "=" + shell_quote(value);
    return flag_text(name, value);
  };
  if (!change.before_present) return "#   added:   " + shown(change.after);
  if (!change.after_present) return "#   removed: " + shown(change.before);
  return "#   changed: " + shown(change.before) + "  ->  " + shown(change.after);
}

bool differs(const std::map<std::string, std::string>& baseline, const std::string& name,
             const std::string& value) {
  const auto found = baseline.find(name);
  return found == baseline.end() || found->second != value;
}

// Where a flag is written literally in a script: the spelling's offset, and its value token's.
struct Occurrence {
  std::size_t at = 0;        // the spelling
  std::size_t value_at = 0;  // the value token (npos: none)
  std::size_t value_size = 0;
  int line = 0;
};

bool word_boundary(std::string_view text, std::size_t at) {
  if (at >= text.size()) return true;
  const char c = text[at];
  return c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'' || c == ')' || c == '\\' ||
         c == '=';
}

std::vector<Occurrence> occurrences(std::string_view text, const std::vector<std::string>& names) {
  std::vector<Occurrence> found;
  for (const std::string& name : names) {
    for (std::size_t at = text.find(name); at != std::string_view::npos;
         at = text.find(name, at + 1)) {
      const bool starts =
          at == 0 || std::string_view(" \t\n\"'(").find(text[at - 1]) != std::string_view::npos;
      if (!starts || !word_boundary(text, at + name.size())) continue;
      Occurrence o{at, std::string_view::npos, 0,
                   static_cast<int>(std::count(text.begin(), text.begin() + at, '\n')) + 1};
      std::size_t v = at + name.size();
      if (v < text.size() && text[v] == '=') ++v;
      while (v < text.size() && (text[v] == ' ' || text[v] == '\t')) ++v;
      if (v + 1 < text.size() && text[v] == '\\' && text[v + 1] == '\n') {
        v += 2;
        while (v < text.size() && (text[v] == ' ' || text[v] == '\t')) ++v;
      }
      std::size_t end = v;
      while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) &&
             text[end] != '"' && text[end] != ')' && text[end] != '\\') {
        ++end;
      }
      if (end > v && !std::string_view(text.substr(v, end - v)).starts_with("--")) {
        o.value_at = v;
        o.value_size = end - v;
      }
      found.push_back(o);
    }
  }
  return found;
}

std::vector<std::string> spellings_of(const SettingChange& change) {
  const ArgInfo* info = ArgCatalog::megatron().find(change.name);
  if (info == nullptr || info->negation == change.name) return {change.name};
  return info->spellings;
}

// One change applied to `text` where that is safe; otherwise what to do by hand.
std::optional<std::string> apply_change(std::string& text, const SettingChange& change) {
  const std::string shown = change.after_present ? flag_text(change.name, change.after) : "";
  if (change.kind == ChangeKind::kEnv) {
    return "set " + change.name + "=" + (change.after_present ? shell_quote(change.after) : "") +
           (change.after_present ? "" : " (remove it)") + " in the training program's environment";
  }
  if (!change.before_present) return "add " + shown + " to the training program's arguments";
  const std::vector<Occurrence> found = occurrences(text, spellings_of(change));
  if (found.size() != 1) {
    return (found.empty()
                ? "find where " + change.name + " is given (not written literally)"
                : change.name + " is written " + std::to_string(found.size()) + " times") +
           " and " + (change.after_present ? "make it " + shown : "remove it");
  }
  const Occurrence& o = found.front();
  const std::string line = "line " + std::to_string(o.line) + ": ";
  const ArgInfo* info = ArgCatalog::megatron().find(change.name);
  const bool takes_value = info == nullptr || info->takes_value;
  if (!change.after_present) {
    const std::size_t end = takes_value && o.value_at != std::string::npos
                                ? o.value_at + o.value_size
                                : o.at + change.name.size();
    if (takes_value && o.value_at == std::string::npos) return line + "remove " + change.name;
    std::size_t begin = o.at;
    while (begin > 0 && (text[begin - 1] == ' ' || text[begin - 1] == '\t')) --begin;
    text.erase(begin, end - begin);
    // A line left blank goes too.
    const std::size_t line_begin = begin == 0 ? 0 : text.rfind('\n', begin - 1) + 1;
    const std::size_t line_end = text.find('\n', begin);
    const std::string_view rest(
        text.data() + line_begin,
        (line_end == std::string::npos ? text.size() : line_end) - line_begin);
    if (rest.find_first_not_of(" \t") == std::string_view::npos && line_end != std::string::npos) {
      text.erase(line_begin, line_end - line_begin + 1);
    }
    return std::nullopt;
  }
  if (!takes_value || (info != nullptr && info->multi_value)) return line + "make it " + shown;
  if (o.value_at == std::string::npos) return line + "make it " + shown;
  const std::string_view value(text.data() + o.value_at, o.value_size);
  if (value.find('$') != std::string_view::npos || value.find('`') != std::string_view::npos) {
    return line + change.name + " takes " + std::string(value) + ": make it " + shown;
  }
  text.replace(o.value_at, o.value_size, shell_quote(change.after));
  return std::nullopt;
}

}  // namespace

ScriptEdit edit_user_script(std::string_view script, const std::vector<SettingChange>& changes) {
  ScriptEdit edit;
  edit.text = std::string(script);
  // From the last occurrence backwards would keep offsets; each change re-finds its own, so
  // applying them one by one is enough.
  for (const SettingChange& change : changes) {
    if (std::optional<std::string> by_hand = apply_change(edit.text, change)) {
      edit.by_hand.push_back(*by_hand);
    }
  }
  if (!edit.by_hand.empty()) {
    std::string notes = "# attune: change by hand, the edits below could not be made safely:\n";
    for (const std::string& note : edit.by_hand) notes += "#   " + note + "\n";
    std::size_t at = 0;
    if (edit.text.starts_with("#!")) {
      const std::size_t end = edit.text.find('\n');
      at = end == std::string::npos ? edit.text.size() : end + 1;
    }
    edit.text.insert(at, notes);
  }
  return edit;
}

std::string runnable_script(const Recipe& recipe, const Recipe& baseline, const ScriptShape& shape,
                            const std::vector<std::string>& header) {
  std::string text = "#!/usr/bin/env bash\n";
  for (const std::string& line : header) text += "# " + line + "\n";
  const std::vector<SettingChange> changes = diff_recipes(baseline, recipe);
  if (changes.empty()) {
    text += "# No setting differs from the baseline.\n";
  } else {
    text += "# " + std::to_string(changes.size()) +
            " settings differ from the baseline (lines marked $(: changed)):\n";
    for (const SettingChange& change : changes) text += change_comment(change) + "\n";
  }
  text += "set -e\n";
  for (const std::string& name : ordered_names(recipe.env, shape.order.env)) {
    const std::string& value = recipe.env.at(name);
    text += "export " + name + "=" + shell_quote(value) +
            (differs(baseline.env, name, value) ? "  # changed" : "") + "\n";
  }
  std::string command = recipe.command.empty() ? kDefaultProgram : recipe.command;
  if (!shape.launcher.empty()) {
    // A launcher (torchrun, deepspeed, python -m torch.distributed.run) starts the program itself.
    command = shape.launcher + " " + command.substr(command.rfind(' ') + 1);
  }
  text += command + " \\\n";
  for (const std::string& flag : ordered_names(recipe.flags, shape.order.flags)) {
    const std::string& value = recipe.flags.at(flag);
    text += "  " + flag_text(flag, value) +
            (differs(baseline.flags, flag, value) ? " $(: changed)" : "") + " \\\n";
  }
  text += "  \"$@\"\n";
  return text;
}

std::string unified_diff(const std::string& before, const std::string& after,
                         const std::string& before_name, const std::string& after_name) {
  if (before == after) return "";
  const auto lines_of = [](const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t end = text.find('\n', start);
      lines.push_back(text.substr(start, end == std::string::npos ? end : end - start));
      start = end == std::string::npos ? text.size() : end + 1;
    }
    return lines;
  };
  const std::vector<std::string> a = lines_of(before);
  const std::vector<std::string> b = lines_of(after);
  // Longest common subsequence, table from the end; recipes are tens of lines.
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string body;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      body += " " + a[i++] + "\n";
      ++j;
    } else if (i < a.size() && (j == b.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
      body += "-" + a[i++] + "\n";
    } else {
      body += "+" + b[j++] + "\n";
    }
  }
  return "--- " + before_name + "\n+++ " + after_name + "\n@@ -1," + std::to_string(a.size()) +
         " +1," + std::to_string(b.size()) + " @@\n" + body;
}

}  // namespace attune
