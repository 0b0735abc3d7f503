// Rows per microbatch as a tuning lever. A model whose load-balancing loss is computed per
// microbatch changes its objective with the microbatch size, so its policy freezes
// --micro-batch-size; elsewhere (auxiliary-loss-free routing, dense models) the policy classes it
// structural, and every tuner and the oracle may try it.
#pragma once

#include <vector>

#include "events/recipe.h"
#include "gate/policy.h"

namespace attune {

// The microbatch sizes a tuner may try on `baseline` under `policy`: the baseline's size and its
// doublings up to 8 times it, when layer 1 lets the size change; empty (the baseline's only)
// when the policy freezes it or the baseline gives no size. Which of them divide the global
// batch over the data-parallel size is the layout's to check.
std::vector<int> free_micro_batch_sizes(const Policy& policy, const Recipe& baseline);

}  // namespace attune
