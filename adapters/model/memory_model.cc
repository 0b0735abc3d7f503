#include "adapters/model/memory_model.h"

#include <algorithm>
#include <cmath>

namespace attune::sim {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
// Caching-allocator headroom on activations and transient buffers (perf_model.md §5.15: a 58.8 GB
// peak OOMed on 80 GB until expandable segments).
constexpr double kFragmentationFactor = 1.03;
// Transformer Engine keeps an FP8 copy of each weight of an FP8 GEMM across the microbatches of a
// step, bytes per parameter.
constexpr double kFp8WeightCacheBytesPerParam = 1.0;
// Communication buffers, GiB: DeepEP/HybridEP within an NVLink domain and across domains, NCCL
// all-to-all staging, grouped-GEMM workspace.
constexpr double kFlexBufferGiB = 2.0;
constexpr double kFlexScaleOutBufferGiB = 2.0;
constexpr double kAllToAllBufferGiB = 0.5;
constexpr double kGroupedGemmWorkspaceGiB = 0.5;
// CUDA graphs: per-layer graphs keep static buffers ("a few GB"); whole-iteration graphs keep
// every activation buffer of the step alive (peak 1.5-2x, perf_model.md §5.8, a rule of thumb).
// The published recipes bound the factor on activations from above: Megatron-Bridge's
// Qwen3-30B-A3B recipe at eight rows per microbatch under a whole-iteration graph ran on B300's
// 268 GiB (26.06), which the model admits only below about 1.4 once the query and key norms'
// inputs are counted.
constexpr double kLayerGraphGiB = 2.0;
constexpr double kFullIterationGraphActivationFactor = 1.35;

struct Shapes {
  double tokens = 0;      // tokens of one microbatch on this CP rank (s·b/c)
  double h_shard = 1;     // divisor of h-wide tensors: TP with sequence parallelism, else 1
  double moe_tokens = 0;  // tokens entering this rank's MoE layer
  double saved_gemm_input_bytes = 2;  // 1 under FP8
};

Shapes shapes(const Workload& w, const ResolvedLayout& r) {
  const Layout& l = r.layout;
  Shapes s;
  s.tokens = static_cast<double>(w.seq_length) * l.micro_batch_size / l.cp;
  s.h_shard = l.sequence_parallel ? l.tp : 1;
  s.moe_tokens = s.tokens / s.h_shard;
  s.saved_gemm_input_bytes = w.precision == Precision::kFp8 ? 1 : 2;
  return s;
}

bool recomputes(const Layout& l, std::uint32_t module) {
  return l.recompute == RecomputeGranularity::kSelective && (l.recompute_modules & module);
}

// Saved bytes per token of one layer's attention block on one GPU.
double attention_bytes(const ModelSpec& m, const Layout& l, const Shapes& s) {
  const double t = l.tp;
  const double h = m.hidden_size;
  const double act = s.saved_gemm_input_bytes;
  const double heads = m.num_attention_heads / t;
  double bytes = 2 * h / s.h_shard;  // norm input (the residual stream)
  if (!recomputes(l, kRecomputeLayernorm)) bytes += act * h / s.h_shard;
  if (!recomputes(l, kRecomputeCoreAttn)) bytes += 4 * heads;  // fp32 softmax statistics
  if (m.attention == AttentionKind::kMultiLatent) {
    const double latent = m.q_lora_rank + m.kv_lora_rank + m.qk_pos_emb_head_dim;
    bytes += 2 * latent * 2;  // down-projection outputs and their norms
    if (!recomputes(l, kRecomputeMlaUpProj)) {
      const double qk = m.qk_head_dim + m.qk_pos_emb_head_dim;
      bytes += 2 * heads * (2 * qk + m.v_head_dim);  // q, k, v for flash attention
    }
    bytes += act * heads * m.v_head_dim;  // output-projection input
    return bytes;
  }
  const double q = query_width(m) / t;
  const double kv = std::max(1.0, m.num_query_groups / t) * m.kv_channels;
  bytes += 2 * (q + 2 * kv);                  // q, k, v for flash attention
  bytes += act * q;                           // output-projection input
  if (m.qk_layernorm) bytes += 2 * (q + kv);  // the query and key norms' inputs
  return bytes;
}

double dense_mlp_bytes(const ModelSpec& m, const Layout& l, const Shapes& s) {
  const double h = m.hidden_size;
  const double f = m.ffn_hidden_size / static_cast<double>(l.tp);
  double bytes = 2 * h / s.h_shard;
  if (!recomputes(l, kRecomputeLayernorm)) bytes += s.saved_gemm_input_bytes * h / s.h_shard;
  if (!recomputes(l, kRecomputeMlp)) {
    bytes += 2 * (m.gated_linear_unit ? 2 : 1) * f + s.saved_gemm_input_bytes * f;
  }
  return bytes;
}

// Per token of the CP rank's microbatch (the MoE part is scaled from its own token count).
double moe_mlp_bytes(const ModelSpec& m, const Layout& l, const Shapes& s) {
  const double h = m.hidden_size;
  const double act = s.saved_gemm_input_bytes;
  double bytes = 2 * h / s.h_shard;
  if (!recomputes(l, kRecomputeLayernorm)) bytes += act * h / s.h_shard;
  if (recomputes(l, kRecomputeMoe)) return bytes;
  const double moe_share = s.moe_tokens / s.tokens;
  const double f_e = m.moe_ffn_hidden_size / static_cast<double>(l.etp);
  const double up = m.gated_linear_unit ? 2 : 1;
  // Saved per routed copy: the dispatched input and the FC1 output. The routing weights multiply
  // inside the activation function (Megatron Core 0.13 on), so the combine's backward needs no
  // copy of the experts' output.
  double routed = act * h + 2 * up * f_e;
  if (!recomputes(l, kRecomputeMoeAct)) routed += act * f_e;
  bytes += moe_share * (8.0 * m.num_experts + m.moe_router_topk * l.etp * routed);
  if (m.moe_shared_expert_intermediate_size > 0 && !recomputes(l, kRecomputeSharedExperts)) {
    const double f_sh = m.moe_shared_expert_intermediate_size / static_cast<double>(l.tp);
    bytes += 2 * up * f_sh + act * f_sh;
  }
  return bytes;
}

}  // namespace

