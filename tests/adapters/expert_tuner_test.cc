// The expert tuner's retry rules, driven through a campaign state folded from hand-made events:
// a layout that ran out of memory is retried with recomputation before it is ruled out (rule 5):
// the fastest the estimate expects to fit with room to spare, else full recomputation; and a run
// that hung is retried with one data-parallel overlap fewer.
#include <gtest/gtest.h>

#include <functional>

#include "adapters/model/layout.h"
#include "adapters/model/presets.h"
#include "adapters/model/stack_profile.h"
#include "adapters/tuner/expert_tuner.h"
#include "adapters/world/sim_job.h"
#include "core/campaign_file.h"
#include "core/control_state.h"
#include "gate/policy.h"

namespace attune {
namespace {

// Rule 5's retry of a run that ran out of memory: its layout and the tuner's estimate of it.
struct Rule5Retry {
  sim::Layout layout;
  sim::Prediction prediction;
};

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

  // The tuner's next proposal, which must be rule 5's retry of run 6, decoded and estimated on
  // the stack the tuner estimates on.
  Rule5Retry retried_after_oom() {
    Rule5Retry out;
    TunerAnswer answer = ask();
    auto* proposal = std::get_if<TunerProposal>(&answer);
    EXPECT_NE(proposal, nullptr);
    if (proposal == nullptr) return out;
    EXPECT_EQ(proposal->parent_run_id, 6u);
    EXPECT_NE(proposal->hypothesis.mechanism.find("rule 5"), std::string::npos)
        << proposal->hypothesis.mechanism;
    EXPECT_FALSE(proposal->hypothesis.bottleneck.empty());
    auto layout = sim::decode_layout(workload_, proposal->recipe);
    EXPECT_TRUE(layout.ok());
    if (layout.ok()) out.layout = layout.value();
    out.prediction = estimate(proposal->recipe);
    return out;
  }

  sim::Prediction estimate(const Recipe& recipe) const {
    return sim::predict_on_stack(workload_, recipe, sim::StackProfile{});
  }

  sim::Workload workload_;
  Policy policy_;
  Recipe baseline_;
  ControlState state_ = initial_control_state();
  std::uint64_t sequence_ = 0;
};

// GLM-4.5's layout at TP1 without sequence parallelism, EP8, over `pp` stages with `first` and
// `last` layers in the end stages.
std::function<void(sim::Layout&)> tp1_ep8(int pp, int first, int last) {
  return [=](sim::Layout& l) {
    l.tp = 1;
    l.pp = pp;
    l.ep = 8;
    l.sequence_parallel = false;
    l.first_stage_layers = first;
    l.last_stage_layers = last;
  };
}

// GLM-4.5 at TP1 PP16 EP8 with the baseline's attention recomputation: the estimate puts it inside
// the GPU, yet it ran out of memory. A selective recomputation is expected to leave the room the
// failure asks for at a fraction of full recomputation's cost, so the retry takes the fastest one.
TEST_F(ExpertTunerRules, AnOutOfMemoryLayoutIsRetriedWithTheFastestRecomputationExpectedToFit) {
  const Recipe tp1 = with_layout(tp1_ep8(16, 6, 2));
  failed_search_run(tp1, FailureClass::kOom);
  const Rule5Retry retry = retried_after_oom();
  EXPECT_NE(retry.layout.recompute, sim::RecomputeGranularity::kNone);
  EXPECT_NE(retry.layout.recompute, sim::RecomputeGranularity::kFull);
  EXPECT_EQ(retry.layout.tp, 1);
  EXPECT_EQ(retry.layout.pp, 16);
  // The run showed the estimate short by at least the room it left; the retry must leave that
  // room and 2% more (the campaign's margin after the failure).
  const sim::Prediction failed = estimate(tp1);
  ASSERT_TRUE(failed.fits_in_memory);
  const double margin = failed.memory_capacity_gib / failed.peak_memory_gib - 1 + 0.02;
  EXPECT_LE(retry.prediction.peak_memory_gib * (1 + margin), retry.prediction.memory_capacity_gib);
  const Recipe full = with_layout([](sim::Layout& l) {
    tp1_ep8(16, 6, 2)(l);
    l.recompute = sim::RecomputeGranularity::kFull;
    l.recompute_method = sim::RecomputeMethod::kUniform;
    l.recompute_num_layers = 1;
  });
  EXPECT_GT(retry.prediction.tokens_per_s_per_gpu, estimate(full).tokens_per_s_per_gpu);
}

// GLM-4.5 at TP1 PP4 EP8: no selective recomputation brings the estimate under the GPU's memory,
// so the retry recomputes fully.
TEST_F(ExpertTunerRules, WhereNoLighterRecomputationIsExpectedToFitTheRetryRecomputesFully) {
  const Recipe tp1 = with_layout(tp1_ep8(4, 24, 20));
  failed_search_run(tp1, FailureClass::kOom);
  const Rule5Retry retry = retried_after_oom();
  EXPECT_EQ(retry.layout.recompute, sim::RecomputeGranularity::kFull);
  EXPECT_EQ(retry.layout.pp, 4);
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
