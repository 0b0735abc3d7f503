#include "events/leaderboard_store.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace attune {
namespace {

namespace fs = std::filesystem;

class LeaderboardStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attune-board-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

LeaderboardEntry sample(std::string campaign, double tokens) {
  LeaderboardEntry e;
  e.model = "glm-4.5";
  e.hardware = "b200";
  e.gpu_count = 128;
  e.seq_length = 4096;
  e.global_batch = 2048;
  e.precision = "bf16";
  e.data = "rows, \"quoted\"";
  e.launcher = "sim";
  e.framework = "Megatron-LM d98e8a64ddf3";
  e.tokens_per_s_per_gpu = tokens;
  e.baseline_tokens_per_s_per_gpu = 1000.25;
  e.gain_fraction = 0.125;
  e.mfu = 0.0625;
  e.usd_per_million_tokens = 1.5;
  e.usd_per_gpu_hour = 4.0;
  e.campaign_id = std::move(campaign);
  e.ledger_head_hash = std::string(64, 'a');
  e.ledger_path = "/ledgers/x";
  e.gate_verdicts = {"run 15: layer 1 passed, layer 2 passed"};
  e.recipe = "--tensor-model-parallel-size 2\n";
  e.recipe_hash = std::string(64, 'b');
  e.added_at_unix_ns = 1'700'000'000'000'000'000;
  return e;
}

TEST_F(LeaderboardStoreTest, EntriesComeBackWholeAndAgainAfterReopening) {
  {
    auto store = LeaderboardStore::open(dir_.string(), false);
    ASSERT_TRUE(store.ok()) << store.error();
    ASSERT_TRUE((*store)->put(sample("b-campaign", 1200.5)).ok());
    ASSERT_TRUE((*store)->put(sample("a-campaign", 1100.5)).ok());
  }
  auto store = LeaderboardStore::open(dir_.string(), true);
  ASSERT_TRUE(store.ok()) << store.error();
  auto all = (*store)->all();
  ASSERT_TRUE(all.ok()) << all.error();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0], sample("a-campaign", 1100.5));
  EXPECT_EQ((*all)[1], sample("b-campaign", 1200.5));
}

TEST_F(LeaderboardStoreTest, AddingTheSameLedgerAgainReplacesItsEntryAndAnotherLedgerAdds) {
  auto store = LeaderboardStore::open(dir_.string(), false);
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->put(sample("c", 1000.0)).ok());
  ASSERT_TRUE((*store)->put(sample("c", 1300.0)).ok());
  auto all = (*store)->all();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(all->front().tokens_per_s_per_gpu, 1300.0);
  LeaderboardEntry other = sample("c", 900.0);
  other.ledger_head_hash = std::string(64, 'c');
  ASSERT_TRUE((*store)->put(other).ok());
  EXPECT_EQ((*store)->all()->size(), 2u);
}

TEST_F(LeaderboardStoreTest, ReadingAMissingBoardSaysHowToMakeOne) {
  auto store = LeaderboardStore::open(dir_.string(), true);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find("leaderboard add"), std::string::npos) << store.error();
  EXPECT_FALSE(fs::exists(dir_));
}

}  // namespace
}  // namespace attune
