// FLOP counts: Megatron-LM's num_floating_point_operations (megatron_lm.md §3) for every preset
// against perf_model.md §1's derived table, one case written out by hand, and the paper's MFU
// numerator.
#include <gtest/gtest.h>

#include <algorithm>

#include "adapters/model/flops.h"
#include "adapters/model/presets.h"

namespace attune::sim {
namespace {

double gflop_per_token(const char* model, int seq, int mtp = 0) {
  const ModelSpec m = load_model(model).value();
  return megatron_flops_per_step(m, seq, 1, 1, mtp) / seq / 1e9;
}

// The reference table rounds to 0.1 GFLOP, or to four significant digits above 1000.
double tolerance(double reference) { return std::max(0.06, 0.0005 * reference); }

TEST(SimFlops, MegatronFormulaMatchesTheReferenceTable) {
  struct Row {
    const char* model;
    double s4096;
    double s8192;
  };
  const Row rows[] = {
      {"llama3.1-405b", 2473, 2524}, {"llama3.1-70b", 0, 449.2},
      {"llama3.1-8b", 48.2, 51.5},   {"mixtral-8x22b", 242.2, 250.7},
      {"mixtral-8x7b", 79.7, 82.9},  {"glm-4.5", 224.5, 252.3},
      {"minimax-m2", 71.6, 80.9},    {"deepseek-v3", 249.8, 280.5},
      {"qwen3-30b-a3b", 23.0, 27.8}, {"qwen3-235b-a22b", 148.0, 167.0},
      {"gpt-oss-120b", 34.3, 38.0},  {"gpt-oss-20b", 24.0, 26.5},
  };
  for (const Row& row : rows) {
    if (row.s4096 > 0) {
      EXPECT_NEAR(gflop_per_token(row.model, 4096), row.s4096, tolerance(row.s4096)) << row.model;
    }
    EXPECT_NEAR(gflop_per_token(row.model, 8192), row.s8192, tolerance(row.s8192)) << row.model;
  }
  // With one MTP layer (GLM-4.5 and DeepSeek-V3 count it).
  EXPECT_NEAR(gflop_per_token("glm-4.5", 4096, 1), 231.8, tolerance(231.8));
  EXPECT_NEAR(gflop_per_token("deepseek-v3", 4096, 1), 260.0, tolerance(260.0));
}

TEST(SimFlops, Llama8BByHand) {
  const ModelSpec m = load_model("llama3.1-8b").value();
  const double h = 4096, f = 14336, q = 32 * 128, kv = 8 * 128, layers = 32, s = 8192;
  const double vocab = 128256;  // already a multiple of 128
  const double per_token =
      layers * (6 * h * 3 * f + 6 * h * (q + 2 * kv + q) + 6 * q * s) + 6 * h * vocab;
  const double tokens = 128 * s;
  EXPECT_DOUBLE_EQ(megatron_flops_per_step(m, 8192, 128, 1, 0), per_token * tokens);
  // TP pads the vocabulary to a multiple of 128 x TP: 128256 -> 129024 at TP 8.
  EXPECT_DOUBLE_EQ(megatron_flops_per_step(m, 8192, 128, 8, 0),
                   (per_token + 6 * h * (129024 - vocab)) * tokens);
}

TEST(SimFlops, MfuNumeratorLeavesOutTheInputEmbedding) {
  const ModelSpec m = load_model("llama3.1-8b").value();
  const double embedding = 128256.0 * 4096;
  const double params = active_params(m, 1, 0) - embedding;
  EXPECT_DOUBLE_EQ(mfu_flops_per_token(m, 8192, 1), 6 * params + 32 * 6.0 * 4096 * 8192);
  // For a MoE model only the routed experts a token activates count.
  const ModelSpec glm = load_model("glm-4.5").value();
  EXPECT_LT(mfu_flops_per_token(glm, 4096, 1), 6 * 40e9 + 92 * 6.0 * 12288 * 4096);
  EXPECT_GT(mfu_flops_per_token(glm, 4096, 1), 6 * 30e9);
}

// The paper's own MFU figure (Appendix D): MiniMax-M2's public recipe runs at 3.2% MFU at 895.2
// tokens/s/GPU on B200 in BF16 (peak 2,250 TFLOP/s). The paper says its attention term is counted
// with causal masking, yet 3.2% is what the parameter count gives with the full (non-causal)
// attention matrix products, as NVIDIA's DGX Cloud figures count them (perf_model.md): the
// causal count gives 2.9%. The parameters (the term without attention) must therefore agree with
// the paper's to the rounding of the printed 3.2%; the causal count stays attune's MFU.
TEST(SimFlops, MiniMaxM2sParametersGiveThePapersMfuWithFullAttention) {
  const ModelSpec m = load_model("minimax-m2").value();
  const double causal = mfu_flops_per_token(m, 4096, 1);
  const double attention = causal - mfu_flops_per_token(m, 0, 1);  // linear in the sequence
  const double full = causal + attention;
  EXPECT_GE(full * 895.2 / 2250e12, 0.0315);
  EXPECT_LT(full * 895.2 / 2250e12, 0.0325);
  EXPECT_LT(causal * 895.2 / 2250e12, 0.0295);
}

}  // namespace
}  // namespace attune::sim
