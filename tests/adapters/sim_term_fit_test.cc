// Attributing the model's error to its cost terms: the fit finds the multipliers that made a set
// of rows, keeps the others at 1, and stays inside its bounds.
#include "adapters/model/term_fit.h"

#include <gtest/gtest.h>

namespace attune::sim {
namespace {

constexpr std::size_t kGemm = 0;
constexpr std::size_t kEp = 5;
constexpr std::size_t kHost = 11;

// Rows whose measured step is the predicted one with gemm x2 and ep x0.5.
std::vector<TermRow> made_rows() {
  std::vector<TermRow> rows;
  for (int i = 1; i <= 6; ++i) {
    TermRow row;
    row.predicted_s[kGemm] = 1.0 * i;
    row.predicted_s[kEp] = 3.0 / i;
    row.predicted_s[kHost] = 0.5;
    row.measured_step_s = 2.0 * row.predicted_s[kGemm] + 0.5 * row.predicted_s[kEp] + 0.5;
    rows.push_back(row);
  }
  return rows;
}

TEST(SimTermFit, TogetherTheFitFindsTheMultipliersThatMadeTheRows) {
  std::array<bool, kTermCount> all;
  all.fill(true);
  const TermSeconds m = fit_term_multipliers(made_rows(), all);
  EXPECT_NEAR(m[kGemm], 2.0, 1e-4);
  EXPECT_NEAR(m[kEp], 0.5, 1e-4);
  EXPECT_NEAR(m[kHost], 1.0, 1e-4);
  for (const TermRow& row : made_rows()) EXPECT_NEAR(error_with(row, m), 0.0, 1e-6);
  EXPECT_EQ(m[1], 1.0);  // attention: no row has any, so nothing moves it
}

TEST(SimTermFit, AloneATermTakesWhatItCanAndTheOthersStayAtOne) {
  std::array<bool, kTermCount> gemm_only{};
  gemm_only[kGemm] = true;
  const TermSeconds m = fit_term_multipliers(made_rows(), gemm_only);
  EXPECT_GT(m[kGemm], 1.0);
  EXPECT_EQ(m[kEp], 1.0);
  double worst = 0;
  for (const TermRow& row : made_rows()) worst = std::max(worst, std::abs(error_with(row, m)));
  EXPECT_GT(worst, 0.01);  // one term cannot explain rows that two made
  const TermSeconds none = fit_term_multipliers(made_rows(), {});
  EXPECT_LT(error_with(made_rows()[0], none), 0.0);  // the predicted step is too long...
  EXPECT_EQ(none[kGemm], 1.0);                       // ...and nothing was fitted
}

TEST(SimTermFit, MultipliersStayInTheirBounds) {
  TermRow row;
  row.predicted_s[kGemm] = 1.0;
  row.measured_step_s = 1000.0;
  std::array<bool, kTermCount> all;
  all.fill(true);
  EXPECT_EQ(fit_term_multipliers({row}, all)[kGemm], kTermMultiplierMax);
  row.measured_step_s = 1e-6;
  EXPECT_EQ(fit_term_multipliers({row}, all)[kGemm], kTermMultiplierMin);
}

// Two terms that always come in the same proportion cannot be told apart: without the pull the
// first one fitted takes the whole correction and the other stays at 1; with it they share it.
TEST(SimTermFit, ThePullSharesACorrectionBetweenTermsTheRowsCannotTellApart) {
  std::vector<TermRow> rows;
  for (int i = 1; i <= 5; ++i) {
    TermRow row;
    row.predicted_s[kGemm] = 1.0 * i;
    row.predicted_s[kEp] = 1.0 * i;
    row.measured_step_s = 3.0 * i;  // 1.5 x the predicted step
    rows.push_back(row);
  }
  std::array<bool, kTermCount> all;
  all.fill(true);
  const TermSeconds pulled = fit_term_multipliers(rows, all, kTermRidgePerRow);
  EXPECT_NEAR(pulled[kGemm], pulled[kEp], 1e-3);
  EXPECT_GT(pulled[kGemm], 1.3);
  EXPECT_LT(pulled[kGemm], 1.5);
  const TermSeconds free_fit = fit_term_multipliers(rows, all);
  EXPECT_GT(std::abs(free_fit[kGemm] - free_fit[kEp]), 0.5);
}

TEST(SimTermFit, TheTermsOfABreakdownAreItsStep) {
  Breakdown b;
  b.gemm_s = 1;
  b.attention_s = 2;
  b.host_s = 3;
  b.bubble_s = 4;
  b.compute_s = 3;
  const TermSeconds t = term_seconds(b);
  double sum = 0;
  for (double v : t) sum += v;
  EXPECT_DOUBLE_EQ(sum, b.total_s());
  EXPECT_EQ(term_names()[kHost], "host");
}

}  // namespace
}  // namespace attune::sim
