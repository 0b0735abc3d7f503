#include "adapters/model/term_fit.h"

#include <algorithm>

#include "events/assert.h"

namespace attune::sim {
namespace {

constexpr int kSweepsMax = 500;
constexpr double kConvergedChange = 1e-9;

double fitted_step_s(const TermRow& row, const TermSeconds& m) {
  double step_s = 0;
  for (std::size_t k = 0; k < kTermCount; ++k) step_s += m[k] * row.predicted_s[k];
  return step_s;
}

}  // namespace

const std::array<std::string_view, kTermCount>& term_names() {
  static const std::array<std::string_view, kTermCount> names = {
      "gemm",    "attention", "elementwise", "tp_comm",   "cp_comm", "ep_a2a", "pp_p2p",
      "dp_comm", "bubble",    "recompute",   "optimizer", "host",    "loop"};
  return names;
}

TermSeconds term_seconds(const Breakdown& b) {
  return {b.gemm_s,      b.attention_s, b.elementwise_s, b.tp_comm_s, b.cp_comm_s,
          b.ep_a2a_s,    b.pp_p2p_s,    b.dp_comm_s,     b.bubble_s,  b.recompute_s,
          b.optimizer_s, b.host_s,      b.loop_s};
}

TermSeconds fit_term_multipliers(const std::vector<TermRow>& rows,
                                 const std::array<bool, kTermCount>& free, double ridge_per_row) {
  TermSeconds m;
  m.fill(1.0);
  for (const TermRow& row : rows) {
    ATTUNE_ASSERT(row.measured_step_s > 0, "a measured row has a step time");
  }
  const double ridge = ridge_per_row * static_cast<double>(rows.size());
  for (int sweep = 0; sweep < kSweepsMax; ++sweep) {
    double largest_change = 0;
    for (std::size_t k = 0; k < kTermCount; ++k) {
      if (!free[k]) continue;
      // The best m_k with the others fixed: minimize sum (a_i m_k + r_i)^2.
      double aa = 0;
      double ar = 0;
      for (const TermRow& row : rows) {
        const double a = row.predicted_s[k] / row.measured_step_s;
        const double r =
            (fitted_step_s(row, m) - m[k] * row.predicted_s[k]) / row.measured_step_s - 1.0;
        aa += a * a;
        ar += a * r;
      }
      if (aa <= 0) continue;
      const double best =
          std::clamp((ridge - ar) / (aa + ridge), kTermMultiplierMin, kTermMultiplierMax);
      largest_change = std::max(largest_change, std::abs(best - m[k]));
      m[k] = best;
    }
    if (largest_change < kConvergedChange) break;
  }
  return m;
}

double error_with(const TermRow& row, const TermSeconds& multipliers) {
  // Throughput is inversely proportional to the step time.
  return row.measured_step_s / fitted_step_s(row, multipliers) - 1.0;
}

}  // namespace attune::sim
