#include "adapters/script/script_recipe.h"

#include <set>

#include "events/arg_catalog.h"

namespace attune::script {
namespace {

// The setting a flag word names: its canonical spelling, or the word before any '='.
std::string setting_of(const std::string& word) {
  const std::string spelling = word.substr(0, word.find('='));
  const ArgInfo* info = ArgCatalog::megatron().find(spelling);
  return info == nullptr ? spelling : info->canonical;
}

// The arguments as groups, one per flag with the words that follow it; a flag given again
// replaces its earlier group.
std::vector<std::vector<std::string>> flag_groups(const std::vector<std::string>& args,
                                                  std::vector<std::string>& leading,
                                                  std::vector<std::string>& warnings) {
  std::vector<std::vector<std::string>> groups;
  for (const std::string& word : args) {
    if (word.starts_with("--")) {
      groups.push_back({word});
    } else if (groups.empty()) {
      leading.push_back(word);
    } else {
      groups.back().push_back(word);
    }
  }
  std::vector<std::vector<std::string>> kept;
  std::set<std::string> seen;
  for (auto group = groups.rbegin(); group != groups.rend(); ++group) {
    if (!seen.insert(setting_of(group->front())).second) {
      warnings.push_back(group->front() +
                         " is given more than once; the last, as argparse "
                         "reads it, is kept");
      continue;
    }
    kept.insert(kept.begin(), *group);
  }
  return kept;
}

}  // namespace

Result<ScriptRecipe> recipe_of_script(const ResolvedScript& resolved, const std::string& source) {
  ScriptRecipe out;
  out.warnings = resolved.warnings;
  std::vector<std::string> leading;
  const auto groups = flag_groups(resolved.args, leading, out.warnings);
  std::string text;
  for (const auto& [name, value] : resolved.env) text += name + "=" + shell_quote(value) + "\n";
  text += "python " + shell_quote(resolved.program_path);
  for (const std::string& word : leading) text += " " + shell_quote(word);
  text += "\n";
  for (const auto& group : groups) {
    for (const std::string& word : group) text += shell_quote(word) + " ";
    text += "\n";
  }
  auto recipe = parse_recipe(text, source + " (as bash ran it)");
  if (!recipe.ok()) return make_error(recipe.error());
  out.recipe = std::move(recipe).value();
  out.shape.launcher = resolved.launcher;
  out.shape.order = recipe_order(text);
  return out;
}

}  // namespace attune::script
