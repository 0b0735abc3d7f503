#include "projections/baseline_band.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "projections/campaign_view.h"
#include "projections/render.h"
#include "stream_builder.h"

namespace attune {
namespace {

using test::StreamBuilder;

BaselineBand fold_band(const std::vector<Envelope>& events) {
  BaselineBand band = initial_baseline_band();
  for (const Envelope& event : events) evolve(band, event);
  return band;
}

TEST(BaselineBandStatistics, MeanAndSampleRelativeStdDev) {
  const std::vector<double> values = {100.0, 110.0, 90.0};
  EXPECT_DOUBLE_EQ(mean_of(values), 100.0);
  // Sample standard deviation: sqrt((0 + 100 + 100) / 2) = 10, over the mean 100.
  EXPECT_DOUBLE_EQ(relative_std_dev(values), 0.1);
}

TEST(BaselineBandStatistics, FewerThanTwoValuesHaveNoSpread) {
  EXPECT_EQ(mean_of({}), 0.0);
  const std::vector<double> one = {1234.0};
  EXPECT_EQ(relative_std_dev(one), 0.0);
  EXPECT_EQ(relative_std_dev({}), 0.0);
}

TEST(BaselineBandStatistics, BandIsTheFloorOrKSigmaWhicheverIsLarger) {
  EXPECT_DOUBLE_EQ(band_fraction_of(0.03, 3.0, 0.001), 0.03);
  EXPECT_DOUBLE_EQ(band_fraction_of(0.03, 3.0, 0.02), 0.06);
}

TEST(BaselineBand, StartsAtTheFloorWithNoBaseline) {
  const BaselineBand band = initial_baseline_band();
  EXPECT_FALSE(band.band_set);
  EXPECT_EQ(band.mean_tokens_per_s_per_gpu, 0.0);
  EXPECT_DOUBLE_EQ(band.band_fraction, 0.03);
}

TEST(BaselineBand, QuietCalibrationGivesTheFloor) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.measured_run(2, RunPurpose::kCalibration, 1001.0);
  b.measured_run(3, RunPurpose::kCalibration, 999.0);
  const BaselineBand band = fold_band(b.events());
  EXPECT_FALSE(band.band_set);
  EXPECT_DOUBLE_EQ(band.mean_tokens_per_s_per_gpu, 1000.0);
  EXPECT_DOUBLE_EQ(band.rsd_fraction, 0.001);
  EXPECT_DOUBLE_EQ(band.band_fraction, 0.03);
  ASSERT_EQ(band.samples.size(), 3u);
  EXPECT_EQ(band.samples[1].run_id, 2u);
}

TEST(BaselineBand, NoisyCalibrationGivesThreeSigma) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.measured_run(2, RunPurpose::kCalibration, 1040.0);
  b.measured_run(3, RunPurpose::kCalibration, 960.0);
  const BaselineBand band = fold_band(b.events());
  EXPECT_DOUBLE_EQ(band.rsd_fraction, 0.04);
  EXPECT_DOUBLE_EQ(band.band_fraction, 0.12);
}

TEST(BaselineBand, FloorAndKComeFromTheCampaign) {
  CampaignOpened opened = test::test_opened();
  opened.band_floor_fraction = 0.05;
  opened.band_k = 2.0;
  StreamBuilder b;
  b.open(opened);
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.measured_run(2, RunPurpose::kCalibration, 1001.0);
  EXPECT_DOUBLE_EQ(fold_band(b.events()).band_fraction, 0.05);
  b.measured_run(3, RunPurpose::kCalibration, 1100.0);
  b.measured_run(4, RunPurpose::kCalibration, 900.0);
  const BaselineBand band = fold_band(b.events());
  EXPECT_DOUBLE_EQ(band.band_fraction, 2.0 * band.rsd_fraction);
  EXPECT_GT(band.band_fraction, 0.05);
}

TEST(BaselineBand, OnlyMeasuredCalibrationRunsCount) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.failed_run(2, RunPurpose::kCalibration, FailureClass::kInfra);
  b.measured_run(3, RunPurpose::kSearch, 5000.0);
  b.measure(99, 7000.0);  // never admitted
  b.measure(1, 3000.0);   // a second measurement of run 1
  const BaselineBand band = fold_band(b.events());
  ASSERT_EQ(band.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(band.mean_tokens_per_s_per_gpu, 1000.0);
  EXPECT_EQ(band.rsd_fraction, 0.0);
}

