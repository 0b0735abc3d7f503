// Writing a file whole or not at all: the text goes to <path>.partial, is synced when asked, and
// is renamed over the path, so a reader sees the old file or the new one, never a torn one. And
// appending whole lines to a line file that a crash may have left with a torn last line.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "events/result.h"

namespace attune {

// Writes `text` to `path` with permission `mode` exactly (not masked). With `sync`, the file is
// synced before the rename and its folder after it. The error names the path and the cause.
Status write_whole_file(const std::string& path, std::string_view text, mode_t mode, bool sync);

// Appends `lines` (whole lines, each ending in '\n') to `path`, created with mode 0644 when absent,
// under an exclusive lock, and syncs it. A torn last line (no newline: a writer died mid-line) is
// cut first, so the new lines never join it; the result is the number of bytes cut.
Result<std::uint64_t> append_whole_lines(const std::string& path, std::string_view lines);

}  // namespace attune
