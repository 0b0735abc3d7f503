// The memory model on cases computed by hand (perf_model.md §4.2-4.3).
#include <gtest/gtest.h>

#include "adapters/model/memory_model.h"
#include "adapters/model/presets.h"

namespace attune::sim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Workload llama8b_on_8_h100() {
  return load_workload("llama3.1-8b", "h100", 8, 4096, 64, Precision::kBf16).value();
}

Workload qwen30b_on_16_h100() {
  return load_workload("qwen3-30b-a3b", "h100", 16, 4096, 256, Precision::kBf16).value();
}

ResolvedLayout resolved(const Workload& w, const std::string& flags) {
  Recipe recipe =
      parse_recipe("CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py " + flags).value();
  return resolve_layout(w, decode_layout(w, recipe).value()).value();
}

// Llama-3.1-8B, data parallel only (DP 8), distributed optimizer, MBS 1, sequence 4096.
TEST(SimMemory, DataParallelLlama8BByHand) {
  const Workload w = llama8b_on_8_h100();
  const ResolvedLayout r =
      resolved(w, "--micro-batch-size 1 --use-distributed-optimizer --cross-entropy-loss-fusion");
  const double params = total_params(w.model, 1, 0);
  const StageMemory m = estimate_stage_memory(w, r, 0);
  // bf16 weights, fp32 gradient buffer, fp32 master + Adam moments sharded 8 ways: 6 + 12/8 B.
  EXPECT_DOUBLE_EQ(m.weights_gib, 2 * params / kGiB);
  EXPECT_DOUBLE_EQ(m.gradients_gib, 4 * params / kGiB);
  EXPECT_DOUBLE_EQ(m.optimizer_gib, 12 * params / 8 / kGiB);

  // Saved activations per token of one layer (flash attention, GQA, SwiGLU, bf16):
  //   attention: norm input 2h + norm output 2h + fp32 softmax statistics 4 x 32 heads
  //              + q, k, v 2 x (4096 + 2 x 1024) + output-projection input 2 x 4096
  //   MLP:       norm input 2h + norm output 2h + FC1 output 2 x 2 x 14336 + FC2 input 2 x 14336
  const double h = 4096;
  const double attention = 2 * h + 2 * h + 4 * 32 + 2 * (4096 + 2 * 1024) + 2 * 4096;
  const double mlp = 2 * h + 2 * h + 2 * 2 * 14336 + 2 * 14336;
  EXPECT_EQ(attention + mlp, 139392);  // about 34 h, Korthikanti's constant
  const double layers = 32;
  const double tokens = 4096;
  const double in_flight = 1;  // no pipeline: one microbatch at a time
  const double fragmentation = 1.03;
  EXPECT_NEAR(m.activations_gib,
              (attention + mlp) * tokens * layers * in_flight * fragmentation / kGiB, 1e-9);
  // Logits of one microbatch with fused cross entropy: bf16 logits and their gradient.
  EXPECT_NEAR(m.transient_gib, tokens * 128256 * 4 * fragmentation / kGiB, 1e-9);
  EXPECT_DOUBLE_EQ(m.reserved_gib, w.hardware.memory_reserved_gib);
  EXPECT_NEAR(m.peak_gib,
              m.weights_gib + m.gradients_gib + m.optimizer_gib + m.activations_gib +
                  m.transient_gib + m.reserved_gib,
              1e-9);
}

TEST(SimMemory, RecomputationAndParallelismShrinkActivations) {
  const Workload w = llama8b_on_8_h100();
  const double none =
      estimate_stage_memory(w, resolved(w, "--micro-batch-size 1"), 0).activations_gib;
  const double full =
      estimate_stage_memory(w,
                            resolved(w,
                                     "--micro-batch-size 1 --recompute-granularity full "
                                     "--recompute-method uniform --recompute-num-layers 1"),
                            0)
          .activations_gib;
  // Full recomputation keeps each layer's input only: 2h bytes per token of 139392.
  EXPECT_NEAR(full / none, 2 * 4096 / 139392.0, 1e-9);

  const double sp =
      estimate_stage_memory(w,
                            resolved(w,
                                     "--tensor-model-parallel-size 2 --sequence-parallel "
                                     "--micro-batch-size 1"),
                            0)
          .activations_gib;
  EXPECT_NEAR(sp / none, 0.5, 1e-9);  // sequence parallelism shards every activation by TP
}

