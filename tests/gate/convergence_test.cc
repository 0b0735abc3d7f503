#include "gate/convergence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace attune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const ConvergenceCheckResult& check_named(const ConvergenceResult& result,
                                          const std::string& name) {
  for (const ConvergenceCheckResult& check : result.checks) {
    if (check.name == name) return check;
  }
  ADD_FAILURE() << "no check named " << name;
  static const ConvergenceCheckResult kMissing;
  return kMissing;
}

// A falling loss: 10.0, 9.75, ..., every value exact in binary and above 2.0 (the high band).
std::vector<double> falling_curve(std::size_t steps) {
  std::vector<double> curve(steps);
  for (std::size_t i = 0; i < steps; ++i) curve[i] = 10.0 - 0.25 * static_cast<double>(i);
  return curve;
}

ConvergenceThresholds no_skip() {
  ConvergenceThresholds t;
  t.skip_first_fraction = 0.0;
  return t;
}

// Whether one step is judged outside its tolerance: a one-step curve, where the point-wise
// check measures the fraction of steps within (1 or 0).
bool step_outside(double baseline, double candidate) {
  const std::vector<double> g{baseline};
  const std::vector<double> c{candidate};
  const ConvergenceResult result = compare_loss_curves(g, c, no_skip());
  const double within = check_named(result, kCheckPointWiseTolerance).measured;
  EXPECT_TRUE(within == 0.0 || within == 1.0) << within;
  return within == 0.0;
}

TEST(ConvergenceThresholds, DefaultsAreTheMegatronBridgePerformanceCiArguments) {
  const ConvergenceThresholds t;
  EXPECT_EQ(t.skip_first_fraction, 0.2);
  EXPECT_EQ(t.high_loss_above, 2.0);
  EXPECT_EQ(t.medium_loss_above, 0.5);
  EXPECT_EQ(t.high_loss_tolerance, 0.10);
  EXPECT_EQ(t.medium_loss_tolerance, 0.05);
  EXPECT_EQ(t.low_loss_tolerance, 0.02);
  EXPECT_EQ(t.steps_within_min_fraction, 0.9);
  EXPECT_EQ(t.outlier_sigma, 3.0);
  EXPECT_EQ(t.outliers_max_fraction, 0.1);
  EXPECT_EQ(t.final_loss_tolerance, 0.05);
  EXPECT_EQ(t.correlation_min, 0.95);
  EXPECT_EQ(t.expected_steps, 0u);
  EXPECT_TRUE(validate_thresholds(t).ok());
}

TEST(Convergence, IdenticalCurvesPassEveryCheck) {
  const std::vector<double> curve = falling_curve(20);
  const ConvergenceResult result = compare_loss_curves(curve, curve);
  EXPECT_TRUE(result.passed);
  EXPECT_TRUE(result.failed_checks.empty());
  std::vector<std::string> names;
  for (const ConvergenceCheckResult& check : result.checks) {
    names.push_back(check.name);
    EXPECT_TRUE(check.passed) << check.name;
  }
  EXPECT_THAT(names, ElementsAre("step_count", "finite_values", "correlation",
                                 "point_wise_tolerance", "final_loss", "outliers"));
  EXPECT_NEAR(check_named(result, kCheckCorrelation).measured, 1.0, 1e-12);
  EXPECT_EQ(check_named(result, kCheckPointWiseTolerance).measured, 1.0);
  EXPECT_EQ(check_named(result, kCheckFinalLoss).measured, 0.0);
  EXPECT_EQ(check_named(result, kCheckOutliers).measured, 0.0);
  EXPECT_EQ(check_named(result, kCheckStepCount).measured, 20.0);
  EXPECT_EQ(result.reason, "all 6 convergence checks passed");
}

