// Writing a file whole or not at all: the text goes to <path>.partial, is synced when asked, and
// is renamed over the path, so a reader sees the old file or the new one, never a torn one.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "events/result.h"

namespace attune {

// Writes `text` to `path` with permission `mode` exactly (not masked). With `sync`, the file is
// synced before the rename and its folder after it. The error names the path and the cause.
Status write_whole_file(const std::string& path, std::string_view text, mode_t mode, bool sync);

}  // namespace attune
