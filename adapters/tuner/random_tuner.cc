#include "adapters/tuner/random_tuner.h"

#include <random>
#include <set>

#include "adapters/model/layout.h"
#include "adapters/model/performance_model.h"
#include "adapters/model/pipeline_split.h"
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

// The parallel degrees, virtual stages and pipeline split of `layout`, drawn; false for a split
// the layer count does not allow at the drawn size (an infeasible draw).
bool draw_parallel_layout(std::mt19937_64& rng, const sim::Workload& workload,
                          sim::Layout& layout) {
  const bool moe = workload.model.num_experts > 0;
  const int nvlink_gpus = workload.hardware.nvlink_domain_gpus;
  layout.tp = pick(rng, powers_of_two_up_to(std::max(1, std::min(8, nvlink_gpus))));
  layout.pp = pick(rng, powers_of_two_up_to(std::min(32, workload.gpus)));
  layout.cp = pick(rng, std::vector<int>{1, 1, 2});
  layout.ep = moe ? pick(rng, powers_of_two_up_to(std::min(64, workload.model.num_experts))) : 1;
  layout.etp = moe ? pick(rng, std::vector<int>{1, layout.tp}) : 0;
  layout.virtual_stages = layout.pp > 2 ? pick(rng, std::vector<int>{0, 0, 2, 4}) : 0;
  layout.layers_per_virtual_stage = 0;
  layout.sequence_parallel = layout.tp > 1;
  return sim::apply_split(pick(rng, sim::pipeline_splits()), workload.model.num_layers, layout);
}

// A whole configuration drawn uniformly from the frozen space into `layout` (the baseline's):
// the parallel layout, recomputation, the MoE dispatcher, the rows per microbatch where the
// policy frees them and CPU optimizer offload where the baseline uses it. False for an
// infeasible draw.
bool draw_configuration(std::mt19937_64& rng, const sim::Workload& workload,
                        const std::vector<int>& micro_batch_sizes, bool offload_in_space,
                        sim::Layout& layout) {
  if (!draw_parallel_layout(rng, workload, layout)) return false;
  const int recompute = pick(rng, std::vector<int>{0, 1, 2});
  layout.recompute = recompute == 0   ? sim::RecomputeGranularity::kNone
                     : recompute == 1 ? sim::RecomputeGranularity::kSelective
                                      : sim::RecomputeGranularity::kFull;
  layout.recompute_method =
      recompute == 2 ? sim::RecomputeMethod::kUniform : sim::RecomputeMethod::kNone;
  layout.recompute_num_layers = recompute == 2 ? 1 : 0;
  if (workload.model.num_experts > 0) {
    const int dispatcher = pick(rng, std::vector<int>{0, 1, 2});
    layout.dispatcher = dispatcher == 0   ? sim::Dispatcher::kAlltoall
                        : dispatcher == 1 ? sim::Dispatcher::kAllgather
                                          : sim::Dispatcher::kFlex;
  }
  if (!micro_batch_sizes.empty()) layout.micro_batch_size = pick(rng, micro_batch_sizes);
  if (offload_in_space) layout.optimizer_cpu_offload = pick(rng, std::vector<int>{0, 1}) == 1;
  return true;
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
  const bool offload_in_space = baseline_layout->optimizer_cpu_offload;

  for (int draw = 0; draw < kRandomDrawsPerAnswerMax; ++draw) {
    sim::Layout drawn = baseline_layout.value();
    if (!draw_configuration(rng, workload_, micro_batch_sizes_, offload_in_space, drawn)) continue;
    auto candidate = sim::apply_layout(view.baseline, drawn);
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
