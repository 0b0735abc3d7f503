#include "projections/leaderboard.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace attune {
namespace {

LeaderboardEntry entry(std::string model, std::string campaign, double tokens, std::int64_t added,
                       std::uint32_t gpus = 128) {
  LeaderboardEntry e;
  e.model = std::move(model);
  e.hardware = "b200";
  e.gpu_count = gpus;
  e.seq_length = 4096;
  e.global_batch = 2048;
  e.precision = "bf16";
  e.data = "rows";
  e.campaign_id = std::move(campaign);
  e.tokens_per_s_per_gpu = tokens;
  e.added_at_unix_ns = added;
  return e;
}

TEST(Leaderboard, TheFastestEntryLeadsItsKey) {
  const std::vector<LeaderboardEntry> entries = {
      entry("glm-4.5", "a", 1000.0, 1), entry("glm-4.5", "b", 1200.0, 2),
      entry("glm-4.5", "c", 1100.0, 3), entry("mixtral", "d", 900.0, 4)};
  const std::vector<LeaderboardRow> rows = leaderboard(entries);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].best.campaign_id, "b");
  EXPECT_EQ(rows[0].entries, 3u);
  EXPECT_EQ(rows[1].best.campaign_id, "d");
  EXPECT_EQ(rows[1].entries, 1u);
}

TEST(Leaderboard, AnotherGpuCountWorkloadOrLauncherIsAnotherKey) {
  std::vector<LeaderboardEntry> entries = {entry("glm-4.5", "a", 1000.0, 1),
                                           entry("glm-4.5", "b", 1200.0, 2, 64)};
  entries.push_back(entry("glm-4.5", "c", 1300.0, 3));
  entries.back().seq_length = 8192;
  EXPECT_EQ(leaderboard(entries).size(), 3u);
  // A simulated figure and a measured one never compete.
  entries.push_back(entry("glm-4.5", "d", 5000.0, 4));
  entries.back().launcher = "sim";
  const auto rows = leaderboard(entries);
  EXPECT_EQ(rows.size(), 4u);
}

TEST(Leaderboard, ATieGoesToTheEntryAddedFirstWhateverTheOrder) {
  std::vector<LeaderboardEntry> entries = {
      entry("m", "late", 1000.0, 9), entry("m", "early", 1000.0, 1), entry("m", "slow", 999.0, 0)};
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.campaign_id < b.campaign_id; });
  do {
    const auto rows = leaderboard(entries);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].best.campaign_id, "early");
  } while (std::next_permutation(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.campaign_id < b.campaign_id;
  }));
}

TEST(Leaderboard, WorkloadTextNamesTheShape) {
  EXPECT_EQ(workload_text(entry("m", "a", 1.0, 1)), "seq 4096, global batch 2048, bf16, rows");
}

}  // namespace
}  // namespace attune
