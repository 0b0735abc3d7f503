#include "projections/stop.h"

#include <gtest/gtest.h>

#include "stream_builder.h"

namespace attune {
namespace {

using test::StreamBuilder;

StopStatus fold_stop(const std::vector<Envelope>& events) {
  StopStatus stop = initial_stop_status();
  for (const Envelope& event : events) evolve(stop, event);
  return stop;
}

StopRecorded tuner_stop() {
  return StopRecorded{StopReason::kTunerStopped, 7, {"tp", "recompute"}, "tp comm bound", "flat"};
}

TEST(StopStatus, RunsUntilAStopIsRecorded) {
  StreamBuilder b;
  b.open();
  EXPECT_EQ(fold_stop(b.events()).state, CampaignState::kRunning);
  EXPECT_FALSE(fold_stop(b.events()).stop);

  b.add(tuner_stop(), "tuner:expert");
  const StopStatus stop = fold_stop(b.events());
  EXPECT_EQ(stop.state, CampaignState::kStopped);
  ASSERT_TRUE(stop.stop);
  EXPECT_EQ(stop.stop->leader_run_id, 7u);
  EXPECT_EQ(stop.stop->levers_tested.size(), 2u);
  EXPECT_EQ(stop.stop->last_diagnosis, "tp comm bound");
  EXPECT_EQ(stop.stop_sequence, 2u);
}

TEST(StopStatus, ShipsAfterTheStop) {
  StreamBuilder b;
  b.open();
  b.add(tuner_stop());
  b.add(RecipeShipped{7, false, "recipe", "hash", 1100.0, 0.1, "passed layers 1 and 2"});
  const StopStatus stop = fold_stop(b.events());
  EXPECT_EQ(stop.state, CampaignState::kShipped);
  ASSERT_TRUE(stop.shipped);
  EXPECT_EQ(stop.shipped->run_id, 7u);
  EXPECT_FALSE(stop.shipped->is_baseline);
  EXPECT_DOUBLE_EQ(stop.shipped->gain_fraction, 0.1);
  EXPECT_EQ(stop.shipped_sequence, 3u);
}

TEST(StopStatus, TheFirstStopCounts) {
  StreamBuilder b;
  b.open();
  b.add(StopRecorded{StopReason::kBudgetSpent, 0, {}, "", "budget spent"});
  b.add(tuner_stop());
  const StopStatus stop = fold_stop(b.events());
  EXPECT_EQ(stop.stop->reason, StopReason::kBudgetSpent);
  EXPECT_EQ(stop.stop_sequence, 2u);
}

TEST(StopStatus, StateNamesAreStable) {
  EXPECT_STREQ(to_string(CampaignState::kRunning), "running");
  EXPECT_STREQ(to_string(CampaignState::kStopped), "stopped");
  EXPECT_STREQ(to_string(CampaignState::kShipped), "shipped");
}

}  // namespace
}  // namespace attune