TEST(Convergence, ChecksReportTheirThresholds) {
  const std::vector<double> curve = falling_curve(20);
  const ConvergenceResult result = compare_loss_curves(curve, curve);
  EXPECT_EQ(check_named(result, kCheckCorrelation).threshold, 0.95);
  EXPECT_EQ(check_named(result, kCheckPointWiseTolerance).threshold, 0.9);
  EXPECT_EQ(check_named(result, kCheckFinalLoss).threshold, 0.05);
  EXPECT_EQ(check_named(result, kCheckOutliers).threshold, 0.1);
  EXPECT_EQ(check_named(result, kCheckStepCount).threshold, 20.0);
  EXPECT_EQ(check_named(result, kCheckFiniteValues).threshold, 0.0);
}

// Skip: floor(steps * 0.2) leading steps. 20 -> 4, 14 -> floor(2.8) = 2, 4 -> floor(0.8) = 0.
TEST(ConvergenceSkip, TwentyStepsSkipFour) {
  const std::vector<double> g = falling_curve(20);
  std::vector<double> c = g;
  for (std::size_t i = 0; i < 4; ++i) c[i] = 3.0 * g[i];  // wild warm-up, ignored
  ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_TRUE(result.passed) << result.reason;
  EXPECT_EQ(check_named(result, kCheckPointWiseTolerance).measured, 1.0);
  EXPECT_THAT(check_named(result, kCheckPointWiseTolerance).detail,
              HasSubstr("16 of 16 steps within tolerance"));

  c[4] = 3.0 * g[4];  // the first compared step
  result = compare_loss_curves(g, c);
  EXPECT_EQ(check_named(result, kCheckPointWiseTolerance).measured, 15.0 / 16.0);
  EXPECT_THAT(check_named(result, kCheckPointWiseTolerance).detail, HasSubstr("step 4: 27 vs 9"));
}

TEST(ConvergenceSkip, FourteenStepsSkipTwoRoundingDown) {
  const std::vector<double> g = falling_curve(14);
  std::vector<double> c = g;
  c[0] = 2.0 * g[0];
  c[1] = 2.0 * g[1];
  ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_THAT(check_named(result, kCheckPointWiseTolerance).detail,
              HasSubstr("12 of 12 steps within tolerance"));
  c[2] = 2.0 * g[2];
  result = compare_loss_curves(g, c);
  EXPECT_THAT(check_named(result, kCheckPointWiseTolerance).detail,
              HasSubstr("11 of 12 steps within tolerance"));
}

TEST(ConvergenceSkip, FourStepsSkipNone) {
  const std::vector<double> g = falling_curve(4);
  std::vector<double> c = g;
  c[0] = 2.0 * g[0];
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_THAT(check_named(result, kCheckPointWiseTolerance).detail,
              HasSubstr("3 of 4 steps within tolerance"));
}

TEST(ConvergenceBands, BaselineAboveTwoUsesTenPercent) {
  EXPECT_FALSE(step_outside(4.0, 4.36));  // 9 %
  EXPECT_TRUE(step_outside(4.0, 4.44));   // 11 %
  EXPECT_FALSE(step_outside(4.0, 3.64));  // -9 %
  EXPECT_TRUE(step_outside(4.0, 3.56));   // -11 %
}

TEST(ConvergenceBands, BaselineOfExactlyTwoUsesTheMediumBand) {
  EXPECT_TRUE(step_outside(2.0, 2.14));   // 7 %: outside 5 %, though inside 10 %
  EXPECT_FALSE(step_outside(2.0, 2.08));  // 4 %
  // Just above 2.0 the high band applies: the same 7 % is inside.
  EXPECT_FALSE(step_outside(std::nextafter(2.0, 3.0), 2.14));
}

TEST(ConvergenceBands, BaselineOfExactlyHalfUsesTheLowBand) {
  EXPECT_TRUE(step_outside(0.5, 0.515));   // 3 %: outside 2 %, though inside 5 %
  EXPECT_FALSE(step_outside(0.5, 0.505));  // 1 %
  EXPECT_FALSE(step_outside(std::nextafter(0.5, 1.0), 0.515));  // medium band: 3 % is inside
}

TEST(ConvergenceBands, BelowHalfUsesTwoPercent) {
  EXPECT_FALSE(step_outside(0.4, 0.406));  // 1.5 %
  EXPECT_TRUE(step_outside(0.4, 0.41));    // 2.5 %
}

