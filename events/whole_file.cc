#include "events/whole_file.h"

#include <fcntl.h>
#include <sys/file.h>
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

Result<std::uint64_t> append_whole_lines(const std::string& path, std::string_view lines) {
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(path + ": cannot append: " + std::strerror(errno));
  bool ok = ::flock(fd, LOCK_EX) == 0;
  const off_t size = ok ? ::lseek(fd, 0, SEEK_END) : 0;
  off_t keep = size;
  char byte = '\n';
  while (ok && keep > 0 && ::pread(fd, &byte, 1, keep - 1) == 1 && byte != '\n') --keep;
  if (ok && keep != size) ok = ::ftruncate(fd, keep) == 0;
  ok = ok && ::write(fd, lines.data(), lines.size()) == static_cast<ssize_t>(lines.size());
  ok = ok && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);  // releases the lock
  if (!ok) return make_error(path + ": cannot append: " + std::strerror(error));
  return static_cast<std::uint64_t>(size - keep);
}

}  // namespace attune
