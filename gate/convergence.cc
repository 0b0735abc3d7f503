#include "gate/convergence.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "events/assert.h"
#include "projections/number_format.h"

namespace attune {

namespace {

// The reference lists the first 5 failing steps in its details; so do we.
constexpr std::size_t kFailingStepsListedMax = 5;
// The finite-values detail names at most this many offending steps per curve.
constexpr std::size_t kNonFiniteStepsListedMax = 3;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Shortest text with 6 significant digits, locale-independent ("2.3456", "0.001", "nan").
std::string general(double value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::general, 6);
  ATTUNE_ASSERT(result.ec == std::errc{}, "a double always formats");
  return std::string(buffer.data(), result.ptr);
}

std::string percent(double fraction) { return format_percent(fraction, 2); }

ConvergenceCheckResult make_check(const char* name, double measured, double threshold, bool passed,
                                  std::string detail) {
  return ConvergenceCheckResult{name, measured, threshold, passed, std::move(detail)};
}

// The reference's relative difference: |c - g| / |g|, or |c| when the baseline is exactly 0.
double relative_difference(double candidate, double baseline) {
  if (baseline == 0.0) return std::abs(candidate);
  return std::abs(candidate - baseline) / std::abs(baseline);
}

// The band is chosen from the baseline value: (high, inf) high, (medium, high] medium, else low.
double tolerance_for(double baseline, const ConvergenceThresholds& t) {
  if (baseline > t.high_loss_above) return t.high_loss_tolerance;
  if (baseline > t.medium_loss_above) return t.medium_loss_tolerance;
  return t.low_loss_tolerance;
}

double mean_of_values(std::span<const double> values) {
  double sum = 0.0;
  for (double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

bool is_flat(std::span<const double> values) {
  return std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end();
}

ConvergenceCheckResult step_count_check(std::span<const double> baseline,
                                        std::span<const double> candidate,
                                        std::size_t expected_steps) {
  const std::size_t required = expected_steps != 0 ? expected_steps : baseline.size();
  const double measured = static_cast<double>(candidate.size());
  const double threshold = static_cast<double>(required);
  const std::string counts = "candidate has " + std::to_string(candidate.size()) +
                             " steps, baseline " + std::to_string(baseline.size());
  auto failed = [&](const std::string& why) {
    return make_check(kCheckStepCount, measured, threshold, false, why + " (" + counts + ")");
  };
  if (baseline.empty() && candidate.empty()) return failed("both curves are empty");
  if (baseline.empty()) return failed("the baseline curve is empty");
  if (candidate.empty()) return failed("the candidate curve is empty");
  if (expected_steps != 0 && baseline.size() != expected_steps) {
    return failed("the baseline does not have the expected " + std::to_string(expected_steps) +
                  " steps");
  }
  if (expected_steps != 0 && candidate.size() != expected_steps) {
    return failed("the candidate does not have the expected " + std::to_string(expected_steps) +
                  " steps");
  }
  if (candidate.size() < baseline.size()) {
    return failed("the candidate is missing " + std::to_string(baseline.size() - candidate.size()) +
                  " step(s)");
  }
  if (candidate.size() > baseline.size()) {
    return failed("the baseline is missing " + std::to_string(candidate.size() - baseline.size()) +
                  " step(s)");
  }
  return make_check(kCheckStepCount, measured, threshold, true,
                    "both curves have " + std::to_string(required) + " steps");
}

// Appends "curve step i is nan, ..." for the first few non-finite values; returns their count.
std::size_t describe_non_finite(std::span<const double> values, const char* curve,
                                std::string& detail) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) continue;
    ++count;
    if (count > kNonFiniteStepsListedMax) continue;
    if (!detail.empty()) detail += "; ";
    detail += std::string(curve) + " step " + std::to_string(i) + " is " + general(values[i]);
  }
  if (count > kNonFiniteStepsListedMax) {
    detail += "; and " + std::to_string(count - kNonFiniteStepsListedMax) + " more in the " + curve;
  }
  return count;
}

ConvergenceCheckResult finite_values_check(std::span<const double> baseline,
                                           std::span<const double> candidate) {
  std::string detail;
  const std::size_t count = describe_non_finite(candidate, "candidate", detail) +
                            describe_non_finite(baseline, "baseline", detail);
  if (count == 0) return make_check(kCheckFiniteValues, 0.0, 0.0, true, "every loss is finite");
  return make_check(kCheckFiniteValues, static_cast<double>(count), 0.0, false,
                    std::to_string(count) + " non-finite loss(es): " + detail);
}

