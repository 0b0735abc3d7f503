#include "projections/budget.h"

#include <gtest/gtest.h>

#include "projections/campaign_view.h"
#include "stream_builder.h"

namespace attune {
namespace {

using test::StreamBuilder;

Budget fold_budget(const std::vector<Envelope>& events) {
  Budget budget = initial_budget();
  for (const Envelope& event : events) evolve(budget, event);
  return budget;
}

TEST(ReserveGpuHours, IsChecksTimesLaunchCostScaledToCheckSteps) {
  EXPECT_DOUBLE_EQ(reserve_gpu_hours_of(3, 2.0, 20, 14), 3.0 * 2.0 * 20.0 / 14.0);
  EXPECT_EQ(reserve_gpu_hours_of(3, 2.0, 20, 0), 0.0);
}

TEST(Budget, ComesFromTheCampaignWithNoReserveBeforeTheBand) {
  StreamBuilder b;
  b.open(test::test_opened(100.0));
  const Budget budget = fold_budget(b.events());
  EXPECT_EQ(budget.budget_gpu_hours, 100.0);
  EXPECT_EQ(budget.reserve_gpu_hours, 0.0);
  EXPECT_EQ(budget.remaining_gpu_hours, 100.0);
}

TEST(Budget, AutoBudgetIsSizedByTheBandSet) {
  CampaignOpened opened = test::test_opened(0.0);
  opened.budget_auto = true;
  StreamBuilder b;
  b.open(opened);
  b.measured_run(1, RunPurpose::kCalibration, 1000.0, {}, 8, 0.25);  // 2 GPU-hours
  Budget budget = fold_budget(b.events());
  EXPECT_TRUE(budget.budget_auto);
  EXPECT_EQ(budget.budget_gpu_hours, 0.0);
  EXPECT_EQ(budget.remaining_gpu_hours, 0.0);
  EXPECT_DOUBLE_EQ(budget.overshoot_gpu_hours, 2.0);

  b.band_set(1000.0, 0.0, 0.03, 60.0, 2.0);
  budget = fold_budget(b.events());
  EXPECT_EQ(budget.budget_gpu_hours, 60.0);
  EXPECT_DOUBLE_EQ(budget.reserve_gpu_hours, 3.0 * 2.0 * 20.0 / 14.0);
  EXPECT_DOUBLE_EQ(budget.remaining_gpu_hours, 60.0 - budget.reserve_gpu_hours - 2.0);
  EXPECT_EQ(budget.overshoot_gpu_hours, 0.0);
}

TEST(Budget, ABandSetWithoutABudgetKeepsTheCampaignsBudget) {
  StreamBuilder b;
  b.open(test::test_opened(80.0));
  b.band_set(1000.0, 0.0, 0.03, 0.0, 1.4);
  const Budget budget = fold_budget(b.events());
  EXPECT_EQ(budget.budget_gpu_hours, 80.0);
  EXPECT_DOUBLE_EQ(budget.reserve_gpu_hours, 3.0 * 1.4 * 20.0 / 14.0);
}

TEST(Budget, InfrastructureChargesDoNotTouchTheTunersBudget) {
  StreamBuilder b;
  b.open(test::test_opened(100.0));
  b.failed_run(1, RunPurpose::kSearch, FailureClass::kInfra, {}, 8, 0.5);  // 4 GPU-hours
  const Budget budget = fold_budget(b.events());
  EXPECT_DOUBLE_EQ(budget.infra_gpu_hours, 4.0);
  EXPECT_EQ(budget.tuner_gpu_hours, 0.0);
  EXPECT_EQ(budget.remaining_gpu_hours, 100.0);
  EXPECT_DOUBLE_EQ(budget.charged_gpu_hours, 4.0);
}

TEST(Budget, FailedLaunchesOnTheRecipeAreChargedToTheTuner) {
  StreamBuilder b;
  b.open(test::test_opened(100.0));
  b.failed_run(1, RunPurpose::kSearch, FailureClass::kOom, {}, 8, 0.5);
  const Budget budget = fold_budget(b.events());
  EXPECT_DOUBLE_EQ(budget.tuner_gpu_hours, 4.0);
  EXPECT_DOUBLE_EQ(budget.remaining_gpu_hours, 96.0);
}

TEST(Budget, AdmittedRunsAreInFlightUntilCharged) {
  StreamBuilder b;
  b.open(test::test_opened(100.0));
  b.propose(1, RunPurpose::kSearch);
  b.admit(1, 1, RunPurpose::kSearch, 8, 5.0);
  b.propose(2, RunPurpose::kSearch);
  b.admit(2, 2, RunPurpose::kSearch, 8, 3.0);
  Budget budget = fold_budget(b.events());
  EXPECT_DOUBLE_EQ(budget.in_flight_gpu_hours, 8.0);
  EXPECT_DOUBLE_EQ(budget.remaining_gpu_hours, 92.0);

  // Run 1 ran shorter than expected: 8 GPUs for 15 minutes.
  b.start(1, test::kStartUnixNs);
  b.finish(1, test::kStartUnixNs + 900 * test::kNsPerSecond);
  b.charge(1, 8, test::kStartUnixNs, test::kStartUnixNs + 900 * test::kNsPerSecond);
  budget = fold_budget(b.events());
  EXPECT_DOUBLE_EQ(budget.in_flight_gpu_hours, 3.0);
  EXPECT_DOUBLE_EQ(budget.tuner_gpu_hours, 2.0);
  EXPECT_DOUBLE_EQ(budget.remaining_gpu_hours, 95.0);
}

TEST(Budget, ChecksAreDrawnFromTheReserve) {
  StreamBuilder b;
  b.open(test::test_opened(100.0));
  b.band_set(1000.0, 0.0, 0.03, 0.0, 2.8);  // reserve 3 x 2.8 x 20 / 14 = 12
  b.measured_run(1, RunPurpose::kSearch, 1100.0, {}, 8, 0.5);
  b.measured_run(2, RunPurpose::kCheck, 1100.0, {}, 8, 0.75);  // 6 GPU-hours
  const Budget budget = fold_budget(b.events());
  EXPECT_DOUBLE_EQ(budget.reserve_gpu_hours, 12.0);
  EXPECT_DOUBLE_EQ(budget.tuner_gpu_hours, 4.0);
  EXPECT_DOUBLE_EQ(budget.checks_gpu_hours, 6.0);
  EXPECT_DOUBLE_EQ(budget.reserve_left_gpu_hours, 6.0);
  EXPECT_DOUBLE_EQ(budget.remaining_gpu_hours, 100.0 - 12.0 - 4.0);
}

TEST(Budget, OverspendingShowsAsOvershootNeverAsANegativeRemainder) {
  StreamBuilder b;
  b.open(test::test_opened(10.0));
  b.measured_run(1, RunPurpose::kSearch, 1000.0, {}, 8, 1.0);
  b.measured_run(2, RunPurpose::kSearch, 1000.0, {}, 8, 0.5);
  b.propose(3, RunPurpose::kSearch);
  b.admit(3, 3, RunPurpose::kSearch, 8, 4.0);
  const Budget budget = fold_budget(b.events());
  EXPECT_DOUBLE_EQ(budget.tuner_gpu_hours, 12.0);
  EXPECT_EQ(budget.remaining_gpu_hours, 0.0);
  EXPECT_DOUBLE_EQ(budget.overshoot_gpu_hours, 2.0);
  EXPECT_DOUBLE_EQ(budget.in_flight_gpu_hours, 4.0);
}

TEST(Budget, ANegativeChargeCountsAsZero) {
  StreamBuilder b;
  b.open(test::test_opened(10.0));
  b.propose(1, RunPurpose::kSearch);
  b.admit(1, 1, RunPurpose::kSearch, 8, 1.0);
  b.add(Charged{1, Account::kTuner, 8, 100, 50, -5.0});
  const Budget budget = fold_budget(b.events());
  EXPECT_EQ(budget.tuner_gpu_hours, 0.0);
  EXPECT_EQ(budget.charged_gpu_hours, 0.0);
  EXPECT_EQ(budget.remaining_gpu_hours, 10.0);
}

TEST(Budget, AccountsAddUpToEveryCharge) {
  StreamBuilder b;
  b.open(test::test_opened(100.0));
  b.measured_run(1, RunPurpose::kCalibration, 1000.0, {}, 8, 0.3);
  b.failed_run(2, RunPurpose::kSearch, FailureClass::kInfra, {}, 16, 0.1);
  b.measured_run(3, RunPurpose::kRetry, 1000.0, {}, 8, 0.7);
  b.measured_run(4, RunPurpose::kCheck, 1000.0, {}, 8, 1.1);
  b.add(Charged{99, Account::kTuner, 8, 0, 3'600'000'000'000, 8.0});  // an unknown run
  const Budget budget = fold_budget(b.events());
  EXPECT_NEAR(budget.tuner_gpu_hours + budget.checks_gpu_hours + budget.infra_gpu_hours,
              budget.charged_gpu_hours, 1e-12);
  EXPECT_DOUBLE_EQ(budget.tuner_gpu_hours, 8.0 * 0.3 + 8.0 * 0.7 + 8.0);
}

}  // namespace
}  // namespace attune
