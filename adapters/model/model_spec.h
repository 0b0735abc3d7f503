// A transformer architecture as the performance and memory model sees it: dense or MoE, gated or
// plain MLP, grouped-query or multi-latent attention, shared experts, leading dense layers,
// multi-token-prediction (MTP) depths, sliding-window layers.
//
// A ModelSpec is plain data read from a TOML file (a preset under adapters/model/data/models or
// a user's file; presets.h loads both). The functions below derive parameter counts from it; they
// are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "events/result.h"

namespace attune::sim {

// Megatron's --softmax-type: the plain softmax, or one with an attention sink (a zero logit, or a
// learned one per head), which of Transformer Engine's fused attention backends only cuDNN's runs.
enum class SoftmaxType : std::uint8_t { kVanilla, kOffByOne, kLearnable };

enum class AttentionKind : std::uint8_t {
  kGroupedQuery,  // multi-head or grouped-query attention (Megatron's default path)
  kMultiLatent,   // DeepSeek's multi-latent attention (--multi-latent-attention)
};

struct ModelSpec {
  std::string name;
  std::string description;

  int num_layers = 0;
  int hidden_size = 0;
  int ffn_hidden_size = 0;  // dense MLP width; 0 when every layer is MoE
  bool gated_linear_unit = true;
  bool add_bias_linear = false;
  int vocab_size = 0;
  int make_vocab_size_divisible_by = 128;
  // What the launch script passes for them (every preset is an RMSNorm, RoPE model with a
  // Hugging Face tokenizer); a model TOML may say otherwise.
  std::string normalization = "RMSNorm";
  std::string position_embedding_type = "rope";
  std::string tokenizer_type = "HuggingFaceTokenizer";
  bool untie_embeddings_and_output_weights = true;
  // The MLP's activation when it is not gated: "gelu" (Megatron's default) or "squared-relu"
  // (--squared-relu, Nemotron-4). A gated MLP is SwiGLU.
  std::string activation = "gelu";
  double rotary_percent = 1.0;  // the share of each head's dimensions RoPE rotates
  // The routed experts' gated activation clamped to this value (Megatron's
  // --activation-func-clamp-value; 0 = no clamp). Megatron clamps outside its fused activation.
  double activation_func_clamp_value = 0.0;

  AttentionKind attention = AttentionKind::kGroupedQuery;
  int num_attention_heads = 0;
  int num_query_groups = 0;  // key/value heads; equal to the heads for multi-head attention
  int kv_channels = 0;       // head dimension
  int q_lora_rank = 0;       // multi-latent attention only; 0 = no query compression
  int kv_lora_rank = 0;
  int qk_head_dim = 0;
  int qk_pos_emb_head_dim = 0;
  int v_head_dim = 0;
  // --qk-layernorm: a norm over each head's queries and keys before RoPE. Multi-latent attention's
  // norms sit on its compressed latents and are priced with them; this prices grouped-query
  // attention's.
  bool qk_layernorm = false;
  int sliding_window_tokens = 0;  // 0 = every layer attends to the whole causal context
  int window_attn_skip_freq = 0;  // every Nth layer skips the window (full attention); 0 = none
  SoftmaxType softmax = SoftmaxType::kVanilla;  // attention.softmax_type

  int num_experts = 0;  // 0 = dense model
  int moe_router_topk = 0;
  int moe_ffn_hidden_size = 0;
  int moe_shared_expert_intermediate_size = 0;
  int first_dense_layers = 0;  // leading layers with a dense MLP in a MoE model

  int mtp_num_layers = 0;  // MTP depths the architecture provides; a recipe opts in
};

// Parses a model description. `source` names the file in errors, which are one line:
// "SOURCE:LINE: key 'moe.router_topk' ...". Unknown keys are errors.
Result<ModelSpec> parse_model_toml(std::string_view text, std::string_view source);

bool is_moe(const ModelSpec& model);
// Whether decoder layer `layer` (0-based) has a MoE MLP.
bool is_moe_layer(const ModelSpec& model, int layer);
int moe_layer_count(const ModelSpec& model);
// Vocabulary rounded up to a multiple of make_vocab_size_divisible_by * tp, as Megatron pads it.
int padded_vocab_size(const ModelSpec& model, int tp);

// Megatron's FFN width when none is given: 4h, or 4h * 2/3 rounded down to a multiple of 64 with
// SwiGLU.
int default_ffn_hidden_size(const ModelSpec& model);

// Query projection width (heads x head dim) and key/value width of one layer.
int query_width(const ModelSpec& model);
int key_value_width(const ModelSpec& model);

// Parameter counts of one piece of the model, unsharded.
struct LayerParams {
  double attention = 0;    // projections, plus their biases and the attention norm
  double dense_mlp = 0;    // a dense layer's MLP with its norm
  double moe_shared = 0;   // a MoE layer's router, shared experts and MLP norm (replicated over EP)
  double moe_experts = 0;  // a MoE layer's routed experts (sharded over EP x ETP)
  double mtp_extra = 0;    // one MTP depth's projection and norms, beyond its transformer layer
};
LayerParams layer_params(const ModelSpec& model);

// Whole-model counts with the vocabulary padded for `tp`: every parameter (both embedding tables,
// `mtp_layers` MTP depths) and the parameters one token activates.
double total_params(const ModelSpec& model, int tp, int mtp_layers);
double active_params(const ModelSpec& model, int tp, int mtp_layers);

}  // namespace attune::sim
