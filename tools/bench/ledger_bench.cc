// Ledger benchmarks: durable append throughput with group commit, and replay throughput (events
// read, decoded and folded into every projection) on a 1-million-event campaign.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "events/event_store.h"
#include "projections/campaign_view.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kReplayEvents = 1'000'000;
constexpr int kEventsPerRun = 9;

std::string temp_ledger(const char* name) {
  fs::path path = fs::temp_directory_path() /
                  (std::string("attune-bench-") + name + "-" + std::to_string(::getpid()));
  fs::remove_all(path);
  return path.string();
}

// The events of one search run, as a campaign records them.
std::vector<NewEvent> run_events(RunId run, std::int64_t at_ns) {
  const std::int64_t hour_ns = 3'600'000'000'000;
  std::vector<NewEvent> events;
  CandidateProposed proposed;
  proposed.proposal_id = run;
  proposed.recipe = "--tensor-model-parallel-size 2\n--pipeline-model-parallel-size " +
                    std::to_string(1 + run % 8) + "\n";
  proposed.recipe_hash = std::string(64, 'a');
  proposed.diff.push_back(SettingChange{ChangeKind::kFlag, "--pipeline-model-parallel-size", true,
                                        "1", true, std::to_string(1 + run % 8),
                                        ObjectiveClass::kStructural});
  proposed.levers.push_back(Lever{"pipeline-parallel", ObjectiveClass::kStructural});
  proposed.hypothesis =
      Hypothesis{"pipeline bubble", "more microbatches per stage", 0.05, "bubble"};
  events.push_back(NewEvent{at_ns, "tuner:bench", proposed});
  LaunchAdmitted admitted;
  admitted.proposal_id = run;
  admitted.run_id = run;
  admitted.gpus = 128;
  admitted.steps = 14;
  admitted.expected_gpu_hours = 12.8;
  admitted.job_name = "attune-bench-r" + std::to_string(run);
  events.push_back(NewEvent{at_ns, "control-plane", admitted});
  events.push_back(
      NewEvent{at_ns, "launcher:sim",
               JobSubmitted{run, "j" + std::to_string(run), admitted.job_name, at_ns}});
  events.push_back(NewEvent{at_ns, "launcher:sim", JobStarted{run, at_ns, {"node-1", "node-2"}}});
  events.push_back(NewEvent{at_ns + hour_ns / 10, "launcher:sim",
                            JobFinished{run, at_ns + hour_ns / 10, "COMPLETED", "sim", "/log"}});
  RunMeasured measured;
  measured.run_id = run;
  measured.tokens_per_sec_per_gpu = 1000.0 + static_cast<double>(run % 97);
  measured.step_times_ms.assign(14, 8123.5);
  measured.loss_curve.assign(14, 9.25);
  measured.peak_memory_gib_by_stage.assign(4, 71.5);
  events.push_back(NewEvent{at_ns + hour_ns / 10, "metrics", measured});
  Charged charged;
  charged.run_id = run;
  charged.gpus = 128;
  charged.admitted_at_unix_ns = at_ns;
  charged.released_at_unix_ns = at_ns + hour_ns / 10;
  charged.gpu_hours = 12.8;
  events.push_back(NewEvent{at_ns + hour_ns / 10, "control-plane", charged});
  events.push_back(NewEvent{at_ns + hour_ns / 10, "control-plane",
                            VerdictRecorded{run, Verdict::kNotBetter, 0.01, 0, 0, 0.03}});
  events.push_back(
      NewEvent{at_ns + hour_ns / 10, "tuner:bench", ProfileAnalyzed{run, {}, 0, "", {}}});
  return events;
}

void BM_DurableAppendGroupCommit(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr RunId kRunsPerThread = 2'000;
  const std::string dir = temp_ledger("append");
  std::atomic<std::uint64_t> appended{0};
  std::atomic<bool> failed{false};
  for (auto _ : state) {
    auto store = EventStore::open(dir);
    if (!store.ok()) {
      state.SkipWithError(store.error().c_str());
      return;
    }
    // Each thread appends to its own campaign, one event per synced append: concurrent appends
    // share the writer's commit groups, and so their fsyncs.
    std::vector<std::thread> writers;
    for (int t = 0; t < threads; ++t) {
      writers.emplace_back([&, t] {
        const std::string campaign = "bench-" + std::to_string(t);
        std::uint64_t version = (*store)->version(campaign).value();
        for (RunId run = 1; run <= kRunsPerThread; ++run) {
          for (NewEvent& event : run_events(run, 0)) {
            std::vector<NewEvent> one;
            one.push_back(std::move(event));
            auto result = (*store)->append(campaign, version, std::move(one));
            if (!result.ok()) {
              failed = true;
              return;
            }
            version = result->back().sequence;
            ++appended;
          }
        }
      });
    }
    for (std::thread& writer : writers) writer.join();
    if (failed) state.SkipWithError("append failed");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(appended.load()));
  state.counters["events"] = static_cast<double>(appended.load());
  fs::remove_all(dir);
}
// Arg = writer threads: 1 is one fsync per event.
BENCHMARK(BM_DurableAppendGroupCommit)->Arg(1)->Arg(16)->Iterations(1)->Unit(benchmark::kSecond);

