// Rows per microbatch as a tuning lever. A model whose load-balancing loss is computed per
// microbatch changes its objective with the microbatch size, so its policy freezes
// --micro-batch-size (the base table classes it numeric); a policy may class it structural where
// the loss does not depend on it (auxiliary-loss-free routing and fixed-length rows, as on
// MiniMax-M2), and then every tuner and the oracle may try it.
#pragma once

#include <vector>

#include "events/recipe.h"
#include "gate/policy.h"

namespace attune {

// The microbatch sizes a tuner may try on `baseline` under `policy`: the baseline's size m times
// a power of two from 1/8 (whole sizes only) to 16, when layer 1 lets the size change; empty (the
// baseline's only) when the policy freezes it or the baseline gives no size. The oracle, the
// black-box searches and the expert share this set. Which sizes divide the global batch over the
// data-parallel size is the layout's to check.
std::vector<int> free_micro_batch_sizes(const Policy& policy, const Recipe& baseline);

}  // namespace attune
