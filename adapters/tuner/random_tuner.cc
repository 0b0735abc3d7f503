#include "adapters/tuner/random_tuner.h"

#include <random>
#include <set>

#include "adapters/model/layout.h"
#include "adapters/model/performance_model.h"
#include "adapters/model/pipeline_split.h"
#include "core/lever_groups.h"
#include "gate/config_check.h"

namespace attune {
namespace {

template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& values) {
  std::uniform_int_distribution<std::size_t> index(0, values.size() - 1);
  return values[index(rng)];
}

std::vector<int> powers_of_two_up_to(int limit) {
  std::vector<int> values;
  for (int value = 1; value <= limit; value *= 2) values.push_back(value);
  return values;
}

// One lever of `layout` redrawn; returns the lever's name, or "" for an infeasible draw.
std::string redraw_one_lever(std::mt19937_64& rng, const sim::Workload& workload,
                             const std::vector<int>& micro_batch_sizes, sim::Layout& layout) {
  const bool moe = workload.model.num_experts > 0;
  std::vector<std::string> levers = {"parallel-layout", "recompute", "optimizer-offload"};
  if (moe) levers.push_back("moe-dispatcher");
  if (!micro_batch_sizes.empty()) levers.push_back("micro-batch");
  const std::string lever = pick(rng, levers);
  if (lever == "parallel-layout") {
    const int nvlink_gpus = workload.hardware.nvlink_domain_gpus;
    layout.tp = pick(rng, powers_of_two_up_to(std::max(1, std::min(8, nvlink_gpus))));
    layout.pp = pick(rng, powers_of_two_up_to(std::min(32, workload.gpus)));
    layout.cp = pick(rng, std::vector<int>{1, 1, 2});
    layout.ep = moe ? pick(rng, powers_of_two_up_to(std::min(64, workload.model.num_experts))) : 1;
    layout.etp = moe ? pick(rng, std::vector<int>{1, layout.tp}) : 0;
    layout.virtual_stages = layout.pp > 2 ? pick(rng, std::vector<int>{0, 0, 2, 4}) : 0;
    layout.layers_per_virtual_stage = 0;
    // A split the layer count does not allow at this size is an infeasible draw.
    if (!sim::apply_split(pick(rng, sim::pipeline_splits()), workload.model.num_layers, layout)) {
      return "";
    }
    layout.sequence_parallel = layout.tp > 1;
  } else if (lever == "recompute") {
    const int choice = pick(rng, std::vector<int>{0, 1, 2});
    layout.recompute = choice == 0   ? sim::RecomputeGranularity::kNone
                       : choice == 1 ? sim::RecomputeGranularity::kSelective
                                     : sim::RecomputeGranularity::kFull;
    layout.recompute_method =
        choice == 2 ? sim::RecomputeMethod::kUniform : sim::RecomputeMethod::kNone;
    layout.recompute_num_layers = choice == 2 ? 1 : 0;
  } else if (lever == "moe-dispatcher") {
    const int choice = pick(rng, std::vector<int>{0, 1, 2});
    layout.dispatcher = choice == 0   ? sim::Dispatcher::kAlltoall
                        : choice == 1 ? sim::Dispatcher::kAllgather
                                      : sim::Dispatcher::kFlex;
  } else if (lever == "micro-batch") {
    layout.micro_batch_size = pick(rng, micro_batch_sizes);
  } else {
    layout.optimizer_cpu_offload = !layout.optimizer_cpu_offload;
  }
  return lever;
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
  std::vector<RunId> measured;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose == RunPurpose::kSearch && run.measured) measured.push_back(id);
  }

  for (int draw = 0; draw < kRandomDrawsPerAnswerMax; ++draw) {
    RunId parent_id = state.view.leader.run_id;
    if (!measured.empty() && std::uniform_real_distribution<double>(0, 1)(rng) < 0.3) {
      parent_id = pick(rng, measured);
    }
    const RunState* parent_run = state.run(parent_id);
    auto parent =
        parent_run ? parse_recipe(parent_run->recipe, "parent") : Result<Recipe>(view.baseline);
    if (!parent.ok()) continue;
    auto layout = sim::decode_layout(workload_, parent.value());
    if (!layout.ok()) continue;
    sim::Layout drawn = layout.value();
    const std::string lever = redraw_one_lever(rng, workload_, micro_batch_sizes_, drawn);
    if (lever.empty()) continue;
    auto candidate = sim::apply_layout(parent.value(), drawn);
    if (!candidate.ok()) continue;
    // Rendering a layout can touch settings of another lever (a default made explicit at
    // another value than the parent's); such a draw would be refused, so it is drawn again.
    if (LeverGroups::builtin()
            .levers_of(effective_changes(parent.value(), candidate.value()))
            .size() != 1) {
      continue;
    }
    const std::string hash = recipe_hash(candidate.value());
    if (seen.contains(hash)) continue;
    seen.insert(hash);
    // An infeasible draw scores zero without a launch.
    if (!sim::predict(workload_, candidate.value()).valid) continue;
    TunerProposal proposal;
    proposal.recipe = std::move(candidate).value();
    proposal.parent_run_id = parent_id;
    proposal.hypothesis.bottleneck = "unknown (random search)";
    proposal.hypothesis.mechanism = "uniform draw of " + lever;
    proposal.hypothesis.expected_gain_fraction = 0.0;
    return proposal;
  }
  return TunerWait{};
}

}  // namespace attune
