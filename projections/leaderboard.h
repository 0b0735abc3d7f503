// Leaderboard: the fastest admitted recipe for each model x accelerator x GPU count x workload
// (TrainingThroughputBench), folded from the leaderboard store's entries. Where the figures come
// from (the launcher: the simulated cluster, local processes or Slurm) is part of the key, so a
// simulated throughput never outranks a measured one.
//
// Owns the ranking rule: within a key, the highest tokens/s/GPU leads; a tie goes to the entry
// added first, then the smaller campaign id. Rows come out sorted by model, accelerator, GPU count
// and workload, each with how many entries competed for it. Pure; the same entries in any order
// give the same rows.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "events/leaderboard_store.h"

namespace attune {

struct LeaderboardRow {
  LeaderboardEntry best;
  std::size_t entries = 0;  // entries under the same key, the best included

  friend bool operator==(const LeaderboardRow&, const LeaderboardRow&) = default;
};

// "seq 4096, global batch 2048, bf16, DATA": the workload part of the key, as shown.
std::string workload_text(const LeaderboardEntry& entry);

std::vector<LeaderboardRow> leaderboard(std::span<const LeaderboardEntry> entries);

}  // namespace attune
