// RandomTuner: uniform random search under the control plane's rules, the black-box baseline, as
// the paper ran it (its Appendix E: "Random search samples uniformly"; the baseline is the first
// trial).
//
// Each answer is a whole configuration drawn uniformly from the black-box searches' frozen space
// (adapters/tuner/black_box_space.h, the same space TPE searches), against the baseline. As a
// black-box search it is not held to one lever per candidate. A draw the estimator finds invalid
// (divisibility, layer counts, Megatron's start-up checks) is scored zero without launching, and
// a recipe already run or proposed is drawn again. The draw is a function of the seed and the
// campaign's proposal count only, so a resumed campaign draws the same.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "adapters/model/workload.h"
#include "core/ports.h"

namespace attune {

// Whole configurations drawn uniformly are mostly infeasible (divisibility, layer counts), and an
// infeasible draw costs nothing: the search draws this many before it waits.
inline constexpr int kRandomDrawsPerAnswerMax = 5000;

class RandomTuner final : public Tuner {
 public:
  RandomTuner(sim::Workload workload, std::uint64_t seed, std::vector<int> micro_batch_sizes = {});
  std::string name() const override { return "random"; }
  bool black_box() const override { return true; }
  TunerAnswer next(const TunerView& view) override;
  std::optional<double> prune_below_leader_fraction() const override { return 0.90; }

 private:
  sim::Workload workload_;
  std::uint64_t seed_;
  std::vector<int> micro_batch_sizes_;  // empty: the parent's only
};

}  // namespace attune