// Deviations chosen so that |c - g| / g is exactly the tolerance in binary arithmetic.
TEST(ConvergenceBands, ExactlyAtTheToleranceIsInsideAndJustBeyondIsOutside) {
  // High: 0.25 / 2.5 = 0.1.
  EXPECT_FALSE(step_outside(2.5, 2.75));
  EXPECT_TRUE(step_outside(2.5, std::nextafter(2.75, 3.0)));
  EXPECT_FALSE(step_outside(2.5, 2.25));
  EXPECT_TRUE(step_outside(2.5, std::nextafter(2.25, 2.0)));
  // Medium: 0.0625 / 1.25 = 0.05.
  EXPECT_FALSE(step_outside(1.25, 1.3125));
  EXPECT_TRUE(step_outside(1.25, std::nextafter(1.3125, 2.0)));
  // Low: 0.0078125 / 0.390625 = 0.02.
  EXPECT_FALSE(step_outside(0.390625, 0.3984375));
  EXPECT_TRUE(step_outside(0.390625, std::nextafter(0.3984375, 1.0)));
}

TEST(ConvergenceBands, ZeroBaselineComparesTheAbsoluteCandidateWithTheLowBand) {
  EXPECT_FALSE(step_outside(0.0, 0.0));
  EXPECT_FALSE(step_outside(0.0, 0.015));
  EXPECT_FALSE(step_outside(0.0, -0.015));
  EXPECT_TRUE(step_outside(0.0, 0.025));
}

// The point-wise check fails only when more than 10 % of the compared steps are outside.
TEST(ConvergencePointWise, ExactlyTenPercentOutsidePassesAndMoreFails) {
  // 25 steps: 5 skipped, 20 compared; steps 6 and 8 are 12.5 % high (outside 10 %).
  const std::vector<double> g = falling_curve(25);
  std::vector<double> c = g;
  c[6] = g[6] * 1.125;
  c[8] = g[8] * 1.125;
  ConvergenceResult result = compare_loss_curves(g, c);
  const ConvergenceCheckResult& two = check_named(result, kCheckPointWiseTolerance);
  EXPECT_EQ(two.measured, 0.9);
  EXPECT_TRUE(two.passed);
  EXPECT_THAT(two.detail, HasSubstr("18 of 20 steps within tolerance; step 6: 9.5625 vs 8.5"));
  EXPECT_THAT(two.detail, HasSubstr("step 8: 9 vs 8 (diff 12.50% > 10.00%)"));

  c[10] = g[10] * 1.125;
  result = compare_loss_curves(g, c);
  const ConvergenceCheckResult& three = check_named(result, kCheckPointWiseTolerance);
  EXPECT_EQ(three.measured, 17.0 / 20.0);
  EXPECT_FALSE(three.passed);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("point_wise_tolerance"));
}

TEST(ConvergencePointWise, ListsTheFirstFiveFailingSteps) {
  const std::vector<double> g = falling_curve(10);
  std::vector<double> c = g;
  for (double& value : c) value *= 2.0;
  const ConvergenceResult result = compare_loss_curves(g, c, no_skip());
  const std::string& detail = check_named(result, kCheckPointWiseTolerance).detail;
  EXPECT_THAT(detail, HasSubstr("0 of 10 steps within tolerance"));
  EXPECT_THAT(detail, HasSubstr("step 4:"));
  EXPECT_THAT(detail, Not(HasSubstr("step 5:")));
  EXPECT_THAT(detail, HasSubstr("and 5 more"));
}

TEST(ConvergenceFinalLoss, ExactlyFivePercentPassesAndJustBeyondFails) {
  // Last step 2.5 vs 2.625: 0.125 / 2.5 = 0.05 exactly.
  std::vector<double> g = falling_curve(10);
  g.back() = 2.5;
  std::vector<double> c = g;
  c.back() = 2.625;
  ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_EQ(check_named(result, kCheckFinalLoss).measured, 0.05);
  EXPECT_TRUE(check_named(result, kCheckFinalLoss).passed);

  c.back() = std::nextafter(2.625, 3.0);
  result = compare_loss_curves(g, c);
  EXPECT_GT(check_named(result, kCheckFinalLoss).measured, 0.05);
  EXPECT_FALSE(check_named(result, kCheckFinalLoss).passed);
}

