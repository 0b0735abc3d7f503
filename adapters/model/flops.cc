#include "adapters/model/flops.h"

namespace attune::sim {
namespace {

// Token-linear FLOPs per token of one decoder layer's attention (fwd + bwd), Megatron's formula.
double attention_linear_flops(const ModelSpec& m) {
  const double h = m.hidden_size;
  const double n = m.num_attention_heads;
  if (m.attention == AttentionKind::kMultiLatent) {
    const double qk = m.qk_head_dim;
    const double pos = m.qk_pos_emb_head_dim;
    const double v = m.v_head_dim;
    const double q_term =
        m.q_lora_rank > 0 ? m.q_lora_rank * (h + n * (qk + pos) + 1) : h * n * (qk + pos);
    return 6 * (q_term + m.kv_lora_rank * (h + n * (qk + v) + 1) + h * pos + n * v * h);
  }
  const double q = query_width(m);
  const double kv = key_value_width(m);
  return 6 * h * (q + 2 * kv + q);
}

// Core-attention FLOPs per token per unit of sequence length (x seq gives per token).
double attention_core_flops_per_seq(const ModelSpec& m) {
  if (m.attention == AttentionKind::kMultiLatent) {
    const double n = m.num_attention_heads;
    return 6 * (n * (m.qk_head_dim + m.qk_pos_emb_head_dim) / 2 + n * m.v_head_dim / 2);
  }
  return 6.0 * query_width(m);
}

double mlp_flops(const ModelSpec& m, bool moe) {
  const double h = m.hidden_size;
  const double phi = m.gated_linear_unit ? 3 : 2;
  if (moe) {
    return 6 * h *
           (m.moe_ffn_hidden_size * m.moe_router_topk * phi +
            m.moe_shared_expert_intermediate_size * phi);
  }
  return 6 * h * m.ffn_hidden_size * phi;
}

}  // namespace

double megatron_flops_per_step(const ModelSpec& model, int seq_length, int global_batch_size,
                               int tp, int mtp_layers) {
  const double tokens = static_cast<double>(seq_length) * global_batch_size;
  const double h = model.hidden_size;
  double per_token = 0;
  const int layers = model.num_layers + mtp_layers;
  for (int layer = 0; layer < layers; ++layer) {
    const bool moe = layer < model.num_layers ? is_moe_layer(model, layer)
                                              : is_moe_layer(model, model.num_layers - 1);
    per_token += mlp_flops(model, moe) + attention_linear_flops(model) +
                 attention_core_flops_per_seq(model) * seq_length;
  }
  per_token += 6.0 * mtp_layers * (3 * h + 2 * h * h);
  per_token += 6.0 * h * padded_vocab_size(model, tp) * (1 + mtp_layers);
  return per_token * tokens;
}

double mfu_flops_per_token(const ModelSpec& model, int seq_length, int tp) {
  const double embedding = static_cast<double>(padded_vocab_size(model, tp)) * model.hidden_size;
  // active_params counts the input embedding; the MFU numerator leaves it out.
  const double params = active_params(model, tp, 0) - embedding;
  double attention = 0;
  for (int layer = 0; layer < model.num_layers; ++layer) {
    attention += attention_core_flops_per_seq(model) * seq_length;
  }
  return 6 * params + attention;
}

}  // namespace attune::sim
