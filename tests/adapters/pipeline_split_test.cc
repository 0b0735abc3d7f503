// The pipeline splits a black-box search draws (the paper's Table E1): which ones a layer count
// allows at a pipeline size, the stage layer counts they give, and reading a recipe's split back.
#include "adapters/model/pipeline_split.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "adapters/model/layout.h"
#include "tests/adapters/sim_world_fixtures.h"

namespace attune::sim {
namespace {

using testing::load;
using testing::preset;

// MiniMax-M2's public recipe on 64 B200s with one pipeline size changed.
Layout minimax_at(const Workload& w, int pp) {
  Result<Layout> l = decode_layout(w, preset("minimax-m2-b200x64"));
  EXPECT_TRUE(l.ok()) << l.error();
  Layout out = l.ok() ? l.value() : Layout{};
  out.pp = pp;
  out.tp = 1;
  out.sequence_parallel = false;
  out.ep = std::min(16, 64 / pp);  // the expert group fits in a stage
  return out;
}

// The decoder layers of each pipeline stage of `l`, resolved as Megatron splits them.
std::vector<int> stage_layers(const Workload& w, const Layout& l) {
  Result<ResolvedLayout> r = resolve_layout(w, l);
  EXPECT_TRUE(r.ok()) << r.error();
  std::vector<int> out;
  if (r.ok()) {
    for (const StageLayers& s : r->stages) out.push_back(s.decoder_layers());
  }
  return out;
}

TEST(PipelineSplit, SixtyTwoLayersOverFourStagesNeedAnUnevenSplit) {
  const Workload w = load("minimax-m2", "b200", 64, 4096, 1024);
  ASSERT_EQ(w.model.num_layers, 62);
  Layout even = minimax_at(w, 4);
  EXPECT_FALSE(apply_split(PipelineSplit::kEven, 62, even));
  EXPECT_EQ(even.pp, 4);  // unchanged when refused

  Layout account = minimax_at(w, 4);
  ASSERT_TRUE(apply_split(PipelineSplit::kAccountEmbeddingAndLoss, 62, account));
  EXPECT_EQ(stage_layers(w, account), (std::vector<int>{15, 16, 16, 15}));

  Layout first = minimax_at(w, 4);
  ASSERT_TRUE(apply_split(PipelineSplit::kLightFirst, 62, first));
  EXPECT_EQ(stage_layers(w, first), (std::vector<int>{14, 16, 16, 16}));

  Layout last = minimax_at(w, 4);
  ASSERT_TRUE(apply_split(PipelineSplit::kLightLast, 62, last));
  EXPECT_EQ(stage_layers(w, last), (std::vector<int>{16, 16, 16, 14}));

  Layout both = minimax_at(w, 4);
  ASSERT_TRUE(apply_split(PipelineSplit::kLightBoth, 62, both));
  EXPECT_EQ(stage_layers(w, both), (std::vector<int>{15, 16, 16, 15}));

  Layout eight = minimax_at(w, 8);
  ASSERT_TRUE(apply_split(PipelineSplit::kLightBoth, 62, eight));
  EXPECT_EQ(stage_layers(w, eight), (std::vector<int>{7, 8, 8, 8, 8, 8, 8, 7}));
  // Two stages have no middle to be heavier than.
  Layout two = minimax_at(w, 2);
  EXPECT_FALSE(apply_split(PipelineSplit::kLightBoth, 62, two));
}

TEST(PipelineSplit, LightEndsHoldFewerLayersEvenWhereTheCountDivides) {
  const Workload w = load("minimax-m2", "b200", 64, 4096, 1024);
  Layout first = minimax_at(w, 4);
  ASSERT_TRUE(apply_split(PipelineSplit::kLightFirst, 92, first));
  EXPECT_EQ(first.first_stage_layers, 20);  // 24 in each other stage
  Layout both = minimax_at(w, 4);
  ASSERT_TRUE(apply_split(PipelineSplit::kLightBoth, 64, both));
  EXPECT_EQ(both.first_stage_layers, 15);  // 17 in each middle stage
  EXPECT_EQ(both.last_stage_layers, 15);
  // Every split a size allows reads back as itself.
  for (int pp : {2, 4, 8}) {
    for (int layers : {62, 64, 92}) {
      for (PipelineSplit split : pipeline_splits()) {
        Layout l = minimax_at(w, pp);
        if (!apply_split(split, layers, l)) continue;
        EXPECT_EQ(split_of(layers, l), split) << split_name(split) << " " << layers << "/" << pp;
      }
    }
  }
}

TEST(PipelineSplit, OneStageTakesEverySplitAsTheEvenOne) {
  const Workload w = load("minimax-m2", "b200", 64, 4096, 1024);
  for (PipelineSplit split : pipeline_splits()) {
    Layout l = minimax_at(w, 1);
    l.account_for_embedding = true;
    ASSERT_TRUE(apply_split(split, 62, l)) << split_name(split);
    EXPECT_FALSE(l.account_for_embedding || l.account_for_loss || l.first_stage_layers_set ||
                 l.last_stage_layers_set)
        << split_name(split);
    EXPECT_EQ(split_of(62, l), PipelineSplit::kEven);
  }
}

TEST(PipelineSplit, ARecipesOwnSplitIsReadBackWhenTheSearchCanDrawIt) {
  // GLM-4.5's public recipe: 92 layers over 8 stages, 10 in each end stage and 12 in the others.
  const Workload glm = load("glm-4.5", "b200", 128, 4096, 2048);
  Result<Layout> l = decode_layout(glm, preset("glm-4.5-b200x128"));
  ASSERT_TRUE(l.ok()) << l.error();
  EXPECT_EQ(split_of(92, l.value()), PipelineSplit::kLightBoth);
  // Ends of 11 are not a split the search draws.
  Layout other = l.value();
  other.first_stage_layers = other.last_stage_layers = 11;
  EXPECT_EQ(split_of(92, other), std::nullopt);
  for (PipelineSplit split : pipeline_splits()) {
    EXPECT_EQ(split_named(split_name(split)), split);
  }
  EXPECT_EQ(split_named("heavy-middle"), std::nullopt);
}

}  // namespace
}  // namespace attune::sim