StageParams stage_params(const Workload& w, const ResolvedLayout& r, int rank) {
  const ModelSpec& m = w.model;
  const Layout& l = r.layout;
  const StageLayers& stage = r.stages[rank];
  const LayerParams p = layer_params(m);
  const double t = l.tp;
  const double vocab_shard = static_cast<double>(padded_vocab_size(m, l.tp)) * m.hidden_size / t;
  StageParams out;
  const bool last_moe = is_moe_layer(m, m.num_layers - 1);
  const int moe_layers = stage.moe_layers + (last_moe ? stage.mtp_layers : 0);
  const int dense_layers = stage.dense_layers + (last_moe ? 0 : stage.mtp_layers);
  const int layers = stage.decoder_layers() + stage.mtp_layers;
  out.dense = (layers * p.attention + dense_layers * p.dense_mlp + moe_layers * p.moe_shared +
               stage.mtp_layers * p.mtp_extra) /
              t;
  out.expert = moe_layers * p.moe_experts / (static_cast<double>(l.ep) * l.etp);
  out.linear = out.dense + out.expert;
  if (stage.embedding) out.dense += vocab_shard;
  if (stage.loss) out.dense += m.hidden_size / t;  // the final norm
  if (stage.loss && m.untie_embeddings_and_output_weights) out.dense += vocab_shard;
  // MTP embeds the shifted tokens on the last stage, which then holds a copy of the embedding.
  if (stage.loss && stage.mtp_layers > 0 && !stage.embedding) out.dense += vocab_shard;
  return out;
}

LayerActivationBytes layer_activation_bytes(const Workload& w, const ResolvedLayout& r) {
  const ModelSpec& m = w.model;
  const Layout& l = r.layout;
  const Shapes s = shapes(w, r);
  LayerActivationBytes out;
  const double attention = attention_bytes(m, l, s);
  out.dense_layer = s.tokens * (attention + (m.ffn_hidden_size > 0 ? dense_mlp_bytes(m, l, s) : 0));
  out.moe_layer = is_moe(m) ? s.tokens * (attention + moe_mlp_bytes(m, l, s)) : 0;
  out.mtp_extra = s.tokens * 6.0 * m.hidden_size / s.h_shard;
  out.recomputed_layer = s.tokens * 2.0 * m.hidden_size / s.h_shard;
  return out;
}

int activation_offload_layers(const Layout& l, int stage_layers) {
  return std::clamp(l.cpu_offloading_num_layers, 0, std::max(0, stage_layers - 1));
}

