#include "tools/attune/baseline_script.h"

#include "adapters/script/script_recipe.h"

namespace attune::cli {

Status resolve_baseline_script(CampaignSpec& spec, std::vector<std::string>& warnings) {
  if (spec.script.path.empty()) return Ok{};
  script::ScriptInput input;
  input.path = spec.script.path;
  input.args = spec.script.args;
  input.env = spec.script.env;
  input.invocation_cwd = spec.script.cwd;
  input.timeout_seconds = spec.script.timeout_seconds;
  input.allow_unsandboxed = spec.script.allow_unsandboxed;
  auto resolved = script::resolve_launch_script(input);
  if (!resolved.ok()) return make_error(resolved.error());
  auto recipe = script::recipe_of_script(resolved.value(), spec.script.path);
  if (!recipe.ok()) return make_error(recipe.error());
  spec.baseline = std::move(recipe->recipe);
  spec.baseline_shape = std::move(recipe->shape);
  for (std::string& warning : recipe->warnings) warnings.push_back(std::move(warning));
  return Ok{};
}

}  // namespace attune::cli