TEST(ConvergenceFinalLoss, ACurveDivergingLateFailsOnlyTheFinalLoss) {
  // The last step is 8 % high: inside the 10 % per-step band, one step of 16, but not within 5 %.
  const std::vector<double> g = falling_curve(20);
  std::vector<double> c = g;
  c.back() = g.back() * 1.08;
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("final_loss"));
  EXPECT_NEAR(check_named(result, kCheckFinalLoss).measured, 0.08, 1e-12);
  EXPECT_THAT(check_named(result, kCheckFinalLoss).detail, HasSubstr("step 19: 5.67 vs 5.25"));
  EXPECT_THAT(result.reason, HasSubstr("failed 1 of 6 checks: final_loss"));
}

TEST(ConvergenceFinalLoss, ZeroFinalBaselineComparesTheAbsoluteCandidate) {
  std::vector<double> g = falling_curve(10);
  g.back() = 0.0;
  std::vector<double> c = g;
  c.back() = 0.04;
  ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_EQ(check_named(result, kCheckFinalLoss).measured, 0.04);
  EXPECT_TRUE(check_named(result, kCheckFinalLoss).passed);
  c.back() = 0.06;
  result = compare_loss_curves(g, c);
  EXPECT_FALSE(check_named(result, kCheckFinalLoss).passed);
}

// Deliberate difference: the reference divides by the signed final loss, so a negative final
// loss always passes; here the magnitude is used.
TEST(ConvergenceFinalLoss, NegativeFinalLossIsJudgedByItsMagnitude) {
  std::vector<double> g = falling_curve(10);
  g.back() = -2.5;
  std::vector<double> c = g;
  c.back() = -3.0;  // 20 % off
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_EQ(check_named(result, kCheckFinalLoss).measured, 0.2);
  EXPECT_FALSE(check_named(result, kCheckFinalLoss).passed);
}

// Pearson correlation of x = 1, 2, 3, 4 and y = 1, 3, 2, 4: sxy = 4, sxx = syy = 5, r = 0.8.
TEST(ConvergenceCorrelation, KnownAnswer) {
  const std::vector<double> g{1.0, 2.0, 3.0, 4.0};
  const std::vector<double> c{1.0, 3.0, 2.0, 4.0};
  ConvergenceThresholds t = no_skip();
  ConvergenceResult result = compare_loss_curves(g, c, t);
  EXPECT_NEAR(check_named(result, kCheckCorrelation).measured, 0.8, 1e-12);
  EXPECT_FALSE(check_named(result, kCheckCorrelation).passed);
  t.correlation_min = 0.79;
  result = compare_loss_curves(g, c, t);
  EXPECT_TRUE(check_named(result, kCheckCorrelation).passed);
  t.correlation_min = 0.81;
  result = compare_loss_curves(g, c, t);
  EXPECT_FALSE(check_named(result, kCheckCorrelation).passed);
}

TEST(ConvergenceCorrelation, IsOfRawLossesSoAnAffineCopyCorrelatesPerfectly) {
  const std::vector<double> g = falling_curve(10);
  std::vector<double> c = g;
  for (double& value : c) value = 3.0 * value + 1.0;
  ConvergenceResult result = compare_loss_curves(g, c, no_skip());
  EXPECT_NEAR(check_named(result, kCheckCorrelation).measured, 1.0, 1e-12);
  for (double& value : c) value = -value;
  result = compare_loss_curves(g, c, no_skip());
  EXPECT_NEAR(check_named(result, kCheckCorrelation).measured, -1.0, 1e-12);
}

