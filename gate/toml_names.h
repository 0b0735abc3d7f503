// How one-line errors name the type of a TOML value ("a string", "an integer", "a float", ...),
// for every file attune reads as TOML (policies, campaign files, simulator presets). Include it
// only from .cc files that already parse TOML: it brings in toml++.
#pragma once

#include <toml++/toml.h>

#include <string>

namespace attune {

std::string toml_type_name(const toml::node& node);

}  // namespace attune
