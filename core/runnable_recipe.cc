#include "core/runnable_recipe.h"

#include <algorithm>
#include <set>

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

}  // namespace

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
