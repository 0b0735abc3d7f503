// The performance model's contract: the breakdown adds up to the step time, every cost term
// passes through its factor, and the physics moves the right way.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"

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

Prediction run(const Workload& w, const std::string& flags, const CostFactors& f = {}) {
  Result<Recipe> recipe =
      parse_recipe("CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py " + flags);
  EXPECT_TRUE(recipe.ok()) << recipe.error();
  Prediction p = predict(w, recipe.value(), f);
  EXPECT_TRUE(p.valid) << p.error;
  return p;
}

// Predictions of `flags` on `w`, whose model has the switch `feature` on, and on the same model
// with it off.
std::pair<Prediction, Prediction> on_and_off(const Workload& w, bool ModelSpec::*feature,
                                             const std::string& flags) {
  EXPECT_TRUE(w.model.*feature);
  Workload off = w;
  off.model.*feature = false;
  return {run(w, flags), run(off, flags)};
}

// The same with Transformer Engine's CuTe DSL fused grouped MLP asked for in the environment.
Prediction run_with_fused_grouped_mlp(const Workload& w, const std::string& flags) {
  Result<Recipe> recipe = parse_recipe(
      "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py " +
      flags);
  EXPECT_TRUE(recipe.ok()) << recipe.error();
  return predict(w, recipe.value());
}

// A MoE launch where every cost term is present: TP, CP, cross-node EP, interleaved PP,
// data parallelism, selective recomputation, CPU optimizer offload.
const Workload& busy_workload() {
  static const Workload w = workload("qwen3-30b-a3b", "h100", 128, 8192, 256);
  return w;
}
const char* kBusyFlags =
    "--tensor-model-parallel-size 2 --sequence-parallel --context-parallel-size 2 "
    "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 "
    "--expert-model-parallel-size 16 --expert-tensor-parallel-size 1 --micro-batch-size 1 "
    "--moe-token-dispatcher-type alltoall --moe-grouped-gemm "
    "--recompute-granularity selective --recompute-modules core_attn moe_act "
    "--use-distributed-optimizer --use-precision-aware-optimizer --optimizer-cpu-offload "
    "--optimizer-offload-fraction 0.5";

TEST(SimPerformance, BreakdownAddsUpToTheStepTime) {
  const Prediction p = run(busy_workload(), kBusyFlags);
  const Breakdown& b = p.breakdown;
  EXPECT_NEAR(b.total_s(), p.step_time_s, 1e-9 * p.step_time_s);
  EXPECT_NEAR(b.compute_s, b.gemm_s + b.attention_s + b.elementwise_s, 1e-12);
  EXPECT_GT(b.gemm_s, 0);
  EXPECT_GT(b.attention_s, 0);
  EXPECT_GT(b.elementwise_s, 0);
  EXPECT_GT(b.tp_comm_s, 0);
  EXPECT_GT(b.cp_comm_s + p.stages[0].forward.cp_comm_hidden_s, 0);
  EXPECT_GT(b.ep_a2a_s, 0);
  EXPECT_GT(b.pp_p2p_s, 0);
  EXPECT_GT(b.bubble_s, 0);
  EXPECT_GT(b.recompute_s, 0);
  EXPECT_GT(b.optimizer_s, 0);
  const double tokens = 256.0 * 8192;
  EXPECT_NEAR(p.tokens_per_s_per_gpu, tokens / (p.step_time_s * 128), 1e-6);
  ASSERT_EQ(p.stages.size(), 2u);
  ASSERT_EQ(p.peak_memory_gib_by_stage.size(), 2u);
  for (const StageTiming& s : p.stages) {
    EXPECT_NEAR(s.microbatch_s,
                s.forward.total_s() + s.backward.total_s() + s.recompute.total_s() + s.pp_p2p_s,
                1e-12);
  }
}

// The busy workload on a GPU whose communication kernels take no SMs: overlapped transfers
// then leave the compute alone, and each term is its own.
Workload without_contention(Workload w) {
  w.hardware.nccl_comm_sms = 0;
  w.hardware.userbuffers_comm_sms = 0;
  w.hardware.deepep_comm_sms = 0;
  w.hardware.hybridep_comm_sms = 0;
  return w;
}

