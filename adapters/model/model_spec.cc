#include "adapters/model/model_spec.h"

#include <algorithm>

#include "adapters/model/toml_fields.h"
#include "events/arg_catalog.h"
#include "events/assert.h"

namespace attune::sim {
namespace {

double mlp_matrices(const ModelSpec& model) { return model.gated_linear_unit ? 3.0 : 2.0; }

double transformer_layer_params(const LayerParams& p, bool moe) {
  return p.attention + (moe ? p.moe_shared + p.moe_experts : p.dense_mlp);
}

// The [attention] table: grouped-query (the default) or multi-latent attention.
// A key that holds the value of a Megatron flag with fixed choices: one of the choices the
// argument catalog gives the flag (events/data/megatron_args.tsv), or a one-line error naming them.
void check_megatron_choice(TomlFields& f, std::string_view key, std::string_view flag,
                           const std::string& value) {
  const ArgInfo* info = ArgCatalog::megatron().find(flag);
  ATTUNE_ASSERT(info != nullptr && !info->choices.empty(), "the flag has choices in the table");
  if (std::find(info->choices.begin(), info->choices.end(), value) != info->choices.end()) return;
  std::string choices;
  for (const std::string& choice : info->choices) {
    choices += (choices.empty() ? "" : ", ") + choice;
  }
  f.fail_at(key, "expects one of Megatron's " + choices + " (" + std::string(flag) + "); found \"" +
                     value + "\"");
}

void read_attention(TomlFields& f, ModelSpec& m) {
  std::string attention_type = "gqa";
  f.read("attention.type", attention_type, false);
  f.read("attention.num_attention_heads", m.num_attention_heads, true, 1);
  f.read("attention.sliding_window_tokens", m.sliding_window_tokens, false, 0);
  f.read("attention.window_attn_skip_freq", m.window_attn_skip_freq, false, 0);
  f.read("attention.qk_layernorm", m.qk_layernorm, false);
  std::string softmax = "vanilla";
  f.read("attention.softmax_type", softmax, false);
  check_megatron_choice(f, "attention.softmax_type", "--softmax-type", softmax);
  m.softmax = softmax == "off-by-one"  ? SoftmaxType::kOffByOne
              : softmax == "learnable" ? SoftmaxType::kLearnable
                                       : SoftmaxType::kVanilla;
  if (attention_type == "gqa") {
    m.attention = AttentionKind::kGroupedQuery;
    m.num_query_groups = m.num_attention_heads;
    f.read("attention.num_query_groups", m.num_query_groups, false, 1);
    m.kv_channels = m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0;
    f.read("attention.kv_channels", m.kv_channels, false, 1);
  } else if (attention_type == "mla") {
    m.attention = AttentionKind::kMultiLatent;
    m.num_query_groups = m.num_attention_heads;
    f.read("attention.q_lora_rank", m.q_lora_rank, false, 0);
    f.read("attention.kv_lora_rank", m.kv_lora_rank, true, 1);
    f.read("attention.qk_head_dim", m.qk_head_dim, true, 1);
    f.read("attention.qk_pos_emb_head_dim", m.qk_pos_emb_head_dim, true, 0);
    f.read("attention.v_head_dim", m.v_head_dim, true, 1);
    m.kv_channels = m.qk_head_dim + m.qk_pos_emb_head_dim;
  } else {
    f.fail_at("attention.type", "expects \"gqa\" or \"mla\", found \"" + attention_type + "\"");
  }
}

// The [moe] table: routed experts (none: a dense model), shared experts, leading dense layers.
void read_moe(TomlFields& f, ModelSpec& m) {
  f.read("moe.num_experts", m.num_experts, false, 0);
  if (m.num_experts > 0) {
    f.read("moe.router_topk", m.moe_router_topk, true, 1);
    f.read("moe.ffn_hidden_size", m.moe_ffn_hidden_size, true, 1);
  } else {
    f.read("moe.router_topk", m.moe_router_topk, false, 0);
    f.read("moe.ffn_hidden_size", m.moe_ffn_hidden_size, false, 0);
  }
  f.read("moe.shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size, false, 0);
  f.read("moe.first_dense_layers", m.first_dense_layers, false, 0);
}

}  // namespace

Result<ModelSpec> parse_model_toml(std::string_view text, std::string_view source) {
  ModelSpec m;
  TomlFields f(text, source);
  f.read("name", m.name, true);
  f.read("description", m.description, false);
  f.read("num_layers", m.num_layers, true, 1);
  f.read("hidden_size", m.hidden_size, true, 1);
  f.read("ffn_hidden_size", m.ffn_hidden_size, false, 0);
  f.read("gated_linear_unit", m.gated_linear_unit, false);
  f.read("add_bias_linear", m.add_bias_linear, false);
  f.read("vocab_size", m.vocab_size, true, 1);
  f.read("make_vocab_size_divisible_by", m.make_vocab_size_divisible_by, false, 1);
  f.read("untie_embeddings_and_output_weights", m.untie_embeddings_and_output_weights, false);
  f.read("normalization", m.normalization, false);
  f.read("position_embedding_type", m.position_embedding_type, false);
  f.read("tokenizer_type", m.tokenizer_type, false);
  f.read("activation", m.activation, false);
  f.read("rotary_percent", m.rotary_percent, false, 0.01, 1.0);
  f.read("activation_func_clamp_value", m.activation_func_clamp_value, false, 0.0);
  if (m.activation != "gelu" && m.activation != "squared-relu") {
    f.fail_at("activation", "expects \"gelu\" or \"squared-relu\", found \"" + m.activation + "\"");
  }
  if (m.gated_linear_unit && m.activation != "gelu") {
    f.fail_at("activation", "applies to an MLP that is not gated (gated_linear_unit = false)");
  }

  read_attention(f, m);
  read_moe(f, m);
  f.read("mtp.num_layers", m.mtp_num_layers, false, 0);

  check_megatron_choice(f, "position_embedding_type", "--position-embedding-type",
                        m.position_embedding_type);
  if (m.activation_func_clamp_value > 0 && (m.num_experts == 0 || !m.gated_linear_unit)) {
    f.fail_at("activation_func_clamp_value", "applies to the gated experts of a MoE model only");
  }
  if (m.num_experts > 0 && m.moe_router_topk > m.num_experts) {
    f.fail_at("moe.router_topk",
              "must not exceed moe.num_experts (" + std::to_string(m.num_experts) + ")");
  }
  if (m.num_query_groups > m.num_attention_heads) {
    f.fail_at("attention.num_query_groups", "must not exceed attention.num_attention_heads");
  }
  const bool needs_dense_mlp = m.num_experts == 0 || m.first_dense_layers > 0;
  if (needs_dense_mlp && m.ffn_hidden_size == 0) {
    f.fail_at("ffn_hidden_size", "must be set (>= 1) when any layer has a dense MLP");
  }
  if (m.first_dense_layers >= m.num_layers && m.num_experts > 0) {
    f.fail_at("moe.first_dense_layers", "must be below num_layers");
  }
  Status status = f.finish();
  if (!status.ok()) return make_error(status.error());
  return m;
}

bool is_moe(const ModelSpec& model) { return model.num_experts > 0; }

bool is_moe_layer(const ModelSpec& model, int layer) {
  return model.num_experts > 0 && layer >= model.first_dense_layers;
}

int moe_layer_count(const ModelSpec& model) {
  return model.num_experts > 0 ? model.num_layers - model.first_dense_layers : 0;
}

int default_ffn_hidden_size(const ModelSpec& model) {
  return model.gated_linear_unit ? (4 * model.hidden_size * 2 / 3) / 64 * 64
                                 : 4 * model.hidden_size;
}

int padded_vocab_size(const ModelSpec& model, int tp) {
  const int multiple = model.make_vocab_size_divisible_by * tp;
  return (model.vocab_size + multiple - 1) / multiple * multiple;
}

int query_width(const ModelSpec& model) {
  if (model.attention == AttentionKind::kMultiLatent) {
    return model.num_attention_heads * (model.qk_head_dim + model.qk_pos_emb_head_dim);
  }
  return model.num_attention_heads * model.kv_channels;
}

int key_value_width(const ModelSpec& model) {
  if (model.attention == AttentionKind::kMultiLatent) {
    return model.num_attention_heads * (model.qk_head_dim + model.qk_pos_emb_head_dim);
  }
  return model.num_query_groups * model.kv_channels;
}

LayerParams layer_params(const ModelSpec& model) {
  const double h = model.hidden_size;
  const double bias = model.add_bias_linear ? 1.0 : 0.0;
  LayerParams p;
  if (model.attention == AttentionKind::kMultiLatent) {
    const double n = model.num_attention_heads;
    const double qk = model.qk_head_dim + model.qk_pos_emb_head_dim;
    const double q = model.q_lora_rank > 0
                         ? h * model.q_lora_rank + model.q_lora_rank + model.q_lora_rank * n * qk
                         : h * n * qk;
    const double kv = h * (model.kv_lora_rank + model.qk_pos_emb_head_dim) + model.kv_lora_rank +
                      model.kv_lora_rank * n * (model.qk_head_dim + model.v_head_dim);
    p.attention = q + kv + n * model.v_head_dim * h + h;
  } else {
    const double q = query_width(model);
    const double kv = key_value_width(model);
    p.attention = h * (q + 2 * kv) + q * h + bias * (q + 2 * kv + h) + h;
  }
  const double matrices = mlp_matrices(model);
  const double up_width = model.gated_linear_unit ? 2.0 : 1.0;
  p.dense_mlp =
      matrices * h * model.ffn_hidden_size + bias * (up_width * model.ffn_hidden_size + h) + h;
  if (model.num_experts > 0) {
    const double shared = model.moe_shared_expert_intermediate_size;
    p.moe_shared = model.num_experts * h + matrices * h * shared + h;
    p.moe_experts = model.num_experts * (matrices * h * model.moe_ffn_hidden_size +
                                         bias * (up_width * model.moe_ffn_hidden_size + h));
  }
  p.mtp_extra = 2 * h * h + 3 * h;
  return p;
}

double total_params(const ModelSpec& model, int tp, int mtp_layers) {
  const LayerParams p = layer_params(model);
  const double embedding = static_cast<double>(padded_vocab_size(model, tp)) * model.hidden_size;
  double total = embedding * (model.untie_embeddings_and_output_weights ? 2 : 1);
  total += model.hidden_size;  // final norm
  for (int layer = 0; layer < model.num_layers; ++layer) {
    total += transformer_layer_params(p, is_moe_layer(model, layer));
  }
  const bool last_moe = is_moe_layer(model, model.num_layers - 1);
  total += mtp_layers * (transformer_layer_params(p, last_moe) + p.mtp_extra);
  return total;
}

double active_params(const ModelSpec& model, int tp, int mtp_layers) {
  const LayerParams p = layer_params(model);
  const double active_experts =
      model.num_experts > 0 ? p.moe_experts * model.moe_router_topk / model.num_experts : 0.0;
  const double embedding = static_cast<double>(padded_vocab_size(model, tp)) * model.hidden_size;
  double total = embedding * (model.untie_embeddings_and_output_weights ? 2 : 1);
  total += model.hidden_size;
  auto layer = [&](bool moe) {
    return p.attention + (moe ? p.moe_shared + active_experts : p.dense_mlp);
  };
  for (int i = 0; i < model.num_layers; ++i) total += layer(is_moe_layer(model, i));
  total += mtp_layers * (layer(is_moe_layer(model, model.num_layers - 1)) + p.mtp_extra);
  return total;
}

}  // namespace attune::sim
