// The final stage's repeat rule (the paper's Appendix D): each recipe is re-measured twice; one
// whose two repeats differ by more than the band is measured a third time, and its value is the
// median of the three, else the mean of its repeats. A repeat of 0 produced no measurement and
// counts for nothing. Pure functions.
#pragma once

#include <vector>

namespace attune {

// Whether two measured repeats differ by more than `band` (a fraction of their mean); false
// unless there are exactly two and both measured.
bool repeats_disagree(const std::vector<double>& repeats, double band);

// A recipe's value from its repeats: the median of three measured repeats, else the mean of the
// measured ones; 0 when none measured.
double value_of_repeats(const std::vector<double>& repeats);

}  // namespace attune
