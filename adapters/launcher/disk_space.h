// Whether the disk that holds a job's log has room: a launcher asks before it takes a failed or
// short log as a fact about the recipe. A run whose log could not be written on a full disk says
// nothing about its recipe; it is attune's own I/O failure (JobReport::launcher_error).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace attune {

// Below this much free space a log may have been cut short by the disk, not by the job.
inline constexpr std::uint64_t kLogDiskFreeBytesMin = 4 * 1024 * 1024;

// A one-line note when the file system holding `path` (or its nearest existing folder) has less
// than kLogDiskFreeBytesMin free; nullopt when it has room or cannot be asked.
std::optional<std::string> full_disk_note(const std::string& path);

}  // namespace attune
