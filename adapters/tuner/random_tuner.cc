#include "adapters/tuner/random_tuner.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>

#include "adapters/model/layout.h"
#include "adapters/model/performance_model.h"
#include "adapters/tuner/black_box_space.h"
#include "gate/config_check.h"

namespace attune {
namespace {

// A point of `space` with every knob drawn uniformly from its choices.
nlohmann::json uniform_point(std::mt19937_64& rng, const nlohmann::json& space) {
  nlohmann::json point;
  for (const auto& [name, choices] : space.items()) {
    std::uniform_int_distribution<std::size_t> index(0, choices.size() - 1);
    point[name] = choices[index(rng)];
  }
  return point;
}

}  // namespace

RandomTuner::RandomTuner(sim::Workload workload, std::uint64_t seed,
                         std::vector<int> micro_batch_sizes)
    : workload_(std::move(workload)),
      seed_(seed),
      micro_batch_sizes_(std::move(micro_batch_sizes)) {}

TunerAnswer RandomTuner::next(const TunerView& view) {
  const ControlState& state = view.state;
  std::seed_seq seeds{seed_, static_cast<std::uint64_t>(state.next_proposal_id()),
                      std::uint64_t{0x7a11e}};
  std::mt19937_64 rng(seeds);

  std::set<std::string> seen;
  for (const auto& [id, proposal] : state.proposals) seen.insert(proposal.recipe_hash);
  auto baseline_layout = sim::decode_layout(workload_, view.baseline);
  if (!baseline_layout.ok()) return TunerWait{};
  const nlohmann::json space = search_space(workload_, baseline_layout.value(), micro_batch_sizes_);

  for (int draw = 0; draw < kRandomDrawsPerAnswerMax; ++draw) {
    const std::optional<sim::Layout> drawn =
        layout_at(workload_, baseline_layout.value(), uniform_point(rng, space));
    if (!drawn) continue;
    auto candidate = sim::apply_layout(view.baseline, *drawn);
    if (!candidate.ok()) continue;
    const std::string hash = recipe_hash(candidate.value());
    if (seen.contains(hash)) continue;
    seen.insert(hash);
    // An infeasible draw scores zero without a launch.
    if (!sim::predict(workload_, candidate.value()).valid) continue;
    TunerProposal proposal;
    proposal.recipe = std::move(candidate).value();
    proposal.parent_run_id = 0;  // drawn against the baseline, the search's first trial
    proposal.hypothesis.bottleneck = "unknown (random search)";
    proposal.hypothesis.mechanism = "uniform draw of a whole configuration";
    proposal.hypothesis.expected_gain_fraction = 0.0;
    return proposal;
  }
  return TunerWait{};
}

}  // namespace attune
