#include "projections/final_stage.h"

#include <algorithm>
#include <cmath>

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

}  // namespace attune