TEST(BaselineBand, BandSetIsAuthoritative) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.measured_run(2, RunPurpose::kCalibration, 1010.0);
  b.band_set(1004.0, 0.011, 0.033, 0.0, 2.5);
  BaselineBand band = fold_band(b.events());
  EXPECT_TRUE(band.band_set);
  EXPECT_DOUBLE_EQ(band.mean_tokens_per_s_per_gpu, 1004.0);
  EXPECT_DOUBLE_EQ(band.rsd_fraction, 0.011);
  EXPECT_DOUBLE_EQ(band.band_fraction, 0.033);
  EXPECT_DOUBLE_EQ(band.mean_launch_gpu_hours, 2.5);

  // A calibration run measured after the band is set is recorded but moves nothing.
  b.measured_run(3, RunPurpose::kCalibration, 2000.0);
  band = fold_band(b.events());
  EXPECT_EQ(band.samples.size(), 3u);
  EXPECT_DOUBLE_EQ(band.mean_tokens_per_s_per_gpu, 1004.0);
}

// A set band over `values` (runs 1, 2, ...), with the campaign's default floor and k.
BaselineBand set_band(const std::vector<double>& values) {
  BaselineBand band = initial_baseline_band();
  for (std::size_t i = 0; i < values.size(); ++i) {
    band.samples.push_back({static_cast<RunId>(i + 1), values[i]});
    band.band_run_ids.push_back(static_cast<RunId>(i + 1));
  }
  band.band_set = true;
  band.band_fraction =
      band_fraction_of(band.band_floor_fraction, band.band_k, relative_std_dev(values));
  return band;
}

TEST(BaselineBand, ACalibrationRunThatAloneWidensTheBandIsFound) {
  const BaselineBand band = set_band({5630.0, 5640.0, 4830.0, 5540.0, 5660.0});
  EXPECT_NEAR(band.band_fraction, 0.195, 0.001);
  const std::optional<CalibrationOutlier> outlier = calibration_outlier(band);
  ASSERT_TRUE(outlier.has_value());
  EXPECT_EQ(outlier->run_id, 3u);
  EXPECT_DOUBLE_EQ(outlier->tokens_per_s_per_gpu, 4830.0);
  EXPECT_DOUBLE_EQ(outlier->others_mean, 5617.5);
  EXPECT_DOUBLE_EQ(outlier->band_without_fraction, 0.03);  // the floor

  // attune status says so under the baseline.
  CampaignView view;
  view.baseline_band = band;
  const std::string status = render_status_text(view);
  EXPECT_NE(status.find("calibration run 3 ("), std::string::npos) << status;
  EXPECT_NE(status.find("alone widens the band: 3.00% without it"), std::string::npos) << status;
  // And so does its JSON; a band with no outlier gives null.
  const nlohmann::json json = to_json(band)["calibration_outlier"];
  EXPECT_EQ(json["run_id"], 3);
  EXPECT_DOUBLE_EQ(json["others_mean_tokens_per_s_per_gpu"].get<double>(), 5617.5);
  EXPECT_TRUE(to_json(set_band({1000.0, 1001.0, 999.0, 1000.0}))["calibration_outlier"].is_null());
}

TEST(BaselineBand, ARunTheBandLeavesOutIsItsOutlier) {
  StreamBuilder b;
  b.open();
  const std::vector<double> throughputs = {5630.0, 5640.0, 4830.0, 5540.0, 5660.0, 5600.0};
  for (std::size_t i = 0; i < throughputs.size(); ++i) {
    b.measured_run(static_cast<RunId>(i + 1), RunPurpose::kCalibration, throughputs[i]);
  }
  BandSet set;
  set.calibration_run_ids = {1, 2, 4, 5, 6};
  set.mean_tokens_per_sec_per_gpu = 5614.0;
  set.band_fraction = 0.03;
  b.add(set);
  const BaselineBand band = fold_band(b.events());
  EXPECT_EQ(band.left_out_run_ids, (std::vector<RunId>{3}));
  const std::optional<CalibrationOutlier> outlier = calibration_outlier(band);
  ASSERT_TRUE(outlier.has_value());
  EXPECT_EQ(outlier->run_id, 3u);
  EXPECT_TRUE(outlier->left_out);
  EXPECT_DOUBLE_EQ(outlier->others_mean, 5614.0);
  EXPECT_DOUBLE_EQ(outlier->band_without_fraction, 0.03);
  EXPECT_EQ(to_json(band)["calibration_outlier"]["left_out"], true);
  CampaignView view;
  view.baseline_band = band;
  const std::string status = render_status_text(view);
  EXPECT_NE(status.find("calibration run 3 (4830.0 tokens/s/GPU) left out of the band"),
            std::string::npos)
      << status;
  EXPECT_NE(status.find("over 5 calibration runs; band 3.00% (set)"), std::string::npos) << status;
}