// Each factor scales its own term: doubling it makes that term (exposed plus hidden) grow and
// never makes the step faster.
TEST(SimPerformance, EveryTermPassesThroughItsFactor) {
  const Workload w = without_contention(busy_workload());
  const Prediction base = run(w, kBusyFlags);
  struct Case {
    const char* name;
    double CostFactors::*factor;
    double (*term)(const Prediction&);
  };
  const Case cases[] = {
      {"gemm", &CostFactors::gemm, [](const Prediction& p) { return p.breakdown.gemm_s; }},
      {"attention", &CostFactors::attention,
       [](const Prediction& p) { return p.breakdown.attention_s; }},
      {"elementwise", &CostFactors::elementwise,
       [](const Prediction& p) { return p.breakdown.elementwise_s; }},
      {"tp_comm", &CostFactors::tp_comm, [](const Prediction& p) { return p.breakdown.tp_comm_s; }},
      {"cp_comm", &CostFactors::cp_comm,
       [](const Prediction& p) {
         return p.stages[0].forward.cp_comm_s + p.stages[0].forward.cp_comm_hidden_s;
       }},
      {"ep_a2a", &CostFactors::ep_a2a, [](const Prediction& p) { return p.breakdown.ep_a2a_s; }},
      {"pp_p2p", &CostFactors::pp_p2p, [](const Prediction& p) { return p.breakdown.pp_p2p_s; }},
      {"dp_comm", &CostFactors::dp_comm,
       [](const Prediction& p) { return p.stages[0].dp_comm_s + p.stages[0].dp_comm_hidden_s; }},
      {"optimizer", &CostFactors::optimizer,
       [](const Prediction& p) { return p.breakdown.optimizer_s; }},
      {"recompute", &CostFactors::recompute,
       [](const Prediction& p) { return p.breakdown.recompute_s; }},
      {"memory", &CostFactors::memory,
       [](const Prediction& p) { return p.stages[0].memory.activations_gib; }},
  };
  for (const Case& c : cases) {
    CostFactors f;
    f.*c.factor = 2.0;
    const Prediction p = run(w, kBusyFlags, f);
    EXPECT_NEAR(c.term(p), 2 * c.term(base), 1e-6 * c.term(base)) << c.name;
    // A term that host time covers leaves the step as it was, to rounding.
    EXPECT_GE(p.step_time_s, base.step_time_s * (1 - 1e-12)) << c.name;
  }
}

TEST(SimPerformance, HostFactorShowsWhenLaunchBound) {
  // Tiny microbatches of a small MoE model on a fast GPU: the CPU cannot launch work as fast as
  // the GPU runs it.
  const Workload w = workload("qwen3-30b-a3b", "b200", 8, 1024, 64);
  const char* flags =
      "--expert-model-parallel-size 8 --micro-batch-size 1 --moe-token-dispatcher-type alltoall "
      "--moe-grouped-gemm";
  const Prediction base = run(w, flags);
  EXPECT_GT(base.breakdown.host_s, 0);
  CostFactors slow_host;
  slow_host.host = 2.0;
  EXPECT_GT(run(w, flags, slow_host).breakdown.host_s, 1.5 * base.breakdown.host_s);
  // CUDA graphs of the whole iteration remove most of the launch cost.
  const Prediction graphed =
      run(w, std::string(flags) +
                 " --cuda-graph-impl full_iteration --no-check-for-nan-in-loss-and-grad");
  EXPECT_LT(graphed.breakdown.host_s, 0.5 * base.breakdown.host_s);
}

TEST(SimPerformance, PhysicsMovesTheRightWay) {
  const Workload bf16 = workload("llama3.1-70b", "h100", 64, 8192, 128);
  const Workload fp8 = workload("llama3.1-70b", "h100", 64, 8192, 128, Precision::kFp8);
  const char* flags =
      "--tensor-model-parallel-size 4 --sequence-parallel --pipeline-model-parallel-size 4 "
      "--num-virtual-stages-per-pipeline-rank 5 --context-parallel-size 2 --micro-batch-size 1 "
      "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather";
  const Prediction b = run(bf16, flags);
  const Prediction f = run(fp8, flags);
  EXPECT_GT(f.tokens_per_s_per_gpu, 1.2 * b.tokens_per_s_per_gpu);  // FP8 speeds up GEMMs
  EXPECT_LT(f.tokens_per_s_per_gpu, 2.0 * b.tokens_per_s_per_gpu);  // ... and only GEMMs
  EXPECT_LT(f.mfu, b.mfu);                                          // MFU is over the FP8 peak

  // TP communication overlap hides part of the TP traffic.
  const Prediction overlapped = run(bf16, std::string(flags) + " --tp-comm-overlap");
  EXPECT_LT(overlapped.breakdown.tp_comm_s, b.breakdown.tp_comm_s);

  // Expert parallelism across nodes is slower than inside a node.
  const Workload glm = workload("glm-4.5", "b200", 128, 4096, 2048);
  const Recipe base = load_recipe_preset("glm-4.5-b200x128").value();
  Recipe inside = base;
  ASSERT_TRUE(set_flag(inside, "expert-model-parallel-size", "8").ok());
  const Prediction across_nodes = predict(glm, base);
  const Prediction in_node = predict(glm, inside);
  EXPECT_GT(across_nodes.breakdown.ep_a2a_s, 2 * in_node.breakdown.ep_a2a_s);

  // Full recomputation costs about a third more compute and saves activation memory.
  Recipe full = inside;
  ASSERT_TRUE(set_flag(full, "recompute-granularity", "full").ok());
  ASSERT_TRUE(set_flag(full, "recompute-method", "uniform").ok());
  ASSERT_TRUE(set_flag(full, "recompute-num-layers", "1").ok());
  const Prediction recomputed = predict(glm, full);
  ASSERT_TRUE(recomputed.valid) << recomputed.error;
  EXPECT_NEAR(recomputed.breakdown.recompute_s / recomputed.breakdown.compute_s, 1.0 / 3, 0.1);
  EXPECT_LT(recomputed.peak_memory_gib, in_node.peak_memory_gib);
}

