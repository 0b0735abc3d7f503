// Interrupt: SIGINT and SIGTERM during a campaign, taken on a thread of their own.
//
// Construct it before any other thread starts: it blocks both signals in the calling thread, so
// every thread started later inherits the mask, and a watcher thread takes them with sigwait.
// The first signal calls the handler on the watcher thread (it should only post to the campaign's
// scheduler); a second one ends the process at once with 128 + the signal. The destructor
// restores the mask and joins the watcher.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include <signal.h>

namespace attune::cli {

class Interrupt {
 public:
  Interrupt();
  ~Interrupt();
  Interrupt(const Interrupt&) = delete;
  Interrupt& operator=(const Interrupt&) = delete;

  // What the first signal does (signal number in); set before the campaign runs.
  void on_signal(std::function<void(int)> handler);
  // The signal that came, or 0.
  int signal() const { return signal_.load(); }

 private:
  sigset_t previous_{};
  std::atomic<int> signal_{0};
  std::atomic<bool> done_{false};
  std::function<void(int)> handler_;
  std::atomic<bool> handler_set_{false};
  std::thread watcher_;
};

}  // namespace attune::cli
