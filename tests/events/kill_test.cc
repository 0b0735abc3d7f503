// A writer process is killed with SIGKILL in the middle of appends. Reopening the ledger must
// show every acknowledged event, in order, with an intact hash chain; a new writer continues it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "events/event_store.h"

namespace attune {
namespace {

constexpr int kRounds = 3;

// Runs in the child: continues the stream from its current version, and writes each acknowledged
// sequence number to `fd`, until it is killed.
[[noreturn]] void write_until_killed(const std::string& dir, int fd) {
  auto store = EventStore::open(dir);
  if (!store.ok()) _exit(3);
  std::uint64_t version = (*store)->version("victim").value();
  for (std::uint32_t run = 1;; ++run) {
    RunMeasured body;
    body.run_id = run;
    body.tokens_per_sec_per_gpu = 1000.0 + run;
    body.loss_curve = {10.0, 9.0, 8.5};
    std::vector<NewEvent> events;
    events.push_back(NewEvent{static_cast<std::int64_t>(run), "writer", body});
    auto result = (*store)->append("victim", version, std::move(events));
    if (!result.ok()) _exit(4);
    version = result->back().sequence;
    const std::string line = std::to_string(version) + "\n";
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(5);
  }
}

TEST(KillWriter, ReopeningLosesNoAcknowledgedEventAndKeepsTheChain) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("attune-kill-test-" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(dir);
  std::uint64_t previous_version = 0;
  for (int round = 0; round < kRounds; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(fds[0]);
      write_until_killed(dir, fds[1]);
    }
    ::close(fds[1]);
    FILE* acks = ::fdopen(fds[0], "r");
    ASSERT_NE(acks, nullptr);
    std::uint64_t last_acknowledged = 0;
    char line[64];
    const int acks_before_kill = 200 + 150 * round;
    for (int i = 0; i < acks_before_kill && std::fgets(line, sizeof line, acks); ++i) {
      last_acknowledged = std::stoull(line);
    }
    ::kill(child, SIGKILL);  // appends are still in flight here
    int status = 0;
    ::waitpid(child, &status, 0);
    std::fclose(acks);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer exited by itself with status " << status;
    ASSERT_GT(last_acknowledged, previous_version);

    auto store = EventStore::open(dir);
    ASSERT_TRUE(store.ok()) << store.error();
    const std::uint64_t version = (*store)->version("victim").value();
    EXPECT_GE(version, last_acknowledged) << "an acknowledged event was lost";
    auto report = (*store)->verify_chain("victim", KeyLookup());
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_TRUE(report->ok()) << report->findings.front();
    EXPECT_EQ(report->events_verified, version);
    auto events = (*store)->read("victim");
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), version);
    for (std::uint64_t i = 0; i < events->size(); ++i) ASSERT_EQ((*events)[i].sequence, i + 1);
    previous_version = version;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attune
