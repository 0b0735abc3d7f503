#include "tools/attune/agent_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace attune::cli {

struct AgentSupervisor::Impl {
  AgentSupervisorOptions options;
  std::thread thread;
  std::mutex mutex;  // guards pid, done
  std::condition_variable wake;
  pid_t pid = -1;
  bool done = false;
  std::atomic<std::uint32_t> starts{0};

  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }

  pid_t launch() {
    const pid_t child = ::fork();
    if (child != 0) return child;
    ::setpgid(0, 0);
    const int fd = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::setenv("ATTUNE_SOCKET", options.socket_path.c_str(), 1);
    ::execl("/bin/sh", "sh", "-c", options.command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }

  void supervise() {
    for (std::uint32_t restarts = 0;; ++restarts) {
      pid_t child = -1;
      {
        std::lock_guard lock(mutex);
        if (done) return;
        child = launch();
        if (child > 0) ::setpgid(child, child);  // before any kill(-pid) can be sent
        pid = child;
      }
      ++starts;
      if (child < 0) {
        say("agent: cannot start the agent command");
        if (options.give_up) options.give_up("the agent command could not be started");
        return;
      }
      int status = 0;
      ::waitpid(child, &status, 0);
      {
        std::unique_lock lock(mutex);
        pid = -1;
        if (done) return;
        if (options.agent_needed) {
          lock.unlock();
          const bool needed = options.agent_needed();
          lock.lock();
          if (!needed || done) return;
        }
        const std::string how = WIFEXITED(status)
                                    ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                    : "was killed by signal " + std::to_string(WTERMSIG(status));
        if (restarts >= options.restarts_max) {
          lock.unlock();
          say("agent " + how + "; no restarts left");
          if (options.give_up) {
            options.give_up("the agent " + how + " after " + std::to_string(restarts) +
                            " restarts while the campaign searched; the supervisor stopped the "
                            "search");
          }
          return;
        }
        say("agent " + how + " while the campaign still searches; restarting it (" +
            std::to_string(restarts + 1) + " of " + std::to_string(options.restarts_max) + ")");
        wake.wait_for(lock, std::chrono::milliseconds(kAgentRestartDelayMs),
                      [this] { return done; });
      }
    }
  }
};

AgentSupervisor::AgentSupervisor(AgentSupervisorOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

AgentSupervisor::~AgentSupervisor() { stop(); }

void AgentSupervisor::start() {
  impl_->thread = std::thread([impl = impl_.get()] { impl->supervise(); });
}

void AgentSupervisor::stop() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mutex);
    impl.done = true;
    if (impl.pid > 0) ::kill(-impl.pid, SIGTERM);
    impl.wake.notify_all();
  }
  // An agent that ignores SIGTERM gets SIGKILL after kAgentTermGraceMs.
  for (std::int64_t waited_ms = 0;; waited_ms += 50) {
    {
      std::lock_guard lock(impl.mutex);
      if (impl.pid <= 0) break;
      if (waited_ms >= kAgentTermGraceMs) {
        ::kill(-impl.pid, SIGKILL);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (impl.thread.joinable()) impl.thread.join();
}

std::uint32_t AgentSupervisor::starts() const { return impl_->starts; }

}  // namespace attune::cli
