#include "adapters/launcher/slurm/slurm_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "events/assert.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace attune {
namespace {

using Clock = std::chrono::steady_clock;

void append_bounded(std::string& to, const char* bytes, std::size_t count) {
  if (to.size() >= kCommandOutputBytesMax) return;
  to.append(bytes, std::min(count, kCommandOutputBytesMax - to.size()));
}

}  // namespace

Result<CommandOutput> run_command(const std::vector<std::string>& argv, std::int64_t timeout_ms) {
  ATTUNE_ASSERT(!argv.empty(), "a command has a program");
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return make_error("cannot create a pipe");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return make_error("cannot create a pipe");
  }
  std::vector<std::string> words = argv;
  std::vector<char*> args;
  for (std::string& word : words) args.push_back(word.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (error != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return make_error("cannot run " + argv[0] + ": " + std::strerror(error));
  }

  CommandOutput output;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::array<pollfd, 2> fds{pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<char, 65536> buffer{};
  int open_pipes = 2;
  while (open_pipes > 0) {
    const auto left_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left_ms <= 0) {
      output.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left_ms));
    if (ready < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t count = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (count > 0) {
        append_bounded(i == 0 ? output.out : output.err, buffer.data(),
                       static_cast<std::size_t>(count));
      } else if (count == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (const pollfd& fd : fds) {
    if (fd.fd >= 0) ::close(fd.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  output.exit_code = !output.timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

std::string first_line_of(const CommandOutput& output) {
  const std::string& text =
      output.err.find_first_not_of(" \t\r\n") != std::string::npos ? output.err : output.out;
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) {
    return output.timed_out ? "timed out" : "exit status " + std::to_string(output.exit_code);
  }
  return text.substr(start, text.find('\n', start) - start);
}

}  // namespace attune
