// The final stage's repeat rule (the paper's Appendix D): each recipe is re-measured twice; one
// whose two repeats differ by more than the band is measured a third time, and its value is the
// median of the three, else the mean of its repeats. A repeat of 0 produced no measurement and
// counts for nothing. Pure functions; the schedule's only effect is the measure function it is
// given.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace attune {

// Whether two measured repeats differ by more than `band` (a fraction of their mean); false
// unless there are exactly two and both measured.
bool repeats_disagree(const std::vector<double>& repeats, double band);

// A recipe's value from its repeats: the median of three measured repeats, else the mean of the
// measured ones; 0 when none measured.
double value_of_repeats(const std::vector<double>& repeats);

inline constexpr int kFinalStageRepeats = 2;
// A repeat without a measurement is run again, twice at most.
inline constexpr int kFinalStageMeasureTries = 3;

struct FinalStageRepeats {
  std::map<std::string, std::vector<double>> values;  // by recipe key, in measuring order
  int third = 0;                                      // recipes that got a third repeat
  int rerun = 0;  // measurements run again because a repeat produced none
};

// Measures one run of the recipe named `key` as run number `run` (0, 1, 2, ... in the order the
// runs happen): its throughput, or 0 when it produced no measurement.
using MeasureOnce = std::function<double(const std::string& key, std::uint64_t run)>;

// The final stage's repeats: kFinalStageRepeats of each recipe in one order shuffled by
// `shuffle_seed`; a repeat without a measurement is run again (kFinalStageMeasureTries in all);
// then a third repeat of each recipe whose two differ by more than `band`, in a shuffled order.
FinalStageRepeats measure_final_stage(const std::vector<std::string>& keys, double band,
                                      std::uint64_t shuffle_seed, const MeasureOnce& measure);

}  // namespace attune
