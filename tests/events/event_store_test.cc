#include "events/event_store.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "events/codec.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("attune-store-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

NewEvent measured(RunId run, double throughput) {
  RunMeasured body;
  body.run_id = run;
  body.tokens_per_sec_per_gpu = throughput;
  body.step_times_ms = {1000.0 + run, 990.5, 991.25};
  body.loss_curve = {11.5, 10.25, 9.0};
  return NewEvent{1'700'000'000'000'000'000 + run, "launcher:sim", body};
}

std::vector<NewEvent> some_events(int count, RunId first_run = 1) {
  std::vector<NewEvent> events;
  for (int i = 0; i < count; ++i) events.push_back(measured(first_run + i, 1000.0 + i));
  return events;
}

TEST(EventStore, AppendsAndReadsBackInOrderWithSequenceNumbers) {
  TempDir dir;
  auto store = EventStore::open(dir.str());
  ASSERT_TRUE(store.ok()) << store.error();
  auto first = (*store)->append("c1", 0, some_events(3));
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ((*first)[0].sequence, 1u);
  EXPECT_EQ((*first)[2].sequence, 3u);
  EXPECT_EQ((*first)[0].prev_hash, Digest{});
  EXPECT_EQ((*first)[1].prev_hash, (*first)[0].hash);

  auto read = (*store)->read("c1");
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read.value(), first.value());
  auto range = (*store)->read("c1", 2, 2);
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->size(), 1u);
  EXPECT_EQ((*range)[0].sequence, 2u);
  EXPECT_EQ((*store)->version("c1").value(), 3u);
  EXPECT_EQ((*store)->version("unknown").value(), 0u);
}

TEST(EventStore, RefusesAVersionConflictAndWritesNothing) {
  TempDir dir;
  auto store = EventStore::open(dir.str());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->append("c1", 0, some_events(2)).ok());
  auto stale = (*store)->append("c1", 1, some_events(1));
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().find("version conflict"), std::string::npos) << stale.error();
  EXPECT_EQ((*store)->version("c1").value(), 2u);
  EXPECT_TRUE((*store)->append("c1", 2, some_events(1)).ok());
}

TEST(EventStore, KeepsCampaignsApartAndListsThem) {
  TempDir dir;
  auto store = EventStore::open(dir.str());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->append("beta", 0, some_events(2)).ok());
  ASSERT_TRUE((*store)->append("alpha", 0, some_events(1)).ok());
  ASSERT_TRUE((*store)->append("alpha-2", 0, some_events(4)).ok());
  EXPECT_EQ((*store)->list_campaigns().value(),
            (std::vector<std::string>{"alpha", "alpha-2", "beta"}));
  EXPECT_EQ((*store)->read("alpha").value().size(), 1u);
  EXPECT_EQ((*store)->read("alpha-2").value().size(), 4u);
}

TEST(EventStore, RejectsBadCampaignIdsAndEventsWithoutActor) {
  TempDir dir;
  auto store = EventStore::open(dir.str());
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE((*store)->append("", 0, some_events(1)).ok());
  EXPECT_FALSE((*store)->append("a/b", 0, some_events(1)).ok());
  EXPECT_FALSE((*store)->append(std::string(65, 'x'), 0, some_events(1)).ok());
  std::vector<NewEvent> no_actor = some_events(1);
  no_actor[0].actor.clear();
  EXPECT_FALSE((*store)->append("c", 0, std::move(no_actor)).ok());
  EXPECT_EQ((*store)->list_campaigns().value().size(), 0u);
}

TEST(EventStore, SurvivesReopenAndContinuesTheChain) {
  TempDir dir;
  Digest last{};
  {
    auto store = EventStore::open(dir.str());
    ASSERT_TRUE(store.ok());
    auto appended = (*store)->append("c1", 0, some_events(5));
    ASSERT_TRUE(appended.ok());
    last = appended->back().hash;
  }
  auto store = EventStore::open(dir.str());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->version("c1").value(), 5u);
  auto more = (*store)->append("c1", 5, some_events(1));
  ASSERT_TRUE(more.ok());
  EXPECT_EQ((*more)[0].prev_hash, last);
  auto report = (*store)->verify_chain("c1", KeyLookup());
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->events_verified, 6u);
}

TEST(EventStore, ASecondWriterIsToldTheLedgerIsHeld) {
  TempDir dir;
  auto first = EventStore::open(dir.str());
  ASSERT_TRUE(first.ok());
  auto second = EventStore::open(dir.str());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().find("held by another process"), std::string::npos) << second.error();
  EXPECT_NE(second.error().find(dir.str()), std::string::npos);
}

