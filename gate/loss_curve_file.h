// Loss-curve files: the text form of a loss curve that `attune gate converge` reads.
//
// Owns the parsing of one curve (losses per step, step 0 first) from text already read by the
// caller; pure, no file access. Two forms are accepted:
// - a JSON array of numbers, e.g. `[10.9, 9.8, 8.7]` (the first character that is not
//   whitespace is '['). Python's json module writes NaN, Infinity and -Infinity for non-finite
//   floats and JavaScript writes null; all of them are read (null as NaN) so that the gate fails
//   them instead of the parser hiding them.
// - one loss per line. Blank lines are ignored, and '#' starts a comment that runs to the end of
//   the line. `nan`, `inf`, `-inf` and `infinity` (any case) are read as such.
// Anything else is an error naming the source and the 1-based line: "base.txt:7: ...".
#pragma once

#include <string_view>
#include <vector>

#include "events/result.h"

namespace attune {

// `source_name` (usually the file's path) prefixes every error message.
Result<std::vector<double>> parse_loss_curve(std::string_view text, std::string_view source_name);

}  // namespace attune