TEST(BaselineBand, NoRunIsAnOutlierWhereNoneAloneSetsTheBand) {
  // An even spread: leaving any one run out narrows the band by less than half.
  EXPECT_FALSE(calibration_outlier(set_band({1000.0, 1040.0, 960.0, 1020.0, 980.0})));
  // At the floor, nothing narrows it.
  EXPECT_FALSE(calibration_outlier(set_band({1000.0, 1001.0, 999.0, 1000.0, 1002.0})));
  // Three runs leave two to measure a spread: too few to name one.
  EXPECT_FALSE(calibration_outlier(set_band({1000.0, 1000.0, 800.0})));
  // Before the band is set, and for a run measured after it, nothing is named.
  BaselineBand live = set_band({5630.0, 5640.0, 4830.0, 5540.0, 5660.0});
  live.band_set = false;
  EXPECT_FALSE(calibration_outlier(live));
  BaselineBand late = set_band({5630.0, 5640.0, 5540.0, 5660.0});
  late.samples.push_back({5, 4000.0});
  EXPECT_FALSE(calibration_outlier(late));
}

// The fewest runs, a minority, whose absence more than halves the band: one where one does, else
// two of five, never half of them.
TEST(BaselineBand, TheFewestRunsThatSetTheBandAreFlaggedTogether) {
  const auto samples = [](const std::vector<double>& values) {
    std::vector<CalibrationSample> out;
    for (std::size_t i = 0; i < values.size(); ++i) {
      out.push_back({static_cast<RunId>(i + 1), values[i]});
    }
    return out;
  };
  const auto ids = [](const std::vector<CalibrationOutlier>& outliers) {
    std::vector<RunId> out;
    for (const CalibrationOutlier& o : outliers) out.push_back(o.run_id);
    return out;
  };
  const auto one = samples({5630.0, 5640.0, 4830.0, 5540.0, 5660.0});
  EXPECT_EQ(ids(flagged_calibration_runs(one, 0.03, 3.0)), (std::vector<RunId>{3}));
  const auto two = samples({5630.0, 5640.0, 4830.0, 5540.0, 4790.0});
  EXPECT_FALSE(flagged_calibration_run(two, 0.03, 3.0)) << "neither alone halves it";
  const std::vector<CalibrationOutlier> both = flagged_calibration_runs(two, 0.03, 3.0);
  EXPECT_EQ(ids(both), (std::vector<RunId>{3, 5}));
  ASSERT_EQ(both.size(), 2u);
  EXPECT_DOUBLE_EQ(both[0].others_mean, (5630.0 + 5640.0 + 5540.0) / 3);
  EXPECT_DOUBLE_EQ(both[0].band_without_fraction, 0.03);
  // Two of four is half, not a minority; an even spread has none.
  EXPECT_TRUE(
      flagged_calibration_runs(samples({5630.0, 4830.0, 5540.0, 4790.0}), 0.03, 3.0).empty());
  EXPECT_TRUE(
      flagged_calibration_runs(samples({1000.0, 1040.0, 960.0, 1020.0, 980.0}), 0.03, 3.0).empty());
  // Twenty runs with three slow ones: the three, named in run order.
  std::vector<double> many(20, 5600.0);
  many[3] = 4800.0;
  many[7] = 4790.0;
  many[15] = 4810.0;
  EXPECT_EQ(ids(flagged_calibration_runs(samples(many), 0.03, 3.0)),
            (std::vector<RunId>{4, 8, 16}));
}

}  // namespace
}  // namespace attune
