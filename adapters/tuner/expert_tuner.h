// ExpertTuner: the diagnosis-driven default tuner.
//
// Each answer starts from a diagnosis of the leader: the largest exposed cost of its last
// profile when it has one, else of the estimator's breakdown (the clean performance model on the
// cluster's software stack, which the world does not follow exactly). Candidates come from the
// lever catalog's moves applied to the leader, one lever or one coupled set each; the estimator
// ranks them by expected gain, weighted by confidence (higher when the catalog says the lever
// helps against the diagnosed bottleneck, lower as the campaign's measurements stray from the
// estimates), after a memory pre-filter whose margin is learned from the campaign's observed
// peaks.
//
// The six search rules are enforced here, and every proposal's hypothesis names the rule state:
//   1. every proposal carries a hypothesis (bottleneck, mechanism, expected gain);
//   2. one lever or one coupled set per candidate (checked against the lever groups);
//   3. flag classes come from the gate's classification: a candidate the policy's configuration
//      check refuses is never proposed;
//   4. a lever is ruled out only after two of its values were measured on the same recipe (the
//      parent's and one more; a lever that made the leader has its other value in the leader's
//      parent) or it is at its feasible limit: it has no other feasible value, a value the
//      estimate expects to run out of memory, or the costs it targets (its catalog tags) take so
//      little of the leader's estimated step that even at twice the estimate they stay below the
//      noise band, so no value of it can clear it (the stop record names these levers); the
//      topology only after TP, PP, EP (MoE models), CP and DP were each probed;
//   5. a new layout starts without memory savings beyond the parent's, and a layout that runs
//      out of memory is retried with recomputation before it is ruled out: the fastest the
//      estimate expects to fit with room to spare, else full recomputation;
//   6. once the layout stops changing, levers that won on earlier layouts are re-tested on the
//      leader.
// Failed runs teach too: a hang cured by dropping a data-parallel overlap is not repeated, and
// after DeepEP across NVLink domains fails because its transport cannot start (the cause that the
// failure's deciding evidence names: NVSHMEM's start-up), no other layout with DeepEP's expert
// group across domains is proposed.
// A stop records the leader, the levers tested and the last diagnosis.
//
// next() is a pure function of the view (the ledger's state), so a resumed campaign asks the
// same questions and gets the same answers.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "adapters/model/sweep.h"
#include "adapters/model/workload.h"
#include "adapters/tuner/lever_catalog.h"
#include "core/ports.h"
#include "events/bottleneck.h"
#include "gate/policy.h"

namespace attune {

// Diagnosis of a recipe: the largest exposed cost and one line.
struct ExpertDiagnosis {
  Bottleneck bottleneck = Bottleneck::kCompute;
  std::string text;  // e.g. "ep_a2a_cross_node 49% of the step on stage 7, then ... (estimate)"
  bool from_profile = false;
  bool clear = true;  // false: the next cost is nearly as large; a profile would tell them apart
};

class ExpertTuner final : public Tuner {
 public:
  // `stack`: the cluster's software stack, which the estimator predicts on (the default: the
  // stack the model's presets are calibrated to).
  ExpertTuner(sim::Workload workload, Policy policy, LeverCatalog catalog,
              sim::StackProfile stack = sim::StackProfile{});
  std::string name() const override { return "expert"; }
  TunerAnswer next(const TunerView& view) override;

 private:
  sim::Workload workload_;
  Policy policy_;
  LeverCatalog catalog_;
  sim::StackProfile stack_;
  std::map<std::string, sim::SweepResult> sweeps_;  // layout sweeps by recipe hash
  // The microbatch sizes the policy frees for the campaign's baseline (micro_batch.h), worked out
  // at the first answer: the baseline does not change within a campaign.
  std::optional<std::vector<int>> micro_batch_sizes_;
};

}  // namespace attune