TEST(ConvergenceCorrelation, ANoisyUncorrelatedCurveFailsOnlyCorrelation) {
  // The baseline falls slowly from 2.50 to 2.405; the candidate zig-zags around 2.45 by 0.05.
  // Every step is within 10 %, the last within 5 %, and no residual is a 3-sigma outlier, but
  // the shapes do not match.
  std::vector<double> g(20);
  std::vector<double> c(20);
  for (std::size_t i = 0; i < 20; ++i) {
    g[i] = 2.5 - 0.005 * static_cast<double>(i);
    c[i] = 2.45 + (i % 2 == 0 ? 0.05 : -0.05);
  }
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("correlation"));
  EXPECT_LT(std::abs(check_named(result, kCheckCorrelation).measured), 0.5);
}

TEST(ConvergenceOutliers, OneSpikeInTwentyIsOneOutlierAndPasses) {
  // Residuals: 19 zeros and one d. mean d/20, sigma sqrt(0.05 * 0.95) d = 0.218 d; the spike is
  // 0.95 d from the mean, beyond 3 sigma = 0.654 d.
  const std::vector<double> g = falling_curve(25);
  std::vector<double> c = g;
  c[10] = g[10] * 1.05;
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_EQ(check_named(result, kCheckOutliers).measured, 0.05);
  EXPECT_TRUE(check_named(result, kCheckOutliers).passed);
  EXPECT_THAT(check_named(result, kCheckOutliers).detail,
              HasSubstr("1 of 20 steps beyond 3 sigma"));
}

// The pattern the reference fails: +-a on 11 % of the points. Residuals: 11 of +0.25, 11 of
// -0.25 and 178 zeros (200 compared). mean 0, sigma = 0.25 sqrt(0.11) = 0.0829, 3 sigma =
// 0.2487 < 0.25: all 22 are outliers, 22 / 200 = 0.11 > 0.1.
TEST(ConvergenceOutliers, SymmetricDeviationsOnElevenPercentFail) {
  std::vector<double> g(250);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = 9.0 - static_cast<double>(i) / 64.0;
  std::vector<double> c = g;
  for (std::size_t k = 0; k < 22; ++k) {
    const std::size_t step = 50 + 1 + 9 * k;  // inside the compared window, never the last step
    c[step] = g[step] + (k % 2 == 0 ? 0.25 : -0.25);
  }
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_EQ(check_named(result, kCheckOutliers).measured, 0.11);
  EXPECT_FALSE(check_named(result, kCheckOutliers).passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("outliers"));
}

// A one-sided block on 15 % of the points: mean 0.15 d, sigma sqrt(0.15 * 0.85) d = 0.357 d;
// the block is 0.85 d from the mean, inside 3 sigma = 1.07 d. Nothing is flagged.
TEST(ConvergenceOutliers, AOneSidedBlockIsNeverFlagged) {
  const std::vector<double> g = falling_curve(25);
  std::vector<double> c = g;
  for (std::size_t step = 10; step < 13; ++step) c[step] = g[step] + 0.25;
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_EQ(check_named(result, kCheckOutliers).measured, 0.0);
}

TEST(ConvergenceOutliers, AConstantBiasIsNeverFlagged) {
  const std::vector<double> g = falling_curve(20);
  std::vector<double> c = g;
  for (double& value : c) value += 0.25;
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_EQ(check_named(result, kCheckOutliers).measured, 0.0);
  EXPECT_TRUE(result.passed) << result.reason;
}

TEST(ConvergenceInput, NaNInTheCandidateFails) {
  const std::vector<double> g = falling_curve(20);
  std::vector<double> c = g;
  c[7] = kNaN;
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("finite_values"));
  EXPECT_EQ(result.checks.size(), 2u);  // the convergence checks are not run
  EXPECT_EQ(check_named(result, kCheckFiniteValues).measured, 1.0);
  EXPECT_THAT(result.reason, HasSubstr("candidate step 7 is nan"));
  EXPECT_THAT(result.reason, HasSubstr("not run"));
}

TEST(ConvergenceInput, NaNInTheSkippedWarmUpStillFails) {
  const std::vector<double> g = falling_curve(20);
  std::vector<double> c = g;
  c[0] = kNaN;
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("finite_values"));
}