// A sliding window keeps its layers' attention kernel far from its peak (a 128-token key range),
// so each kind of layer is timed at its own efficiency: the attention time of GPT-OSS (a window
// on every other layer) is the mean of the all-window and all-full models' times, not the time at
// the mean key length.
TEST(SimPerformance, SlidingWindowLayersRunAtTheirOwnEfficiency) {
  const char* flags =
      "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --micro-batch-size 1 "
      "--moe-token-dispatcher-type alltoall --moe-grouped-gemm --use-distributed-optimizer";
  Workload mixed = workload("gpt-oss-120b", "b200", 64, 4096, 1280);
  ASSERT_EQ(mixed.model.window_attn_skip_freq, 2);
  ASSERT_EQ(mixed.model.sliding_window_tokens, 128);
  Workload full = mixed;
  full.model.sliding_window_tokens = 0;
  Workload windowed = mixed;
  windowed.model.window_attn_skip_freq = 0;  // a window on every layer
  const double t_mixed = run(mixed, flags).breakdown.attention_s;
  const double t_full = run(full, flags).breakdown.attention_s;
  const double t_windowed = run(windowed, flags).breakdown.attention_s;
  ASSERT_GT(t_windowed, 0);
  EXPECT_LT(t_windowed, t_full);
  EXPECT_NEAR(t_mixed, 0.5 * (t_full + t_windowed), 1e-9 * t_full);
  // Per token of context, a window runs well below the full layers' efficiency: its time is more
  // than three times what its share of the context alone would give.
  const double context_ratio = (128 - 128.0 * 127 / (2 * 4096)) / (4096 / 2.0);
  EXPECT_GT(t_windowed / t_full, 3 * context_ratio);
}

// GPT-OSS's own pieces each cost time where Megatron runs them: attention sinks slow the fused
// attention kernel (and nothing else), YaRN's RoPE runs unfused as --no-rope-fusion would have
// it (memory traffic and launches, no compute), and
// the clamp of the experts' activation is a pass of its own, except inside Transformer Engine's
// fused grouped MLP, which applies it in the GEMMs' epilogue.
TEST(SimPerformance, SinksYarnAndTheClampCostWhereMegatronRunsThem) {
  const std::string flags =
      "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --micro-batch-size 4 "
      "--moe-token-dispatcher-type alltoall --moe-grouped-gemm --use-distributed-optimizer";
  const Workload oss = workload("gpt-oss-120b", "b200", 64, 4096, 1280);
  const Prediction base = run(oss, flags);
  ASSERT_TRUE(base.valid) << base.error;

  const auto without = [&](const std::function<void(ModelSpec&)>& change) {
    Workload w = oss;
    change(w.model);
    return run(w, flags);
  };
  const Prediction no_sinks = without([](ModelSpec& m) { m.softmax = SoftmaxType::kVanilla; });
  const Prediction fused_rope = without([](ModelSpec& m) { m.position_embedding_type = "rope"; });
  const Prediction no_clamp = without([](ModelSpec& m) { m.activation_func_clamp_value = 0; });
  // Sinks: attention only.
  EXPECT_NEAR(base.breakdown.attention_s / no_sinks.breakdown.attention_s, 1 / 0.84, 1e-9);
  EXPECT_DOUBLE_EQ(base.breakdown.gemm_s, no_sinks.breakdown.gemm_s);
  EXPECT_DOUBLE_EQ(base.breakdown.elementwise_s, no_sinks.breakdown.elementwise_s);
  // Unfused RoPE and the clamp: memory traffic only.
  for (const Prediction* other : {&fused_rope, &no_clamp}) {
    EXPECT_GT(base.breakdown.elementwise_s, other->breakdown.elementwise_s);
    EXPECT_DOUBLE_EQ(base.breakdown.gemm_s, other->breakdown.gemm_s);
    EXPECT_DOUBLE_EQ(base.breakdown.attention_s, other->breakdown.attention_s);
    EXPECT_GT(base.step_time_s, other->step_time_s);
  }

  // On a host-bound step (one row per microbatch on H100), unfused RoPE's launches show too.
  const std::string one_row =
      "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --micro-batch-size 1 "
      "--pipeline-model-parallel-size 4 --moe-token-dispatcher-type alltoall --moe-grouped-gemm "
      "--use-distributed-optimizer";
  Workload oss_h100 = workload("gpt-oss-120b", "h100", 64, 4096, 1280);
  const Prediction yarn_h100 = run(oss_h100, one_row);
  oss_h100.model.position_embedding_type = "rope";
  EXPECT_GT(yarn_h100.breakdown.host_s, run(oss_h100, one_row).breakdown.host_s);
  // One mechanism: plain RoPE under --no-rope-fusion runs exactly as YaRN does (Megatron turns
  // the fusion off for any position embedding but "rope").
  const Prediction no_fusion = run(oss_h100, one_row + " --no-rope-fusion");
  EXPECT_DOUBLE_EQ(no_fusion.step_time_s, yarn_h100.step_time_s);
  // The recipe's --position-embedding-type overrides the model file's: the YaRN model under
  // "rope" runs the fused kernel, and the same model made plain RoPE runs unfused under "yarn".
  const Workload oss_yarn = workload("gpt-oss-120b", "h100", 64, 4096, 1280);
  EXPECT_DOUBLE_EQ(run(oss_yarn, one_row + " --position-embedding-type rope").step_time_s,
                   run(oss_h100, one_row).step_time_s);
  EXPECT_DOUBLE_EQ(run(oss_h100, one_row + " --position-embedding-type yarn").step_time_s,
                   yarn_h100.step_time_s);
  // A value Megatron's argparse refuses is refused with the recipe, before any pricing.
  const Result<Recipe> rotary =
      parse_recipe("python pretrain_gpt.py " + one_row + " --position-embedding-type rotary");
  ASSERT_FALSE(rotary.ok());
  EXPECT_NE(rotary.error().find("--position-embedding-type expects one of"), std::string::npos)
      << rotary.error();
  // A model without rotary embeddings (GPT-3's learned positions) has no RoPE to unfuse: with
  // --no-rope-fusion it runs as the same model would with fused RoPE.
  const Workload gpt3 = workload("gpt3-175b", "h100", 64, 2048, 512);
  ASSERT_EQ(gpt3.model.position_embedding_type, "learned_absolute");
  Workload gpt3_rope = gpt3;
  gpt3_rope.model.position_embedding_type = "rope";
  const std::string gpt3_flags =
      "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 --micro-batch-size 1 "
      "--use-distributed-optimizer --sequence-parallel --recompute-activations";
  EXPECT_DOUBLE_EQ(run(gpt3, gpt3_flags + " --no-rope-fusion").step_time_s,
                   run(gpt3_rope, gpt3_flags).step_time_s);

  // Experts built from Transformer Engine's ops (through its op fuser, MXFP8 on Blackwell; the
  // model prices clamped experts without the fused grouped MLP) clamp inside TE's activation
  // kernel: the clamp is free.
  const std::string fused_flags = flags +
                                  " --fp8-format hybrid --fp8-recipe mxfp8 "
                                  "--use-transformer-engine-op-fuser";
  const auto fused_predict = [&](const Workload& on) {
    return run_with_fused_grouped_mlp(on, fused_flags);
  };
  Workload oss_fp8 = workload("gpt-oss-120b", "b200", 64, 4096, 1280, Precision::kFp8);
  Workload oss_fp8_unclamped = oss_fp8;
  oss_fp8_unclamped.model.activation_func_clamp_value = 0;
  const Prediction fused = fused_predict(oss_fp8);
  ASSERT_TRUE(fused.valid) << fused.error;
  EXPECT_DOUBLE_EQ(fused.step_time_s, fused_predict(oss_fp8_unclamped).step_time_s);
  // Without Transformer Engine's op fuser, Megatron's own activation clamps in a pass of its own.
  const std::string plain_fp8 = flags + " --fp8-format hybrid --fp8-recipe mxfp8";
  const Prediction grouped = run(oss_fp8, plain_fp8);
  ASSERT_TRUE(grouped.valid) << grouped.error;
  EXPECT_GT(grouped.breakdown.elementwise_s,
            run(oss_fp8_unclamped, plain_fp8).breakdown.elementwise_s);
}

