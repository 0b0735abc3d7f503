// Runnable recipes: the scripts attune writes next to the ledger, as a user runs them.
//
// A recipe in the ledger is canonical (sorted, one setting per line) so that it hashes the same
// however it was spelled; a user wants the launch script back. runnable_script() writes one that
// bash runs as it stands: a shebang, `set -e`, one `export` line per variable, then the launcher
// and the program with every flag on its own `\`-continued line, in the baseline's order (flags
// the baseline lacks follow it), and "$@" so that a caller may append arguments. A line whose
// setting differs from the baseline carries `$(: changed)`, which expands to nothing; the header
// lists every change with its old and new value, removed flags included.
//
// Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "events/recipe.h"

namespace attune {

// What the baseline's own text says about the script's shape.
struct ScriptShape {
  // The words before the program, e.g. "torchrun --nproc_per_node 8", which start the program
  // (the last word of the recipe's command) themselves; "" runs the recipe's command as it is.
  std::string launcher;
  RecipeOrder order;  // the baseline's order of variables and flags
  // A baseline read from the user's launch script: its path and the hex SHA-256 of its text.
  std::string script_path;
  std::string script_hash;
};

// The program to run when a recipe names none (a recipe of flags only).
inline constexpr char kDefaultProgram[] = "python pretrain_gpt.py";

// The script text. `header` lines become comments under the shebang.
std::string runnable_script(const Recipe& recipe, const Recipe& baseline, const ScriptShape& shape,
                            const std::vector<std::string>& header);

// The user's own launch script with the shipped changes applied where its flags appear
// literally: a flag's one literal value replaced, a literal switch or flag removed. Every change
// that cannot be made safely (the flag appears more than once, its value comes from a variable,
// it is added, or it is an environment variable set elsewhere) is listed in `by_hand`, naming
// the line to change and what to set, and the text carries those lines as a comment at its top.
struct ScriptEdit {
  std::string text;
  std::vector<std::string> by_hand;
};
ScriptEdit edit_user_script(std::string_view script, const std::vector<SettingChange>& changes);

// A unified diff of two texts, whole files as one hunk ("--- a", "+++ b", "@@ ... @@", then each
// line with ' ', '-' or '+'); empty when they are equal.
std::string unified_diff(const std::string& before, const std::string& after,
                         const std::string& before_name, const std::string& after_name);

}  // namespace attune