// np.corrcoef(c, g)[0, 1]: cov / (std_c * std_g) with ddof 1, divided in numpy's order and
// clipped to [-1, 1]. Undefined (the reference's NaN) when either curve is flat.
ConvergenceCheckResult correlation_check(std::span<const double> baseline,
                                         std::span<const double> candidate,
                                         const ConvergenceThresholds& t) {
  const bool candidate_flat = is_flat(candidate);
  const bool baseline_flat = is_flat(baseline);
  double sxx = 0.0;
  double syy = 0.0;
  double sxy = 0.0;
  if (!candidate_flat && !baseline_flat) {
    const double mean_c = mean_of_values(candidate);
    const double mean_g = mean_of_values(baseline);
    for (std::size_t i = 0; i < candidate.size(); ++i) {
      const double dc = candidate[i] - mean_c;
      const double dg = baseline[i] - mean_g;
      sxx += dc * dc;
      syy += dg * dg;
      sxy += dc * dg;
    }
  }
  if (candidate_flat || baseline_flat || sxx == 0.0 || syy == 0.0) {
    const char* which = candidate_flat && baseline_flat ? "both curves are"
                        : candidate_flat                ? "the candidate is"
                                                        : "the baseline is";
    return make_check(kCheckCorrelation, kNaN, t.correlation_min, true,
                      std::string("undefined (flat curve): ") + which +
                          " constant over the compared steps; judged by the other checks");
  }
  const double ddof1 = static_cast<double>(candidate.size() - 1);
  const double corr =
      std::clamp((sxy / ddof1) / std::sqrt(sxx / ddof1) / std::sqrt(syy / ddof1), -1.0, 1.0);
  const bool passed = !(corr < t.correlation_min);
  return make_check(kCheckCorrelation, corr, t.correlation_min, passed,
                    "Pearson correlation " + general(corr) + (passed ? " >= " : " < ") +
                        general(t.correlation_min));
}

ConvergenceCheckResult point_wise_check(std::span<const double> baseline,
                                        std::span<const double> candidate, std::size_t first_step,
                                        const ConvergenceThresholds& t) {
  std::size_t failures = 0;
  std::string listed;
  for (std::size_t i = 0; i < candidate.size(); ++i) {
    const double rel = relative_difference(candidate[i], baseline[i]);
    const double tol = tolerance_for(baseline[i], t);
    if (!(rel > tol)) continue;
    ++failures;
    if (failures > kFailingStepsListedMax) continue;
    listed += "; step " + std::to_string(first_step + i) + ": " + general(candidate[i]) + " vs " +
              general(baseline[i]) + " (diff " + percent(rel) + " > " + percent(tol) + ")";
  }
  if (failures > kFailingStepsListedMax) {
    listed += "; and " + std::to_string(failures - kFailingStepsListedMax) + " more";
  }
  const std::size_t n = candidate.size();
  const double within_fraction = static_cast<double>(n - failures) / static_cast<double>(n);
  const bool passed = !(failures > 0 && within_fraction < t.steps_within_min_fraction);
  return make_check(kCheckPointWiseTolerance, within_fraction, t.steps_within_min_fraction, passed,
                    std::to_string(n - failures) + " of " + std::to_string(n) +
                        " steps within tolerance" + listed);
}

ConvergenceCheckResult final_loss_check(std::span<const double> baseline,
                                        std::span<const double> candidate, std::size_t last_step,
                                        const ConvergenceThresholds& t) {
  const double c = candidate.back();
  const double g = baseline.back();
  const double diff = relative_difference(c, g);
  const bool passed = !(diff > t.final_loss_tolerance);
  return make_check(kCheckFinalLoss, diff, t.final_loss_tolerance, passed,
                    "step " + std::to_string(last_step) + ": " + general(c) + " vs " + general(g) +
                        " (diff " + percent(diff) + (passed ? " <= " : " > ") +
                        percent(t.final_loss_tolerance) + ")");
}

ConvergenceCheckResult outliers_check(std::span<const double> baseline,
                                      std::span<const double> candidate,
                                      const ConvergenceThresholds& t) {
  const std::size_t n = candidate.size();
  std::vector<double> residuals(n);
  for (std::size_t i = 0; i < n; ++i) residuals[i] = candidate[i] - baseline[i];
  const double mean = mean_of_values(residuals);
  double squares = 0.0;
  for (double r : residuals) squares += (r - mean) * (r - mean);
  const double std_dev = std::sqrt(squares / static_cast<double>(n));  // population, ddof 0
  std::size_t count = 0;
  for (double r : residuals) {
    if (std::abs(r - mean) > t.outlier_sigma * std_dev) ++count;
  }
  const double ratio = static_cast<double>(count) / static_cast<double>(n);
  const bool passed = !(ratio > t.outliers_max_fraction);
  return make_check(kCheckOutliers, ratio, t.outliers_max_fraction, passed,
                    std::to_string(count) + " of " + std::to_string(n) + " steps beyond " +
                        general(t.outlier_sigma) + " sigma of the loss difference (mean " +
                        general(mean) + ", sigma " + general(std_dev) + ")");
}

