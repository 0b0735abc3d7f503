// RandomTuner: uniform random search under the control plane's rules, the black-box baseline.
//
// Each answer changes ONE lever of a parent recipe (the leader, or now and then another measured
// run): the coupled parallel layout, recomputation, the MoE dispatcher, CPU optimizer offload, or
// the rows per microbatch where the policy lets them change (adapters/tuner/micro_batch.h).
// Values are drawn uniformly from a frozen space of objective-preserving settings. A draw the
// estimator finds invalid (divisibility, layer counts, Megatron's start-up checks) is scored zero
// without launching, and a recipe already run or proposed is drawn again. The draw is a function
// of the seed and the campaign's proposal count only, so a resumed campaign draws the same.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "adapters/model/workload.h"
#include "core/ports.h"

namespace attune {

inline constexpr int kRandomDrawsPerAnswerMax = 400;

class RandomTuner final : public Tuner {
 public:
  RandomTuner(sim::Workload workload, std::uint64_t seed, std::vector<int> micro_batch_sizes = {});
  std::string name() const override { return "random"; }
  TunerAnswer next(const TunerView& view) override;
  std::optional<double> prune_below_leader_fraction() const override { return 0.90; }

 private:
  sim::Workload workload_;
  std::uint64_t seed_;
  std::vector<int> micro_batch_sizes_;  // empty: the parent's only
};

}  // namespace attune