// A measurement the model was not fitted on: Megatron-Bridge's model verification card for
// GPT-OSS-20B (examples/model_verification_cards/gpt-oss-20b/card.yaml at Megatron-Bridge
// 067f987df03b8355b03192d88d70f1709fedf51a, pretrain on H100, last verified 2026-08-09) ran its
// gpt_oss_20b_pretrain_16gpu_h100_bf16_config recipe on 16 H100 at 5,851.2 tokens/s/GPU (mean
// of the last 10 of 100 steps, natural routing, real data). The model prices it within 10 %;
// without GPT-OSS's sinks, YaRN and clamp it would be a quarter over.
TEST(SimPerformance, AVerificationCardTheModelWasNotFittedOn) {
  constexpr double kMeasured = 5851.2;
  const std::string recipe =
      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
      "--expert-model-parallel-size 4 --expert-tensor-parallel-size 1 --sequence-parallel "
      "--micro-batch-size 1 --moe-token-dispatcher-type alltoall --moe-grouped-gemm "
      "--moe-permute-fusion --cross-entropy-loss-fusion --use-distributed-optimizer "
      "--overlap-grad-reduce --overlap-param-gather";
  Workload oss = workload("gpt-oss-20b", "h100", 16, 4096, 512);
  const Prediction p = run(oss, recipe);
  ASSERT_TRUE(p.fits_in_memory);
  EXPECT_NEAR(p.tokens_per_s_per_gpu / kMeasured, 1.0, 0.1);
  oss.model.softmax = SoftmaxType::kVanilla;
  oss.model.position_embedding_type = "rope";
  oss.model.activation_func_clamp_value = 0;
  EXPECT_GT(run(oss, recipe).tokens_per_s_per_gpu / kMeasured, 1.25);
}

