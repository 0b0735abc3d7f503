#include "tools/attune/interrupt.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace attune::cli {
namespace {

constexpr long kWatchSliceNs = 100'000'000;  // how often the watcher looks for its end

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

Interrupt::Interrupt() {
  const sigset_t set = interrupt_signals();
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
  watcher_ = std::thread([this, set] {
    const timespec slice{0, kWatchSliceNs};
    while (!done_.load()) {
      const int taken = sigtimedwait(&set, nullptr, &slice);
      if (taken < 0) continue;                               // EAGAIN (the slice ended) or EINTR
      if (signal_.exchange(taken) != 0) _exit(128 + taken);  // a second signal: stop now
      if (handler_set_.load()) handler_(taken);
    }
  });
}

Interrupt::~Interrupt() {
  done_.store(true);
  watcher_.join();
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

void Interrupt::on_signal(std::function<void(int)> handler) {
  handler_ = std::move(handler);
  handler_set_.store(true);
}

}  // namespace attune::cli
