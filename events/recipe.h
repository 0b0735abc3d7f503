// A recipe: the Megatron-LM flags and environment variables of one training launch, in canonical
// form, so that two spellings of the same launch compare equal and hash the same.
//
// parse_recipe() reads what a user pastes from a launch script: NAME=VALUE (or export NAME=VALUE)
// assignments first, then optional command words, then flags, e.g.
//
//   export CUDA_DEVICE_MAX_CONNECTIONS=1
//   NVTE_FWD_LAYERNORM_SM_MARGIN=8 python pretrain_gpt.py <backslash-newline>
//       --tensor-model-parallel-size 2 --lr=1e-4 --bf16 --cp-comm-type p2p a2a
//
// Flags take "--flag value" or "--flag=value"; a switch takes no value; a multi-value (nargs) flag
// takes every following word up to the next word that begins with "--". Shell rules apply as far as
// a pasted script needs them: '#' comments (not inside quotes or words), backslash line
// continuations (blanks after the backslash are tolerated), single and double quotes and backslash
// escapes are removed, ';' and newlines end an export. Nothing is expanded: "$HOME" stays "$HOME".
//
// Canonical form, using ArgCatalog::megatron():
//  - every alias becomes the canonical spelling; the --no-x negation of a --x/--no-x pair stays
//    "--no-x" (another value of the same setting: giving both in one recipe is an error);
//  - a switch maps to ""; an int is decimal without '+' or leading zeros; a float is the
//    shortest text that reads back as the same double ("1e-4" and "0.0001" agree); other values
//    are kept as written, after quote removal;
//  - a multi-value flag (nargs) maps to its values joined by one space, each one shell-quoted
//    when it is empty or holds blanks or shell specials, so that the list splits back;
//  - a flag missing from the catalog is kept with every word up to the next flag, as a list of
//    shell words like a multi-value flag's ("" when none follows; set_flag takes one word);
//  - an int may use Python's single underscores between digits ("9_765_625").
//
// Errors are one line, "SOURCE:LINE: what was expected", e.g. "recipe.sh:3:
// --tensor-model-parallel-size expects an integer, found 'two'".
//
// All functions are pure and thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"
#include "events/result.h"

namespace attune {

struct Recipe {
  // Leading non-flag words as shell words, e.g. "python pretrain_gpt.py"; may be empty.
  std::string command;
  std::map<std::string, std::string> env;    // NAME -> VALUE
  std::map<std::string, std::string> flags;  // canonical spelling -> canonical value

  friend bool operator==(const Recipe&, const Recipe&) = default;
};

// Parses recipe text; `source_name` prefixes every error message.
Result<Recipe> parse_recipe(std::string_view text, std::string_view source_name = "<recipe>");

// The order a recipe text gives its settings in: environment names, then flags by the key
// parse_recipe files them under (canonical spelling, or the --no-x negation). Empty lists when
// the text does not parse.
struct RecipeOrder {
  std::vector<std::string> env;
  std::vector<std::string> flags;
};
RecipeOrder recipe_order(std::string_view text);

// Deterministic text of a canonical recipe: one "NAME=VALUE" line per env var (sorted), the command
// line if any, then one "--flag" or "--flag value" line per flag (sorted), values shell-quoted
// where needed. For every recipe made by parse_recipe/set_flag/remove_flag,
// parse_recipe(canonical_text(r)) == r.
std::string canonical_text(const Recipe& recipe);

// A word as the shell reads it back: bare when safe, else single-quoted.
std::string shell_quote(std::string_view word);
// The same for a word after the command, where '=' needs no quotes ("--nproc-per-node=8").
std::string shell_quote_argument(std::string_view word);
// One flag and its canonical value as shell words, as canonical_text writes it: "--bf16",
// "--lr 0.0001", "--cp-comm-type p2p a2a".
std::string flag_text(const std::string& flag, const std::string& value);

// Hex SHA-256 of canonical_text(recipe): the identity of a recipe in the ledger.
std::string recipe_hash(const Recipe& recipe);

// Flags and env vars that differ: changed, added (before_present = false) and removed
// (after_present = false), flags first, each kind sorted by name. A flag's objective class comes
// from the catalog (a flag missing from it is kNumeric: unlisted means numeric); env vars are
// kNumeric here, a per-model policy refines that later.
std::vector<SettingChange> diff_recipes(const Recipe& baseline, const Recipe& candidate);

// Sets a flag given with or without dashes, in any spelling, to `value` normalised as parse_recipe
// would. A switch takes "true", "" (both: on) or "false" (off: a store_true or store_false switch
// is removed, a --x/--no-x pair becomes --no-x); setting a --x/--no-x pair replaces whichever
// polarity was there. A multi-value flag takes its values as shell words ("p2p a2a"). The recipe is
// unchanged when the value is refused.
Status set_flag(Recipe& recipe, std::string_view flag, std::string_view value);

// Sets an environment variable: a valid name ([A-Za-z_][A-Za-z0-9_]*) and a one-line value. The
// recipe is unchanged when either is refused.
Status set_env(Recipe& recipe, std::string_view name, std::string_view value);

// Removes a flag given with or without dashes, in any spelling; for a --x/--no-x pair whichever
// polarity is set. An error when the flag is not set.
Status remove_flag(Recipe& recipe, std::string_view flag);

}  // namespace attune