// Megatron adds the routed experts' biases outside the grouped GEMM (TEGroupedMLP._apply_bias):
// per local expert the bias row times each token's fp32 routing probability, added to that expert's
// rows, the pieces concatenated and cast back to bf16. Over forward and backward that moves 64
// bytes per element of the experts' output, so GPT-OSS-120B's published BF16 recipe (EP8, four rows
// per microbatch) moves 36 layers x 5 microbatches x 16384 x 4 routed rows x 2880 x 64 bytes more
// than the same model without biases. The model gives biased experts no gain from Transformer
// Engine's fused grouped MLP (GPT-OSS-120B's published MXFP8 rows measured none), so asking for it
// spares GPT-OSS nothing.
TEST(SimPerformance, ExpertBiasesOutsideTheFusedGroupedMlpCostAPassOverTheExpertsOutput) {
  const std::string flags =
      "--tensor-model-parallel-size 1 --expert-model-parallel-size 8 --micro-batch-size 4 "
      "--moe-token-dispatcher-type alltoall --moe-grouped-gemm --moe-permute-fusion "
      "--use-distributed-optimizer --recompute-granularity selective "
      "--recompute-modules layernorm moe_act";
  const Workload biased = workload("gpt-oss-120b", "b200", 64, 4096, 1280);
  const auto [with, without] = on_and_off(biased, &ModelSpec::add_bias_linear, flags);
  const double extra = with.breakdown.elementwise_s - without.breakdown.elementwise_s;
  const double bytes = 36.0 * 5 * 16384 * 4 * 2880 * 64;
  const HardwareSpec& hw = biased.hardware;
  EXPECT_NEAR(extra, bytes / (hw.hbm_bandwidth_gb_per_s * 1e9 * hw.hbm_efficiency), 0.02 * extra);

  const std::string fused_flags =
      "--tensor-model-parallel-size 1 --expert-model-parallel-size 8 --micro-batch-size 4 "
      "--moe-token-dispatcher-type alltoall --moe-grouped-gemm --moe-permute-fusion "
      "--use-distributed-optimizer --use-transformer-engine-op-fuser "
      "--fp8-format hybrid --fp8-recipe mxfp8 --moe-mlp-glu-interleave-size 32";
  const Workload fp8 = workload("gpt-oss-120b", "b200", 64, 4096, 1280, Precision::kFp8);
  Workload fp8_unbiased = fp8;
  fp8_unbiased.model.add_bias_linear = false;
  const Prediction asked = run_with_fused_grouped_mlp(fp8, fused_flags);
  ASSERT_TRUE(asked.valid) << asked.error;
  EXPECT_DOUBLE_EQ(asked.step_time_s, run(fp8, fused_flags).step_time_s);
  EXPECT_GT(asked.breakdown.elementwise_s,
            run_with_fused_grouped_mlp(fp8_unbiased, fused_flags).breakdown.elementwise_s);
}

// --qk-layernorm (Qwen3, GLM-4.5, MiniMax-M2): a norm over each head's queries and keys. On
// Qwen3-30B-A3B (32 query heads and 4 key heads of 128 per layer, 48 layers) at one row of 4096
// tokens per microbatch, 32 microbatches per step: the forward reads and writes 4608 elements per
// token (4 bytes each), the backward twice that; the layer keeps both norms' inputs (2 bytes per
// element) for the backward, under the allocator's 3% headroom.
TEST(SimPerformance, QueryAndKeyNormsCostAPassAndKeepTheirInputs) {
  const std::string flags =
      "--tensor-model-parallel-size 1 --expert-model-parallel-size 8 --micro-batch-size 1 "
      "--moe-token-dispatcher-type alltoall --moe-grouped-gemm --moe-permute-fusion "
      "--use-distributed-optimizer";
  const Workload normed = workload("qwen3-30b-a3b", "b200", 8, 4096, 256);
  const auto [with, without] = on_and_off(normed, &ModelSpec::qk_layernorm, flags);
  const double elements = 4096.0 * (32 + 4) * 128 * 48;
  const HardwareSpec& hw = normed.hardware;
  const double seconds =
      12.0 * elements * 32 / (hw.hbm_bandwidth_gb_per_s * 1e9 * hw.hbm_efficiency);
  const double extra_s = with.breakdown.elementwise_s - without.breakdown.elementwise_s;
  EXPECT_NEAR(extra_s, seconds, 0.02 * seconds);
  const double extra_gib =
      with.stages[0].memory.activations_gib - without.stages[0].memory.activations_gib;
  EXPECT_NEAR(extra_gib, 1.03 * 2.0 * elements / (1024.0 * 1024 * 1024), 0.01);
}