TEST(ConvergenceInput, InfinitiesInEitherCurveFail) {
  const std::vector<double> g = falling_curve(20);
  std::vector<double> c = g;
  c[12] = kInf;
  ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.reason, HasSubstr("candidate step 12 is inf"));

  std::vector<double> bad_baseline = g;
  bad_baseline[3] = -kInf;
  result = compare_loss_curves(bad_baseline, g);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("finite_values"));
  EXPECT_THAT(result.reason, HasSubstr("baseline step 3 is -inf"));
}

TEST(ConvergenceInput, AMissingStepFails) {
  const std::vector<double> g = falling_curve(20);
  const std::vector<double> c(g.begin(), g.end() - 1);
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("step_count"));
  EXPECT_EQ(check_named(result, kCheckStepCount).measured, 19.0);
  EXPECT_EQ(check_named(result, kCheckStepCount).threshold, 20.0);
  EXPECT_THAT(result.reason, HasSubstr("the candidate is missing 1 step(s)"));
}

TEST(ConvergenceInput, AnExtraCandidateStepFails) {
  const std::vector<double> g = falling_curve(20);
  const std::vector<double> c = falling_curve(21);
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("step_count"));
  EXPECT_THAT(result.reason, HasSubstr("the baseline is missing 1 step(s)"));
}

TEST(ConvergenceInput, TheWrongLengthFailsWhenStepsAreExpected) {
  const std::vector<double> curve = falling_curve(18);
  ConvergenceThresholds t;
  t.expected_steps = 20;
  ConvergenceResult result = compare_loss_curves(curve, curve, t);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("step_count"));
  EXPECT_EQ(check_named(result, kCheckStepCount).threshold, 20.0);
  EXPECT_THAT(result.reason, HasSubstr("the baseline does not have the expected 20 steps"));

  const std::vector<double> full = falling_curve(20);
  result = compare_loss_curves(full, curve, t);
  EXPECT_THAT(result.reason, HasSubstr("the candidate does not have the expected 20 steps"));

  result = compare_loss_curves(full, full, t);
  EXPECT_TRUE(result.passed) << result.reason;
}

TEST(ConvergenceInput, EmptyCurvesFail) {
  const std::vector<double> empty;
  const std::vector<double> g = falling_curve(20);
  ConvergenceResult result = compare_loss_curves(empty, empty);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.reason, HasSubstr("both curves are empty"));
  result = compare_loss_curves(g, empty);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.reason, HasSubstr("the candidate curve is empty"));
  result = compare_loss_curves(empty, g);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.reason, HasSubstr("the baseline curve is empty"));
}

TEST(ConvergenceInput, BothInputProblemsAreReported) {
  const std::vector<double> g = falling_curve(20);
  const std::vector<double> c{1.0, kNaN};
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_THAT(result.failed_checks, ElementsAre("step_count", "finite_values"));
}

TEST(ConvergenceFlat, IdenticalFlatCurvesPassWithCorrelationUndefined) {
  const std::vector<double> curve(20, 2.1);
  const ConvergenceResult result = compare_loss_curves(curve, curve);
  EXPECT_TRUE(result.passed) << result.reason;
  const ConvergenceCheckResult& correlation = check_named(result, kCheckCorrelation);
  EXPECT_TRUE(correlation.passed);
  EXPECT_TRUE(std::isnan(correlation.measured));
  EXPECT_THAT(correlation.detail, HasSubstr("undefined (flat curve)"));
  EXPECT_THAT(result.reason, HasSubstr("correlation undefined: flat curve"));
}

TEST(ConvergenceFlat, AFlatCandidateIsJudgedByTheOtherChecks) {
  // The baseline falls from 2.40 to 2.305 over the compared steps; a flat 2.35 candidate is
  // within 10 % everywhere and within 5 % at the end: it passes.
  std::vector<double> g(20);
  for (std::size_t i = 0; i < 20; ++i) g[i] = 2.4 - 0.005 * static_cast<double>(i);
  std::vector<double> c(20, 2.35);
  ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_TRUE(result.passed) << result.reason;
  EXPECT_THAT(check_named(result, kCheckCorrelation).detail,
              HasSubstr("undefined (flat curve): the candidate is constant"));

  // Flat and 20 % high: the point-wise and final-loss checks fail it, correlation does not.
  c.assign(20, 2.8);
  result = compare_loss_curves(g, c);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("point_wise_tolerance", "final_loss"));
}