TEST(EventStore, ReadOnlyHandlesReadAlongsideAWriterAndRefuseToAppend) {
  TempDir dir;
  auto writer = EventStore::open(dir.str());
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->append("c1", 0, some_events(2)).ok());
  EventStore::Options options;
  options.read_only = true;
  auto reader = EventStore::open(dir.str(), options);
  ASSERT_TRUE(reader.ok()) << reader.error();
  EXPECT_EQ((*reader)->read("c1").value().size(), 2u);
  auto refused = (*reader)->append("c1", 2, some_events(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("read-only"), std::string::npos);
}

TEST(EventStore, ReadOnlyOpenOfAMissingLedgerFails) {
  TempDir dir;
  EventStore::Options options;
  options.read_only = true;
  auto store = EventStore::open(dir.str(), options);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find("no ledger"), std::string::npos);
}

TEST(EventStore, GroupCommitKeepsConcurrentWritersConsistent) {
  TempDir dir;
  auto store = EventStore::open(dir.str());
  ASSERT_TRUE(store.ok());
  constexpr int kThreads = 4;
  constexpr int kAppendsPerThread = 200;
  std::vector<std::thread> threads;
  std::atomic<int> acknowledged{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string campaign = "c" + std::to_string(t % 2);
      for (int i = 0; i < kAppendsPerThread; ++i) {
        // Optimistic concurrency: read the version, append, retry on conflict.
        for (int attempt = 0; attempt < 1000; ++attempt) {
          std::uint64_t version = (*store)->version(campaign).value();
          if ((*store)->append(campaign, version, some_events(1)).ok()) {
            ++acknowledged;
            break;
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(acknowledged.load(), kThreads * kAppendsPerThread);
  for (const char* campaign : {"c0", "c1"}) {
    auto report = (*store)->verify_chain(campaign, KeyLookup());
    ASSERT_TRUE(report.ok());
    EXPECT_TRUE(report->ok()) << report->findings.front();
    EXPECT_EQ(report->events_verified, 2u * kAppendsPerThread);
  }
}

// A write that fails (here: the file-size limit, as a full disk would) leaves what reached the
// disk unknown, so the store refuses every later append, however small, until it is reopened;
// the reopened ledger holds every acknowledged event with an intact chain.
TEST(EventStore, RefusesEveryAppendAfterAFailedWriteUntilReopened) {
  TempDir dir;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = EventStore::open(dir.str());
    if (!store.ok() || !(*store)->append("c1", 0, some_events(3)).ok()) _exit(10);
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {};
    limit.rlim_cur = limit.rlim_max = 1 << 20;  // the WAL cannot grow past 1 MiB
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(11);
    RunMeasured big;
    big.step_times_ms.assign(1 << 18, 1.0);  // 2 MiB of doubles
    std::vector<NewEvent> events;
    events.push_back(NewEvent{1, "writer", big});
    auto failed = (*store)->append("c1", 3, std::move(events));
    if (failed.ok()) _exit(12);
    auto small = (*store)->append("c1", 3, some_events(1));
    if (small.ok()) _exit(13);
    if (small.error().find("refuses further writes") == std::string::npos) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 open, 11 setrlimit, 12 big append succeeded, "
                                       "13 later append accepted, 14 wrong message";
  auto reopened = EventStore::open(dir.str());
  ASSERT_TRUE(reopened.ok()) << reopened.error();
  EXPECT_EQ((*reopened)->version("c1").value(), 3u);
  EXPECT_TRUE((*reopened)->verify_chain("c1", KeyLookup()).value().ok());
  EXPECT_TRUE((*reopened)->append("c1", 3, some_events(1)).ok());
}

// ---- Chain verification: every single-event change, removal, reordering and insertion --------

class ChainTamper : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = EventStore::open(dir_.str());
    ASSERT_TRUE(store.ok());
    auto appended = (*store)->append("c1", 0, some_events(kEvents));
    ASSERT_TRUE(appended.ok());
    head_sequence_ = appended->back().sequence;
    head_hash_ = appended->back().hash;
    records_ = (*store)->read_raw("c1").value();
    ASSERT_EQ(records_.size(), static_cast<std::size_t>(kEvents));
    ASSERT_TRUE(verify_records("c1", records_, evidence()).ok());
  }
  bool detected(const std::vector<RawRecord>& records) const {
    return !verify_records("c1", records, evidence()).ok();
  }
  ChainEvidence evidence() const {
    ChainEvidence e;
    e.head_sequence = head_sequence_;
    e.head_hash = head_hash_;
    return e;
  }

  static constexpr int kEvents = 8;
  TempDir dir_;
  std::vector<RawRecord> records_;
  std::uint64_t head_sequence_ = 0;
  Digest head_hash_{};
};

TEST_F(ChainTamper, DetectsEveryFlippedByteOfEveryEvent) {
  for (std::size_t i = 0; i < records_.size(); ++i) {
    for (std::size_t at = 0; at < records_[i].bytes.size(); ++at) {
      std::vector<RawRecord> tampered = records_;
      tampered[i].bytes[at] = static_cast<char>(tampered[i].bytes[at] ^ 0x01);
      EXPECT_TRUE(detected(tampered)) << "event " << i + 1 << " byte " << at;
    }
  }
}

TEST_F(ChainTamper, DetectsAFieldChangeEvenWhenTheEventsOwnHashIsRecomputed) {
  for (std::size_t i = 0; i < records_.size(); ++i) {
    std::vector<RawRecord> tampered = records_;
    Envelope envelope = decode_envelope(tampered[i].bytes).value();
    std::get<RunMeasured>(envelope.body).tokens_per_sec_per_gpu += 1.0;
    envelope.hash = chain_hash(envelope, nullptr);
    tampered[i].bytes = encode_envelope(envelope, true);
    EXPECT_TRUE(detected(tampered)) << "event " << i + 1;
  }
}

TEST_F(ChainTamper, DetectsTrailingWordsAfterAnyEvent) {
  for (std::size_t i = 0; i < records_.size(); ++i) {
    std::vector<RawRecord> tampered = records_;
    tampered[i].bytes += std::string(8, '\0');
    EXPECT_TRUE(detected(tampered)) << "event " << i + 1;
  }
}

TEST_F(ChainTamper, DetectsEveryRemoval) {
  for (std::size_t i = 0; i < records_.size(); ++i) {
    std::vector<RawRecord> tampered = records_;
    tampered.erase(tampered.begin() + static_cast<std::ptrdiff_t>(i));
    EXPECT_TRUE(detected(tampered)) << "removed event " << i + 1;
  }
}

TEST_F(ChainTamper, DetectsEveryReordering) {
  for (std::size_t i = 0; i < records_.size(); ++i) {
    for (std::size_t j = i + 1; j < records_.size(); ++j) {
      std::vector<RawRecord> tampered = records_;
      std::swap(tampered[i].bytes, tampered[j].bytes);
      EXPECT_TRUE(detected(tampered)) << "swapped " << i + 1 << " and " << j + 1;
    }
  }
}

TEST_F(ChainTamper, DetectsEveryInsertion) {
  // A well-formed event with a valid hash of its own, linked to its predecessor, inserted at
  // every position including the end.
  for (std::size_t i = 0; i <= records_.size(); ++i) {
    std::vector<RawRecord> tampered = records_;
    Envelope forged;
    forged.sequence = i + 1;
    forged.campaign_id = "c1";
    forged.actor = "forger";
    forged.body = RunMeasured{};
    forged.prev_hash = i == 0 ? Digest{} : decode_envelope(records_[i - 1].bytes).value().hash;
    forged.hash = chain_hash(forged, nullptr);
    tampered.insert(tampered.begin() + static_cast<std::ptrdiff_t>(i),
                    RawRecord{i + 1, encode_envelope(forged, true)});
    for (std::size_t k = i + 1; k < tampered.size(); ++k) tampered[k].key_sequence = k + 1;
    EXPECT_TRUE(detected(tampered)) << "inserted at " << i + 1;
  }
}

TEST_F(ChainTamper, TheStoreReportsTamperingInTheDatabaseItself) {
  auto store = EventStore::open(dir_.str());
  ASSERT_TRUE(store.ok());
  Envelope envelope = decode_envelope(records_[3].bytes).value();
  envelope.actor = "someone-else";
  envelope.hash = chain_hash(envelope, nullptr);
  ASSERT_TRUE((*store)->overwrite_raw_for_testing("c1", 4, encode_envelope(envelope, true)).ok());
  auto report = (*store)->verify_chain("c1", KeyLookup());
  ASSERT_TRUE(report.ok());
  ASSERT_FALSE(report->ok());
  EXPECT_NE(report->findings.front().find("event 5"), std::string::npos)
      << report->findings.front();

  ASSERT_TRUE((*store)->overwrite_raw_for_testing("c1", 4, records_[3].bytes).ok());
  EXPECT_TRUE((*store)->verify_chain("c1", KeyLookup()).value().ok());
  ASSERT_TRUE((*store)->delete_raw_for_testing("c1", kEvents).ok());
  EXPECT_FALSE((*store)->verify_chain("c1", KeyLookup()).value().ok());
}

}  // namespace
}  // namespace attune