// In FP8 the experts' grouped GEMM is a host loop over the local experts (a cast and a cuBLASLt
// GEMM each, 0.66 of an eager operation per GEMM): on a host-bound step (Qwen3-30B-A3B at one
// row per microbatch, no CUDA graphs) twice the experts per GPU cost the host about 16 more
// experts x 2 GEMMs x 0.66 x 50 us, times 2.5 for forward and backward, per MoE layer (48) and
// microbatch (32): 4.05 s. In BF16 the loop is not charged, and the same change costs the host
// almost nothing.
TEST(SimPerformance, AnFp8GroupedGemmLoopsOverTheLocalExperts) {
  const std::string flags =
      "--micro-batch-size 1 --moe-grouped-gemm --moe-token-dispatcher-type alltoall "
      "--use-distributed-optimizer --expert-tensor-parallel-size 1 ";
  const std::string fp8 = "--fp8-format hybrid --fp8-recipe mxfp8 ";
  const Workload bf16_w = workload("qwen3-30b-a3b", "b200", 8, 4096, 256);
  const Workload fp8_w = workload("qwen3-30b-a3b", "b200", 8, 4096, 256, Precision::kFp8);
  const auto host = [&](const Workload& w, const std::string& rest) {
    const Prediction p = run(w, flags + rest);
    EXPECT_TRUE(p.valid) << p.error;
    return p.breakdown.host_s;
  };
  const double fp8_more = host(fp8_w, fp8 + "--expert-model-parallel-size 4") -
                          host(fp8_w, fp8 + "--expert-model-parallel-size 8");
  EXPECT_NEAR(fp8_more, 16 * 2 * 0.66 * 50e-6 * 2.5 * 48 * 32, 0.25 * 4.05);
  const double bf16_more = host(bf16_w, "--expert-model-parallel-size 4") -
                           host(bf16_w, "--expert-model-parallel-size 8");
  EXPECT_LT(std::abs(bf16_more), 0.5);
}

// Transformer Engine's fused grouped MLP (NVTE_CUTEDSL_FUSED_GROUPED_MLP=1) runs the experts'
// GEMMs faster than the grouped GEMM and folds their activation into them; nothing else moves,
// and a dense model or a recipe without grouped GEMMs is unaffected.
TEST(SimPerformance, TheFusedGroupedMlpSpeedsTheExpertsOnly) {
  const std::string experts =
      "--expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --micro-batch-size 8 "
      "--moe-token-dispatcher-type alltoall --use-distributed-optimizer";
  const std::string mxfp8 = experts + " --fp8-format hybrid --fp8-recipe mxfp8";
  const std::string flags = mxfp8 + " --moe-mlp-glu-interleave-size 32";
  const Workload w = workload("qwen3-30b-a3b", "b200", 8, 4096, 256, Precision::kFp8);
  auto predict_text = [&](const Workload& on, const std::string& text) {
    Result<Recipe> recipe = parse_recipe(text);
    EXPECT_TRUE(recipe.ok()) << recipe.error();
    return predict(on, recipe.value());
  };
  const std::string plain = "CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py ";
  const std::string asked = "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 " + plain;
  const std::string fuser = " --moe-grouped-gemm --use-transformer-engine-op-fuser";
  const Prediction grouped = predict_text(w, plain + flags + fuser);
  const Prediction fused = predict_text(w, asked + flags + fuser);
  ASSERT_TRUE(grouped.valid && fused.valid) << grouped.error << fused.error;
  EXPECT_LT(fused.breakdown.gemm_s, 0.8 * grouped.breakdown.gemm_s);
  EXPECT_LT(fused.breakdown.elementwise_s, grouped.breakdown.elementwise_s);
  EXPECT_DOUBLE_EQ(fused.breakdown.attention_s, grouped.breakdown.attention_s);
  EXPECT_DOUBLE_EQ(fused.breakdown.ep_a2a_s, grouped.breakdown.ep_a2a_s);
  EXPECT_GT(fused.tokens_per_s_per_gpu, grouped.tokens_per_s_per_gpu);
  // Transformer Engine takes the fused path only through its op fuser, on compute capability 10,
  // with a block-scaled recipe, and for grouped GEMMs; elsewhere the variable does nothing.
  // The prediction then says why the variable changes nothing; where it runs, it says nothing.
  EXPECT_TRUE(fused.notes.empty());
  EXPECT_TRUE(grouped.notes.empty());
  const auto unchanged = [&](const Workload& on, const std::string& rest, const std::string& why) {
    const Prediction a = predict_text(on, plain + rest);
    const Prediction b = predict_text(on, asked + rest);
    EXPECT_TRUE(a.valid && b.valid) << a.error << b.error;
    EXPECT_DOUBLE_EQ(a.breakdown.gemm_s, b.breakdown.gemm_s) << rest;
    EXPECT_DOUBLE_EQ(a.step_time_s, b.step_time_s) << rest;
    ASSERT_EQ(b.notes.size(), 1u) << rest;
    EXPECT_EQ(b.notes[0], why);
  };
  const auto nothing = [](const std::string& why) {
    return "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 changes nothing: " + why;
  };
  unchanged(w, flags + " --moe-grouped-gemm",
            nothing("it runs only through --use-transformer-engine-op-fuser"));
  unchanged(w, flags + " --use-transformer-engine-op-fuser",
            nothing("the experts do not use grouped GEMMs (--moe-grouped-gemm)"));
  unchanged(workload("qwen3-30b-a3b", "h100", 8, 4096, 256, Precision::kFp8), flags + fuser,
            nothing("it runs only on compute capability 10 (B200, B300, GB200, GB300)"));
  unchanged(w, experts + " --fp8-format hybrid --fp8-recipe tensorwise" + fuser,
            nothing("it runs only with --fp8-recipe mxfp8"));
  unchanged(workload("qwen3-30b-a3b", "b200", 8, 4096, 256),
            experts + " --fp8-recipe mxfp8" + fuser,
            nothing("it runs only with --fp8-recipe mxfp8"));
  // A dense model has no experts to fuse.
  unchanged(workload("llama3.1-8b", "b200", 8, 4096, 256),
            "--micro-batch-size 1 --use-distributed-optimizer --use-transformer-engine-op-fuser",
            nothing("the model has no experts"));
  // Transformer Engine fuses a scaled gated activation between grouped linears whose widths are
  // multiples of 64, with gate and linear rows interleaved in blocks of 32 (fuse_grouped_mlp_ops).
  unchanged(w, mxfp8 + fuser, nothing("it needs --moe-mlp-glu-interleave-size 32"));
  Workload plain_mlp = w;
  plain_mlp.model.gated_linear_unit = false;
  unchanged(plain_mlp, flags + fuser, nothing("the experts' activation is not gated"));
  Workload narrow = w;
  ASSERT_EQ(narrow.model.moe_ffn_hidden_size, 768);
  narrow.model.moe_ffn_hidden_size += 32;
  unchanged(narrow, flags + fuser,
            nothing("the experts' widths (2048, 800) are not multiples of 64"));
  Workload wide_enough = w;
  wide_enough.model.moe_ffn_hidden_size += 64;  // 832: a multiple of 64, not of 256
  EXPECT_TRUE(predict_text(wide_enough, asked + flags + fuser).notes.empty());
  // Experts with biases or a clamped activation measured no gain from the variable (GPT-OSS-120B's
  // published MXFP8 rows), so the model gives them none, and says so.
  const std::string no_gain =
      "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 is priced at no gain: experts with biases or a clamped "
      "activation measured none from it (GPT-OSS-120B, Megatron-Bridge 26.06, 26.08)";
  Workload biased = w;
  biased.model.add_bias_linear = true;
  unchanged(biased, flags + fuser, no_gain);
  Workload clamped = w;
  clamped.model.activation_func_clamp_value = 7.0;
  unchanged(clamped, flags + fuser, no_gain);
}

