#include "projections/baseline_band.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace attune {

namespace {

// Leaving one calibration run out needs at least three others to measure a spread.
constexpr std::size_t kOutlierCalibrationRunsMin = 4;

void refresh_live_figures(BaselineBand& state) {
  std::vector<double> values;
  values.reserve(state.samples.size());
  for (const CalibrationSample& sample : state.samples) {
    values.push_back(sample.tokens_per_s_per_gpu);
  }
  state.mean_tokens_per_s_per_gpu = mean_of(values);
  state.rsd_fraction = relative_std_dev(values);
  state.band_fraction =
      band_fraction_of(state.band_floor_fraction, state.band_k, state.rsd_fraction);
}

bool is_measured(const BaselineBand& state, RunId run_id) {
  return std::any_of(state.samples.begin(), state.samples.end(),
                     [run_id](const CalibrationSample& s) { return s.run_id == run_id; });
}

}  // namespace

BaselineBand initial_baseline_band() { return BaselineBand{}; }

void evolve(BaselineBand& state, const Envelope& event) {
  std::visit(
      [&state](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, CampaignOpened>) {
          if (state.opened) return;
          state.opened = true;
          state.band_floor_fraction = body.band_floor_fraction;
          state.band_k = body.band_k;
          if (!state.band_set) refresh_live_figures(state);
        } else if constexpr (std::is_same_v<T, LaunchAdmitted>) {
          if (body.purpose == RunPurpose::kCalibration) {
            state.calibration_run_ids.insert(body.run_id);
          }
        } else if constexpr (std::is_same_v<T, RunMeasured>) {
          if (!state.calibration_run_ids.contains(body.run_id)) return;
          if (is_measured(state, body.run_id)) return;
          state.samples.push_back({body.run_id, body.tokens_per_sec_per_gpu});
          if (!state.band_set) refresh_live_figures(state);
        } else if constexpr (std::is_same_v<T, BandSet>) {
          state.band_set = true;
          state.band_run_ids = body.calibration_run_ids;
          state.left_out_run_ids.clear();
          const auto& named = body.calibration_run_ids;
          for (const CalibrationSample& sample : state.samples) {
            if (named.empty()) break;  // a band that names no runs leaves none out
            if (std::find(named.begin(), named.end(), sample.run_id) == named.end()) {
              state.left_out_run_ids.push_back(sample.run_id);
            }
          }
          state.mean_tokens_per_s_per_gpu = body.mean_tokens_per_sec_per_gpu;
          state.rsd_fraction = body.rsd;
          state.band_fraction = body.band_fraction;
          state.mean_launch_gpu_hours = body.mean_launch_gpu_hours;
        }
      },
      event.body);
}

double mean_of(std::span<const double> values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

double relative_std_dev(std::span<const double> values) {
  if (values.size() < 2) return 0.0;
  const double mean = mean_of(values);
  if (!(mean > 0.0)) return 0.0;
  double squares = 0.0;
  for (double value : values) squares += (value - mean) * (value - mean);
  return std::sqrt(squares / static_cast<double>(values.size() - 1)) / mean;
}

double band_fraction_of(double floor_fraction, double k, double rsd_fraction) {
  return std::max(floor_fraction, k * rsd_fraction);
}

namespace {

// The `size` runs whose absence narrows the band most, where that more than halves it: empty
// otherwise. The runs kept are neighbours in sorted order (leaving out a run between two kept
// ones never narrows the spread as much as leaving out one beyond them), so only the `size` + 1
// ways of leaving out the lowest and highest runs are tried, the lowest first (a slow node).
std::vector<CalibrationOutlier> outliers_of_size(std::span<const CalibrationSample> samples,
                                                 std::size_t size, double floor_fraction,
                                                 double k) {
  const std::size_t n = samples.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return samples[a].tokens_per_s_per_gpu < samples[b].tokens_per_s_per_gpu;
  });
  const auto values = [&](std::size_t from, std::size_t to) {
    std::vector<double> out;
    for (std::size_t i = from; i < to; ++i) out.push_back(samples[order[i]].tokens_per_s_per_gpu);
    return out;
  };
  const double band = band_fraction_of(floor_fraction, k, relative_std_dev(values(0, n)));
  std::optional<std::size_t> best_low;  // how many of the lowest runs the best choice leaves out
  double narrowest = band;
  for (std::size_t low = size + 1; low-- > 0;) {
    const double without =
        band_fraction_of(floor_fraction, k, relative_std_dev(values(low, n - size + low)));
    if (without < narrowest) {
      narrowest = without;
      best_low = low;
    }
  }
  if (!best_low || narrowest * 2 > band) return {};
  const std::size_t kept_from = *best_low;
  const std::size_t kept_to = n - size + *best_low;
  const double others_mean = mean_of(values(kept_from, kept_to));
  // The runs left out, in the samples' order.
  std::vector<std::size_t> left_out(order.begin(), order.begin() + static_cast<long>(kept_from));
  left_out.insert(left_out.end(), order.begin() + static_cast<long>(kept_to), order.end());
  std::sort(left_out.begin(), left_out.end());
  std::vector<CalibrationOutlier> out;
  for (const std::size_t i : left_out) {
    out.push_back(
        {samples[i].run_id, samples[i].tokens_per_s_per_gpu, others_mean, narrowest, false, {}});
  }
  return out;
}

}  // namespace

std::optional<CalibrationOutlier> flagged_calibration_run(
    std::span<const CalibrationSample> samples, double floor_fraction, double k) {
  if (samples.size() < kOutlierCalibrationRunsMin) return std::nullopt;
  const std::vector<CalibrationOutlier> one = outliers_of_size(samples, 1, floor_fraction, k);
  if (one.empty()) return std::nullopt;
  return one.front();
}

std::vector<CalibrationOutlier> flagged_calibration_runs(std::span<const CalibrationSample> samples,
                                                         double floor_fraction, double k) {
  if (samples.size() < kOutlierCalibrationRunsMin) return {};
  for (std::size_t size = 1; 2 * size < samples.size(); ++size) {
    std::vector<CalibrationOutlier> outliers = outliers_of_size(samples, size, floor_fraction, k);
    if (!outliers.empty()) return outliers;
  }
  return {};
}

std::string left_out_runs_text(const CalibrationOutlier& outlier) {
  const std::vector<RunId>& ids = outlier.left_out_run_ids;
  if (ids.size() <= 1) return "calibration run " + std::to_string(outlier.run_id);
  std::string out = "calibration runs ";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += i + 1 == ids.size() ? " and " : ", ";
    out += std::to_string(ids[i]);
  }
  return out;
}

std::optional<CalibrationOutlier> calibration_outlier(const BaselineBand& band) {
  if (!band.band_set) return std::nullopt;
  std::vector<CalibrationSample> named;  // the runs the band was set from
  for (const CalibrationSample& sample : band.samples) {
    if (std::find(band.band_run_ids.begin(), band.band_run_ids.end(), sample.run_id) !=
        band.band_run_ids.end()) {
      named.push_back(sample);
    }
  }
  for (const CalibrationSample& sample : band.samples) {
    if (std::find(band.left_out_run_ids.begin(), band.left_out_run_ids.end(), sample.run_id) ==
        band.left_out_run_ids.end()) {
      continue;
    }
    return CalibrationOutlier{sample.run_id,
                              sample.tokens_per_s_per_gpu,
                              band.mean_tokens_per_s_per_gpu,
                              band.band_fraction,
                              true,
                              band.left_out_run_ids};
  }
  return flagged_calibration_run(named, band.band_floor_fraction, band.band_k);
}

}  // namespace attune
