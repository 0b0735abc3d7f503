// Rows per microbatch as a lever: free only where the policy lets --micro-batch-size change
// (MiniMax-M2, whose routing has no per-microbatch load-balancing loss), and then drawn by the
// random search as a lever of its own.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "adapters/model/presets.h"
#include "adapters/tuner/micro_batch.h"
#include "adapters/tuner/random_tuner.h"
#include "core/campaign_file.h"
#include "core/control_state.h"
#include "core/lever_groups.h"
#include "gate/config_check.h"
#include "gate/policy.h"

namespace attune {
namespace {

struct Example {
  CampaignSpec spec;
  Policy policy;
};

Example example(const std::string& name) {
  auto spec = parse_campaign_file(std::string(ATTUNE_SOURCE_DIR) + "/examples/" + name + ".toml");
  EXPECT_TRUE(spec.ok()) << spec.error();
  auto policy = parse_policy(spec->policy_bytes, spec->policy_path);
  EXPECT_TRUE(policy.ok()) << policy.error();
  return Example{spec.value(), policy.value()};
}

TEST(MicroBatch, FreeOnlyWhereThePolicyLetsItChange) {
  const Example minimax = example("minimax-m2-b200x64");
  EXPECT_EQ(free_micro_batch_sizes(minimax.policy, minimax.spec.baseline),
            (std::vector<int>{1, 2, 4, 8, 16}));
  Recipe four = minimax.spec.baseline;
  ASSERT_TRUE(set_flag(four, "--micro-batch-size", "4").ok());
  EXPECT_EQ(free_micro_batch_sizes(minimax.policy, four),
            (std::vector<int>{1, 2, 4, 8, 16, 32, 64}));
  // GLM-4.5 and Mixtral-8x22B freeze one row per microbatch; Llama-3.1-405B's policy keeps the
  // base table's numeric class.
  for (const char* name :
       {"glm-4.5-b200x128", "mixtral-8x22b-h100x128", "llama3.1-405b-b200x128"}) {
    const Example frozen = example(name);
    EXPECT_TRUE(free_micro_batch_sizes(frozen.policy, frozen.spec.baseline).empty()) << name;
  }
  Recipe without = minimax.spec.baseline;
  ASSERT_TRUE(remove_flag(without, "--micro-batch-size").ok());
  EXPECT_TRUE(free_micro_batch_sizes(minimax.policy, without).empty());
}

// The first proposal of random search on MiniMax-M2's opened campaign, for each seed in
// [1, seeds], drawing the rows per microbatch from `sizes`; empty where the tuner waits.
std::vector<std::optional<TunerProposal>> first_random_proposals(const std::vector<int>& sizes,
                                                                 std::uint64_t seeds) {
  const Example minimax = example("minimax-m2-b200x64");
  auto workload = sim::load_workload(minimax.spec.model, minimax.spec.hardware, 64, 4096, 1024,
                                     sim::Precision::kBf16);
  EXPECT_TRUE(workload.ok()) << workload.error();
  ControlState state;
  Envelope opened;
  opened.sequence = 1;
  opened.campaign_id = "c";
  opened.body = campaign_opened(minimax.spec);
  evolve(state, opened);
  std::vector<std::optional<TunerProposal>> out;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    RandomTuner tuner(workload.value(), seed, sizes);
    EXPECT_TRUE(tuner.black_box());
    TunerAnswer answer = tuner.next(TunerView{state, minimax.spec.baseline, 0});
    auto* proposal = std::get_if<TunerProposal>(&answer);
    out.push_back(proposal ? std::optional(std::move(*proposal)) : std::nullopt);
  }
  return out;
}

// Proposals, over 40 seeds, whose drawn configuration changes the microbatch size.
int micro_batch_draws(const std::vector<int>& sizes) {
  const Recipe baseline = example("minimax-m2-b200x64").spec.baseline;
  int draws = 0;
  for (const auto& proposal : first_random_proposals(sizes, 40)) {
    if (!proposal) continue;
    for (const SettingChange& change : effective_changes(baseline, proposal->recipe)) {
      draws += change.name == "--micro-batch-size" ? 1 : 0;
    }
  }
  return draws;
}

// The paper's random search samples whole configurations uniformly (its Appendix E): each
// proposal is drawn against the baseline, most change several settings at once, and the tuner is
// a black box, so the control plane does not hold it to one lever per candidate.
TEST(MicroBatch, RandomSearchDrawsWholeConfigurationsAgainstTheBaseline) {
  const Recipe baseline = example("minimax-m2-b200x64").spec.baseline;
  int several = 0;
  for (const auto& proposal : first_random_proposals({1, 2, 4}, 20)) {
    ASSERT_TRUE(proposal.has_value());
    EXPECT_EQ(proposal->parent_run_id, 0u);
    const std::vector<std::string> levers =
        LeverGroups::builtin().levers_of(effective_changes(baseline, proposal->recipe));
    several += levers.size() > 1 ? 1 : 0;
  }
  EXPECT_GT(several, 10);
}

TEST(MicroBatch, RandomSearchDrawsItOnlyWhenFree) {
  EXPECT_GT(micro_batch_draws({1, 2, 4, 8, 16}), 0);
  EXPECT_EQ(micro_batch_draws({}), 0);
}

}  // namespace
}  // namespace attune