// Overlapped communication is not free: its kernels hold SMs, so the compute it overlaps runs
// slower for as long as it runs, and a slower transfer costs more even when it is hidden.
TEST(SimPerformance, OverlappedCommunicationSlowsTheComputeItOverlaps) {
  const Workload w = workload("mixtral-8x22b", "h100", 128, 4096, 256);
  const Recipe base = load_recipe_preset("mixtral-8x22b-h100x128").value();
  for (const char* overlap : {"tp-comm-overlap", "overlap-moe-expert-parallel-comm"}) {
    Recipe recipe = base;
    ASSERT_TRUE(set_flag(recipe, overlap, "").ok());
    const Prediction free_overlap = predict(without_contention(w), recipe);
    const Prediction contended = predict(w, recipe);
    ASSERT_TRUE(contended.valid) << contended.error;
    EXPECT_GT(contended.breakdown.gemm_s, free_overlap.breakdown.gemm_s) << overlap;
    EXPECT_LT(contended.tokens_per_s_per_gpu, free_overlap.tokens_per_s_per_gpu) << overlap;
    // Each overlap hides part of its traffic, never all of it.
    const Prediction exposed = predict(w, base);
    const StageTiming& s = contended.stages[0];
    if (std::string(overlap) == "tp-comm-overlap") {
      EXPECT_LT(contended.breakdown.tp_comm_s, exposed.breakdown.tp_comm_s);
      EXPECT_GT(contended.breakdown.tp_comm_s, 0);
      EXPECT_GT(s.forward.tp_comm_hidden_s, 0);
    } else {
      EXPECT_LT(contended.breakdown.ep_a2a_s, exposed.breakdown.ep_a2a_s);
      EXPECT_GT(contended.breakdown.ep_a2a_s, 0.5 * exposed.breakdown.ep_a2a_s);
      EXPECT_GT(s.forward.ep_a2a_hidden_s, 0);
    }
  }

  // NCCL kernels that hold more SMs make the overlapped step slower.
  Recipe ep_overlap = base;
  ASSERT_TRUE(set_flag(ep_overlap, "overlap-moe-expert-parallel-comm", "").ok());
  Workload greedy = w;
  greedy.hardware.nccl_comm_sms = 48;
  EXPECT_LT(predict(greedy, ep_overlap).tokens_per_s_per_gpu,
            predict(w, ep_overlap).tokens_per_s_per_gpu);
}

TEST(SimPerformance, OutOfMemoryIsValidButDoesNotFit) {
  const Workload w = workload("llama3.1-70b", "h100", 8, 8192, 64);
  const Prediction p = run(w, "--micro-batch-size 1 --use-distributed-optimizer");
  EXPECT_TRUE(p.valid);
  EXPECT_FALSE(p.fits_in_memory);
  EXPECT_GT(p.peak_memory_gib, p.memory_capacity_gib);
}

