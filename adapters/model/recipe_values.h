// Reading one setting of a recipe as the launched job sees it: the recipe's value when it sets
// the flag, else Megatron-LM's default from ArgCatalog::megatron(). Names are canonical
// spellings ("--lr"); a recipe holds flags in canonical form (events/recipe.h).
//
// Also Python's str() of a float, which Megatron's logs print. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/recipe.h"

namespace attune::sim {

// The recipe's value of `flag` ("" for a switch); nullopt when the recipe does not set it.
std::optional<std::string> recipe_flag(const Recipe& recipe, std::string_view flag);

// The value as a number: the recipe's, else the catalog default, else `fallback` (also when the
// text does not read as a number). A multi-value flag gives its first value.
double recipe_number(const Recipe& recipe, std::string_view flag, double fallback);

// The value as text: the recipe's, else the catalog default ("None" when it has none). A
// multi-value flag gives its first value.
std::string recipe_text(const Recipe& recipe, std::string_view flag);

// Shell words of a canonical multi-value text ("p2p a2a", "'a b' c"), quotes removed.
std::vector<std::string> split_words(std::string_view text);

// Python's repr()/str() of a float: shortest round trip, fixed notation for exponents in
// [-4, 16) with at least one decimal ("0.0003", "1.0"), else scientific with a two-digit
// exponent ("1e-05", "1e+16"); "nan", "inf", "-inf".
std::string python_float(double value);

}  // namespace attune::sim
