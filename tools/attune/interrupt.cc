#include "tools/attune/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "events/assert.h"

namespace attune::cli {
namespace {

constexpr int kWatchSliceMs = 100;  // how often the watcher looks for its end

// The write end of the live Interrupt's pipe, for the signal handler (async-signal-safe).
volatile sig_atomic_t g_signal_pipe = -1;

extern "C" void on_interrupt_signal(int signal) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signal);
  if (g_signal_pipe >= 0) (void)::write(g_signal_pipe, &byte, 1);
  errno = saved;
}

}  // namespace

Interrupt::Interrupt() {
  ATTUNE_ASSERT(g_signal_pipe < 0, "one Interrupt at a time");
  ATTUNE_ASSERT(::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) == 0, "a pipe for the signal handler");
  g_signal_pipe = pipe_[1];
  struct sigaction action {};
  action.sa_handler = on_interrupt_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
  watcher_ = std::thread([this] {
    while (!done_.load()) {
      pollfd fd{pipe_[0], POLLIN, 0};
      if (::poll(&fd, 1, kWatchSliceMs) <= 0) continue;
      unsigned char byte = 0;
      while (::read(pipe_[0], &byte, 1) == 1) {
        if (signal_.exchange(byte) != 0) ::_exit(128 + byte);  // a second signal: stop now
        deliver(byte);
      }
    }
  });
}

Interrupt::~Interrupt() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  g_signal_pipe = -1;
  done_.store(true);
  watcher_.join();
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

void Interrupt::deliver(int signal) {
  std::lock_guard lock(mutex_);
  if (!handler_ || delivered_) return;
  delivered_ = true;
  handler_(signal);
}

void Interrupt::on_signal(std::function<void(int)> handler) {
  {
    std::lock_guard lock(mutex_);
    handler_ = std::move(handler);
  }
  // A signal that came before there was a handler is handed over now.
  if (const int early = signal_.load(); early != 0) deliver(early);
}

void Interrupt::disarm() {
  std::lock_guard lock(mutex_);
  handler_ = nullptr;
}

}  // namespace attune::cli