double mean_decoder_layer_bytes(const Workload& w, const ResolvedLayout& r,
                                const StageLayers& stage) {
  if (stage.decoder_layers() == 0) return 0;
  const LayerActivationBytes act = layer_activation_bytes(w, r);
  return (stage.dense_layers * act.dense_layer + stage.moe_layers * act.moe_layer) /
         stage.decoder_layers();
}

double chunks_in_flight(const ResolvedLayout& r, int rank) {
  const int p = r.layout.pp;
  const int m = r.microbatches;
  const int v = r.vp;
  // With expert-parallel overlap one more chunk is in flight in the interleaved schedule; without
  // a pipeline the overlapped forward allocates as fast as the backward beside it frees.
  const int extra = r.layout.ep_overlap && v > 1 ? 1 : 0;
  if (v == 1) return std::min(p - rank, m);
  const int warmup = (p - rank - 1) * 2 + (v - 1) * p;
  return std::min(m * v, warmup + 1 + extra);
}

namespace {

// Weights, gradients and optimizer state of `rank`'s stage, in GiB, into `mem`.
void add_model_state(const Workload& w, const ResolvedLayout& r, int rank, StageMemory& mem) {
  const Layout& l = r.layout;
  const StageLayers& stage = r.stages[rank];
  const StageParams params = stage_params(w, r, rank);
  const double all_params = params.dense + params.expert;
  const double dense_shard = static_cast<double>(r.dp) * l.cp;
  const double expert_shard = r.edp;
  const double param_bytes = l.fp8_param_gather ? 1.0 : 2.0;
  const double grad_bytes = (l.grad_reduce_in_bf16 || l.megatron_fsdp) ? 2.0 : 4.0;
  const double state_bytes = 4.0 + l.adam_state_bytes;  // fp32 master weights, Adam moments
  const double on_gpu = l.optimizer_cpu_offload ? 1.0 - l.optimizer_offload_fraction : 1.0;
  double weights = all_params * param_bytes;
  if (w.precision == Precision::kFp8 && !l.fp8_param_gather) {
    weights += params.linear * kFp8WeightCacheBytesPerParam;
  }
  double gradients = all_params * grad_bytes;
  double optimizer = 0;
  if (l.megatron_fsdp) {
    weights = params.dense * param_bytes / dense_shard + params.expert * param_bytes / expert_shard;
    const double chunk_layers = std::max(1, stage.max_chunk_layers);
    weights += 2 * param_bytes * all_params / std::max(1, stage.decoder_layers()) *
               std::min(2.0, chunk_layers);  // the layers gathered ahead of use
    gradients = params.dense * grad_bytes / dense_shard + params.expert * grad_bytes / expert_shard;
    optimizer = (params.dense / dense_shard + params.expert / expert_shard) * state_bytes;
  } else if (l.distributed_optimizer) {
    optimizer = (params.dense / dense_shard + params.expert / expert_shard) * state_bytes;
  } else {
    optimizer = all_params * state_bytes;
  }
  mem.weights_gib = weights / kBytesPerGiB;
  mem.gradients_gib = gradients / kBytesPerGiB;
  mem.optimizer_gib = optimizer * on_gpu / kBytesPerGiB;
}

struct ActivationBytes {
  double in_flight = 0;    // the saved activations of the microbatches in flight
  double working_set = 0;  // full recomputation: the layers being recomputed
};

// The activations `rank`'s stage holds at its peak.
ActivationBytes stage_activations(const Workload& w, const ResolvedLayout& r, int rank) {
  const ModelSpec& m = w.model;
  const Layout& l = r.layout;
  const StageLayers& stage = r.stages[rank];
  const LayerActivationBytes act = layer_activation_bytes(w, r);
  const bool last_moe = is_moe_layer(m, m.num_layers - 1);
  const int layers = stage.decoder_layers() + stage.mtp_layers;
  const double mtp_layer_bytes = (last_moe ? act.moe_layer : act.dense_layer) + act.mtp_extra;
  const double full_bytes = stage.dense_layers * act.dense_layer +
                            stage.moe_layers * act.moe_layer + stage.mtp_layers * mtp_layer_bytes;
  const double mean_layer_bytes = layers > 0 ? full_bytes / layers : 0.0;
  const double largest_layer = std::max({act.dense_layer, act.moe_layer, mtp_layer_bytes});
  double per_microbatch = full_bytes;
  ActivationBytes out;
  if (l.recompute == RecomputeGranularity::kFull && layers > 0) {
    const int chunk_layers = std::max(1, layers / r.vp);
    double recomputed = layers;  // uniform: every layer, in groups of recompute_num_layers
    if (l.recompute_method == RecomputeMethod::kBlock) {
      recomputed = std::min(l.recompute_num_layers, chunk_layers) * static_cast<double>(r.vp);
    }
    recomputed = std::min<double>(recomputed, layers);
    per_microbatch = full_bytes - recomputed * (mean_layer_bytes - act.recomputed_layer);
    const double group = l.recompute_method == RecomputeMethod::kUniform
                             ? std::min(l.recompute_num_layers, chunk_layers)
                             : 1;
    out.working_set = group * largest_layer;
  }
  // Activation offload: the offloaded layers' activations wait in host memory, all but the one
  // layer whose copy is in flight.
  const int offloaded = activation_offload_layers(l, stage.decoder_layers());
  if (offloaded > 1) per_microbatch -= (offloaded - 1) * mean_decoder_layer_bytes(w, r, stage);
  out.in_flight = per_microbatch / r.vp * chunks_in_flight(r, rank);
  if (l.cuda_graph == CudaGraphImpl::kFullIteration)
    out.in_flight *= kFullIterationGraphActivationFactor;
  return out;
}

struct TransientMemory {
  double bytes = 0;        // scaled with the activations
  double buffers_gib = 0;  // fixed-size communication buffers and workspaces
};

// Transient buffers: a full recomputation's working set, logits and loss, the dispatch buffers
// of one MoE layer, TP overlap and CUDA graph buffers.
TransientMemory stage_transients(const Workload& w, const ResolvedLayout& r, int rank,
                                 double working_set) {
  const ModelSpec& m = w.model;
  const Layout& l = r.layout;
  const StageLayers& stage = r.stages[rank];
  const Shapes s = shapes(w, r);
  TransientMemory t;
  t.bytes = working_set;
  if (stage.loss) {
    const double vocab = padded_vocab_size(m, l.tp) / static_cast<double>(l.tp);
    const double loss_bytes = l.cross_entropy_fusion ? 4.0 : 10.0;  // bf16 logits (+ fp32 copies)
    t.bytes += s.tokens * vocab * loss_bytes * (1 + stage.mtp_layers);
  }
  if (is_moe(m) && stage.moe_layers + stage.mtp_layers > 0) {
    t.bytes += s.moe_tokens * m.moe_router_topk * m.hidden_size * 2.0 * 3;
    if (l.ep > 1 && l.dispatcher == Dispatcher::kFlex) {
      t.buffers_gib += kFlexBufferGiB;
      if (l.ep * l.etp > w.hardware.nvlink_domain_gpus) t.buffers_gib += kFlexScaleOutBufferGiB;
    } else if (l.ep > 1) {
      t.buffers_gib += kAllToAllBufferGiB;
    }
    if (l.grouped_gemm) t.buffers_gib += kGroupedGemmWorkspaceGiB;
  }
  if (l.tp_comm_overlap) t.bytes += 3.0 * s.tokens * m.hidden_size * 2.0;
  if (l.cuda_graph == CudaGraphImpl::kLocal || l.cuda_graph == CudaGraphImpl::kTransformerEngine) {
    t.buffers_gib += kLayerGraphGiB;
  }
  return t;
}

}  // namespace

StageMemory estimate_stage_memory(const Workload& w, const ResolvedLayout& r, int rank,
                                  const CostFactors& factors) {
  StageMemory mem;
  add_model_state(w, r, rank, mem);
  const ActivationBytes activations = stage_activations(w, r, rank);
  const TransientMemory transient = stage_transients(w, r, rank, activations.working_set);
  const double scale = kFragmentationFactor * factors.memory;
  mem.activations_gib = activations.in_flight * scale / kBytesPerGiB;
  mem.transient_gib =
      (transient.bytes * scale) / kBytesPerGiB + transient.buffers_gib * factors.memory;
  mem.reserved_gib = w.hardware.memory_reserved_gib;
  mem.peak_gib = mem.weights_gib + mem.gradients_gib + mem.optimizer_gib + mem.activations_gib +
                 mem.transient_gib + mem.reserved_gib;
  return mem;
}

}  // namespace attune::sim
