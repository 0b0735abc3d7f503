// The leaderboard's store: every recipe admitted to TrainingThroughputBench, in a RocksDB
// database of its own (not a campaign ledger).
//
// Owns the entry vocabulary and its storage. One entry per campaign and ledger head (adding the
// same ledger again replaces its entry), each written with a sync, read back in campaign-id order.
// Which entry leads its model x accelerator x GPU count x workload is the projection's business
// (projections/leaderboard.h); what may be admitted is the command's. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "events/result.h"

namespace attune {

struct LeaderboardEntry {
  // What was measured: the model, the accelerator, how many, and the workload.
  std::string model;
  std::string hardware;
  std::uint32_t gpu_count = 0;
  std::uint32_t seq_length = 0;
  std::uint32_t global_batch = 0;
  std::string precision;
  std::string data;
  std::string launcher;   // sim, local, slurm: where the figures come from
  std::string framework;  // the Megatron-LM rules the recipe was checked against

  // The figures.
  double tokens_per_s_per_gpu = 0.0;
  double baseline_tokens_per_s_per_gpu = 0.0;
  double gain_fraction = 0.0;
  double mfu = 0.0;                     // 0 = unknown
  double usd_per_million_tokens = 0.0;  // 0 = no price given
  double usd_per_gpu_hour = 0.0;

  // The correctness evidence and the recipe.
  std::string campaign_id;
  std::string ledger_head_hash;  // hex hash of the campaign's last event
  std::string ledger_path;
  std::vector<std::string> gate_verdicts;  // one line per gate verdict of the campaign
  std::string recipe;                      // canonical text
  std::string recipe_hash;
  std::int64_t added_at_unix_ns = 0;

  friend bool operator==(const LeaderboardEntry&, const LeaderboardEntry&) = default;
};

// An entry as JSON, the one form the store keeps and `leaderboard show --json` prints: an unknown
// MFU or price (0) is null.
nlohmann::json leaderboard_entry_json(const LeaderboardEntry& entry);

class LeaderboardStore {
 public:
  // Opens (or, unless read_only, creates) the store in `dir`.
  static Result<std::unique_ptr<LeaderboardStore>> open(const std::string& dir, bool read_only);
  ~LeaderboardStore();
  LeaderboardStore(const LeaderboardStore&) = delete;
  LeaderboardStore& operator=(const LeaderboardStore&) = delete;

  // Writes the entry under its campaign id and ledger head (replacing the same one), synced.
  Status put(const LeaderboardEntry& entry);
  // Every entry, in campaign-id order. An entry that does not decode is an error naming it.
  Result<std::vector<LeaderboardEntry>> all() const;

 private:
  struct Impl;
  explicit LeaderboardStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attune
