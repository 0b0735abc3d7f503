// The expert tuner's retry rules, driven through a campaign state folded from hand-made events:
// a layout that ran out of memory is retried with full recomputation before it is ruled out
// (rule 5), and a run that hung is retried with one data-parallel overlap fewer.
#include <gtest/gtest.h>

#include <functional>

#include "adapters/model/layout.h"
#include "adapters/model/presets.h"
#include "adapters/tuner/expert_tuner.h"
#include "adapters/world/sim_job.h"
#include "core/campaign_file.h"
#include "core/control_state.h"
#include "gate/policy.h"

namespace attune {
namespace {

class ExpertTunerRules : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec =
        parse_campaign_file(std::string(ATTUNE_SOURCE_DIR) + "/examples/glm-4.5-b200x128.toml");
    ASSERT_TRUE(spec.ok()) << spec.error();
    baseline_ = spec->baseline;
    auto workload =
        sim::load_workload(spec->model, spec->hardware, 128, 4096, 2048, sim::Precision::kBf16);
    ASSERT_TRUE(workload.ok()) << workload.error();
    workload_ = workload.value();
    auto policy = parse_policy(spec->policy_bytes, spec->policy_path);
    ASSERT_TRUE(policy.ok()) << policy.error();
    policy_ = policy.value();
    add(campaign_opened(spec.value()));
  }

  void add(Body body) {
    Envelope e;
    e.sequence = ++sequence_;
    e.campaign_id = "c";
    e.body = std::move(body);
    evolve(state_, e);
  }

  // A search run of `recipe` on the baseline that failed with `failure`.
  void failed_search_run(const Recipe& recipe, FailureClass failure) {
    CandidateProposed proposed;
    proposed.proposal_id = 1;
    proposed.purpose = RunPurpose::kSearch;
    proposed.recipe = canonical_text(recipe);
    proposed.recipe_hash = recipe_hash(recipe);
    proposed.levers = {Lever{"parallel-layout", ObjectiveClass::kStructural}};
    add(proposed);
    LaunchAdmitted admitted;
    admitted.proposal_id = 1;
    admitted.run_id = 6;
    admitted.purpose = RunPurpose::kSearch;
    admitted.gpus = 128;
    admitted.steps = 14;
    add(admitted);
    add(RunFailed{6, failure, "scripted", ""});
  }

  Recipe with_layout(const std::function<void(sim::Layout&)>& change) {
    auto layout = sim::decode_layout(workload_, baseline_);
    EXPECT_TRUE(layout.ok());
    sim::Layout l = layout.value();
    change(l);
    auto recipe = sim::apply_layout(baseline_, l);
    EXPECT_TRUE(recipe.ok()) << recipe.error();
    return recipe.value();
  }

  TunerAnswer ask() {
    ExpertTuner tuner(workload_, policy_, builtin_lever_catalog());
    return tuner.next(TunerView{state_, baseline_, 0});
  }

  sim::Workload workload_;
  Policy policy_;
  Recipe baseline_;
  ControlState state_ = initial_control_state();
  std::uint64_t sequence_ = 0;
};

TEST_F(ExpertTunerRules, AnOutOfMemoryLayoutIsRetriedWithFullRecomputationFirst) {
  const Recipe tp1 = with_layout([](sim::Layout& l) {
    l.tp = 1;
    l.pp = 16;
    l.ep = 8;
    l.sequence_parallel = false;
    l.first_stage_layers = 6;
    l.last_stage_layers = 2;
  });
  failed_search_run(tp1, FailureClass::kOom);
  TunerAnswer answer = ask();
  auto* proposal = std::get_if<TunerProposal>(&answer);
  ASSERT_NE(proposal, nullptr);
  EXPECT_EQ(proposal->parent_run_id, 6u);
  auto retried = sim::decode_layout(workload_, proposal->recipe);
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->recompute, sim::RecomputeGranularity::kFull);
  EXPECT_EQ(retried->tp, 1);
  EXPECT_EQ(retried->pp, 16);
  EXPECT_NE(proposal->hypothesis.mechanism.find("rule 5"), std::string::npos)
      << proposal->hypothesis.mechanism;
  EXPECT_FALSE(proposal->hypothesis.bottleneck.empty());
}

TEST_F(ExpertTunerRules, AHungRunIsRetriedWithOneDataParallelOverlapFewer) {
  const Recipe ep8 = with_layout([](sim::Layout& l) { l.ep = 8; });
  failed_search_run(ep8, FailureClass::kHang);
  TunerAnswer answer = ask();
  auto* proposal = std::get_if<TunerProposal>(&answer);
  ASSERT_NE(proposal, nullptr);
  EXPECT_EQ(proposal->parent_run_id, 6u);
  const std::vector<SettingChange> diff = diff_recipes(ep8, proposal->recipe);
  ASSERT_EQ(diff.size(), 1u);
  EXPECT_EQ(diff[0].name, "--overlap-param-gather");
  EXPECT_FALSE(diff[0].after_present);
}

TEST_F(ExpertTunerRules, ARunThatFailedOnTheCodeIsNotRetried) {
  const Recipe ep8 = with_layout([](sim::Layout& l) { l.ep = 8; });
  failed_search_run(ep8, FailureClass::kCrash);
  TunerAnswer answer = ask();
  auto* proposal = std::get_if<TunerProposal>(&answer);
  ASSERT_NE(proposal, nullptr) << "the baseline still has candidates";
  EXPECT_NE(proposal->parent_run_id, 6u) << proposal->hypothesis.mechanism;
}

}  // namespace
}  // namespace attune
