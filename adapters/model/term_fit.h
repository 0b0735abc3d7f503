// Which cost terms of the performance model carry its error on measured rows: the multiplier per
// term of the predicted step (gemm, attention, ..., host) that best explains measured step times,
// each term alone or all together. A diagnosis of the physics, not a correction: a term whose
// multiplier stays far from 1 is where the model's formulas miss.
//
// Rows weigh equally: the fit minimizes the sum over rows of (sum_k m_k t_ik / T_i - 1)^2, where
// t_ik are a row's predicted seconds per term and T_i its measured step time, plus a pull of each
// multiplier towards 1 (ridge_per_row x rows x (m_k - 1)^2), by coordinate descent with each
// multiplier held in [kTermMultiplierMin, kTermMultiplierMax]. Pure, deterministic.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "adapters/model/prediction.h"

namespace attune::sim {

inline constexpr std::size_t kTermCount = 13;
inline constexpr double kTermMultiplierMin = 0.1;
inline constexpr double kTermMultiplierMax = 10.0;
// The pull calibrate() uses: terms the rows cannot tell apart (they always come together) share a
// correction instead of one taking it all and the others running to their bounds.
inline constexpr double kTermRidgePerRow = 0.01;

using TermSeconds = std::array<double, kTermCount>;

// The names of the terms, in TermSeconds order: gemm, attention, elementwise, tp_comm, cp_comm,
// ep_a2a, pp_p2p, dp_comm, bubble, recompute, optimizer, host, loop.
const std::array<std::string_view, kTermCount>& term_names();

// A breakdown's terms (they add up to its step time).
TermSeconds term_seconds(const Breakdown& b);

struct TermRow {
  TermSeconds predicted_s{};
  double measured_step_s = 0;
};

// The multipliers that best explain `rows`; terms not `free` stay at 1.
TermSeconds fit_term_multipliers(const std::vector<TermRow>& rows,
                                 const std::array<bool, kTermCount>& free,
                                 double ridge_per_row = 0.0);

// A row's relative error (predicted / measured throughput - 1) with `multipliers` applied.
double error_with(const TermRow& row, const TermSeconds& multipliers);

}  // namespace attune::sim
