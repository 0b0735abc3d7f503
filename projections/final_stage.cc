#include "projections/final_stage.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "events/assert.h"
#include "projections/baseline_band.h"

namespace attune {

bool repeats_disagree(const std::vector<double>& repeats, double band) {
  if (repeats.size() != 2 || repeats[0] <= 0 || repeats[1] <= 0) return false;
  return std::abs(repeats[0] - repeats[1]) > band * (repeats[0] + repeats[1]) / 2;
}

double value_of_repeats(const std::vector<double>& repeats) {
  std::vector<double> measured;
  for (const double value : repeats) {
    if (value > 0) measured.push_back(value);
  }
  if (measured.size() == 3) {
    std::sort(measured.begin(), measured.end());
    return measured[1];
  }
  return mean_of(measured);  // 0 when none measured
}

FinalStageRepeats measure_final_stage(const std::vector<std::string>& keys, double band,
                                      std::uint64_t shuffle_seed, const MeasureOnce& measure) {
  FinalStageRepeats out;
  std::uint64_t runs = 0;
  auto repeat = [&](const std::string& key) {
    double value = 0;
    for (int attempt = 0; attempt < kFinalStageMeasureTries && value <= 0; ++attempt) {
      if (attempt > 0) ++out.rerun;
      value = measure(key, runs++);
    }
    out.values[key].push_back(value);
  };
  ATTUNE_ASSERT(std::set<std::string>(keys.begin(), keys.end()).size() == keys.size(),
                "the final stage measures each recipe once per repeat");
  std::vector<std::string> order;
  for (const std::string& key : keys) {
    for (int i = 0; i < kFinalStageRepeats; ++i) order.push_back(key);
  }
  std::mt19937_64 shuffle(shuffle_seed);
  std::shuffle(order.begin(), order.end(), shuffle);
  for (const std::string& key : order) repeat(key);
  std::vector<std::string> third;
  for (const auto& [key, values] : out.values) {
    if (repeats_disagree(values, band)) third.push_back(key);
  }
  std::shuffle(third.begin(), third.end(), shuffle);
  for (const std::string& key : third) repeat(key);
  out.third = static_cast<int>(third.size());
  return out;
}

}  // namespace attune