// Collects the verdict; `note` is appended to the reason.
ConvergenceResult finish(std::vector<ConvergenceCheckResult> checks, const std::string& note) {
  ConvergenceResult result;
  std::string failures;
  for (const ConvergenceCheckResult& check : checks) {
    if (check.passed) continue;
    result.failed_checks.push_back(check.name);
    failures += (failures.empty() ? "" : "; ") + check.name + ": " + check.detail;
  }
  result.passed = result.failed_checks.empty();
  if (result.passed) {
    result.reason = "all " + std::to_string(checks.size()) + " convergence checks passed" + note;
  } else {
    result.reason = "failed " + std::to_string(result.failed_checks.size()) + " of " +
                    std::to_string(checks.size()) + " checks: " + failures + note;
  }
  result.checks = std::move(checks);
  return result;
}

}  // namespace

Status validate_thresholds(const ConvergenceThresholds& t) {
  struct Named {
    const char* name;
    double value;
    double min;
    double max;
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const std::array<Named, 11> fields{{
      {"skip_first_fraction", t.skip_first_fraction, 0.0, 1.0},
      {"high_loss_above", t.high_loss_above, -kInf, kInf},
      {"medium_loss_above", t.medium_loss_above, -kInf, t.high_loss_above},
      {"high_loss_tolerance", t.high_loss_tolerance, 0.0, kInf},
      {"medium_loss_tolerance", t.medium_loss_tolerance, 0.0, kInf},
      {"low_loss_tolerance", t.low_loss_tolerance, 0.0, kInf},
      {"steps_within_min_fraction", t.steps_within_min_fraction, 0.0, 1.0},
      {"outlier_sigma", t.outlier_sigma, 0.0, kInf},
      {"outliers_max_fraction", t.outliers_max_fraction, 0.0, 1.0},
      {"final_loss_tolerance", t.final_loss_tolerance, 0.0, kInf},
      {"correlation_min", t.correlation_min, -1.0, 1.0},
  }};
  for (const Named& field : fields) {
    if (!std::isfinite(field.value) || field.value < field.min || field.value > field.max) {
      return make_error(std::string(field.name) + " is " + general(field.value) + ", outside [" +
                        general(field.min) + ", " + general(field.max) + "]");
    }
  }
  if (!(t.skip_first_fraction < 1.0)) {
    return make_error("skip_first_fraction must be below 1: it would skip every step");
  }
  return Ok{};
}

ConvergenceResult compare_loss_curves(std::span<const double> baseline,
                                      std::span<const double> candidate,
                                      const ConvergenceThresholds& thresholds) {
  const Status valid = validate_thresholds(thresholds);
  if (!valid.ok()) {
    return finish({make_check(kCheckThresholds, kNaN, kNaN, false, valid.error())}, "");
  }

  std::vector<ConvergenceCheckResult> checks;
  checks.push_back(step_count_check(baseline, candidate, thresholds.expected_steps));
  checks.push_back(finite_values_check(baseline, candidate));
  if (!checks[0].passed || !checks[1].passed) {
    return finish(std::move(checks),
                  " (correlation, point-wise, final-loss and outlier checks not run)");
  }

  // The reference's skip: int(len(current) * fraction) leading steps. A fraction below 1 leaves
  // at least one step, except where the product rounds up to the length for enormous curves.
  const std::size_t steps = candidate.size();
  const std::size_t skipped =
      std::min(static_cast<std::size_t>(
                   std::floor(static_cast<double>(steps) * thresholds.skip_first_fraction)),
               steps - 1);
  const std::span<const double> c = candidate.subspan(skipped);
  const std::span<const double> g = baseline.subspan(skipped);
  ATTUNE_ASSERT(!c.empty() && c.size() == g.size(), "the curves compared have the same length");

  ConvergenceCheckResult correlation = correlation_check(g, c, thresholds);
  const bool correlation_undefined = std::isnan(correlation.measured);
  checks.push_back(std::move(correlation));
  checks.push_back(point_wise_check(g, c, skipped, thresholds));
  checks.push_back(final_loss_check(g, c, steps - 1, thresholds));
  checks.push_back(outliers_check(g, c, thresholds));
  return finish(std::move(checks),
                correlation_undefined ? " (correlation undefined: flat curve)" : "");
}

}  // namespace attune
