// Splitting text on one separator character, the way the project's tab-separated tables, flag
// lists and scheduler records are read. Pure; thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace attune {

// Every field between separators, empty ones included: "a,,b" gives {"a", "", "b"}, "" gives
// {""}. The views point into `text`.
std::vector<std::string_view> split_fields(std::string_view text, char separator);

}  // namespace attune
