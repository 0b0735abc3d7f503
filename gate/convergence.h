// Convergence check (layer 2 of the correctness gate): does a candidate's loss curve follow the
// baseline's?
//
// Owns one pure function, compare_loss_curves, that judges a candidate curve against a baseline
// curve (one loss per step, step 0 first) with the semantics of Megatron-Bridge's
// validate_convergence (scripts/performance/utils/evaluate.py, see
// shared/reference/megatron_bridge_convergence.md) at the thresholds of Megatron-Bridge's
// performance CI. No clock, no I/O, no state; safe to call from any thread.
//
// Reference behaviours mirrored exactly:
// - Warm-up skip: k = floor(steps * skip_first_fraction) leading steps are dropped from both
//   curves; every check uses only the N remaining steps.
// - All four checks always run (no short-circuit): "correlation", "point_wise_tolerance",
//   "final_loss", "outliers" (the reference's failed_metrics names).
// - Correlation: Pearson correlation of the raw losses (np.corrcoef, clipped to [-1, 1]); fails
//   when corr < correlation_min.
// - Point-wise: the band is chosen from the *baseline* value g: high when g > 2.0, medium when
//   0.5 < g <= 2.0, low when g <= 0.5 (so exactly 2.0 is medium and exactly 0.5 is low).
//   rel = |c - g| / |g|, or |c| when g == 0. A step is outside when rel > tol (strict). The
//   check fails only when some step is outside and the fraction of steps within falls below
//   steps_within_min_fraction (exactly 90% within passes, as "F/N > 0.1" does in the reference).
// - Final loss: fd = |c_N - g_N| / g_N, or |c_N| when g_N == 0, on the last step only; fails
//   when fd > final_loss_tolerance (strict).
// - Outliers: residuals r_i = c_i - g_i (absolute, signed), their mean and population standard
//   deviation (ddof 0); step i is an outlier when |r_i - mean| > outlier_sigma * std (strict);
//   fails when outliers / N > outliers_max_fraction (strict). A constant bias is never flagged.
// - The result carries passed, the failed check names and the measured figures, like the
//   reference's result dictionary, plus up to 5 failing steps in the point-wise detail. Steps
//   are named by their 0-based index in the full curve, like the reference's step keys.
//
// Deliberately stricter than the reference, where it is lax:
// - A NaN or infinite loss anywhere in either curve (warm-up included) fails ("finite_values");
//   the reference passes NaN in every check.
// - Curves of different lengths (a missing or extra step), an empty curve, or a curve whose length
//   differs from expected_steps (when set) fail ("step_count"); the reference raises on a length
//   mismatch and its caller NaN-pads missing steps, which then pass.
// - When either input check fails, the four reference checks are not run: only the input checks
//   appear in the result.
// - A flat curve (all compared values exactly equal) makes the correlation undefined (NaN in the
//   reference, which passes silently): the correlation check passes with the detail
//   "undefined (flat curve)", measured NaN, and the verdict rests on the other checks. Flatness is
//   tested by equality, not by a computed variance, so rounding in the mean cannot turn a
//   constant curve into a spurious correlation near 0.
// - Final loss divides by |g_N|, not the signed g_N, so a negative final loss cannot pass
//   vacuously (identical to the reference for every non-negative loss).
// - Invalid thresholds (negative, NaN, skip outside [0, 1)) fail ("thresholds") rather than
//   letting a NaN comparison pass.
// - The point-wise pass ratio has its own parameter (steps_within_min_fraction) instead of
//   reusing the outlier ratio; the defaults give the reference's decisions.
// - The reason counts the checks that exist ("failed 1 of 6 checks"), not a fixed "of 5".
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "events/result.h"

namespace attune {

// Defaults: Megatron-Bridge's performance-CI arguments (argument_parser.py::_testing_args).
struct ConvergenceThresholds {
  double skip_first_fraction = 0.2;   // leading fraction of steps ignored (floor of the count)
  double high_loss_above = 2.0;       // baseline loss > this uses high_loss_tolerance
  double medium_loss_above = 0.5;     // baseline loss in (this, high_loss_above] uses medium
  double high_loss_tolerance = 0.10;  // relative, per step
  double medium_loss_tolerance = 0.05;
  double low_loss_tolerance = 0.02;
  double steps_within_min_fraction = 0.9;  // of the compared steps, within their tolerance
  double outlier_sigma = 3.0;              // |r - mean(r)| > sigma * std(r) is an outlier
  double outliers_max_fraction = 0.1;      // of the compared steps
  double final_loss_tolerance = 0.05;      // relative, last step
  double correlation_min = 0.95;           // Pearson, raw losses
  std::size_t expected_steps = 0;          // required length of both curves; 0 = not checked

  friend bool operator==(const ConvergenceThresholds&, const ConvergenceThresholds&) = default;
};

struct ConvergenceCheckResult {
  std::string name;        // "step_count", "finite_values", "correlation", ...
  double measured = 0.0;   // NaN when undefined (correlation of a flat curve)
  double threshold = 0.0;  // the bound the measured value is compared with
  bool passed = false;
  std::string detail;  // one line: how it was measured, or why it failed

  friend bool operator==(const ConvergenceCheckResult&, const ConvergenceCheckResult&) = default;
};

struct ConvergenceResult {
  bool passed = false;
  std::vector<ConvergenceCheckResult> checks;  // in the order they were run
  std::vector<std::string> failed_checks;      // names, in the order of `checks`
  std::string reason;                          // one line

  friend bool operator==(const ConvergenceResult&, const ConvergenceResult&) = default;
};

// Check names, in the order compare_loss_curves reports them.
inline constexpr const char* kCheckThresholds = "thresholds";  // only when invalid
inline constexpr const char* kCheckStepCount = "step_count";
inline constexpr const char* kCheckFiniteValues = "finite_values";
inline constexpr const char* kCheckCorrelation = "correlation";
inline constexpr const char* kCheckPointWiseTolerance = "point_wise_tolerance";
inline constexpr const char* kCheckFinalLoss = "final_loss";
inline constexpr const char* kCheckOutliers = "outliers";

// Ok when every threshold is finite and non-negative, skip_first_fraction is in [0, 1),
// the two fractions bounding a ratio are at most 1 and medium_loss_above <= high_loss_above.
Status validate_thresholds(const ConvergenceThresholds& thresholds);

// Judges `candidate` against `baseline` (losses per step, step 0 first). Total: every input gives
// a result, and only a well-formed, finite, converging candidate passes.
ConvergenceResult compare_loss_curves(std::span<const double> baseline,
                                      std::span<const double> candidate,
                                      const ConvergenceThresholds& thresholds = {});

}  // namespace attune
