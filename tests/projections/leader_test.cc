#include "projections/leader.h"

#include <gtest/gtest.h>

#include "projections/campaign_view.h"
#include "stream_builder.h"

namespace attune {
namespace {

using test::flag_change;
using test::StreamBuilder;

// Calibration at a mean of 1000 tokens/s/GPU and a recorded band of 5 %.
StreamBuilder calibrated() {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 990.0);
  b.measured_run(2, RunPurpose::kCalibration, 1010.0);
  b.band_set(1000.0, 0.01, 0.05, 0.0, 2.0);
  return b;
}

std::vector<SettingChange> tp_change() {
  return {flag_change("--tensor-model-parallel-size", "2", "1")};
}

TEST(BeatsByMoreThanBand, IsStrict) {
  EXPECT_FALSE(beats_by_more_than_band(1050.0, 1000.0, 1000.0, 0.05));
  EXPECT_TRUE(beats_by_more_than_band(1050.001, 1000.0, 1000.0, 0.05));
  EXPECT_FALSE(beats_by_more_than_band(2000.0, 1000.0, 0.0, 0.05));
}

TEST(BeatsByMoreThanBand, MeasuresAgainstTheBaselineMeanNotTheLeader) {
  // 1100 -> 1152: 4.7 % of the leader, but 5.2 % of the baseline mean 1000.
  EXPECT_TRUE(beats_by_more_than_band(1152.0, 1100.0, 1000.0, 0.05));
}

TEST(Leader, StartsAsTheBaselineAtTheBaselineMean) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 990.0);
  b.measured_run(2, RunPurpose::kCalibration, 1010.0);
  const CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 0u);
  EXPECT_DOUBLE_EQ(view.leader.tokens_per_s_per_gpu, 1000.0);
  EXPECT_EQ(view.leader.gain_fraction, 0.0);
  EXPECT_EQ(view.leader.verdicts.at(1).verdict, Verdict::kCalibration);
}

TEST(Leader, ACandidateExactlyOnTheBandDoesNotLead) {
  StreamBuilder b = calibrated();
  b.measured_run(3, RunPurpose::kSearch, 1050.0, tp_change());
  const CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 0u);
  const RunVerdict& verdict = view.leader.verdicts.at(3);
  EXPECT_EQ(verdict.verdict, Verdict::kNotBetter);
  EXPECT_DOUBLE_EQ(verdict.gain_fraction, 0.05);
  EXPECT_EQ(verdict.leader_before, 0u);
  EXPECT_EQ(verdict.leader_after, 0u);
}

TEST(Leader, ACandidateJustAboveTheBandLeads) {
  StreamBuilder b = calibrated();
  b.measured_run(3, RunPurpose::kSearch, 1050.5, tp_change());
  const CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 3u);
  EXPECT_DOUBLE_EQ(view.leader.tokens_per_s_per_gpu, 1050.5);
  EXPECT_DOUBLE_EQ(view.leader.gain_fraction, 0.0505);
  EXPECT_EQ(view.leader.verdicts.at(3).verdict, Verdict::kNewLeader);
  ASSERT_EQ(view.leader.history.size(), 1u);
  EXPECT_EQ(view.leader.history[0].previous_run_id, 0u);
  EXPECT_EQ(view.leader.history[0].run_id, 3u);
}

TEST(Leader, AFasterRunInsideTheBandDoesNotReplaceTheLeader) {
  StreamBuilder b = calibrated();
  b.measured_run(3, RunPurpose::kSearch, 1100.0, tp_change());
  b.measured_run(4, RunPurpose::kSearch, 1140.0, tp_change());  // +4 % of the mean over run 3
  CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 3u);
  EXPECT_EQ(view.leader.verdicts.at(4).verdict, Verdict::kNotBetter);
  EXPECT_EQ(view.leader.verdicts.at(4).leader_after, 3u);

  b.measured_run(5, RunPurpose::kSearch, 1151.0, tp_change());  // +5.1 %
  view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 5u);
  EXPECT_EQ(view.leader.verdicts.at(5).leader_before, 3u);
  EXPECT_EQ(view.leader.history.size(), 2u);
}

TEST(Leader, CheckRunsAreNeverJudged) {
  StreamBuilder b = calibrated();
  b.measured_run(3, RunPurpose::kCheck, 5000.0);
  const CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 0u);
  EXPECT_FALSE(view.leader.verdicts.contains(3));
}

TEST(Leader, RetryRunsAreJudged) {
  StreamBuilder b = calibrated();
  b.failed_run(3, RunPurpose::kSearch, FailureClass::kInfra, tp_change());
  b.measured_run(4, RunPurpose::kRetry, 1200.0, tp_change());
  const CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.verdicts.at(3).verdict, Verdict::kFailed);
  EXPECT_EQ(view.leader.run_id, 4u);
}

TEST(Leader, FailedSearchRunsAreFailed) {
  StreamBuilder b = calibrated();
  b.failed_run(3, RunPurpose::kSearch, FailureClass::kOom, tp_change());
  const CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.verdicts.at(3).verdict, Verdict::kFailed);
  EXPECT_EQ(view.leader.run_id, 0u);
}

TEST(Leader, RunsMeasuredBeforeTheBandAreJudgedWhenItIsSetInOrder) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.measured_run(2, RunPurpose::kSearch, 1200.0, tp_change());
  b.measured_run(3, RunPurpose::kSearch, 1230.0, tp_change());  // +3 % over run 2: inside
  CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 0u);
  EXPECT_FALSE(view.leader.verdicts.contains(2));

  b.band_set(1000.0, 0.0, 0.05);
  view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 2u);
  EXPECT_EQ(view.leader.verdicts.at(2).verdict, Verdict::kNewLeader);
  EXPECT_EQ(view.leader.verdicts.at(3).verdict, Verdict::kNotBetter);
  EXPECT_TRUE(view.leader.awaiting_band.empty());
}

TEST(Leader, OnlyTheFirstOutcomeOfARunCounts) {
  StreamBuilder b = calibrated();
  b.measured_run(3, RunPurpose::kSearch, 900.0, tp_change());
  b.measure(3, 2000.0);
  b.fail(3, FailureClass::kCrash);
  const CampaignView view = fold(b.events());
  EXPECT_EQ(view.leader.run_id, 0u);
  EXPECT_EQ(view.leader.verdicts.at(3).verdict, Verdict::kNotBetter);
  EXPECT_DOUBLE_EQ(view.leader.verdicts.at(3).gain_fraction, -0.1);
}

}  // namespace
}  // namespace attune
