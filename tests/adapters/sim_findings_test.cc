// The paper's qualitative findings (attune-paper.md §3, issue 3 "Acceptance") as known answers of
// the clean model, from the baseline recipes in adapters/model/data/recipes. No model has a
// term of its own: these follow from the same formulas for every model.
//
// Where the model's magnitudes differ from the paper's measurements, the test asserts the finding
// as the model reproduces it and says what differs.
#include <gtest/gtest.h>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "adapters/model/stack_profile.h"
#include "adapters/model/sweep.h"

namespace attune::sim {
namespace {

Workload workload(const char* model, const char* gpu, int gpus, int seq, int gbs,
                  Precision precision = Precision::kBf16) {
  Workload w;
  w.model = load_model(model).value();
  w.hardware = load_hardware(gpu).value();
  w.gpus = gpus;
  w.seq_length = seq;
  w.global_batch_size = gbs;
  w.precision = precision;
  return w;
}

// The preset recipe with `changes` ("flag=value", "flag" for a switch, "flag=false" to drop one).
Recipe variant(const char* preset, std::initializer_list<const char*> changes) {
  Recipe recipe = load_recipe_preset(preset).value();
  for (std::string change : changes) {
    const std::size_t eq = change.find('=');
    const std::string flag = change.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : change.substr(eq + 1);
    Status status = set_flag(recipe, flag, value);
    EXPECT_TRUE(status.ok()) << change << ": " << status.error();
  }
  return recipe;
}

double gain(const Prediction& candidate, const Prediction& baseline) {
  return candidate.tokens_per_s_per_gpu / baseline.tokens_per_s_per_gpu - 1;
}

Prediction valid(const Workload& w, const Recipe& recipe) {
  Prediction p = predict(w, recipe);
  EXPECT_TRUE(p.valid) << p.error;
  return p;
}

// GLM-4.5 on 128 B200 from its H100 public recipe (TP2 PP8 EP16 ETP1, 10-layer end stages).
TEST(SimFindings, Glm45ExpertsInsideANodeThenTp1AtSixteenStages) {
  const Workload w = workload("glm-4.5", "b200", 128, 4096, 2048);
  const Prediction baseline = valid(w, load_recipe_preset("glm-4.5-b200x128").value());
  ASSERT_TRUE(baseline.fits_in_memory);

  // Moving expert parallelism inside a node helps; the DeepEP dispatcher helps more. The paper
  // measured about +22-34 % for these; the run is "bound by communication and kernel launches",
  // which is what lets the host cost take the alltoall dispatcher's gain back.
  const Prediction ep8 = valid(w, variant("glm-4.5-b200x128", {"expert-model-parallel-size=8"}));
  const Prediction deepep =
      valid(w, variant("glm-4.5-b200x128",
                       {"expert-model-parallel-size=8", "moe-token-dispatcher-type=flex"}));
  EXPECT_GT(gain(ep8, baseline), 0.1);
  EXPECT_LT(gain(ep8, baseline), 0.5);
  EXPECT_GT(deepep.tokens_per_s_per_gpu, ep8.tokens_per_s_per_gpu);

  // TP1 at 16 pipeline stages (light end stages for the embedding and the loss + MTP) roughly
  // doubles the intranode-expert gain, as in the paper. The paper's run needed full
  // recomputation; in this model the layout fits under the baseline's selective recomputation
  // (Megatron Core keeps no copy of the experts' output), so that is the layout compared. Full
  // recomputation costs it about a quarter of its throughput: it still gains 30-80 %, but in
  // this model no longer beats DeepEP inside a node (+44 % against +45 %, with the B200 preset's
  // compute fitted to the published rows), where the paper measured it ahead.
  const std::initializer_list<const char*> tp1 = {
      "tensor-model-parallel-size=1",        "sequence-parallel=false",
      "pipeline-model-parallel-size=16",     "expert-model-parallel-size=8",
      "decoder-first-pipeline-num-layers=6", "decoder-last-pipeline-num-layers=2"};
  const Prediction tp1_selective = valid(w, variant("glm-4.5-b200x128", tp1));
  EXPECT_TRUE(tp1_selective.fits_in_memory);
  Recipe full = variant("glm-4.5-b200x128", tp1);
  for (const char* change :
       {"recompute-granularity=full", "recompute-method=uniform", "recompute-num-layers=1"}) {
    const std::string c = change;
    ASSERT_TRUE(set_flag(full, c.substr(0, c.find('=')), c.substr(c.find('=') + 1)).ok());
  }
  const Prediction tp1_full = valid(w, full);
  EXPECT_TRUE(tp1_full.fits_in_memory);
  EXPECT_GT(gain(tp1_selective, baseline), 1.5 * gain(deepep, baseline));
  EXPECT_GT(gain(tp1_full, baseline), 0.3);
  EXPECT_LT(gain(tp1_full, baseline), 0.8);
  EXPECT_GT(tp1_selective.tokens_per_s_per_gpu, tp1_full.tokens_per_s_per_gpu);

  // The oracle's fastest layouts drop TP to 1 and deepen the pipeline: TP1 at 16 stages is within
  // a few percent of the best. (In the model they keep activations in check with context
  // parallelism or selective recomputation rather than full recomputation.)
  SweepOptions options;
  options.top_k = 20;
  Result<SweepResult> oracle = sweep(w, load_recipe_preset("glm-4.5-b200x128").value(), options);
  ASSERT_TRUE(oracle.ok()) << oracle.error();
  ASSERT_FALSE(oracle->best.empty());
  const SweepEntry& best = oracle->best.front();
  EXPECT_EQ(best.layout.layout.tp, 1);
  EXPECT_GE(best.layout.layout.pp, 8);
  bool tp1_pp16_near_best = false;
  for (const SweepEntry& entry : oracle->best) {
    tp1_pp16_near_best =
        tp1_pp16_near_best || (entry.layout.layout.tp == 1 && entry.layout.layout.pp == 16 &&
                               gain(entry.prediction, best.prediction) > -0.03);
  }
  EXPECT_TRUE(tp1_pp16_near_best);
}

// Llama-3.1-405B on 128 B200 (FP8, TP4 PP8 CP2 VP8, sequence 8192, GBS 64). The paper measured
// its step as bound by pipeline send and receive between nodes, on its stack (slime).
TEST(SimFindings, Llama405bPipelineSendReceiveAndFewerVirtualStages) {
  const Workload w = workload("llama3.1-405b", "b200", 128, 8192, 64, Precision::kFp8);
  const Recipe recipe = load_recipe_preset("llama3.1-405b-b200x128").value();
  const StackProfile slime = load_stack("slime").value();
  const Prediction baseline = predict_on_stack(w, recipe, slime);
  ASSERT_TRUE(baseline.valid) << baseline.error;
  ASSERT_TRUE(baseline.fits_in_memory);
  // On the paper's stack pipeline send/receive between nodes is the leading communication cost.
  const Breakdown& b = baseline.breakdown;
  EXPECT_GT(b.pp_p2p_s / baseline.step_time_s, 0.05);
  EXPECT_GT(b.pp_p2p_s, b.tp_comm_s);
  EXPECT_GT(b.pp_p2p_s, b.cp_comm_s);
  EXPECT_GT(b.pp_p2p_s, b.dp_comm_s);

  // Megatron's interleaved schedule overlaps the exchanges of its steady state with the next
  // chunk's compute (overlap_p2p_comm, the default with virtual stages), except each forward's
  // send, which it waits for at once; its warm-up and cool-down (here about a quarter of the
  // chunks) exchange and wait. On the calibrated stack half to three quarters of the exchange
  // time stays exposed, all of it where the recipe turns the overlap off.
  const Prediction overlapped = valid(w, recipe);
  const Prediction exposed =
      valid(w, variant("llama3.1-405b-b200x128", {"no-overlap-p2p-communication"}));
  EXPECT_GT(overlapped.breakdown.pp_p2p_s, 0.5 * exposed.breakdown.pp_p2p_s);
  EXPECT_LT(overlapped.breakdown.pp_p2p_s, 0.75 * exposed.breakdown.pp_p2p_s);
  EXPECT_LT(exposed.tokens_per_s_per_gpu, overlapped.tokens_per_s_per_gpu);

  // Fewer chunks per rank carry less of that traffic. The paper's other two campaigns kept eight
  // stages with four or two virtual stages: on the paper's stack both fit (the recipe reduces its
  // gradients in BF16) and gain more than the 3% band.
  for (const char* stages :
       {"num-virtual-stages-per-pipeline-rank=4", "num-virtual-stages-per-pipeline-rank=2"}) {
    const Prediction fewer =
        predict_on_stack(w, variant("llama3.1-405b-b200x128", {stages}), slime);
    ASSERT_TRUE(fewer.valid) << fewer.error;
    EXPECT_TRUE(fewer.fits_in_memory) << stages;
    EXPECT_LT(fewer.breakdown.pp_p2p_s, 0.6 * b.pp_p2p_s) << stages;
    EXPECT_GT(fewer.tokens_per_s_per_gpu / baseline.tokens_per_s_per_gpu, 1.03) << stages;
  }
  // PP16 VP2 (which also drops data parallelism to one) halves the traffic too. The paper
  // measured +11.9 % for that layout; in the model its deeper pipeline's fill and drain and the
  // loop's work per microbatch outweigh the saving, so the model does not reproduce the gain, and
  // the test does not claim it.
  const Prediction pp16_vp2 = predict_on_stack(
      w,
      variant("llama3.1-405b-b200x128",
              {"pipeline-model-parallel-size=16", "num-virtual-stages-per-pipeline-rank=2"}),
      slime);
  ASSERT_TRUE(pp16_vp2.valid) << pp16_vp2.error;
  EXPECT_TRUE(pp16_vp2.fits_in_memory);
  EXPECT_LT(pp16_vp2.breakdown.pp_p2p_s, 0.6 * b.pp_p2p_s);
  EXPECT_LT(pp16_vp2.breakdown.dp_comm_s, 0.1 * b.dp_comm_s);
}

// MiniMax-M2 on 64 B200 with the optimizer offloaded to the CPU.
TEST(SimFindings, MiniMaxM2DroppingOffloadAndDeepeningThePipeline) {
  const Workload w = workload("minimax-m2", "b200", 64, 4096, 1024);
  const Prediction baseline = valid(w, load_recipe_preset("minimax-m2-b200x64").value());
  ASSERT_TRUE(baseline.fits_in_memory);
  EXPECT_GT(baseline.breakdown.optimizer_s / baseline.step_time_s, 0.3);  // CPU Adam dominates
  const Prediction no_offload =
      valid(w, variant("minimax-m2-b200x64", {"optimizer-cpu-offload=false"}));
  EXPECT_TRUE(no_offload.fits_in_memory);
  EXPECT_GT(gain(no_offload, baseline), 0.5);
  const Prediction deeper =
      valid(w, variant("minimax-m2-b200x64",
                       {"optimizer-cpu-offload=false", "pipeline-model-parallel-size=4",
                        "expert-model-parallel-size=16", "account-for-embedding-in-pipeline-split",
                        "account-for-loss-in-pipeline-split"}));
  EXPECT_TRUE(deeper.fits_in_memory);
  EXPECT_GT(deeper.tokens_per_s_per_gpu, no_offload.tokens_per_s_per_gpu);
  EXPECT_GT(deeper.tokens_per_s_per_gpu / baseline.tokens_per_s_per_gpu, 2.7);
}

// Mixtral-8x22B from its expert-tuned recipe: nothing gains more than about 3 %. The oracle
// also switches the TP and expert-parallel overlaps; overlapped communication costs the compute
// it overlaps (SM contention) and hides only what the schedule allows, so neither switch is a
// large win. The model's best layout (PP4 instead of PP8, fewer pipeline sends across nodes,
// with both overlaps) gains 4.8 %, a little more than the paper's 3 %.
TEST(SimFindings, Mixtral8x22bExpertRecipeIsNearTheOptimum) {
  const Workload w = workload("mixtral-8x22b", "h100", 128, 4096, 256);
  const Recipe baseline = load_recipe_preset("mixtral-8x22b-h100x128").value();
  Result<SweepResult> oracle = sweep(w, baseline);
  ASSERT_TRUE(oracle.ok()) << oracle.error();
  ASSERT_TRUE(oracle->baseline.fits_in_memory);
  ASSERT_FALSE(oracle->best.empty());
  EXPECT_LT(gain(oracle->best.front().prediction, oracle->baseline), 0.05);

  const Prediction base = valid(w, baseline);
  for (const char* overlap : {"overlap-moe-expert-parallel-comm", "tp-comm-overlap"}) {
    const Prediction switched = valid(w, variant("mixtral-8x22b-h100x128", {overlap}));
    EXPECT_GT(gain(switched, base), 0.0) << overlap;
    EXPECT_LT(gain(switched, base), 0.03) << overlap;
  }
  // Tensor and expert-tensor parallelism 4 over two pipeline stages spreads the experts over four
  // nodes; both overlaps do not make it worthwhile.
  const Prediction tp4 =
      valid(w, variant("mixtral-8x22b-h100x128",
                       {"tensor-model-parallel-size=4", "pipeline-model-parallel-size=2",
                        "expert-tensor-parallel-size=4", "num-virtual-stages-per-pipeline-rank=4",
                        "overlap-moe-expert-parallel-comm", "tp-comm-overlap"}));
  EXPECT_TRUE(tp4.fits_in_memory);
  EXPECT_LT(gain(tp4, base), 0.03);
}

}  // namespace
}  // namespace attune::sim