TEST(SimMemory, OneFOneBHoldsMicrobatchesByStage) {
  Workload w = llama8b_on_8_h100();
  const ResolvedLayout r = resolved(w, "--pipeline-model-parallel-size 4 --micro-batch-size 1");
  EXPECT_EQ(chunks_in_flight(r, 0), 4);  // the first stage holds p microbatches
  EXPECT_EQ(chunks_in_flight(r, 3), 1);
  const ResolvedLayout v = resolved(w,
                                    "--pipeline-model-parallel-size 4 "
                                    "--num-virtual-stages-per-pipeline-rank 2 "
                                    "--micro-batch-size 1");
  // Megatron's warm-up: 2 (p - r - 1) + (v - 1) p chunk forwards, then one more.
  EXPECT_EQ(chunks_in_flight(v, 0), 2 * 3 + 4 + 1);
  EXPECT_EQ(chunks_in_flight(v, 3), 0 + 4 + 1);
}

TEST(SimMemory, ExpertStateShardsOverExpertDataParallelism) {
  const Workload w = qwen30b_on_16_h100();
  const ResolvedLayout r =
      resolved(w,
               "--expert-model-parallel-size 8 --moe-grouped-gemm --micro-batch-size 1 "
               "--use-distributed-optimizer");
  ASSERT_EQ(r.edp, 2);
  const StageParams p = stage_params(w, r, 0);
  const LayerParams layer = layer_params(w.model);
  EXPECT_DOUBLE_EQ(p.expert, 48 * layer.moe_experts / 8);
  const StageMemory m = estimate_stage_memory(w, r, 0);
  EXPECT_DOUBLE_EQ(m.optimizer_gib, (p.dense * 12 / 16 + p.expert * 12 / 2) / kGiB);

  const ResolvedLayout offload =
      resolved(w,
               "--expert-model-parallel-size 8 --moe-grouped-gemm --micro-batch-size 1 "
               "--use-distributed-optimizer --use-precision-aware-optimizer "
               "--optimizer-cpu-offload --optimizer-offload-fraction 0.75");
  EXPECT_NEAR(estimate_stage_memory(w, offload, 0).optimizer_gib, 0.25 * m.optimizer_gib, 1e-9);
}

// --cpu-offloading-num-layers N keeps the activations of all but N - 1 of a stage's layers on the
// GPU (one offloaded layer's copy is in flight at a time).
TEST(SimMemory, ActivationOffloadKeepsTheOtherLayersOnTheGpu) {
  const Workload w = llama8b_on_8_h100();
  const std::string flags = "--micro-batch-size 1 --use-distributed-optimizer";
  const StageMemory all = estimate_stage_memory(w, resolved(w, flags), 0);
  const StageMemory offloaded =
      estimate_stage_memory(w, resolved(w, flags + " --cpu-offloading-num-layers 16"), 0);
  const int layers = w.model.num_layers;  // 32
  EXPECT_NEAR(offloaded.activations_gib, all.activations_gib * (layers - 15) / layers, 1e-9);
  EXPECT_DOUBLE_EQ(offloaded.weights_gib, all.weights_gib);
  EXPECT_EQ(activation_offload_layers(resolved(w, flags).layout, layers), 0);
  EXPECT_EQ(activation_offload_layers(resolved(w, flags + " --cpu-offloading-num-layers 16").layout,
                                      layers),
            16);
}

// A routed copy of a token keeps the dispatched input and the FC1 output for the backward (and
// the activation's output unless moe_act is recomputed), not the expert's output: the routing
// weights multiply inside the activation, so the combine's backward needs no copy of it.
TEST(SimMemory, ARoutedCopyKeepsTheExpertInputsNotItsOutput) {
  const Workload w = qwen30b_on_16_h100();
  const std::string flags =
      "--expert-model-parallel-size 8 --moe-grouped-gemm --micro-batch-size 1 "
      "--use-distributed-optimizer --recompute-granularity selective";
  const double kept =
      layer_activation_bytes(w, resolved(w, flags + " --recompute-modules core_attn")).moe_layer;
  const double act_recomputed =
      layer_activation_bytes(w, resolved(w, flags + " --recompute-modules core_attn moe_act"))
          .moe_layer;
  const double h = w.model.hidden_size;          // 2048
  const double f = w.model.moe_ffn_hidden_size;  // 768
  const double k = w.model.moe_router_topk;      // 8
  const double tokens = 4096;
  EXPECT_DOUBLE_EQ(kept - act_recomputed, tokens * k * 2 * f);  // the bf16 activation output
  // Each further routed copy keeps its input, FC1 output and activation output, in bf16.
  Workload twice = w;
  twice.model.moe_router_topk *= 2;
  const double more =
      layer_activation_bytes(twice, resolved(twice, flags + " --recompute-modules core_attn"))
          .moe_layer;
  EXPECT_DOUBLE_EQ(more - kept, tokens * k * (2 * h + 2 * 2 * f + 2 * f));
}

}  // namespace
}  // namespace attune::sim
