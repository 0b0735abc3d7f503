// What a launch script ran, as a recipe: the bridge from adapters/script's answer to the recipe a
// campaign tunes, with the launcher and the order that the scripts attune writes keep. Pure.
#pragma once

#include <string>
#include <vector>

#include "adapters/script/launch_script.h"
#include "core/runnable_recipe.h"
#include "events/recipe.h"

namespace attune::script {

struct ScriptRecipe {
  Recipe recipe;
  ScriptShape shape;
  std::vector<std::string> warnings;
};

// The recipe of what the script ran: its environment, `python PROGRAM`, and the arguments. A
// flag given twice keeps its last value, as argparse does, with a warning. An error names the
// script and the argument that does not read.
Result<ScriptRecipe> recipe_of_script(const ResolvedScript& resolved, const std::string& source);

}  // namespace attune::script