class ReplayLedger {
 public:
  ReplayLedger() : dir_(temp_ledger("replay")) {
    EventStore::Options options;
    options.sync = false;  // building the fixture; replay reads what is there
    auto store = EventStore::open(dir_, options);
    std::uint64_t version = 0;
    open_campaign(**store, version);
    for (RunId run = 1; version < kReplayEvents; ++run) {
      std::vector<NewEvent> events = run_events(run, static_cast<std::int64_t>(run) * 1000);
      const std::size_t count = std::min<std::size_t>(events.size(), kReplayEvents - version);
      events.resize(count);
      version = (*store)->append("replay", version, std::move(events)).value().back().sequence;
    }
    // As `attune campaign run` leaves a finished campaign.
    if (!(*store)->compact("replay").ok()) std::abort();
  }
  ~ReplayLedger() { fs::remove_all(dir_); }
  const std::string& dir() const { return dir_; }

 private:
  static void open_campaign(EventStore& store, std::uint64_t& version) {
    CampaignOpened opened;
    opened.name = "replay";
    opened.gpu_count = 128;
    opened.budget_gpu_hours = 1e9;
    std::vector<NewEvent> events;
    events.push_back(NewEvent{0, "operator", opened});
    version = store.append("replay", 0, std::move(events)).value().back().sequence;
  }
  std::string dir_;
};

// Built once, on first use, and shared by the replay and verification benchmarks.
const ReplayLedger& replay_ledger() {
  static ReplayLedger ledger;
  return ledger;
}

void BM_ReplayIntoAllProjections(benchmark::State& state) {
  const ReplayLedger& ledger = replay_ledger();
  EventStore::Options options;
  options.read_only = true;
  auto store = EventStore::open(ledger.dir(), options);
  std::uint64_t events = 0;
  for (auto _ : state) {
    CampaignView view = initial_view();
    Status status = (*store)->for_each("replay", [&](Envelope&& envelope) {
      evolve(view, std::move(envelope));
      ++events;
    });
    if (!status.ok()) state.SkipWithError(status.error().c_str());
    benchmark::DoNotOptimize(view);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
}
BENCHMARK(BM_ReplayIntoAllProjections)->Iterations(3)->Unit(benchmark::kSecond);

// The parts of a replay, side by side: reading the raw records, and decoding them without a fold.
void BM_ReplayReadRawRecords(benchmark::State& state) {
  const ReplayLedger& ledger = replay_ledger();
  EventStore::Options options;
  options.read_only = true;
  auto store = EventStore::open(ledger.dir(), options);
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto records = (*store)->read_raw("replay");
    if (!records.ok()) state.SkipWithError(records.error().c_str());
    events += records->size();
    benchmark::DoNotOptimize(records);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
}
BENCHMARK(BM_ReplayReadRawRecords)->Iterations(3)->Unit(benchmark::kSecond);

void BM_ReplayDecodeOnly(benchmark::State& state) {
  const ReplayLedger& ledger = replay_ledger();
  EventStore::Options options;
  options.read_only = true;
  auto store = EventStore::open(ledger.dir(), options);
  std::uint64_t events = 0;
  for (auto _ : state) {
    Status status = (*store)->for_each("replay", [&](const Envelope& envelope) {
      benchmark::DoNotOptimize(envelope.sequence);
      ++events;
    });
    if (!status.ok()) state.SkipWithError(status.error().c_str());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
}
BENCHMARK(BM_ReplayDecodeOnly)->Iterations(3)->Unit(benchmark::kSecond);

void BM_VerifyChain(benchmark::State& state) {
  const ReplayLedger& ledger = replay_ledger();
  EventStore::Options options;
  options.read_only = true;
  auto store = EventStore::open(ledger.dir(), options);
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto report = (*store)->verify_chain("replay", KeyLookup());
    if (!report.ok() || !report->ok()) state.SkipWithError("chain broken");
    events += report->events_verified;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
}
BENCHMARK(BM_VerifyChain)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace attune

// The single main of build/bin/attune-bench, for every benchmark file in tools/bench.
BENCHMARK_MAIN();