TEST(SimPerformance, InvalidRecipeCarriesMegatronsMessage) {
  const Workload w = workload("llama3.1-8b", "b200", 8, 4096, 64);
  const Prediction p = predict(w, parse_recipe("--tensor-model-parallel-size 3").value());
  EXPECT_FALSE(p.valid);
  EXPECT_EQ(p.error, "world size (8) is not divisible by total_model_size (total_model_size=3)");
}

// A MoE model's leading dense layers carry no shared expert: a stage of dense layers costs the
// same whatever the shared experts' width.
TEST(SimPerformance, DenseLayersOfAMoeModelRunNoSharedExpert) {
  Workload w = workload("deepseek-v3", "b200", 16, 4096, 64);
  w.model.num_layers = 4;
  w.model.first_dense_layers = 2;
  const char* flags =
      "--pipeline-model-parallel-size 2 --expert-model-parallel-size 8 --moe-grouped-gemm "
      "--use-distributed-optimizer --micro-batch-size 1";
  const Prediction with_shared = run(w, flags);
  w.model.moe_shared_expert_intermediate_size *= 4;
  const Prediction wider = run(w, flags);
  ASSERT_EQ(with_shared.stages.size(), 2u);
  ASSERT_EQ(with_shared.stages[0].decoder_layers, 2);
  EXPECT_DOUBLE_EQ(wider.stages[0].forward.gemm_s, with_shared.stages[0].forward.gemm_s);
  EXPECT_GT(wider.stages[1].forward.gemm_s, with_shared.stages[1].forward.gemm_s);
}

// Activation offload copies the offloaded layers' activations to host memory and back beside the
// compute: hidden where the host link is fast enough (GB200's NVLink-C2C), a wait where it is not
// (an H100's PCIe). Megatron refuses to offload every layer.
TEST(SimPerformance, ActivationOffloadCopiesCostOnlyWhatTheComputeDoesNotCover) {
  const std::string flags = "--micro-batch-size 2 --use-distributed-optimizer";
  const std::string offload = flags + " --cpu-offloading-num-layers 79";
  const Workload gb200 = workload("llama3.1-70b", "gb200", 64, 8192, 256);
  EXPECT_DOUBLE_EQ(run(gb200, offload).step_time_s, run(gb200, flags).step_time_s);
  const Workload h100 = workload("llama3.1-70b", "h100", 64, 8192, 256);
  const Prediction slow = run(h100, offload);
  const Prediction plain = run(h100, flags);
  EXPECT_GT(slow.breakdown.host_s, plain.breakdown.host_s);
  EXPECT_GT(slow.step_time_s, plain.step_time_s);
  const Result<Recipe> all = parse_recipe("CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py " +
                                          flags + " --cpu-offloading-num-layers 80");
  const Prediction refused = predict(gb200, all.value());
  EXPECT_FALSE(refused.valid);
  EXPECT_NE(refused.error.find("CPU offloading can be done only for layers less than 80"),
            std::string::npos)
      << refused.error;
}

// HybridEP reads the token counts back to the host to size its receive buffers, once per MoE
// layer's dispatch, unless a fixed budget per EP rank (--moe-expert-rank-capacity-factor) or a
// full-iteration CUDA graph takes the sync away. Qwen3-30B-A3B on 8 GB200 at four rows per
// microbatch, where launching a layer takes about as long as running it: the sync costs 2.7 %.
TEST(SimPerformance, HybridepBlocksTheHostPerLayerWithoutAFixedBudget) {
  const Workload w = workload("qwen3-30b-a3b", "gb200", 8, 4096, 512, Precision::kFp8);
  const std::string moe =
      "--micro-batch-size 4 --expert-model-parallel-size 8 --moe-grouped-gemm "
      "--moe-permute-fusion --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend "
      "hybridep --use-transformer-engine-op-fuser --bf16 --fp8-format hybrid --fp8-recipe mxfp8 "
      "--use-distributed-optimizer ";
  const std::string scoped =
      moe + "--cuda-graph-impl transformer_engine --cuda-graph-modules moe_router moe_preprocess";
  const Prediction blocking = run(w, scoped);
  const Prediction budget = run(w, scoped + " --moe-expert-rank-capacity-factor 1.5");
  std::printf(
      "HybridEP, scoped graphs: %.1f tokens/s/GPU (host %.3f s), with a budget %.1f (%.3f s)\n",
      blocking.tokens_per_s_per_gpu, blocking.breakdown.host_s, budget.tokens_per_s_per_gpu,
      budget.breakdown.host_s);
  EXPECT_GT(blocking.breakdown.host_s, budget.breakdown.host_s);
  EXPECT_GT(budget.tokens_per_s_per_gpu, blocking.tokens_per_s_per_gpu * 1.02);
  // A full-iteration graph holds no sync: the budget changes nothing there.
  const std::string full =
      moe + "--cuda-graph-impl full_iteration --no-check-for-nan-in-loss-and-grad";
  EXPECT_DOUBLE_EQ(run(w, full).tokens_per_s_per_gpu,
                   run(w, full + " --moe-expert-rank-capacity-factor 1.5").tokens_per_s_per_gpu);
}

}  // namespace
}  // namespace attune::sim
