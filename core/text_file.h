// Reading a whole text file (campaign files, recipes, policies, loss curves, job logs), with a
// one-line error that names the file and why it cannot be read.
#pragma once

#include <cstddef>
#include <string>

#include "events/result.h"

namespace attune {

// The most a text file is read whole by default: larger files are refused before they are read.
inline constexpr std::size_t kTextFileBytesMax = std::size_t{1} << 30;

// Reads the file, refusing one of more than `max_bytes` (told before reading from its size, and
// while reading for files without one: pipes, devices).
Result<std::string> read_text_file(const std::string& path,
                                   std::size_t max_bytes = kTextFileBytesMax);

}  // namespace attune
