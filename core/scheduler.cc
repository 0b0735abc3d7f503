#include "core/scheduler.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cassert>
#include <chrono>
#include <map>
#include <utility>

namespace attune {
namespace {

class VirtualScheduler final : public Scheduler {
 public:
  explicit VirtualScheduler(std::int64_t start_unix_ns) : now_(start_unix_ns) {}

  std::int64_t now_unix_ns() const override { return now_; }

  void schedule_at(std::int64_t at_unix_ns, Callback callback) override {
    // Ties keep their scheduling order: the key's second part is a running counter.
    queue_.emplace(std::make_pair(std::max(at_unix_ns, now_), next_order_++), std::move(callback));
  }

  void run() override {
    stopped_ = false;
    while (!stopped_ && !queue_.empty()) {
      auto first = queue_.begin();
      assert(first->first.first >= now_);
      now_ = first->first.first;
      Callback callback = std::move(first->second);
      queue_.erase(first);
      callback();
    }
  }

  void stop() override { stopped_ = true; }

 private:
  std::int64_t now_;
  std::uint64_t next_order_ = 0;
  bool stopped_ = false;
  std::map<std::pair<std::int64_t, std::uint64_t>, Callback> queue_;
};

class AsioScheduler final : public Scheduler {
 public:
  std::int64_t now_unix_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  void schedule_at(std::int64_t at_unix_ns, Callback callback) override {
    auto timer = std::make_shared<boost::asio::steady_timer>(io_);
    const std::int64_t delay_ns = std::max<std::int64_t>(0, at_unix_ns - now_unix_ns());
    timer->expires_after(std::chrono::nanoseconds(delay_ns));
    timer->async_wait([timer, callback = std::move(callback)](const boost::system::error_code& ec) {
      if (!ec) callback();
    });
  }

  void run() override {
    io_.restart();
    io_.run();
  }

  void stop() override { io_.stop(); }

 private:
  boost::asio::io_context io_;
};

}  // namespace

std::unique_ptr<Scheduler> make_virtual_scheduler(std::int64_t start_unix_ns) {
  return std::make_unique<VirtualScheduler>(start_unix_ns);
}

std::unique_ptr<Scheduler> make_asio_scheduler() { return std::make_unique<AsioScheduler>(); }

}  // namespace attune
