#include "events/whole_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace attune {

Status write_whole_file(const std::string& path, std::string_view text, mode_t mode, bool sync) {
  const std::string partial = path + ".partial";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return make_error(partial + ": cannot create: " + std::strerror(errno));
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (ok && sync) ok = ::fsync(fd) == 0;
  // A file replacing one of another mode (a read-only policy, say) gets the mode asked for.
  if (ok) ok = ::fchmod(fd, mode) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(partial.c_str());
    return make_error(path + ": cannot write: " + std::strerror(saved));
  }
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    const int renamed = errno;
    ::unlink(partial.c_str());
    return make_error(path + ": cannot write: " + std::strerror(renamed));
  }
  if (sync) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
    }
  }
  return Ok{};
}

}  // namespace attune
