// TpeTuner: Optuna's tree-structured Parzen estimator as a black-box baseline, as the paper ran
// it (multivariate TPE, constant liar for concurrent trials, 8 start-up trials, the campaign's
// seed), over a frozen space of objective-preserving knobs: the parallel degrees, virtual stages,
// recomputation, the MoE dispatcher and, where the baseline uses it, optimizer offload.
//
// Optuna runs in a small bridge process (adapters/tuner/data/tpe_bridge.py, compiled in, run with
// Debian's python3 and python3-optuna) that speaks JSON lines. The ledger stays the source of
// truth: every answer rebuilds the study from the campaign's proposals (the baseline, measured
// runs with their throughput, failures and refusals scored zero, runs in flight left running),
// so the same ledger gives the same draws and a resumed campaign draws the same. A draw that
// the estimator finds infeasible, or that repeats a recipe already proposed, is told (zero, or
// the recorded value) without a launch and drawn again.
//
// As a black-box search it proposes whole configurations: the control plane does not hold it to
// one lever per candidate (rule 2 belongs to the diagnosis-driven tuners), but to everything
// else (layer 1, the budget, the gate).
//
// "tpe-prefilter" is the same search behind the paper's analytical memory pre-filter (its
// Appendix E): a draw whose estimated peak memory per GPU times (1 + margin) exceeds the GPU's
// memory scores zero without a launch. The paper takes the margin from the model's bring-up
// launches; here they are the baseline's calibration runs, and the margin is how far their
// measured peak memory exceeds the estimate for the baseline (0 where it does not, or before any
// was measured). The baseline is exempt.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "adapters/model/workload.h"
#include "core/ports.h"

namespace attune {

inline constexpr int kTpeDrawsPerAnswerMax = 200;
inline constexpr int kTpeStartupTrials = 8;

// The pre-filter's margin: the largest ratio of a calibration run's measured peak memory (its
// fullest stage) to the estimate for the baseline, less 1; never below 0.
double memory_prefilter_margin(const sim::Workload& workload, const Recipe& baseline,
                               const ControlState& state);

class TpeBridge;

class TpeTuner final : public Tuner {
 public:
  // `python` runs the bridge (default "/usr/bin/python3"); `memory_prefilter` makes it
  // "tpe-prefilter"; `micro_batch_sizes` (adapters/tuner/micro_batch.h) join the space when
  // the policy lets the microbatch size change.
  TpeTuner(sim::Workload workload, std::uint64_t seed, std::string python = "/usr/bin/python3",
           bool memory_prefilter = false, std::vector<int> micro_batch_sizes = {});
  ~TpeTuner() override;
  std::string name() const override { return memory_prefilter_ ? "tpe-prefilter" : "tpe"; }
  TunerAnswer next(const TunerView& view) override;
  std::optional<double> prune_below_leader_fraction() const override { return 0.90; }
  // It draws whole configurations from its frozen space, as the paper's TPE baseline does.
  bool black_box() const override { return true; }

 private:
  // Starts the TPE process once, then gives it the space and the history: (re)begins the search.
  Status begin_search(const nlohmann::json& space, const nlohmann::json& history);

  sim::Workload workload_;
  std::uint64_t seed_;
  std::vector<int> micro_batch_sizes_;
  std::string python_;
  bool memory_prefilter_ = false;
  std::unique_ptr<TpeBridge> bridge_;
};

}  // namespace attune
