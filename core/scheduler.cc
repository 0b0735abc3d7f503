#include "core/scheduler.h"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "events/assert.h"

namespace attune {
namespace {

class VirtualScheduler final : public Scheduler {
 public:
  explicit VirtualScheduler(std::int64_t start_unix_ns) : now_(start_unix_ns) {}

  std::int64_t now_unix_ns() const override { return now_; }

  void schedule_at(std::int64_t at_unix_ns, Callback callback) override {
    ATTUNE_ASSERT(queue_.size() < kScheduledCallbacksMax, "the runtime keeps a few timers per run");
    // Ties keep their scheduling order: the key's second part is a running counter.
    queue_.emplace(std::make_pair(std::max(at_unix_ns, now_), next_order_++), std::move(callback));
  }

  void run() override {
    {
      std::lock_guard lock(mutex_);
      stopped_ = false;
    }
    for (;;) {
      // Posted callbacks first, at the current instant.
      std::deque<Callback> posted;
      {
        std::unique_lock lock(mutex_);
        if (queue_.empty() && held_open_) {
          wake_.wait(lock, [this] { return stopped_ || !inbox_.empty(); });
        }
        if (stopped_) return;
        posted.swap(inbox_);
      }
      for (Callback& callback : posted) {
        callback();
        if (stopped()) return;
      }
      if (queue_.empty()) {
        std::lock_guard lock(mutex_);
        if (held_open_ || !inbox_.empty()) continue;
        return;
      }
      auto first = queue_.begin();
      ATTUNE_ASSERT(first->first.first >= now_, "the virtual clock never goes back");
      now_ = first->first.first;
      Callback callback = std::move(first->second);
      queue_.erase(first);
      callback();
      if (stopped()) return;
    }
  }

  void stop() override {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    wake_.notify_all();
  }

  bool post(Callback callback) override {
    std::lock_guard lock(mutex_);
    if (inbox_.size() >= kPostedCallbacksMax) return false;
    inbox_.push_back(std::move(callback));
    wake_.notify_all();
    return true;
  }

  void hold_open(bool held) override {
    std::lock_guard lock(mutex_);
    held_open_ = held;
    wake_.notify_all();
  }

 private:
  bool stopped() {
    std::lock_guard lock(mutex_);
    return stopped_;
  }

  std::int64_t now_;
  std::uint64_t next_order_ = 0;
  std::map<std::pair<std::int64_t, std::uint64_t>, Callback> queue_;
  // Shared with other threads: post(), stop() and hold_open().
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Callback> inbox_;
  bool stopped_ = false;
  bool held_open_ = false;
};

class AsioScheduler final : public Scheduler {
 public:
  std::int64_t now_unix_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  void schedule_at(std::int64_t at_unix_ns, Callback callback) override {
    ATTUNE_ASSERT(timers_ < kScheduledCallbacksMax, "the runtime keeps a few timers per run");
    ++timers_;
    auto timer = std::make_shared<boost::asio::steady_timer>(io_);
    const std::int64_t delay_ns = std::max<std::int64_t>(0, at_unix_ns - now_unix_ns());
    timer->expires_after(std::chrono::nanoseconds(delay_ns));
    timer->async_wait(
        [this, timer, callback = std::move(callback)](const boost::system::error_code& ec) {
          --timers_;
          if (!ec) callback();
        });
  }

  void run() override {
    io_.restart();
    io_.run();
  }

  void stop() override { io_.stop(); }

  bool post(Callback callback) override {
    if (posted_.fetch_add(1) >= kPostedCallbacksMax) {
      --posted_;
      return false;
    }
    boost::asio::post(io_, [this, callback = std::move(callback)] {
      --posted_;
      callback();
    });
    return true;
  }

  void hold_open(bool held) override {
    if (held) {
      guard_.emplace(io_.get_executor());
    } else {
      guard_.reset();
    }
  }

 private:
  boost::asio::io_context io_;
  std::size_t timers_ = 0;              // the scheduler's thread only
  std::atomic<std::size_t> posted_{0};  // posted and not yet run
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
};

}  // namespace

std::unique_ptr<Scheduler> make_virtual_scheduler(std::int64_t start_unix_ns) {
  return std::make_unique<VirtualScheduler>(start_unix_ns);
}

std::unique_ptr<Scheduler> make_asio_scheduler() { return std::make_unique<AsioScheduler>(); }

}  // namespace attune
