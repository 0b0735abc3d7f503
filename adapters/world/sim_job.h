// The simulated job: one Megatron-LM training launch in the simulated world, as the text its
// log receives over time (megatron_log_writer.h), the Kineto traces of a profiled run
// (kineto_writer.h) and its exit. build/bin/attune-sim-job runs it as a process (in virtual time,
// or paced in real time); the in-process simulated launcher calls run_sim_job() for the same log
// text without a process.
//
// SimJob is the job's timeline: log pieces, each due at a number of seconds after the process
// started, rendered one at a time so that a real-time job can stamp each with the clock. Not
// thread-safe (REQUIRES: external synchronization); the World it was made from must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/workload.h"
#include "adapters/world/loss_model.h"
#include "adapters/world/megatron_log_writer.h"
#include "adapters/world/world.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune::sim {

// Where the virtual clock of a simulated job starts when the caller gives no time:
// 2026-08-22 15:00:00 UTC.
constexpr std::int64_t kVirtualStartUnixNs = 1'787'410'800'000'000'000;
constexpr int kJobExitFailure = 1;  // what torchrun (or srun) returns when a worker failed

struct SimJobRun {
  std::uint32_t steps = 14;
  std::uint64_t run_seed = 0;
  std::vector<std::string> nodes;  // empty: the world allocates by run seed
  bool profile = false;
  Fault fault = Fault::kNone;
};

struct LogPiece {
  enum class Kind : std::uint8_t { kArguments, kTrainingStart, kStep, kCompletion, kFailure };
  Kind kind = Kind::kArguments;
  std::uint32_t step = 0;  // kStep: the step that ends
  double at_s = 0;         // seconds after the process started
};

class SimJob {
 public:
  SimJob(const World& world, const Recipe& recipe, const SimJobRun& spec);

  const SimulatedRun& run() const { return run_; }
  const std::vector<LogPiece>& pieces() const { return pieces_; }
  // The text of piece `index`, stamped `now_unix_ns`. REQUIRES: called once per piece, in order.
  std::string render(std::size_t index, std::int64_t now_unix_ns);
  // Whether the job writes traces: profiled and every profiled step completed. They are due
  // with the piece of the last step.
  bool writes_traces() const;
  Result<std::vector<std::string>> write_traces(const std::string& directory,
                                                std::int64_t start_unix_ns) const;
  // 0 on success, kJobExitFailure on failure; nullopt for a hang (the process never exits).
  std::optional<int> exit_code() const;

 private:
  const World& world_;
  Recipe recipe_;
  SimulatedRun run_;
  MegatronLogWriter writer_;
  std::vector<LogPiece> pieces_;
  std::size_t rendered_ = 0;
};

struct SimJobResult {
  SimulatedRun run;
  std::string log;  // everything the job writes, in virtual time from start_unix_ns
  std::vector<std::pair<double, std::size_t>> log_growth;  // (seconds, log bytes) per piece
  std::optional<int> exit_code;                            // nullopt: hangs
  std::vector<std::string> trace_paths;
};

// Runs the job in virtual time: its whole log at once, and its traces into `trace_directory`
// when it is profiled and the directory is not empty.
Result<SimJobResult> run_sim_job(const World& world, const Recipe& recipe, const SimJobRun& spec,
                                 std::int64_t start_unix_ns = kVirtualStartUnixNs,
                                 const std::string& trace_directory = "");

}  // namespace attune::sim
