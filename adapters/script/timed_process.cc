#include "adapters/script/timed_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace attune::script {
namespace {

// NULL-terminated pointers into `words`, which must outlive them.
std::vector<char*> c_strings(const std::vector<std::string>& words) {
  std::vector<char*> pointers;
  pointers.reserve(words.size() + 1);
  for (const std::string& word : words) pointers.push_back(const_cast<char*>(word.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// Spawns `command` in a new process group, its stdout and stderr on those fds; returns its pid.
Result<pid_t> spawn(const TimedCommand& command, int stdout_fd, int stderr_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  if (!command.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, command.cwd.c_str());
  // The command gets the signal dispositions a fresh shell expects, whatever the caller ignores.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int signal : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGALRM, SIGUSR1,
                           SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU}) {
    sigaddset(&defaults, signal);
  }
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv = c_strings(command.argv);
  std::vector<char*> envp = c_strings(command.env);
  pid_t pid = 0;
  const int failed =
      posix_spawn(&pid, command.program.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (failed != 0) {
    return make_error(command.program + ": cannot start: " + std::strerror(failed));
  }
  return pid;
}

// Appends what `fd` has now to `tail`, keeping its last bytes; false at end of file.
bool read_available(int fd, std::string& tail) {
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      tail.append(buffer, static_cast<std::size_t>(got));
      if (tail.size() > kOutputTailBytesMax) tail.erase(0, tail.size() - kOutputTailBytesMax);
      continue;
    }
    if (got == 0) return false;
    return errno == EINTR || errno == EAGAIN;
  }
}

int status_code(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

// Whether `pid` has exited, without reaping it: its group can still be killed by its number.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

// The read ends of the command's stdout and stderr, and what came out of each.
struct Output {
  int fds[2] = {-1, -1};
  bool open[2] = {false, false};
  std::string* tails[2] = {nullptr, nullptr};

  // Waits up to `wait_ms` for output and keeps what came.
  void read_for(int wait_ms) {
    pollfd readable[2];
    nfds_t count = 0;
    for (int i = 0; i < 2; ++i) {
      if (open[i]) readable[count++] = pollfd{fds[i], POLLIN, 0};
    }
    ::poll(readable, count, wait_ms);
    for (int i = 0; i < 2; ++i) {
      if (open[i]) open[i] = read_available(fds[i], *tails[i]);
    }
  }
};

}  // namespace

Result<TimedOutcome> run_timed(const TimedCommand& command) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return make_error(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  if (::pipe2(err_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return make_error(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  auto pid = spawn(command, out_pipe[1], err_pipe[1]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  TimedOutcome outcome;
  Output output{
      {out_pipe[0], err_pipe[0]}, {true, true}, {&outcome.stdout_tail, &outcome.stderr_tail}};
  if (pid.ok()) {
    using Clock = std::chrono::steady_clock;
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(command.timeout_seconds));
    bool exited = false;
    while (!exited && Clock::now() < deadline) {
      output.read_for(kTimedPollIntervalMs);
      exited = has_exited(*pid);
    }
    outcome.timed_out = !exited;
    // The group goes, leftovers of a finished script included: nothing of it outlives the run.
    ::kill(-*pid, SIGKILL);
    int wait_status = 0;
    while (::waitpid(*pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
    outcome.exit_status = status_code(wait_status);
    output.read_for(0);
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (!pid.ok()) return make_error(pid.error());
  return outcome;
}

std::string last_line(const std::string& text, std::size_t length_max) {
  std::size_t end = text.size();
  while (end > 0) {
    const std::size_t start = text.rfind('\n', end - 1);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    std::string line;
    for (std::size_t i = from; i < end; ++i) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c >= 0x20 && c != 0x7f) line += static_cast<char>(c);
    }
    if (line.find_first_not_of(' ') != std::string::npos) {
      return line.size() > length_max ? line.substr(0, length_max) + "..." : line;
    }
    if (start == std::string::npos) break;
    end = start;
  }
  return "";
}

}  // namespace attune::script
