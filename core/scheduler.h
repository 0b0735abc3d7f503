// Scheduler: the clock port. Time enters the control plane only through here.
//
// Two implementations: VirtualScheduler, a discrete-event clock that jumps from one scheduled
// callback to the next (a simulated campaign of hundreds of GPU-hours runs in seconds and replays
// bit-identically), and AsioScheduler, which runs callbacks on Boost.Asio timers in real time.
// Callbacks run one at a time on the thread that calls run(); callbacks scheduled for the same
// instant run in the order they were scheduled. REQUIRES: external synchronization; schedule()
// is called from callbacks or before run(). The exceptions are post() and stop(), which any
// thread may call: that is how a server thread (the control socket) hands requests in.
//
// Both queues are bounded: at most kScheduledCallbacksMax timers (the runtime keeps a few per run
// in flight, so more is a defect and an assertion), and at most kPostedCallbacksMax callbacks
// posted from other threads and not yet run (post() then refuses, and its caller answers "busy").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace attune {

inline constexpr std::size_t kScheduledCallbacksMax = 1 << 20;
inline constexpr std::size_t kPostedCallbacksMax = 1024;

class Scheduler {
 public:
  using Callback = std::function<void()>;
  virtual ~Scheduler() = default;

  virtual std::int64_t now_unix_ns() const = 0;
  // Runs `callback` at `at_unix_ns` (at once if that is in the past).
  virtual void schedule_at(std::int64_t at_unix_ns, Callback callback) = 0;
  void schedule_after(std::int64_t delay_ns, Callback callback) {
    schedule_at(now_unix_ns() + delay_ns, std::move(callback));
  }
  // Runs callbacks until none is left (unless held open) or stop() is called.
  virtual void run() = 0;
  virtual void stop() = 0;
  // Thread-safe: runs `callback` on the scheduler's thread as soon as it can, at the time then
  // current (a virtual clock does not advance for it). False, and nothing posted, when
  // kPostedCallbacksMax callbacks already wait.
  [[nodiscard]] virtual bool post(Callback callback) = 0;
  // While held open, run() waits for post()ed callbacks instead of returning when nothing is
  // scheduled (an interactive campaign waits for its agent). Call before run().
  virtual void hold_open(bool held) = 0;
};

// Starts at `start_unix_ns` and advances only when run() takes the next callback.
std::unique_ptr<Scheduler> make_virtual_scheduler(std::int64_t start_unix_ns);

// Wall-clock time on Boost.Asio steady timers.
std::unique_ptr<Scheduler> make_asio_scheduler();

}  // namespace attune
