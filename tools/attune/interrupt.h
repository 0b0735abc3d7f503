// Interrupt: SIGINT and SIGTERM during a campaign, taken on a thread of their own.
//
// While it lives, both signals have a handler that only writes the signal's number to a pipe; a
// watcher thread reads it. No signal is blocked, so the jobs a campaign starts get the default
// disposition and mask (an exec resets caught signals to their defaults). The first signal calls
// the handler set with on_signal() on the watcher thread (it should only post to the campaign's
// scheduler); one that came before on_signal() is handed over when it is set. A second signal
// ends the process at once with 128 + the signal. disarm() makes sure no handler call runs or
// will run (call it before what the handler touches is destroyed); the destructor restores the
// previous dispositions and joins the watcher. One Interrupt at a time per process.
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace attune::cli {

class Interrupt {
 public:
  Interrupt();
  ~Interrupt();
  Interrupt(const Interrupt&) = delete;
  Interrupt& operator=(const Interrupt&) = delete;

  // What the first signal does (signal number in).
  void on_signal(std::function<void(int)> handler);
  // After this returns no handler call is running and none will start.
  void disarm();
  // The signal that came, or 0.
  int signal() const { return signal_.load(); }

 private:
  void deliver(int signal);

  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
  int pipe_[2] = {-1, -1};
  std::atomic<int> signal_{0};
  std::atomic<bool> done_{false};
  std::mutex mutex_;  // guards handler_ and delivered_
  std::function<void(int)> handler_;
  bool delivered_ = false;
  std::thread watcher_;
};

}  // namespace attune::cli
