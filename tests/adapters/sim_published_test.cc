// The performance model against the published throughputs in data/published/rows.tsv: the rows
// parse, the model prices the rows whose model and system have presets, and the out-of-sample
// errors are what they claim to be (a held-out row's figure never enters the scale applied to
// it). Prints the raw, leave-one-model-out and leave-one-release-out errors.
#include "adapters/model/published.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>

namespace attune::sim {
namespace {

std::vector<PublishedRow> compiled_rows() {
  auto rows = parse_published_rows(published_rows_text(), "rows.tsv");
  EXPECT_TRUE(rows.ok()) << rows.error();
  return rows.ok() ? rows.value() : std::vector<PublishedRow>{};
}

TEST(SimPublished, EveryRowParsesWithItsRecipe) {
  const std::vector<PublishedRow> rows = compiled_rows();
  // SOURCES.md: "one header line and 313 rows".
  ASSERT_EQ(rows.size(), 313u);
  std::set<std::string> ids;
  for (const PublishedRow& row : rows) {
    EXPECT_TRUE(ids.insert(row.id).second) << row.id;
    EXPECT_TRUE(row.tokens_per_s_per_gpu > 0 || row.tflops_per_gpu > 0) << row.id;
    EXPECT_GT(row.gpus, 0) << row.id;
  }
}

TEST(SimPublished, BadRowsAreRefusedWithTheirLineAndColumn) {
  auto no_header = parse_published_rows("id\tmodel\nx\ty\n", "mine.tsv");
  ASSERT_FALSE(no_header.ok());
  EXPECT_NE(no_header.error().find("mine.tsv:1:"), std::string::npos) << no_header.error();
  std::string text(published_rows_text().substr(0, published_rows_text().find('\n') + 1));
  text += "a\tb\n";  // a row with two cells
  auto short_row = parse_published_rows(text, "mine.tsv");
  ASSERT_FALSE(short_row.ok());
  EXPECT_NE(short_row.error().find("mine.tsv:2:"), std::string::npos) << short_row.error();
}

TEST(SimPublished, TheModelPricesTheRowsItHasPresetsFor) {
  const Calibration c = calibrate(compiled_rows());
  std::size_t predicted = 0;
  for (const CalibrationRow& r : c.rows) {
    if (!r.skipped.empty()) continue;
    ++predicted;
    EXPECT_GT(r.predicted, 0) << r.row.id;
    EXPECT_TRUE(std::isfinite(r.error_raw)) << r.row.id;
    ASSERT_TRUE(r.error_model_out.has_value()) << r.row.id;
    ASSERT_TRUE(r.error_release_out.has_value()) << r.row.id;
  }
  EXPECT_EQ(c.raw.rows, predicted);
  // Rows without a preset (GB300, B300, Nemotron, Kimi, ...) are skipped, never guessed.
  for (const CalibrationRow& r : c.rows) {
    if (r.row.system == "gb300" || r.row.system == "b300") {
      EXPECT_FALSE(r.skipped.empty()) << r.row.id;
    }
  }
  std::printf("published rows: %zu, predicted: %zu\n", c.rows.size(), predicted);
  std::printf("raw: median %.1f%%, p90 %.1f%%\n", 100 * c.raw.median_abs, 100 * c.raw.p90_abs);
  std::printf("leave one model out: median %.1f%%, p90 %.1f%% over %zu rows\n",
              100 * c.model_out.median_abs, 100 * c.model_out.p90_abs, c.model_out.rows);
  std::printf("leave one release out: median %.1f%%, p90 %.1f%% over %zu rows\n",
              100 * c.release_out.median_abs, 100 * c.release_out.p90_abs, c.release_out.rows);
  for (const auto& [model, s] : c.raw_by_model) {
    std::printf("  raw %-16s median %5.1f%% p90 %5.1f%% (%zu rows)\n", model.c_str(),
                100 * s.median_abs, 100 * s.p90_abs, s.rows);
  }
  for (const auto& [reason, count] : c.skipped_by_reason) {
    std::printf("  skipped %zu: %s\n", count, reason.c_str());
  }
  ASSERT_GT(predicted, 50u) << "the model prices most H100, B200 and GB200 rows";
}

// A held-out row's published figure is not used to fit the scale applied to it: doubling it
// halves (1 + its error) exactly, while the rows of other models, whose fit it enters, move.
TEST(SimPublished, AHeldOutRowsFigureNeverFitsItsOwnScale) {
  std::vector<PublishedRow> rows = compiled_rows();
  const Calibration before = calibrate(rows);
  std::size_t target = rows.size();
  for (std::size_t i = 0; i < before.rows.size(); ++i) {
    if (before.rows[i].skipped.empty()) {
      target = i;
      break;
    }
  }
  ASSERT_LT(target, rows.size());
  rows[target].tokens_per_s_per_gpu *= 2;
  const Calibration after = calibrate(rows);
  const CalibrationRow& b = before.rows[target];
  const CalibrationRow& a = after.rows[target];
  EXPECT_NEAR(1 + *a.error_model_out, (1 + *b.error_model_out) / 2, 1e-12);
  EXPECT_NEAR(1 + *a.error_release_out, (1 + *b.error_release_out) / 2, 1e-12);
  bool another_model_moved = false;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i == target || !before.rows[i].skipped.empty()) continue;
    if (rows[i].model == rows[target].model) {
      EXPECT_DOUBLE_EQ(*after.rows[i].error_model_out, *before.rows[i].error_model_out);
    } else if (rows[i].system == rows[target].system &&
               *after.rows[i].error_model_out != *before.rows[i].error_model_out) {
      another_model_moved = true;
    }
  }
  EXPECT_TRUE(another_model_moved) << "the row enters the other models' fit on its system";
}

TEST(SimPublished, SummaryIsTheMedianAndTheNinetiethPercentileOfTheAbsoluteErrors) {
  const ErrorSummary s = summarize({0.1, -0.3, 0.2, -0.05, 0.5, 0.0, 0.15, -0.25, 0.4, 0.35});
  EXPECT_EQ(s.rows, 10u);
  EXPECT_DOUBLE_EQ(s.median_abs, (0.2 + 0.25) / 2);
  EXPECT_DOUBLE_EQ(s.p90_abs, 0.4);  // the 9th of 10 sorted absolute errors
}

}  // namespace
}  // namespace attune::sim
