#include "projections/leaderboard.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace attune {
namespace {

using Key = std::tuple<std::string, std::string, std::uint32_t, std::uint32_t, std::uint32_t,
                       std::string, std::string, std::string>;

Key key_of(const LeaderboardEntry& e) {
  return {e.model,        e.hardware,  e.gpu_count, e.seq_length,
          e.global_batch, e.precision, e.data,      e.launcher};
}

bool leads(const LeaderboardEntry& a, const LeaderboardEntry& b) {
  if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
    return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
  }
  if (a.added_at_unix_ns != b.added_at_unix_ns) return a.added_at_unix_ns < b.added_at_unix_ns;
  return a.campaign_id < b.campaign_id;
}

}  // namespace

std::string workload_text(const LeaderboardEntry& entry) {
  return "seq " + std::to_string(entry.seq_length) + ", global batch " +
         std::to_string(entry.global_batch) + ", " + entry.precision +
         (entry.data.empty() ? "" : ", " + entry.data);
}

std::vector<LeaderboardRow> leaderboard(std::span<const LeaderboardEntry> entries) {
  std::map<Key, LeaderboardRow> best;
  for (const LeaderboardEntry& entry : entries) {
    LeaderboardRow& row = best[key_of(entry)];
    if (row.entries == 0 || leads(entry, row.best)) row.best = entry;
    ++row.entries;
  }
  std::vector<LeaderboardRow> rows;
  rows.reserve(best.size());
  for (auto& [key, row] : best) rows.push_back(std::move(row));
  return rows;
}

}  // namespace attune
