#include "adapters/launcher/disk_space.h"

#include <sys/statvfs.h>

#include <filesystem>

namespace attune {

std::optional<std::string> full_disk_note(const std::string& path) {
  std::filesystem::path probe = path;
  std::error_code ec;
  while (!probe.empty() && !std::filesystem::exists(probe, ec)) probe = probe.parent_path();
  if (probe.empty()) return std::nullopt;
  struct statvfs info {};
  if (::statvfs(probe.c_str(), &info) != 0) return std::nullopt;
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
  if (free_bytes >= kLogDiskFreeBytesMin) return std::nullopt;
  return "the disk holding " + path + " is full (" + std::to_string(free_bytes) +
         " bytes free): the log may have been cut short by the disk, not by the job";
}

}  // namespace attune
