// Calibration of the performance model against every published throughput of
// shared/reference/perf_model.md §3 whose model has a preset. Prints one line per row (predicted
// and published tokens/s/GPU and the error) and the median and worst absolute error. The H100 rows
// anchor the model's level and are held to the goal here; the Blackwell presets are fitted on the
// published rows with the recipes their sources state (published/rows.tsv, `attune sim
// calibrate`, sim_published_test.cc), which the hand-read recipes below only approximate.
//
// The table gives each row's layout; settings a row's source does not state are filled in as the
// source's stack does by default (dispatcher, overlaps, fusions). A row whose source names FSDP
// runs Megatron-FSDP. A published run fit in memory: where the source does not say how, the row
// takes the cheapest recomputation under which the model finds it fits (marked "fits with").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"

namespace attune::sim {
namespace {

struct Row {
  const char* label;
  const char* model;
  const char* gpu;
  const char* precision;
  int gpus;
  int gbs;
  int mbs;
  int seq;
  int tp;
  int pp;
  int cp;
  int vp;
  int ep;
  double published_tokens_per_s;
  const char* extra;  // further flags, as in the row's source (or its stack's default)
};

// MoE defaults of Megatron-Bridge / Megatron-MoE-ModelZoo recipes.
#define MOE " --moe-grouped-gemm --moe-permute-fusion --expert-tensor-parallel-size 1"
#define A2A MOE " --moe-token-dispatcher-type alltoall"
#define HYBRIDEP MOE " --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep"
#define DEEPEP MOE " --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep"
#define TE_GRAPHS \
  " --cuda-graph-impl transformer_engine --cuda-graph-modules attn moe_router moe_preprocess"
#define ACCOUNT " --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
#define FSDP " --use-megatron-fsdp"

const Row kRows[] = {
    // 3a. H100
    {"H100 Llama-3.1-8B BF16 DGXC", "llama3.1-8b", "h100", "bf16", 8, 128, 1, 8192, 1, 1, 2, 1, 1,
     10682, ""},
    {"H100 Llama-3.1-8B FP8 DGXC", "llama3.1-8b", "h100", "fp8", 8, 128, 1, 8192, 1, 1, 2, 1, 1,
     14049, ""},
    {"H100 Llama-3-8B FP8-CS MB FSDP8", "llama3.1-8b", "h100", "fp8", 8, 128, 1, 8192, 1, 1, 1, 1,
     1, 14451, FSDP},
    {"H100 Llama-3.1-70B BF16 DGXC", "llama3.1-70b", "h100", "bf16", 64, 128, 1, 8192, 4, 4, 2, 5,
     1, 1118, " --tp-comm-overlap"},
    {"H100 Llama-3.1-70B FP8 DGXC", "llama3.1-70b", "h100", "fp8", 64, 128, 1, 8192, 4, 8, 1, 5, 1,
     1662, " --tp-comm-overlap"},
    {"H100 Llama-3-70B FP8 MB 26.04", "llama3.1-70b", "h100", "fp8", 64, 256, 1, 8192, 4, 8, 1, 5,
     1, 1633, " --tp-comm-overlap"},
    {"H100 Llama-3.1-405B BF16 DGXC", "llama3.1-405b", "h100", "bf16", 512, 256, 1, 8192, 8, 8, 2,
     8, 1, 207.1, " --tp-comm-overlap" ACCOUNT},
    {"H100 Llama-3.1-405B FP8 DGXC", "llama3.1-405b", "h100", "fp8", 512, 256, 1, 8192, 8, 8, 2, 8,
     1, 331.1, " --tp-comm-overlap" ACCOUNT},
    {"H100 Llama-3.1-405B FP8 MB 26.06", "llama3.1-405b", "h100", "fp8", 1024, 1536, 1, 8192, 8, 8,
     2, 8, 1, 326, " --tp-comm-overlap" ACCOUNT},
    {"H100 Mixtral-8x7B BF16 MLM", "mixtral-8x7b", "h100", "bf16", 64, 256, 1, 4096, 1, 4, 1, 8, 8,
     5872, A2A},
    {"H100 Mixtral-8x22B BF16 MZ", "mixtral-8x22b", "h100", "bf16", 128, 256, 1, 4096, 2, 8, 1, 7,
     8, 1837, A2A},
    {"H100 Qwen3-30B-A3B FP8 MB 26.06", "qwen3-30b-a3b", "h100", "fp8", 16, 1024, 1, 4096, 1, 1, 1,
     1, 16, 8826, A2A},
    {"H100 Qwen3-30B-A3B BF16 HybridEP+overlap", "qwen3-30b-a3b", "h100", "bf16", 16, 1024, 1, 4096,
     1, 1, 1, 1, 16, 13014, HYBRIDEP " --overlap-moe-expert-parallel-comm"},
    {"H100 Qwen3-235B-A22B FP8 MB 26.04", "qwen3-235b-a22b", "h100", "fp8", 256, 8192, 1, 4096, 2,
     8, 1, 4, 32, 1686,
     A2A ACCOUNT " --recompute-granularity selective --recompute-modules moe_act layernorm"
                 " --fp8-recipe blockwise"},
    {"H100 Qwen3-235B-A22B BF16 MZ DeepEP", "qwen3-235b-a22b", "h100", "bf16", 256, 2048, 1, 4096,
     2, 8, 1, 4, 32, 1655,
     DEEPEP ACCOUNT " --recompute-granularity selective --recompute-modules moe_act layernorm"},
    {"H100 Qwen3-235B-A22B BF16 MZ DeepEP+A2A overlap", "qwen3-235b-a22b", "h100", "bf16", 256,
     2048, 1, 4096, 2, 8, 1, 4, 32, 1865,
     DEEPEP ACCOUNT " --recompute-granularity selective --recompute-modules moe_act layernorm"
                    " --overlap-moe-expert-parallel-comm"},
    {"H100 Qwen3-235B-A22B BF16 MZ EP8 PP32", "qwen3-235b-a22b", "h100", "bf16", 256, 2048, 1, 4096,
     2, 32, 1, 3, 8, 1351,
     A2A ACCOUNT " --recompute-granularity selective --recompute-modules moe_act layernorm"},
    {"H100 Qwen3-235B-A22B BF16 MZ TP4 EP8", "qwen3-235b-a22b", "h100", "bf16", 256, 2048, 1, 4096,
     4, 8, 1, 4, 8, 1128,
     DEEPEP ACCOUNT " --recompute-granularity selective --recompute-modules moe_act layernorm"},
    {"H100 GPT-OSS-120B BF16 MB 26.04", "gpt-oss-120b", "h100", "bf16", 64, 1280, 1, 4096, 1, 4, 1,
     1, 8, 5810, A2A},
    {"H100 DeepSeek-V3 FP8 MB 25.09", "deepseek-v3", "h100", "fp8", 1024, 8192, 1, 4096, 2, 8, 1, 1,
     64, 1297,
     HYBRIDEP " --pipeline-model-parallel-layout Et|(tt|)*30mL --mtp-num-layers 1"
              " --recompute-granularity selective --recompute-modules mla_up_proj mlp"
              " --fp8-recipe blockwise"},
    {"H100 DeepSeek-V3 BF16 DGXC", "deepseek-v3", "h100", "bf16", 1024, 8192, 1, 4096, 2, 16, 1, 1,
     64, 629.7,
     A2A " --pipeline-model-parallel-layout Ettt|(tttt|)*14ttmL --mtp-num-layers 1"
         " --recompute-granularity selective --recompute-modules mla_up_proj mlp"},
    // 3b. B200
    {"B200 Llama-3-8B FP8-CS MB 25.11", "llama3.1-8b", "b200", "fp8", 8, 128, 2, 8192, 1, 1, 1, 1,
     1, 30624, ""},
    {"B200 Llama-3.1-405B FP8 MB 25.11", "llama3.1-405b", "b200", "fp8", 128, 64, 1, 8192, 4, 8, 2,
     8, 1, 661, " --tp-comm-overlap" ACCOUNT},
    {"B200 GPT-OSS-120B BF16 MB 26.04.01", "gpt-oss-120b", "b200", "bf16", 64, 1280, 4, 4096, 1, 1,
     1, 1, 8, 13568,
     A2A TE_GRAPHS " --recompute-granularity selective --recompute-modules moe"},  // fits with
    {"B200 Qwen3-30B-A3B MXFP8 MB 26.04.01", "qwen3-30b-a3b", "b200", "fp8", 8, 512, 4, 4096, 1, 1,
     1, 1, 8, 27136, HYBRIDEP TE_GRAPHS " --fp8-recipe mxfp8"},
    {"B200 Qwen3-235B-A22B MXFP8 MB 26.04.01", "qwen3-235b-a22b", "b200", "fp8", 256, 8192, 1, 4096,
     1, 8, 1, 1, 8, 3776, HYBRIDEP TE_GRAPHS ACCOUNT " --fp8-recipe mxfp8"},
    {"B200 DeepSeek-V3 MXFP8 MB 26.04.01", "deepseek-v3", "b200", "fp8", 256, 4096, 1, 4096, 1, 8,
     1, 1, 32, 3328,
     HYBRIDEP TE_GRAPHS
     " --pipeline-model-parallel-layout Ett|(tttt|)*14tttmL --mtp-num-layers 1"
     " --fp8-recipe mxfp8"
     " --recompute-granularity selective --recompute-modules mla_up_proj"},  // fits with
    // Long-context Llama-3-8B FP8 on B200 (NeMo performance_long_sequence.md), converted from
    // TFLOP/s/GPU with Megatron's FLOPs per token (51.5 G at 8K, 148.1 G at 128K); the source
    // gives no global batch, so 8K runs data parallel as the MB row does, 128K one sequence per
    // GPU group.
    {"B200 Llama-3-8B FP8 8K NeMo long-seq", "llama3.1-8b", "b200", "fp8", 8, 128, 1, 8192, 1, 1, 1,
     1, 1, 32466, ""},
    {"B200 Llama-3-8B FP8 128K CP4 TP2 NeMo", "llama3.1-8b", "b200", "fp8", 8, 8, 1, 131072, 2, 1,
     4, 1, 1, 10722, ""},
    // 3c. GB200 NVL72
    {"GB200 Llama-3.1-405B BF16 DGXC", "llama3.1-405b", "gb200", "bf16", 128, 64, 1, 8192, 4, 8, 2,
     8, 1, 438.2, " --tp-comm-overlap" ACCOUNT},
    {"GB200 Llama-3.1-405B FP8 DGXC", "llama3.1-405b", "gb200", "fp8", 128, 64, 1, 8192, 4, 8, 2, 8,
     1, 668.1, " --tp-comm-overlap" ACCOUNT},
    {"GB200 Llama-3.1-405B FP8 MB 26.06", "llama3.1-405b", "gb200", "fp8", 256, 1536, 1, 8192, 4,
     16, 1, 4, 1, 843, " --tp-comm-overlap" ACCOUNT},
    {"GB200 Llama-3-70B FP8 MB 26.04.01 FSDP64", "llama3.1-70b", "gb200", "fp8", 64, 256, 2, 8192,
     1, 1, 1, 1, 1, 4224,
     FSDP
     " --recompute-granularity full --recompute-method block --recompute-num-layers 44"},  // fits
                                                                                           // with
    {"GB200 DeepSeek-V3 BF16 MB 25.11", "deepseek-v3", "gb200", "bf16", 256, 4096, 1, 4096, 1, 4, 1,
     1, 64, 3139,
     DEEPEP TE_GRAPHS
     " --pipeline-model-parallel-layout Ett|(tttt|)*14tttL"
     " --recompute-granularity selective --recompute-modules mla_up_proj moe_act"},  // fits with
    {"GB200 DeepSeek-V3 MXFP8 MB 26.06", "deepseek-v3", "gb200", "fp8", 256, 4096, 1, 4096, 1, 4, 1,
     1, 64, 4969,
     HYBRIDEP TE_GRAPHS
     " --pipeline-model-parallel-layout Ett|(tttt|)*14tttmL --mtp-num-layers 1"
     " --fp8-recipe mxfp8"
     " --recompute-granularity selective --recompute-modules mla_up_proj"},  // fits with
    {"GB200 DeepSeek-V3 BF16 DGXC early", "deepseek-v3", "gb200", "bf16", 128, 1024, 1, 4096, 2, 4,
     1, 1, 32, 959,
     A2A " --pipeline-model-parallel-layout E(t)*16|(t)*15|(t)*15|(t)*15mL --mtp-num-layers 1"
         " --recompute-granularity selective --recompute-modules mla_up_proj"},
    {"GB200 Qwen3-235B-A22B BF16 MB 25.11", "qwen3-235b-a22b", "gb200", "bf16", 256, 8192, 1, 4096,
     1, 8, 1, 3, 32, 4916, DEEPEP TE_GRAPHS ACCOUNT},
    {"GB200 Qwen3-235B-A22B MXFP8 MB 26.06", "qwen3-235b-a22b", "gb200", "fp8", 256, 8192, 1, 4096,
     1, 8, 1, 3, 32, 7376, HYBRIDEP TE_GRAPHS ACCOUNT " --fp8-recipe mxfp8"},
    {"GB200 GPT-OSS-120B BF16 MB 25.11", "gpt-oss-120b", "gb200", "bf16", 64, 1280, 1, 8192, 1, 1,
     1, 1, 64, 15876, A2A TE_GRAPHS},
    {"GB200 Qwen3-30B-A3B MXFP8 MB 26.06", "qwen3-30b-a3b", "gb200", "fp8", 8, 512, 4, 4096, 1, 1,
     1, 1, 8, 40706, HYBRIDEP TE_GRAPHS " --fp8-recipe mxfp8"},
};

// Where the model is expected to be on the H100 rows; the goal is a median of 10 % (issue 3).
// Over every row a sanity bound only: the hand-read Blackwell recipes miss settings their sources
// state (a budget per EP rank, full-iteration graphs), which the rows of sim_published_test.cc
// carry.
constexpr double kMedianErrorMax = 0.10;
constexpr double kAllRowsMedianErrorMax = 0.20;
// Every published run fit in its GPU's memory; the memory model may overestimate its peak by this
// much (analytical estimates are 6-12 % off, attune-paper.md Appendix E).
constexpr double kMemoryOverestimateMax = 0.05;

std::string recipe_text(const Row& row) {
  // Megatron-FSDP wants CUDA_DEVICE_MAX_CONNECTIONS unset; the other runs set it to 1.
  const bool fsdp = std::string(row.extra).find("--use-megatron-fsdp") != std::string::npos;
  std::string text =
      fsdp ? "python pretrain_gpt.py" : "CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py";
  text += " --tensor-model-parallel-size " + std::to_string(row.tp);
  text += " --pipeline-model-parallel-size " + std::to_string(row.pp);
  text += " --context-parallel-size " + std::to_string(row.cp);
  if (row.ep > 1) text += " --expert-model-parallel-size " + std::to_string(row.ep);
  if (row.vp > 1) text += " --num-virtual-stages-per-pipeline-rank " + std::to_string(row.vp);
  if (row.tp > 1) text += " --sequence-parallel";
  text += " --micro-batch-size " + std::to_string(row.mbs);
  text += " --global-batch-size " + std::to_string(row.gbs);
  text += " --seq-length " + std::to_string(row.seq);
  text += " --bf16";
  if (std::string(row.precision) == "fp8") text += " --fp8-format hybrid";
  text += " --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather";
  text += " --cross-entropy-loss-fusion";
  text += row.extra;
  return text;
}

Workload workload_of(const Row& row) {
  Workload w;
  w.model = load_model(row.model).value();
  w.hardware = load_hardware(row.gpu).value();
  w.gpus = row.gpus;
  w.seq_length = row.seq;
  w.global_batch_size = row.gbs;
  w.precision = parse_precision(row.precision).value();
  return w;
}

TEST(SimCalibration, PublishedThroughputs) {
  std::vector<double> errors, h100_errors;
  std::printf("%-48s %10s %10s %8s %6s %7s  %s\n", "row", "predicted", "published", "error", "MFU",
              "peakGiB", "largest terms");
  for (const Row& row : kRows) {
    const Workload w = workload_of(row);
    Result<Recipe> recipe = parse_recipe(recipe_text(row), row.label);
    ASSERT_TRUE(recipe.ok()) << recipe.error();
    const Prediction p = predict(w, recipe.value());
    ASSERT_TRUE(p.valid) << row.label << ": " << p.error;
    EXPECT_LE(p.peak_memory_gib, p.memory_capacity_gib * (1 + kMemoryOverestimateMax))
        << row.label << " was measured, so it fits";
    const double error = p.tokens_per_s_per_gpu / row.published_tokens_per_s - 1.0;
    errors.push_back(std::abs(error));
    if (std::string_view(row.gpu) == "h100") h100_errors.push_back(std::abs(error));
    const Breakdown& b = p.breakdown;
    std::printf(
        "%-48s %10.1f %10.1f %+7.1f%% %5.1f%% %7.1f  gemm %.0f%% attn %.0f%% elem %.0f%% tp %.0f%% "
        "cp %.0f%% ep %.0f%% pp %.0f%% dp %.0f%% bub %.0f%% rec %.0f%% opt %.0f%% host %.0f%%\n",
        row.label, p.tokens_per_s_per_gpu, row.published_tokens_per_s, 100 * error, 100 * p.mfu,
        p.peak_memory_gib, 100 * b.gemm_s / p.step_time_s, 100 * b.attention_s / p.step_time_s,
        100 * b.elementwise_s / p.step_time_s, 100 * b.tp_comm_s / p.step_time_s,
        100 * b.cp_comm_s / p.step_time_s, 100 * b.ep_a2a_s / p.step_time_s,
        100 * b.pp_p2p_s / p.step_time_s, 100 * b.dp_comm_s / p.step_time_s,
        100 * b.bubble_s / p.step_time_s, 100 * b.recompute_s / p.step_time_s,
        100 * b.optimizer_s / p.step_time_s, 100 * b.host_s / p.step_time_s);
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  std::printf(
      "rows %zu, median |error| %.1f%%, worst |error| %.1f%%; H100 rows %zu, median %.1f%%\n",
      errors.size(), 100 * median(errors), 100 * *std::max_element(errors.begin(), errors.end()),
      h100_errors.size(), 100 * median(h100_errors));
  ASSERT_GT(h100_errors.size(), 10u);
  EXPECT_LE(median(h100_errors), kMedianErrorMax);
  EXPECT_LE(median(errors), kAllRowsMedianErrorMax);
}

}  // namespace
}  // namespace attune::sim