TEST(ConvergenceFlat, AFlatBaselineIsReported) {
  const std::vector<double> g(10, 3.0);
  const std::vector<double> c = falling_curve(10);
  const ConvergenceResult result = compare_loss_curves(g, c, no_skip());
  EXPECT_THAT(check_named(result, kCheckCorrelation).detail,
              HasSubstr("undefined (flat curve): the baseline is constant"));
  EXPECT_FALSE(result.passed);  // the candidate is far from 3.0
}

TEST(ConvergenceFlat, ASingleComparedStepHasNoCorrelation) {
  const std::vector<double> g{3.0};
  const std::vector<double> c{3.1};
  const ConvergenceResult result = compare_loss_curves(g, c);
  EXPECT_TRUE(result.passed) << result.reason;
  EXPECT_TRUE(std::isnan(check_named(result, kCheckCorrelation).measured));
}

TEST(ConvergenceThresholdsValidation, RejectsOutOfRangeValues) {
  ConvergenceThresholds t;
  t.skip_first_fraction = 1.0;
  EXPECT_FALSE(validate_thresholds(t).ok());
  t = {};
  t.skip_first_fraction = -0.1;
  EXPECT_FALSE(validate_thresholds(t).ok());
  t = {};
  t.final_loss_tolerance = kNaN;
  EXPECT_FALSE(validate_thresholds(t).ok());
  t = {};
  t.correlation_min = 1.5;
  EXPECT_FALSE(validate_thresholds(t).ok());
  t = {};
  t.steps_within_min_fraction = 1.1;
  EXPECT_FALSE(validate_thresholds(t).ok());
  t = {};
  t.high_loss_tolerance = -0.01;
  EXPECT_FALSE(validate_thresholds(t).ok());
  t = {};
  t.medium_loss_above = 3.0;  // above high_loss_above
  EXPECT_FALSE(validate_thresholds(t).ok());
  t = {};
  t.skip_first_fraction = 0.0;
  t.correlation_min = -1.0;
  EXPECT_TRUE(validate_thresholds(t).ok());
}

TEST(ConvergenceThresholdsValidation, InvalidThresholdsFailTheComparison) {
  const std::vector<double> curve = falling_curve(20);
  ConvergenceThresholds t;
  t.correlation_min = kNaN;  // would make "corr < min" false and pass
  const ConvergenceResult result = compare_loss_curves(curve, curve, t);
  EXPECT_FALSE(result.passed);
  EXPECT_THAT(result.failed_checks, ElementsAre("thresholds"));
  EXPECT_THAT(result.reason, HasSubstr("correlation_min"));
}

TEST(Convergence, ParametersOverrideTheDefaults) {
  // The 8 %-late-divergence fails at 5 % but passes with a final tolerance of 10 %.
  const std::vector<double> g = falling_curve(20);
  std::vector<double> c = g;
  c.back() = g.back() * 1.08;
  ConvergenceThresholds t;
  t.final_loss_tolerance = 0.10;
  EXPECT_TRUE(compare_loss_curves(g, c, t).passed);
  // A stricter point-wise requirement: one step outside of 16 fails at 100 %.
  c = g;
  c[10] = g[10] * 1.2;
  t = {};
  EXPECT_TRUE(check_named(compare_loss_curves(g, c, t), kCheckPointWiseTolerance).passed);
  t.steps_within_min_fraction = 1.0;
  EXPECT_FALSE(check_named(compare_loss_curves(g, c, t), kCheckPointWiseTolerance).passed);
}

TEST(Convergence, IsDeterministic) {
  const std::vector<double> g = falling_curve(20);
  std::vector<double> c = g;
  c[9] *= 1.3;
  c.back() *= 1.07;
  EXPECT_EQ(compare_loss_curves(g, c), compare_loss_curves(g, c));
}

}  // namespace
}  // namespace attune
