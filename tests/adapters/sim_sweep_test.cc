// The sweep (the oracle): what it returns is valid, fits, is sorted, and each recipe predicts what
// the sweep says.
#include <gtest/gtest.h>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "adapters/model/sweep.h"

namespace attune::sim {
namespace {

Workload qwen3_on_16_h100() {
  Workload w;
  w.model = load_model("qwen3-30b-a3b").value();
  w.hardware = load_hardware("h100").value();
  w.gpus = 16;
  w.seq_length = 4096;
  w.global_batch_size = 256;
  return w;
}

TEST(SimSweep, BestLayoutsAreValidSortedAndReproducible) {
  const Workload w = qwen3_on_16_h100();
  const Recipe baseline = load_recipe_preset("qwen3-30b-a3b-h100x16").value();
  SweepOptions options;
  options.top_k = 5;
  Result<SweepResult> result = sweep(w, baseline, options);
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_TRUE(result->baseline.valid) << result->baseline.error;
  ASSERT_EQ(result->best.size(), 5u);
  EXPECT_GT(result->layouts_considered, 1000);
  EXPECT_LE(result->layouts_fitting, result->layouts_valid);
  EXPECT_LE(result->layouts_valid, result->layouts_considered);
  for (std::size_t i = 0; i < result->best.size(); ++i) {
    const SweepEntry& entry = result->best[i];
    EXPECT_TRUE(entry.prediction.valid);
    EXPECT_TRUE(entry.prediction.fits_in_memory);
    if (i > 0) {
      EXPECT_LE(entry.prediction.tokens_per_s_per_gpu,
                result->best[i - 1].prediction.tokens_per_s_per_gpu);
    }
    // The recipe the oracle prints is the layout it predicted.
    const Prediction again = predict(w, entry.recipe);
    ASSERT_TRUE(again.valid) << again.error;
    EXPECT_DOUBLE_EQ(again.tokens_per_s_per_gpu, entry.prediction.tokens_per_s_per_gpu);
    // Untouched settings of the baseline stay.
    EXPECT_TRUE(entry.recipe.flags.contains("--use-distributed-optimizer"));
    EXPECT_EQ(entry.recipe.env.at("CUDA_DEVICE_MAX_CONNECTIONS"), "1");
  }
  EXPECT_GE(result->best.front().prediction.tokens_per_s_per_gpu,
            result->baseline.tokens_per_s_per_gpu);
}

TEST(SimSweep, MicrobatchSizeIsOptIn) {
  const Workload w = qwen3_on_16_h100();
  const Recipe baseline = load_recipe_preset("qwen3-30b-a3b-h100x16").value();
  SweepOptions fixed;
  fixed.top_k = 50;
  const Result<SweepResult> fixed_result = sweep(w, baseline, fixed);
  ASSERT_TRUE(fixed_result.ok()) << fixed_result.error();
  for (const SweepEntry& entry : fixed_result.value().best) {
    EXPECT_EQ(entry.layout.layout.micro_batch_size, 1);
  }
  SweepOptions varied = fixed;
  varied.micro_batch_sizes = {1, 2};
  const Result<SweepResult> varied_result = sweep(w, baseline, varied);
  ASSERT_TRUE(varied_result.ok()) << varied_result.error();
  EXPECT_GT(varied_result.value().layouts_considered, fixed_result.value().layouts_considered);
}

// The demo waits for its host to launch kernels, so the oracle's best layouts capture them in
// CUDA graphs, with the modules a MoE layer's graphs can hold; without the switch the baseline's
// eager launches stay.
TEST(SimSweep, CudaGraphsAreVariedWhereTheHostBinds) {
  const Workload w = qwen3_on_16_h100();
  const Recipe baseline = load_recipe_preset("qwen3-30b-a3b-h100x16").value();
  ASSERT_FALSE(baseline.flags.contains("--cuda-graph-impl"));
  SweepOptions options;
  options.top_k = 5;
  const Result<SweepResult> graphs = sweep(w, baseline, options);
  ASSERT_TRUE(graphs.ok()) << graphs.error();
  ASSERT_FALSE(graphs->best.empty());
  const SweepEntry& best = graphs->best.front();
  EXPECT_EQ(best.layout.layout.cuda_graph, CudaGraphImpl::kTransformerEngine);
  EXPECT_EQ(best.recipe.flags.at("--cuda-graph-impl"), "transformer_engine");
  EXPECT_EQ(best.recipe.flags.at("--cuda-graph-modules"), "attn moe_router moe_preprocess");
  EXPECT_NE(best.layout.layout.recompute, RecomputeGranularity::kFull);

  options.vary_cuda_graphs = false;
  const Result<SweepResult> eager = sweep(w, baseline, options);
  ASSERT_TRUE(eager.ok()) << eager.error();
  ASSERT_FALSE(eager->best.empty());
  for (const SweepEntry& entry : eager->best) {
    EXPECT_EQ(entry.layout.layout.cuda_graph, CudaGraphImpl::kNone);
    EXPECT_FALSE(entry.recipe.flags.contains("--cuda-graph-impl"));
  }
  EXPECT_LT(eager->layouts_considered, graphs->layouts_considered);
  EXPECT_GT(best.prediction.tokens_per_s_per_gpu,
            eager->best.front().prediction.tokens_per_s_per_gpu);
}

// A filter that refuses the fastest layouts (all graphed on the demo) still leaves top_k others:
// the best list is filled from what the filter admits, fastest first, not cut from the
// unfiltered list.
TEST(SimSweep, AnAdmitFilterFillsTheListFromWhatItAdmits) {
  const Workload w = qwen3_on_16_h100();
  const Recipe baseline = load_recipe_preset("qwen3-30b-a3b-h100x16").value();
  SweepOptions options;
  options.top_k = 20;
  const Result<SweepResult> all = sweep(w, baseline, options);
  ASSERT_TRUE(all.ok()) << all.error();
  ASSERT_EQ(all->best.size(), 20u);
  ASSERT_TRUE(all->best.front().recipe.flags.contains("--cuda-graph-impl"));

  int asked = 0;
  options.admit = [&asked](const Recipe& recipe) {
    ++asked;
    return !recipe.flags.contains("--cuda-graph-impl");
  };
  const Result<SweepResult> eager = sweep(w, baseline, options);
  ASSERT_TRUE(eager.ok()) << eager.error();
  ASSERT_EQ(eager->best.size(), 20u);
  EXPECT_GT(asked, 20);
  for (std::size_t i = 0; i < eager->best.size(); ++i) {
    EXPECT_FALSE(eager->best[i].recipe.flags.contains("--cuda-graph-impl")) << i;
    if (i > 0) {
      EXPECT_LE(eager->best[i].prediction.tokens_per_s_per_gpu,
                eager->best[i - 1].prediction.tokens_per_s_per_gpu);
    }
  }
  // The same as sweeping without graph variants at all.
  SweepOptions no_graphs;
  no_graphs.top_k = 20;
  no_graphs.vary_cuda_graphs = false;
  const Result<SweepResult> reference = sweep(w, baseline, no_graphs);
  ASSERT_TRUE(reference.ok()) << reference.error();
  EXPECT_DOUBLE_EQ(eager->best.front().prediction.tokens_per_s_per_gpu,
                   reference->best.front().prediction.tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(eager->best.back().prediction.tokens_per_s_per_gpu,
                   reference->best.back().prediction.tokens_per_s_per_gpu);
}

TEST(SimSweep, UndecodableBaselineIsAnError) {
  const Workload w = qwen3_on_16_h100();
  Recipe baseline = load_recipe_preset("qwen3-30b-a3b-h100x16").value();
  baseline.flags["--num-layers"] = "12";
  Result<SweepResult> result = sweep(w, baseline);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error(), "recipe sets --num-layers 12 but model qwen3-30b-a3b has 48");
}

}  // namespace
}  // namespace attune::sim
