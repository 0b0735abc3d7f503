#include "adapters/model/performance_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "adapters/model/flops.h"
#include "adapters/model/memory_model.h"
#include "events/assert.h"

namespace attune::sim {
namespace {

// How Megatron-Core and its libraries behave, as the model assumes it (hardware-independent).
// Overlapped communication hides behind specific compute and slows it: while it runs, its kernels
// hold hardware.*_comm_sms of the GPU's SMs (see `contention`).
// --tp-comm-overlap: Transformer Engine userbuffers split each TP linear's GEMM into chunks and
// move one chunk's data while another's GEMM runs: the all-gathers ring-exchange TP chunks (the
// first chunk's GEMM runs on local data), the reduce-scatters follow a GEMM split in this many
// pieces, whose last piece's reduce-scatter is exposed (TE's default num_splits).
constexpr double kUserbuffersSplits = 4;
// --overlap-moe-expert-parallel-comm: the most of the expert communication that the merged
// forward-backward schedule hides in its steady state, as measured: 36.6 % of the all-to-all
// time hidden on Qwen3-30B-A3B, 16 H100s, EP 16, HybridEP (Megatron-Bridge MoE skill), and +12.7 %
// on Qwen3-235B-A22B, EP 32, DeepEP, where the all-to-all is about 45 % of the step
// (Megatron-MoE-ModelZoo; perf_model.md §5.5). Streams synchronise per layer and piece, and the
// transfers contend with the compute for HBM and SMs, so far less hides than the compute could
// cover.
constexpr double kEpOverlapHiddenShareMax = 0.4;
// A pipeline send/receive between two GPUs of different nodes runs over few NCCL channels
// (NCCL_NCHANNELS_PER_NET_PEER = 2) and reaches about half of the NIC's bandwidth.
constexpr double kP2pScaleOutEfficiency = 0.5;
// Share of the last microbatch's backward (forward, for the parameter all-gather) that hides the
// data-parallel traffic under --overlap-grad-reduce (--overlap-param-gather).
constexpr double kDpOverlapFraction = 0.8;
constexpr double kDdpBucketParams = 40e6;  // Megatron's default bucket (>= 40M parameters)
// A grouped GEMM over the local experts runs at this fraction of one GEMM of the same shape, and
// Transformer Engine's fused grouped MLP (NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: both GEMMs and the
// activation in one persistent kernel) at the second. Fitted on the published rows of
// DeepSeek-V3 and Qwen3-235B-A22B, which alone would take 0.7 for the first; below 0.77 the
// paper's GLM-4.5 finding (TP1 at 16 stages with full recomputation beats DeepEP) no longer
// holds in its world, so 0.8. Checked on the rows of the other models (attune sim calibrate).
// Transformer Engine runs the fused kernel only where fused_grouped_mlp_note says.
constexpr double kGroupedGemmEfficiency = 0.8;
constexpr double kFusedGroupedMlpEfficiency = 1.2;
// DeepEP / HybridEP reach this fraction of NVLink bandwidth (DeepEP V2 on SM100: 726 of 900;
// V1 on H800: 153 of 160; expected ~300 of 450 on H100).
constexpr double kFlexNvlinkEfficiency = 0.7;
// Across domains the flex backends send a token once per destination domain and forward it over
// NVLink there; the fraction of the NIC bandwidth they reach on those deduplicated bytes. DeepEP
// (V1 normal kernels) measured no better than NCCL all-to-all in "logical" bandwidth at EP 8x2
// and 8x4 on 400 Gb/s NICs (90 and 61 GB/s, perf_model.md §2), i.e. about 0.55 of the NIC on
// deduplicated bytes; HybridEP and NCCL EP drive the NIC close to line rate.
constexpr double kDeepepScaleOutEfficiency = 0.55;
constexpr double kHybridepScaleOutEfficiency = 0.9;
// FP8 (blockwise) dispatch payload, bytes per element, with the flex dispatcher.
constexpr double kFp8DispatchBytes = 1.03;
// Quantising a GEMM input to FP8: read bf16, write FP8 (per element, forward; backward casts the
// gradients and the transposed inputs, as much again).
constexpr double kFp8CastBytes = 3.0;
// Attention with sinks (--softmax-type learnable or off-by-one): of Transformer Engine's fused
// backends only cuDNN's runs them (FlashAttention refuses them), at this fraction of the
// efficiency of the same shape without sinks. cuDNN-frontend's attention benchmark
// (benchmark/attention_inference, 64 query and 8 key-value heads, BF16, forward) ran a GPT-OSS
// layer (head dim 64 with sinks) at 0.66-0.77 of a Llama layer (head dim 128) on GB200 and H200
// at 2k to 32k tokens, 0.70 on average; attention_efficiency's head factor already takes 64
// against 128 to 0.83 of it, and the rest, 0.84, is attributed to the sinks. The backward is
// charged at the same fraction, unmeasured.
constexpr double kSinkAttentionFactor = 0.84;
// Bytes per element of each half of the routed experts' FC1 output that Megatron's clamp of the
// gated activation moves outside its fused activation (fused_bias_geglu.py, when the experts are
// not built from Transformer Engine's ops: chunk, two clamps, cat; bf16). Forward: two clamps
// (read and write each half) and the cat (read and write both), 16. Backward, as PyTorch's
// autograd runs it: the one-sided clamp's mask and select, 8; the two-sided clamp's two masks,
// their conjunction and select, 14; the chunk's backward joins the halves' gradients, 8; 30.
constexpr double kActivationClampBytes = 46.0;
// Bytes per element of the routed experts' FC2 output (routed copies x hidden) that Megatron's
// expert biases (--add-bias-linear with grouped GEMM, TEGroupedMLP._apply_bias) move when
// Transformer Engine's fused grouped MLP does not take the bias: per local expert, the bias row
// times each token's fp32 routing probability is added to the expert's rows, the pieces are
// concatenated and cast back to bf16. Forward: the fp32 product, written, 4; the add (read bf16 and
// fp32, write fp32), 10; the concatenation, 8; the cast, 6; 28. Backward: the cast's backward, 6;
// the output gradient cast to bf16, 6; the bias's and the probabilities' gradients, each a product
// (read, write) and a sum over the broadcast dimension (read), 12 each; 36.
constexpr double kExpertBiasBytes = 64.0;
// The host cost of one plain kernel launch (a product, an add) as a share of the model's eager
// operation, which stands for a coarse piece of a layer that issues several kernels: one launch
// costs 5-20 us (hardware [host] op_us notes), 12.5 us of B200's 50.
constexpr double kSingleLaunchShareOfOp = 0.25;
// Megatron applies RoPE unfused with --no-rope-fusion, and for any position embedding but "rope"
// (validate_args turns the fusion off; Megatron Core's rope_utils.py also falls back when the
// attention concentration mscale is not 1, as YaRN's is). Bytes per element of the queries and
// keys that unfused RoPE moves beyond the fused kernel's (rope_utils.py, bf16). Forward: multiply
// by cos, negate half, cat, multiply by sin, add, cat with the unrotated part, 24 against 4.
// Backward, as autograd runs it: two multiplies, the negation, the chunk's backward (a cat), the
// sum of both gradients and the slice's backward (zero-fill and copy), 26 against 4. And the host
// operations it adds per layer: queries and keys each take about a dozen (cos, sin, their scaling
// and casts, then the rotation) where the fused kernel takes one.
constexpr double kUnfusedRopeExtraBytes = 42.0;
constexpr double kUnfusedRopeExtraOps = 22.0;
// --qk-layernorm (grouped-query attention): Transformer Engine's RMSNorm over each head's queries
// and keys, one kernel each. Forward bytes per element: read 2, write 2 (the backward's come with
// the model's doubling of a forward's bytes); host, the two norm modules.
constexpr double kQkNormBytes = 4.0;
constexpr double kQkNormOps = 2.0;
// The model's backward moves twice its forward's bytes (layer_times: scaled(all, 2)); a cost
// known as forward and backward together enters the forward as this share of it.
constexpr double kForwardShareOfPass = 1.0 / 3.0;
constexpr double kAdamBytesPerParam = 30.0;  // fp32 grad, master, m, v in and out, bf16 param out
constexpr double kGradNormBytesPerParam = 8.0;         // norm and zeroing of the gradient buffer
constexpr double kHostOffloadCopyBytesPerParam = 6.0;  // fp32 gradient down, bf16 parameter up
// Host: each piece of a layer costs the CPU some operations (a kernel launch with its PyTorch and
// Megatron bookkeeping), hardware's op_us each. A blocking device-to-host sync (the token counts
// of the alltoall dispatcher, the receive counts of DeepEP, and of HybridEP and NCCL EP without a
// budget per rank: dispatch_blocks_host) leaves the GPU idle while the host issues this many
// operations after it.
constexpr double kSyncGapOps = 4.0;
// In FP8, Transformer Engine runs a grouped GEMM outside its fused grouped MLP (GroupedLinear)
// as a loop over the local experts: per expert it keeps FP8 copies and scales (TransformerEngine
// issue 1499: two tensor allocations per GEMM in the cast), and sets up, launches and fences one
// cuBLASLt GEMM on one of several streams. Its grouped-linear benchmark on SM100 (PR 3134,
// block-scaled FP4: 8 experts of 128 tokens, 2048 x 2048) took 0.267 ms for the loop's GEMMs
// alone, 33 us per expert where the kernels take a few: against a B200's 50 us per operation,
// 0.66 of one. That one measurement is extrapolated to every FP8 recipe on every GPU. Charged
// per expert GEMM of the forward (two per expert); the backward's are charged at
// kBackwardOpsFactor times the forward's, as every piece's are, which undercounts its dgrad and
// wgrad loops (four GEMMs per expert). A BF16 loop (no casts) is not charged: no measurement of
// it is at hand, and the paper's BF16 findings on GLM-4.5 and MiniMax-M2 (fewer nodes per expert
// group gains, with twice the experts per GPU) rule out a cost of this size there.
constexpr double kFp8GroupedGemmOpsPerExpertGemm = 0.66;
// CUDA graphs: a captured kernel costs this fraction of an eager launch.
constexpr double kGraphedLaunchFraction = 0.1;
constexpr double kFullIterationLaunchFraction = 0.02;
// Backward issues more operations than forward (dgrad and wgrad, autograd bookkeeping).
constexpr double kBackwardOpsFactor = 1.5;

// One piece of work, forward, on one GPU for one microbatch: seconds of each kind (communication
// raw, before overlaps) and the CPU operations that issue it.
struct Part {
  double gemm = 0;
  double attention = 0;
  double elementwise = 0;
  double tp = 0;
  double cp = 0;
  double ep = 0;
  double host_ops = 0;

  Part& operator+=(const Part& o) {
    gemm += o.gemm;
    attention += o.attention;
    elementwise += o.elementwise;
    tp += o.tp;
    cp += o.cp;
    ep += o.ep;
    host_ops += o.host_ops;
    return *this;
  }
  double compute() const { return gemm + attention + elementwise; }
};

Part scaled(Part p, double k) {
  p.gemm *= k;
  p.attention *= k;
  p.elementwise *= k;
  p.tp *= k;
  p.cp *= k;
  p.ep *= k;
  p.host_ops *= k;
  return p;
}

// The forward pieces of one layer of each kind.
struct LayerParts {
  Part attn_norm;
  Part attn_linear;  // projections other than MLA's up-projections, rope, residual
  Part attn_up;      // MLA up-projections
  Part attn_core;    // flash attention with its context-parallel exchange
  Part attn_core_backward;
  Part mlp_norm;
  Part dense_mlp;
  Part router;
  Part dispatch;  // permute and dispatch communication
  Part experts;   // expert GEMMs
  Part experts_act;
  Part combine;  // combine communication and unpermute
  Part shared;   // shared experts
  Part mtp_extra;
  Part embedding;
  Part loss;  // final norm, logits and cross entropy, once per output head
  bool sync_per_moe_layer = false;
};

// Everything constant across stages for one prediction.
struct Context {
  const Workload& w;
  const ResolvedLayout& r;
  const CostFactors& f;
  const ModelSpec& m;
  const HardwareSpec& hw;
  const Layout& l;
  double tokens = 0;     // tokens of one microbatch on this CP rank
  double sp_tokens = 0;  // tokens of h-wide elementwise work on one GPU
  bool fp8 = false;
  // Grouped-query attention's RoPE runs as PyTorch operations (kUnfusedRopeExtraBytes); the
  // multi-latent attention's rotary part is not priced apart.
  bool rope_unfused = false;
  // NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 prices the experts as Transformer Engine's fused grouped MLP;
  // where the variable is set and does not, the note says why (fused_grouped_mlp_note).
  bool fused_grouped_mlp = false;
  std::string fused_grouped_mlp_note{};
  double host_op_s = 0;  // host time per eager operation
  // Context-parallel exchange: the p2p ring (alone or inside a2a+p2p) overlaps attention compute;
  // Ulysses all-to-all and the all-gather run before it.
  bool cp_overlapped = true;
  bool cp_all_to_all = false;
  // Share of the GPU's SMs that overlapped communication takes from compute, by mechanism.
  double nccl_contention = 0;
  double userbuffers_contention = 0;
  double ep_contention = 0;  // the dispatcher's kernels
};

double gemm_efficiency(const HardwareSpec& hw, bool fp8, double rows, double cols, double inner) {
  const double d = hw.gemm_half_efficiency_dim;
  const double peak = fp8 ? hw.gemm_fp8_efficiency : hw.gemm_bf16_efficiency;
  return peak * rows / (rows + d) * cols / (cols + d) * inner / (inner + d);
}

// Seconds for a GEMM of `flops` with sides rows x cols x inner.
double gemm_s(const Context& c, double flops, double rows, double cols, double inner, bool fp8) {
  if (flops <= 0) return 0;
  const double peak = (fp8 ? c.hw.fp8_dense_tflops : c.hw.bf16_dense_tflops) * 1e12;
  return flops / (peak * gemm_efficiency(c.hw, fp8, rows, cols, inner)) * c.f.gemm;
}

double memory_s(const Context& c, double bytes) {
  return bytes / (c.hw.hbm_bandwidth_gb_per_s * 1e9 * c.hw.hbm_efficiency) * c.f.elementwise;
}

// A group of `size` ranks, `stride` apart in rank order: does it leave the NVLink domain?
bool crosses_domain(const HardwareSpec& hw, int size, int stride) {
  return static_cast<long long>(size) * stride > hw.nvlink_domain_gpus;
}

// Seconds for a ring collective moving `bytes` per GPU over a group.
double collective_s(const HardwareSpec& hw, double bytes, bool scale_out) {
  if (bytes <= 0) return 0;
  if (scale_out) {
    return bytes / (hw.scale_out_bandwidth_gb_per_s * 1e9 * hw.scale_out_efficiency) +
           hw.scale_out_latency_us * 1e-6;
  }
  return bytes / (hw.nvlink_bandwidth_gb_per_s * 1e9 * hw.nvlink_collective_efficiency) +
         hw.nvlink_latency_us * 1e-6;
}

// A reduce-scatter or all-gather (an all-reduce moves twice as much) of a tensor of `full_bytes`
// over `size` ranks `stride` apart. Across NVLink domains the ring's traffic leaves each domain
// through the NICs of the group's members there, all used in parallel.
double group_collective_s(const HardwareSpec& hw, double full_bytes, int size, int stride) {
  if (size <= 1 || full_bytes <= 0) return 0;
  const double moved = full_bytes * (size - 1) / size;
  if (!crosses_domain(hw, size, stride)) return collective_s(hw, moved, false);
  const int per_domain =
      stride >= hw.nvlink_domain_gpus ? 1 : std::min(size, hw.nvlink_domain_gpus / stride);
  return collective_s(hw, moved / per_domain, true);
}

// One all-gather or reduce-scatter of a tensor of `full_bytes` over the TP group.
double tp_collective_s(const Context& c, double full_bytes) {
  const int t = c.l.tp;
  if (t == 1) return 0;
  const bool scale_out = crosses_domain(c.hw, t, 1);
  return collective_s(c.hw, full_bytes * (t - 1) / t, scale_out) * c.f.tp_comm;
}

// Communication of a TP-sharded block (attention, dense MLP, shared experts) in the forward pass:
// all-gather + reduce-scatter with sequence parallelism, one all-reduce without.
double tp_block_comm_s(const Context& c) {
  const double full = c.tokens * c.m.hidden_size * 2.0;
  return 2 * tp_collective_s(c, full);
}

// Expert dispatch (or combine) communication of `payload_bytes_per_copy` per routed token copy.
double expert_exchange_s(const Context& c, double payload_bytes) {
  const Layout& l = c.l;
  const HardwareSpec& hw = c.hw;
  const double local_tokens = c.tokens / (l.sequence_parallel ? l.tp : 1);
  const int k = c.m.moe_router_topk;
  const int e = l.ep;
  const int et = l.etp;
  double seconds = 0;
  if (e > 1) {
    const int ranks_per_domain = std::max(1, hw.nvlink_domain_gpus / et);
    const int local_peers = std::min(e, ranks_per_domain);
    const double copies = local_tokens * k;
    const double nvlink = hw.nvlink_bandwidth_gb_per_s * 1e9;
    const double network = hw.scale_out_bandwidth_gb_per_s * 1e9 * hw.scale_out_efficiency;
    if (l.dispatcher == Dispatcher::kAllgather) {
      // Every rank of the EP x ETP group receives every token of the group.
      const int group = e * et;
      const double bytes = (group - 1) * local_tokens * c.m.hidden_size * 2.0;
      seconds = collective_s(hw, bytes, crosses_domain(hw, group, 1));
    } else if (l.dispatcher == Dispatcher::kFlex) {
      // DeepEP / HybridEP: a token crosses the network once per destination domain, then fans
      // out over NVLink.
      const double intra_bytes = copies * payload_bytes * (e - 1) / e;
      const int domains = (e + local_peers - 1) / local_peers;
      const double remote_domains =
          domains > 1 ? (domains - 1) * (1 - std::pow(1 - 1.0 / domains, k)) : 0.0;
      const double inter_bytes = local_tokens * payload_bytes * remote_domains;
      const double flex_network =
          hw.scale_out_bandwidth_gb_per_s * 1e9 *
          (l.flex_backend == FlexBackend::kDeepep ? kDeepepScaleOutEfficiency
                                                  : kHybridepScaleOutEfficiency);
      seconds =
          std::max(intra_bytes / (nvlink * kFlexNvlinkEfficiency), inter_bytes / flex_network) +
          (domains > 1 ? hw.scale_out_latency_us : hw.nvlink_latency_us) * 1e-6;
    } else {
      const double intra_bytes = copies * payload_bytes * (local_peers - 1) / e;
      const double inter_bytes = copies * payload_bytes * (e - local_peers) / e;
      seconds = std::max(intra_bytes / (nvlink * hw.nvlink_all_to_all_efficiency),
                         inter_bytes / network) +
                (e > local_peers ? hw.scale_out_latency_us : hw.nvlink_latency_us) * 1e-6;
    }
  }
  if (et > 1 && l.dispatcher != Dispatcher::kAllgather) {
    // The tokens an expert-TP group receives are gathered (and later reduced) inside it.
    const double bytes = (et - 1) * local_tokens * k * c.m.hidden_size * 2.0;
    seconds += collective_s(hw, bytes, crosses_domain(hw, et, 1));
  }
  return seconds * c.f.ep_a2a;
}

double attention_efficiency(const HardwareSpec& hw, double key_tokens, double head_dim,
                            double peak_fraction) {
  const double length = key_tokens / (key_tokens + hw.attention_half_efficiency_tokens);
  const double head = std::min(1.0, (head_dim / (head_dim + 32.0)) / (128.0 / 160.0));
  return peak_fraction * length * head;
}

// What the model makes of NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 when it does not price the experts as
// Transformer Engine's fused grouped MLP: a note saying why, or empty when it does (or when the
// variable is not set). Megatron-Bridge 26.06 and 26.08 pin Transformer Engine 4220403e and
// 4329ff84, whose op fuser fuses a grouped linear, a scaled gated activation (SwiGLU, or the
// clamped quick-GeGLU of GPT-OSS) and a grouped linear, biases included, when every width is a
// multiple of 64 and gate and linear rows are interleaved in blocks of 32
// (transformer_engine/pytorch/ops/_common.py, fuse_grouped_mlp_ops), and only through the op fuser,
// on compute capability 10, with an MXFP8 recipe. Those are the first six refusals below.
// The last is a measurement, not Transformer Engine's rule: the only published runs of experts
// with biases or a clamped activation under the variable, GPT-OSS-120B's MXFP8 rows of those two
// releases on GB200 and GB300, measured within 2.5% of the model's unfused price and 30-31% below
// its fused one, so the model gives such experts no fused speedup. Why they gained nothing is not
// known; no other published row can check the rule.
std::string fused_grouped_mlp_note(const Context& c) {
  const ModelSpec& m = c.m;
  const Layout& l = c.l;
  if (!l.fused_grouped_mlp) return "";
  const auto nothing = [](const std::string& why) {
    return "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 changes nothing: " + why;
  };
  if (!is_moe(m)) return nothing("the model has no experts");
  if (!l.grouped_gemm) return nothing("the experts do not use grouped GEMMs (--moe-grouped-gemm)");
  if (!l.te_op_fuser) return nothing("it runs only through --use-transformer-engine-op-fuser");
  if (c.hw.compute_capability < 10.0 || c.hw.compute_capability >= 11.0) {
    return nothing("it runs only on compute capability 10 (B200, B300, GB200, GB300)");
  }
  if (!c.fp8 || l.fp8_recipe != "mxfp8") return nothing("it runs only with --fp8-recipe mxfp8");
  if (!m.gated_linear_unit) return nothing("the experts' activation is not gated");
  const int f_e = m.moe_ffn_hidden_size / std::max(1, l.etp);
  if (m.hidden_size % 64 != 0 || f_e % 64 != 0) {
    return nothing("the experts' widths (" + std::to_string(m.hidden_size) + ", " +
                   std::to_string(f_e) + ") are not multiples of 64");
  }
  if (l.moe_glu_interleave_size != 32) {
    return nothing("it needs --moe-mlp-glu-interleave-size 32");
  }
  if (m.add_bias_linear || m.activation_func_clamp_value > 0) {
    return "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 is priced at no gain: experts with biases or a "
           "clamped activation measured none from it (GPT-OSS-120B, Megatron-Bridge 26.06, 26.08)";
  }
  return "";
}

// CPU operations of the token permutation before the dispatch (`dispatch`) or after the
// combine: the flex dispatcher permutes inside its own calls.
double permute_ops(const Layout& l, bool dispatch) {
  if (l.ep > 1 && l.dispatcher == Dispatcher::kFlex) return 0;
  return l.permute_fusion ? 3 : (dispatch ? 10 : 8);
}

// Whether a MoE layer's forward dispatch blocks the host on a device-to-host copy of the token
// counts: the alltoall dispatcher and DeepEP always do here; HybridEP and NCCL EP size their
// receive buffers from the counts ("HybridEP sizes buffers dynamically (CPU sync in dispatch)",
// Megatron's _HybridEPManager) unless --moe-expert-rank-capacity-factor fixes a budget per rank.
// A full-iteration CUDA graph cannot capture the sync, so a run that works must have fixed the
// size; the model assumes it did. Drop-and-pad (--moe-pad-expert-input-to-capacity) fixes it too,
// but the model does not read it, and charges the sync.
bool dispatch_blocks_host(const Layout& l) {
  if (l.dispatcher == Dispatcher::kAlltoall) return true;
  if (l.dispatcher != Dispatcher::kFlex) return false;
  if (l.flex_backend == FlexBackend::kDeepep) return true;
  return !l.expert_rank_budget && l.cuda_graph != CudaGraphImpl::kFullIteration;
}

// Host operations of the token dispatch (or the combine): the flex backends lay out and permute
// tokens inside their communication kernels; the others permute with separate kernels (fewer with
// --moe-permute-fusion) around an all-to-all or all-gather.
double dispatch_ops(const Layout& l, bool dispatch) {
  const double permute = permute_ops(l, dispatch);
  if (l.ep == 1) return permute;
  switch (l.dispatcher) {
    case Dispatcher::kFlex:
      return dispatch ? 6 : 4;
    case Dispatcher::kAlltoall:
      return permute + (dispatch ? 8 : 4);
    default:
      return permute + 4;
  }
}

Part mlp_part(const Context& c, double width, bool tp_sharded) {
  const double t = tp_sharded ? c.l.tp : 1;
  const double h = c.m.hidden_size;
  const double f = width / t;
  const double up = c.m.gated_linear_unit ? 2 : 1;
  Part p;
  p.gemm = gemm_s(c, 2 * c.tokens * h * up * f, c.tokens, up * f, h, c.fp8) +
           gemm_s(c, 2 * c.tokens * f * h, c.tokens, h, f, c.fp8);
  double bytes = c.tokens * f * (c.m.gated_linear_unit ? 6.0 : 4.0);
  if (c.fp8) bytes += kFp8CastBytes * c.tokens * (h + f);
  p.elementwise = memory_s(c, bytes);
  p.tp = tp_block_comm_s(c);
  p.host_ops = 8 + (c.m.add_bias_linear ? 2 : 0) + (c.l.tp > 1 ? 2 : 0) + (c.fp8 ? 3 : 0);
  return p;
}

// The widths a layer's attention works with on one tensor-parallel rank.
struct AttentionWidths {
  double q_width = 0;   // query (or MLA query up-projection) columns
  double kv_width = 0;  // key-value columns
  double qk_dim = 0;    // per-head query-key dimension
  double v_dim = 0;     // per-head value dimension
};

// The attention projections (MLA's down and up projections, or QKV and the output projection)
// and their casts and TP communication.
AttentionWidths attention_projections(const Context& c, LayerParts& parts) {
  const ModelSpec& m = c.m;
  const Layout& l = c.l;
  const double t = l.tp;
  const double h = m.hidden_size;
  const double T = c.tokens;
  const double heads = m.num_attention_heads / t;
  Part& lin = parts.attn_linear;
  AttentionWidths a;
  a.v_dim = m.kv_channels;
  a.qk_dim = m.kv_channels;
  if (m.attention == AttentionKind::kMultiLatent) {
    a.qk_dim = m.qk_head_dim + m.qk_pos_emb_head_dim;
    a.v_dim = m.v_head_dim;
    a.q_width = heads * a.qk_dim;
    a.kv_width = heads * (m.qk_head_dim + a.v_dim);
    const double down = m.q_lora_rank + m.kv_lora_rank + m.qk_pos_emb_head_dim;
    const double q_in = m.q_lora_rank > 0 ? m.q_lora_rank : h;
    lin.gemm = gemm_s(c, 2 * T * h * down, T, down, h, c.fp8) +
               gemm_s(c, 2 * T * heads * a.v_dim * h, T, h, heads * a.v_dim, c.fp8);
    parts.attn_up.gemm =
        gemm_s(c, 2 * T * q_in * a.q_width, T, a.q_width, q_in, c.fp8) +
        gemm_s(c, 2 * T * m.kv_lora_rank * a.kv_width, T, a.kv_width, m.kv_lora_rank, c.fp8);
    parts.attn_up.elementwise = memory_s(c, T * (a.q_width + a.kv_width) * 4.0);
    parts.attn_up.host_ops = 6;
    lin.elementwise = memory_s(c, T * down * 8.0 + c.sp_tokens * h * 6.0);
  } else {
    a.q_width = query_width(m) / t;
    a.kv_width = std::max(1.0, m.num_query_groups / t) * m.kv_channels;
    const double qkv = a.q_width + 2 * a.kv_width;
    lin.gemm = gemm_s(c, 2 * T * h * qkv, T, qkv, h, c.fp8) +
               gemm_s(c, 2 * T * a.q_width * h, T, h, a.q_width, c.fp8);
    lin.elementwise = memory_s(c, T * (a.q_width + a.kv_width) * 4.0 + c.sp_tokens * h * 6.0);
    if (c.rope_unfused) {
      lin.elementwise +=
          memory_s(c, T * (a.q_width + a.kv_width) * kUnfusedRopeExtraBytes * kForwardShareOfPass);
    }
    if (m.qk_layernorm) {
      lin.elementwise += memory_s(c, T * (a.q_width + a.kv_width) * kQkNormBytes);
    }
  }
  if (c.fp8) lin.elementwise += memory_s(c, kFp8CastBytes * T * (h + a.q_width));
  lin.tp = tp_block_comm_s(c);
  lin.host_ops = 10 + (m.add_bias_linear ? 2 : 0) + (l.tp > 1 ? 2 : 0) + (c.fp8 ? 3 : 0) +
                 (c.rope_unfused ? kUnfusedRopeExtraOps : 0) +
                 (m.qk_layernorm && m.attention == AttentionKind::kGroupedQuery ? kQkNormOps : 0);
  return a;
}

// Core attention: causal, or a sliding window on some layers. The two kinds of layer run at
// their own efficiency (a 128-token window keeps the kernel far from its peak), averaged over
// the layers by time, not by key length. Context parallelism exchanges keys and values (ring or
// all-gather) or scatters heads (Ulysses).
void core_attention(const Context& c, const AttentionWidths& a, LayerParts& parts) {
  const ModelSpec& m = c.m;
  const Layout& l = c.l;
  const HardwareSpec& hw = c.hw;
  const double T = c.tokens;
  const double heads = m.num_attention_heads / static_cast<double>(l.tp);
  const double s = c.w.seq_length;
  const double peak = hw.bf16_dense_tflops * 1e12;
  const double head_dim = std::max(a.qk_dim, a.v_dim);
  const double sinks = m.softmax == SoftmaxType::kVanilla ? 1.0 : kSinkAttentionFactor;
  auto core_s = [&](double context, double key_tokens, double efficiency) {
    const double flops = 2 * T * context * heads * (a.qk_dim + a.v_dim);
    return flops / (peak * sinks * attention_efficiency(hw, key_tokens, head_dim, efficiency));
  };
  auto both_kinds_s = [&](double efficiency) {
    const double full = core_s(s / 2, s / l.cp, efficiency);
    if (m.sliding_window_tokens <= 0 || m.sliding_window_tokens >= s) return full;
    const double w = m.sliding_window_tokens;
    const double windowed = m.window_attn_skip_freq > 0 ? 1.0 - 1.0 / m.window_attn_skip_freq : 1.0;
    return windowed * core_s(w - w * (w - 1) / (2 * s), w, efficiency) + (1 - windowed) * full;
  };
  parts.attn_core.attention = both_kinds_s(hw.attention_forward_efficiency) * c.f.attention;
  parts.attn_core.host_ops = 4;
  parts.attn_core_backward.attention =
      2 * both_kinds_s(hw.attention_backward_efficiency) * c.f.attention;
  if (l.cp <= 1) return;
  const double kv_bytes =
      T *
      (m.attention == AttentionKind::kMultiLatent ? heads * (a.qk_dim + a.v_dim) : 2 * a.kv_width) *
      2.0;
  const bool scale_out = crosses_domain(hw, l.cp, l.tp);
  if (c.cp_all_to_all) {
    // Ulysses: queries, keys and values scattered by head before attention, outputs after.
    const double qkvo_bytes = T * (2 * a.q_width + 2 * a.kv_width) * 2.0;
    parts.attn_core.cp = collective_s(hw, qkvo_bytes * (l.cp - 1) / l.cp, scale_out) * c.f.cp_comm;
    parts.attn_core.host_ops += 4;
  } else {
    // Ring (p2p) or all-gather of this rank's keys and values, c-1 times.
    parts.attn_core.cp = (l.cp - 1) * collective_s(hw, kv_bytes, scale_out) * c.f.cp_comm;
    parts.attn_core.host_ops += 2 * (l.cp - 1);
  }
}

// A MoE layer's router, token dispatch and combine, local experts and shared expert.
void moe_parts(const Context& c, LayerParts& parts) {
  const ModelSpec& m = c.m;
  const Layout& l = c.l;
  const double h = m.hidden_size;
  const double local = c.tokens / (l.sequence_parallel ? l.tp : 1);
  const double k = m.moe_router_topk;
  const double E = m.num_experts;
  parts.router.gemm = gemm_s(c, 2 * local * h * E, local, E, h, false);
  parts.router.elementwise = memory_s(c, local * E * 16.0);
  parts.router.host_ops = 20;

  const double copies = local * k;
  const double payload = (c.fp8 && l.dispatcher == Dispatcher::kFlex) ? kFp8DispatchBytes : 2.0;
  parts.dispatch.elementwise = memory_s(c, (local + copies) * h * 2.0);
  parts.dispatch.ep = expert_exchange_s(c, h * payload);
  parts.dispatch.host_ops = dispatch_ops(l, true);
  parts.combine.elementwise = memory_s(c, (local + copies) * h * 2.0 + c.sp_tokens * h * 6.0);
  parts.combine.ep = expert_exchange_s(c, h * 2.0);
  parts.combine.host_ops = dispatch_ops(l, false);
  parts.sync_per_moe_layer = l.ep > 1 && dispatch_blocks_host(l);

  // Local experts: E/ep of them, each seeing its share of the routed tokens of the group.
  const double local_experts = E / l.ep;
  const double expert_tokens = l.ep * l.etp * copies / E;
  const double f_e = m.moe_ffn_hidden_size / static_cast<double>(l.etp);
  const double up = m.gated_linear_unit ? 2 : 1;
  const bool fused = c.fused_grouped_mlp;
  const double grouped = !l.grouped_gemm ? 1.0
                         : fused         ? kFusedGroupedMlpEfficiency
                                         : kGroupedGemmEfficiency;
  parts.experts.gemm =
      local_experts *
      (gemm_s(c, 2 * expert_tokens * h * up * f_e, expert_tokens, up * f_e, h, c.fp8) +
       gemm_s(c, 2 * expert_tokens * f_e * h, expert_tokens, h, f_e, c.fp8)) /
      grouped;
  const double expert_loop_ops =
      c.fp8 && !fused ? 2 * local_experts * kFp8GroupedGemmOpsPerExpertGemm : 0.0;
  parts.experts.host_ops =
      (l.grouped_gemm ? 6 + expert_loop_ops : 4 * local_experts) + (c.fp8 ? 4 : 0);
  double act_bytes = local_experts * expert_tokens * f_e * (m.gated_linear_unit ? 6.0 : 4.0);
  // Expert biases outside the fused grouped MLP: a product and an add per local expert (the splits
  // are views), then the concatenation and the cast.
  if (m.add_bias_linear && l.grouped_gemm && !fused) {
    act_bytes += local_experts * expert_tokens * h * kExpertBiasBytes * kForwardShareOfPass;
    parts.experts.host_ops += kSingleLaunchShareOfOp * (2 * local_experts + 2);
  }
  if (c.fp8) act_bytes += local_experts * expert_tokens * kFp8CastBytes * (h + f_e);
  // Experts built from Transformer Engine's ops clamp inside TE's activation kernel.
  const bool megatron_clamps = m.activation_func_clamp_value > 0 && !l.te_op_fuser;
  if (megatron_clamps) {
    act_bytes += local_experts * expert_tokens * f_e * kActivationClampBytes * kForwardShareOfPass;
  }
  if (fused) act_bytes = 0;  // in the GEMMs' epilogues
  parts.experts_act.elementwise = memory_s(c, act_bytes);
  parts.experts_act.host_ops = 2 + (megatron_clamps ? 4 : 0);
  if (m.moe_shared_expert_intermediate_size > 0) {
    parts.shared = mlp_part(c, m.moe_shared_expert_intermediate_size, true);
  }
}

// The parts outside the transformer layers: MTP's projection and norms, the embedding, the
// output layer and the loss.
void end_parts(const Context& c, LayerParts& parts) {
  const ModelSpec& m = c.m;
  const Layout& l = c.l;
  const double t = l.tp;
  const double h = m.hidden_size;
  const double T = c.tokens;
  // MTP: projection of the concatenated embedding and hidden state, norms, embedding lookup.
  parts.mtp_extra.gemm = gemm_s(c, 2 * T * 2 * h * h / t, T, h / t, 2 * h, false);
  parts.mtp_extra.elementwise = memory_s(c, c.sp_tokens * h * 12.0);
  parts.mtp_extra.tp = tp_collective_s(c, T * h * 2.0);
  parts.mtp_extra.host_ops = 8;

  parts.embedding.elementwise = memory_s(c, c.sp_tokens * h * 4.0);
  parts.embedding.tp = l.sequence_parallel ? tp_collective_s(c, T * h * 2.0) : 0;
  parts.embedding.host_ops = 4;

  const double vocab = padded_vocab_size(m, l.tp) / t;
  parts.loss.gemm = gemm_s(c, 2 * T * h * vocab, T, vocab, h, false);
  parts.loss.elementwise =
      memory_s(c, T * vocab * (l.cross_entropy_fusion ? 4.0 : 16.0) + c.sp_tokens * h * 4.0);
  parts.loss.tp = l.sequence_parallel ? tp_collective_s(c, T * h * 2.0) : 0;
  parts.loss.host_ops = l.cross_entropy_fusion ? 6 : 14;
}

LayerParts layer_parts(const Context& c) {
  const double h = c.m.hidden_size;
  LayerParts parts;
  // Norms and residual adds on the residual stream (sharded under sequence parallelism).
  parts.attn_norm.elementwise = memory_s(c, c.sp_tokens * h * 4.0);
  parts.attn_norm.host_ops = 2;
  parts.mlp_norm = parts.attn_norm;
  const AttentionWidths widths = attention_projections(c, parts);
  core_attention(c, widths, parts);
  if (c.m.ffn_hidden_size > 0) parts.dense_mlp = mlp_part(c, c.m.ffn_hidden_size, true);
  if (is_moe(c.m)) moe_parts(c, parts);
  end_parts(c, parts);
  return parts;
}

enum class LayerKind { kDense, kMoe };

// The share of an eager operation's host cost that remains under the recipe's CUDA graphs, for a
// piece the graphs can capture (`graphable`) or not.
double launch_fraction(const Layout& l, bool graphable) {
  if (l.cuda_graph == CudaGraphImpl::kFullIteration) return kFullIterationLaunchFraction;
  if (l.cuda_graph == CudaGraphImpl::kNone || !graphable) return 1.0;
  return kGraphedLaunchFraction;
}

// Which of a layer's pieces the recipe's CUDA graphs capture. Full-iteration graphs capture
// everything. Per-layer graphs (local or Transformer Engine) without a scope capture a dense
// layer whole and a MoE layer's attention. With a scope (--cuda-graph-modules) they capture only
// the modules it names: attn (norm, projections, core attention), mlp (a dense MLP with its
// norm), moe_router (a MoE block's norm, router and shared experts) and moe_preprocess (the
// permutation before the dispatch). The dispatch and combine, and the experts, whose shapes
// follow the routing, stay eager (Megatron refuses the moe scope with dropless routing).
struct GraphCover {
  bool attention = false;
  bool mlp = false;
  bool router = false;
  bool preprocess = false;
  bool experts = false;
};

GraphCover graph_cover(const Layout& l) {
  if (l.cuda_graph == CudaGraphImpl::kNone) return {};
  if (l.cuda_graph == CudaGraphImpl::kFullIteration) return {true, true, true, true, true};
  const std::uint32_t m = l.cuda_graph_modules;
  if (m == 0) return {.attention = true, .mlp = true};
  return {.attention = (m & kGraphAttn) != 0,
          .mlp = (m & kGraphMlp) != 0,
          .router = (m & kGraphMoeRouter) != 0,
          .preprocess = (m & kGraphMoePreprocess) != 0};
}

// A layer's forward host seconds: each piece's operations at the eager cost, or at the graphed
// share where the recipe's graphs capture it.
double layer_host_forward_s(const Context& c, const LayerParts& parts, LayerKind kind) {
  const GraphCover g = graph_cover(c.l);
  double seconds = 0;
  const auto add = [&](double ops, bool captured) {
    seconds += ops * c.host_op_s * launch_fraction(c.l, captured);
  };
  add(parts.attn_norm.host_ops + parts.attn_linear.host_ops + parts.attn_up.host_ops +
          parts.attn_core.host_ops,
      g.attention);
  if (kind == LayerKind::kDense) {
    add(parts.mlp_norm.host_ops + parts.dense_mlp.host_ops, g.mlp);
    return seconds;
  }
  const double preprocess = permute_ops(c.l, true);
  add(parts.mlp_norm.host_ops + parts.router.host_ops + parts.shared.host_ops, g.router);
  add(preprocess, g.preprocess);
  add(parts.dispatch.host_ops - preprocess + parts.combine.host_ops + parts.experts.host_ops +
          parts.experts_act.host_ops,
      g.experts);
  return seconds;
}

// Forward, backward and recomputation of one layer kind, with exposures applied.
struct LayerTimes {
  PhaseTimes forward;
  PhaseTimes backward;
  PhaseTimes recompute;
  double host_forward = 0;   // host time, before comparing with GPU time
  double host_backward = 0;  // including the recomputation's launches
  double gpu_forward = 0;    // GPU-busy time (compute + exposed communication)
  double gpu_backward = 0;
  bool sync = false;
};

// TP communication that userbuffers overlap with the GEMMs of its own linear layers
// (`linear_gemm_s`): the last split of the reduce-scatters (half the traffic) is exposed, and the
// rest hides behind all but one ring chunk of those GEMMs.
double tp_exposed_s(const Context& c, double tp_s, double linear_gemm_s) {
  if (!c.l.tp_comm_overlap || tp_s <= 0) return tp_s;
  const double tail = tp_s / (2 * kUserbuffersSplits);
  const double hideable = linear_gemm_s * (1 - 1.0 / c.l.tp);
  return tail + std::max(0.0, tp_s - tail - hideable);
}

// Extra GEMM seconds of those linears when userbuffers split them: a chunk has fewer rows and
// runs at a lower efficiency (gemm_efficiency's row factor); half the linears are split in TP
// ring chunks, half in kUserbuffersSplits pieces.
double tp_split_gemm_s(const Context& c, double linear_gemm_s) {
  if (!c.l.tp_comm_overlap || c.l.tp == 1 || linear_gemm_s <= 0) return 0;
  const double d = c.hw.gemm_half_efficiency_dim;
  const auto slowdown = [&](double pieces) {
    const double rows = c.tokens;
    return (rows / (rows + d)) / ((rows / pieces) / (rows / pieces + d)) - 1;
  };
  return linear_gemm_s * 0.5 * (slowdown(c.l.tp) + slowdown(kUserbuffersSplits));
}

// Adds a piece with its communication exposed except what compute hides: `linear_gemm_s` of TP
// linears under --tp-comm-overlap, `ep_hide_s` and `cp_hide_s`. Hidden communication slows the
// compute it overlaps by its kernels' share of the SMs, for as long as it runs; that slowdown is
// booked as GEMM time (the overlapped compute is mostly GEMMs).
void add_exposed(PhaseTimes& out, const Part& p, const Context& c, double linear_gemm_s,
                 double ep_hide_s, double cp_hide_s) {
  out.gemm_s += p.gemm;
  out.attention_s += p.attention;
  out.elementwise_s += p.elementwise;
  const double tp_exposed = tp_exposed_s(c, p.tp, linear_gemm_s);
  out.tp_comm_s += tp_exposed;
  out.tp_comm_hidden_s += p.tp - tp_exposed;
  const double cp_exposed = std::max(0.0, p.cp - cp_hide_s);
  out.cp_comm_s += cp_exposed;
  out.cp_comm_hidden_s += p.cp - cp_exposed;
  const double ep_exposed = std::max(0.0, p.ep - ep_hide_s);
  out.ep_a2a_s += ep_exposed;
  out.ep_a2a_hidden_s += p.ep - ep_exposed;
  out.gemm_s += tp_split_gemm_s(c, linear_gemm_s) + (p.tp - tp_exposed) * c.userbuffers_contention +
                (p.cp - cp_exposed) * c.nccl_contention + (p.ep - ep_exposed) * c.ep_contention;
}

double gpu_busy(const PhaseTimes& t) {
  return t.compute_s() + t.tp_comm_s + t.cp_comm_s + t.ep_a2a_s;
}

// Which pieces a selective recomputation repeats, for one layer kind.
Part selective_recompute(const Layout& l, const LayerParts& parts, LayerKind kind) {
  Part p;
  const std::uint32_t modules = l.recompute_modules;
  if (modules & kRecomputeCoreAttn) p += parts.attn_core;
  if (modules & kRecomputeLayernorm) {
    p += parts.attn_norm;
    p += parts.mlp_norm;
  }
  if (modules & kRecomputeMlaUpProj) p += parts.attn_up;
  if (kind == LayerKind::kDense) {
    if (modules & kRecomputeMlp) p += parts.dense_mlp;
    return p;
  }
  if (modules & kRecomputeMoe) {
    p += parts.router;
    p += parts.dispatch;
    p += parts.experts;
    p += parts.experts_act;
    p += parts.combine;
    p += parts.shared;
  } else {
    if (modules & kRecomputeMoeAct) p += parts.experts_act;
    if (modules & kRecomputeSharedExperts) p += parts.shared;
  }
  return p;
}

// One layer's forward pieces, grouped: the attention block (norm and projections), core
// attention, the MLP (dense, or router and experts), the expert dispatch and combine, the shared
// experts, and all of them.
struct LayerPieces {
  Part attention;
  Part core;
  Part mlp;
  Part moe_comm;
  Part shared;
  Part all;
};

LayerPieces layer_pieces(const LayerParts& parts, LayerKind kind) {
  LayerPieces g;
  g.attention = parts.attn_norm;
  g.attention += parts.attn_linear;
  g.attention += parts.attn_up;
  g.core = parts.attn_core;
  g.mlp = parts.mlp_norm;
  if (kind == LayerKind::kDense) {
    g.mlp += parts.dense_mlp;
  } else {
    g.mlp += parts.router;
    g.mlp += parts.experts;
    g.mlp += parts.experts_act;
    g.moe_comm += parts.dispatch;
    g.moe_comm += parts.combine;
    g.shared = parts.shared;  // dense layers have none
  }
  g.all = g.attention;
  g.all += g.core;
  g.all += g.mlp;
  g.all += g.moe_comm;
  g.all += g.shared;
  return g;
}

struct EpHidden {
  double forward = 0;
  double backward = 0;
};

// Hiding of expert communication (forward, backward): behind the shared experts
// (--moe-shared-expert-overlap), or behind another microbatch's compute
// (--overlap-moe-expert-parallel-comm). The latter merges one microbatch's forward with another's
// backward, layer by layer, and pairs each transfer with one piece of compute: backward combine
// with forward attention, forward dispatch with backward MLP, backward dispatch with forward MLP,
// forward combine with backward attention. Only the merged share of a rank's chunks overlaps at
// all; warm-up forwards and cool-down backwards run alone.
EpHidden hidden_expert_comm(const Context& c, const LayerParts& parts, const LayerPieces& g,
                            double backward_ep, double merged_share) {
  const Layout& l = c.l;
  EpHidden hidden;
  if (l.shared_expert_overlap) {
    hidden.forward = g.shared.compute();
    hidden.backward = 2.0 * g.shared.compute();
  }
  if (!l.ep_overlap || g.all.ep <= 0) return hidden;
  const double dispatch = parts.dispatch.ep;
  const double combine = parts.combine.ep;
  const double attention_forward = g.attention.compute() + g.core.compute();
  const double mlp_forward = g.mlp.compute() + g.moe_comm.compute() + g.shared.compute();
  const double attention_backward =
      2.0 * g.attention.compute() + parts.attn_core_backward.attention;
  const double mlp_backward = 2.0 * mlp_forward;
  const double merged_forward =
      std::max(0.0, dispatch - mlp_backward) + std::max(0.0, combine - attention_backward);
  const double merged_backward =
      std::max(0.0, combine - attention_forward) + std::max(0.0, dispatch - mlp_forward);
  hidden.forward =
      merged_share * std::min(kEpOverlapHiddenShareMax * g.all.ep, g.all.ep - merged_forward);
  hidden.backward = merged_share *
                    std::min(kEpOverlapHiddenShareMax * backward_ep, backward_ep - merged_backward);
  return hidden;
}

LayerTimes layer_times(const Context& c, const LayerParts& parts, LayerKind kind,
                       double recompute_share, double merged_share) {
  const Layout& l = c.l;
  const LayerPieces layer = layer_pieces(parts, kind);
  const Part& all = layer.all;
  const Part& core = layer.core;
  const Part& shared = layer.shared;

  Part backward = scaled(all, 2.0);
  backward.attention = parts.attn_core_backward.attention;
  backward.tp = all.tp * (l.sequence_parallel ? 1.5 : 1.0);
  backward.ep = all.ep;
  backward.host_ops = all.host_ops * kBackwardOpsFactor;

  const EpHidden ep_hidden = hidden_expert_comm(c, parts, layer, backward.ep, merged_share);
  // GEMMs of the TP-sharded linears, beside which userbuffers move the TP traffic (the backward
  // runs data- and weight-gradient GEMMs, twice the forward's).
  const double linear_gemm = parts.attn_linear.gemm + shared.gemm +
                             (kind == LayerKind::kDense ? parts.dense_mlp.gemm : 0.0);

  LayerTimes out;
  out.sync = kind == LayerKind::kMoe && parts.sync_per_moe_layer;
  const double cp_hide_forward = c.cp_overlapped ? core.attention : 0.0;
  add_exposed(out.forward, all, c, linear_gemm, ep_hidden.forward, cp_hide_forward);
  add_exposed(out.backward, backward, c, 2.0 * linear_gemm, ep_hidden.backward,
              c.cp_overlapped ? parts.attn_core_backward.attention : 0.0);

  Part recompute;
  if (l.recompute == RecomputeGranularity::kSelective) {
    recompute = selective_recompute(l, parts, kind);
  }
  recompute = scaled(recompute, c.f.recompute);
  if (recompute_share > 0) recompute += scaled(all, recompute_share * c.f.recompute);
  // Megatron refuses EP overlap with MoE recomputation, so recomputed dispatches are exposed.
  // Recomputed TP traffic comes with its linears' GEMMs, in proportion.
  const double recompute_linear_gemm = all.tp > 0 ? linear_gemm * recompute.tp / all.tp : 0.0;
  add_exposed(out.recompute, recompute, c, recompute_linear_gemm, 0.0,
              c.cp_overlapped ? recompute.attention : 0.0);

  const double host_forward = layer_host_forward_s(c, parts, kind);
  out.host_forward = host_forward;
  out.host_backward =
      host_forward * (kBackwardOpsFactor + recompute.host_ops / std::max(1.0, all.host_ops));
  out.gpu_forward = gpu_busy(out.forward);
  out.gpu_backward = gpu_busy(out.backward) + gpu_busy(out.recompute);
  return out;
}

void accumulate(PhaseTimes& into, const PhaseTimes& t, double count) {
  into.gemm_s += count * t.gemm_s;
  into.attention_s += count * t.attention_s;
  into.elementwise_s += count * t.elementwise_s;
  into.tp_comm_s += count * t.tp_comm_s;
  into.cp_comm_s += count * t.cp_comm_s;
  into.ep_a2a_s += count * t.ep_a2a_s;
  into.tp_comm_hidden_s += count * t.tp_comm_hidden_s;
  into.cp_comm_hidden_s += count * t.cp_comm_hidden_s;
  into.ep_a2a_hidden_s += count * t.ep_a2a_hidden_s;
  into.host_s += count * t.host_s;
}

// Seconds of one point-to-point message of the pipeline between ranks `from` and `to`.
double p2p_message_s(const Context& c, int from, int to) {
  const int per_stage = c.w.gpus / c.l.pp;
  const int domain = c.hw.nvlink_domain_gpus;
  const bool scale_out = (from * per_stage) / domain != (to * per_stage) / domain;
  const double bytes = c.sp_tokens * c.m.hidden_size * 2.0;
  if (!scale_out) return collective_s(c.hw, bytes, false) * c.f.pp_p2p;
  const double network = c.hw.scale_out_bandwidth_gb_per_s * 1e9 * kP2pScaleOutEfficiency;
  return (bytes / network + c.hw.scale_out_latency_us * 1e-6) * c.f.pp_p2p;
}

// Activation offload (--cpu-offloading-num-layers): the offloaded layers' activations go to host
// memory during the forward and come back during the backward over the host link, beside the
// compute; what the compute does not cover, the GPU waits for.
void add_activation_offload(const Context& c, const StageLayers& stage, StageTiming& st) {
  const int offloaded = activation_offload_layers(c.l, stage.decoder_layers());
  if (offloaded == 0) return;
  const double copy_s = offloaded * mean_decoder_layer_bytes(c.w, c.r, stage) /
                        (c.hw.host_link_bandwidth_gb_per_s * 1e9);
  // The copies run on their own stream beside the phase: its GPU work and any host stall.
  st.forward.host_s += std::max(0.0, copy_s - gpu_busy(st.forward) - st.forward.host_s);
  st.backward.host_s += std::max(0.0, copy_s - gpu_busy(st.backward) - st.backward.host_s);
}

// The per-layer times a stage is built from, one set per layer kind.
struct StageLayerTimes {
  const LayerTimes* dense = nullptr;
  const LayerTimes* moe = nullptr;
  const LayerTimes* mtp_layer = nullptr;
};

struct StageWork {
  StageTiming timing;
  double backward_s = 0;  // one microbatch's backward including recomputation
  double forward_s = 0;
};

// The stage's layers, forward, backward and recomputed, and its ends: the embedding, the loss
// heads and MTP projections, which are not recomputed. Returns the ends' forward work.
Part add_stage_compute(const Context& c, const LayerParts& parts, const StageLayerTimes& times,
                       const StageLayers& stage, StageTiming& st) {
  for (const auto& [t, count] :
       {std::pair{times.dense, stage.dense_layers}, std::pair{times.moe, stage.moe_layers},
        std::pair{times.mtp_layer, stage.mtp_layers}}) {
    accumulate(st.forward, t->forward, count);
    accumulate(st.backward, t->backward, count);
    accumulate(st.recompute, t->recompute, count);
  }
  Part ends;
  if (stage.embedding) ends += parts.embedding;
  if (stage.loss) ends += scaled(parts.loss, 1 + stage.mtp_layers);
  ends += scaled(parts.mtp_extra, stage.mtp_layers);
  Part ends_backward = scaled(ends, 2.0);
  ends_backward.tp = ends.tp;
  // Their TP collectives are not userbuffers-overlapped (the output layer is not a TE linear).
  add_exposed(st.forward, ends, c, 0, 0, 0);
  add_exposed(st.backward, ends_backward, c, 0, 0, 0);
  return ends;
}

// Host: the GPU waits when launching work takes longer than running it. A blocking sync per MoE
// layer splits the stream into per-layer segments. Per-layer graphs capture decoder layers only:
// the embedding and the loss (`ends`) launch eagerly.
void add_stage_host(const Context& c, const StageLayerTimes& times, const StageLayers& stage,
                    const Part& ends, StageTiming& st) {
  const Layout& l = c.l;
  const double ends_host = ends.host_ops * c.host_op_s *
                           launch_fraction(l, l.cuda_graph == CudaGraphImpl::kFullIteration);
  double host_forward = 0;
  double host_backward = 0;
  double free_host_forward = ends_host;
  double free_gpu_forward = gpu_busy(st.forward);
  double free_host_backward = ends_host * kBackwardOpsFactor;
  double free_gpu_backward = gpu_busy(st.backward) + gpu_busy(st.recompute);
  const double gap = kSyncGapOps * c.host_op_s * c.f.host;
  const bool recomputes_moe =
      l.recompute == RecomputeGranularity::kFull ||
      (l.recompute_modules & kRecomputeMoe && l.recompute == RecomputeGranularity::kSelective);
  auto add_layers = [&](const LayerTimes& t, int count) {
    if (count == 0) return;
    if (t.sync) {
      host_forward += count * (std::max(0.0, t.host_forward * c.f.host - t.gpu_forward) + gap);
      host_backward += count * std::max(0.0, t.host_backward * c.f.host - t.gpu_backward);
      free_gpu_forward -= count * t.gpu_forward;
      free_gpu_backward -= count * t.gpu_backward;
      if (recomputes_moe) host_backward += count * gap;
    } else {
      free_host_forward += count * t.host_forward;
      free_host_backward += count * t.host_backward;
    }
  };
  add_layers(*times.dense, stage.dense_layers);
  add_layers(*times.moe, stage.moe_layers);
  add_layers(*times.mtp_layer, stage.mtp_layers);
  host_forward += std::max(0.0, free_host_forward * c.f.host - std::max(0.0, free_gpu_forward));
  host_backward += std::max(0.0, free_host_backward * c.f.host - std::max(0.0, free_gpu_backward));
  st.forward.host_s = host_forward;
  st.backward.host_s = host_backward;
}

// Pipeline send/receive of one microbatch on `rank`: per model chunk, an activation forward and a
// gradient backward (perf_model.md §4.6: m·v·exposed(PP p2p)). Without interleaving, or with
// --no-overlap-p2p-communication, each exchange is on the critical path: a stage cannot start a
// chunk before its input has arrived. The interleaved schedule with overlap_p2p_comm (Megatron's
// default, and NeMo's and Megatron-Bridge's whenever virtual stages are set) overlaps only its
// steady state (Megatron's schedules.py; overlap_p2p_comm_warmup_flush is off by default): the
// warm-up forwards and cool-down backwards, 2(p - rank - 1) + (v - 1)p of each, exchange and
// wait. In the steady state each exchange is posted and its parts waited for later: the
// forward's receive before the next forward, after a backward chunk; the backward's receive
// before the next backward, after a forward chunk; the backward's send one step later. The
// forward's send is waited for at once, because the stack frees the chunk's output after it
// (deallocate_pipeline_outputs, on in Megatron-LM's, NeMo's and Megatron-Bridge's training), so
// it is exposed. The step's exposure is spread over its microbatches; the pipeline's fill and
// drain come with the bubble, which is counted in microbatches.
double stage_p2p_s(const Context& c, int rank, double forward_s, double backward_s) {
  const int p = c.l.pp;
  if (p <= 1) return 0.0;
  const int v = c.r.vp;
  const bool has_prev = rank > 0 || v > 1;
  const bool has_next = rank < p - 1 || v > 1;
  const double prev = has_prev ? p2p_message_s(c, (rank + p - 1) % p, rank) : 0.0;
  const double next = has_next ? p2p_message_s(c, rank, (rank + 1) % p) : 0.0;
  const double message = std::max(prev, next);
  if (v <= 1 || !c.l.overlap_p2p) return v * 2 * message;
  const double chunks = static_cast<double>(c.r.microbatches) * v;
  const double warmup = std::min(chunks, 2.0 * (p - rank - 1) + (v - 1.0) * p);
  const double steady = next +                                  // the forward's send
                        std::max(0.0, prev - backward_s / v) +  // the forward's receive
                        std::max(0.0, next - forward_s / v);    // the backward's receive
  return (2 * warmup * message + (chunks - warmup) * steady) / c.r.microbatches;
}

StageWork stage_work(const Context& c, const LayerParts& parts, const StageLayerTimes& times,
                     int rank) {
  const StageLayers& stage = c.r.stages[rank];
  StageWork work;
  StageTiming& st = work.timing;
  st.pipeline_rank = rank;
  st.decoder_layers = stage.decoder_layers();
  st.mtp_layers = stage.mtp_layers;
  st.embedding = stage.embedding;
  st.loss = stage.loss;
  const Part ends = add_stage_compute(c, parts, times, stage, st);
  add_stage_host(c, times, stage, ends, st);
  add_activation_offload(c, stage, st);
  work.forward_s = st.forward.total_s();
  work.backward_s = st.backward.total_s() + st.recompute.total_s();
  st.pp_p2p_s = stage_p2p_s(c, rank, work.forward_s, work.backward_s);
  st.microbatch_s = work.forward_s + work.backward_s + st.pp_p2p_s;
  return work;
}

// Data-parallel gradient reduction and parameter gathering, and the optimizer step, per step.
void add_step_tail(const Context& c, int rank, StageWork& work) {
  const Layout& l = c.l;
  const HardwareSpec& hw = c.hw;
  StageTiming& st = work.timing;
  const StageParams params = stage_params(c.w, c.r, rank);
  const int dense_group = c.r.dp * l.cp;
  const int expert_group = c.r.edp;
  const double grad_bytes = (l.grad_reduce_in_bf16 || l.megatron_fsdp) ? 2.0 : 4.0;
  const double param_bytes = l.fp8_param_gather ? 1.0 : 2.0;
  auto exchange = [&](double bytes_per_param, bool all_reduce) {
    const double factor = all_reduce ? 2.0 : 1.0;
    return (group_collective_s(hw, params.dense * bytes_per_param * factor, dense_group, l.tp) +
            group_collective_s(hw, params.expert * bytes_per_param * factor, expert_group,
                               l.ep * l.etp)) *
           c.f.dp_comm;
  };
  const double bucket_fraction =
      std::min(1.0, kDdpBucketParams / std::max(1.0, params.dense + params.expert));
  double exposed = 0;
  double total = 0;
  if (l.megatron_fsdp) {
    // Parameters gathered for forward and backward and gradients reduced, every microbatch.
    const double per_microbatch = 2 * exchange(param_bytes, false) + exchange(grad_bytes, false);
    const double hide = kDpOverlapFraction * (work.forward_s + work.backward_s);
    const double exposed_per_microbatch = std::max(0.0, per_microbatch - hide);
    total = per_microbatch * c.r.microbatches;
    exposed = exposed_per_microbatch * c.r.microbatches;
  } else {
    const bool sharded = l.distributed_optimizer;
    const double reduce = exchange(grad_bytes, !sharded);
    const double gather = sharded ? exchange(param_bytes, false) : 0.0;
    total = reduce + gather;
    const double reduce_exposed =
        l.overlap_grad_reduce
            ? std::max(reduce * bucket_fraction, reduce - kDpOverlapFraction * work.backward_s)
            : reduce;
    const double gather_exposed =
        l.overlap_param_gather
            ? std::max(gather * bucket_fraction, gather - kDpOverlapFraction * work.forward_s)
            : gather;
    exposed = reduce_exposed + gather_exposed;
  }
  // The hidden part runs NCCL kernels beside the backward (forward) compute and slows it.
  st.dp_comm_s = exposed + (total - exposed) * c.nccl_contention;
  st.dp_comm_hidden_s = total - exposed;

  // Optimizer: Adam over this rank's shard on the GPU, or partly on the CPU.
  const bool sharded = l.distributed_optimizer || l.megatron_fsdp;
  const double shard = sharded ? params.dense / dense_group + params.expert / expert_group
                               : params.dense + params.expert;
  const double offload = l.optimizer_cpu_offload ? l.optimizer_offload_fraction : 0.0;
  const double hbm = hw.hbm_bandwidth_gb_per_s * 1e9 * hw.hbm_efficiency;
  const double gpu = ((1 - offload) * shard * kAdamBytesPerParam +
                      (params.dense + params.expert) * kGradNormBytesPerParam) /
                     hbm;
  double cpu = 0;
  if (offload > 0) {
    const double adam = offload * shard / hw.cpu_adam_params_per_s;
    const double copies =
        offload * shard * kHostOffloadCopyBytesPerParam / (hw.host_link_bandwidth_gb_per_s * 1e9);
    cpu = l.overlap_cpu_optimizer_d2h_h2d ? std::max(adam, copies) : adam + copies;
  }
  st.optimizer_s = (gpu + cpu) * c.f.optimizer;
}

}  // namespace

namespace {

// The context of one prediction: the shapes of a microbatch, the CP flavour, and the share of
// SMs that each kind of communication kernel holds while it overlaps compute.
Context make_context(const Workload& w, const ResolvedLayout& r, const CostFactors& f) {
  const Layout& l = r.layout;
  Context c{w, r, f, w.model, w.hardware, l};
  c.tokens = static_cast<double>(w.seq_length) * l.micro_batch_size / l.cp;
  c.sp_tokens = c.tokens / (l.sequence_parallel ? l.tp : 1);
  c.fp8 = w.precision == Precision::kFp8;
  const std::string& position = position_embedding_type(l, w.model);
  const bool rotary = position == "rope" || position == "yarn" || position == "mrope";
  c.rope_unfused = rotary && w.model.attention == AttentionKind::kGroupedQuery &&
                   !applies_rope_fusion(l, position);
  c.host_op_s = w.hardware.host_op_us * 1e-6;
  c.fused_grouped_mlp_note = fused_grouped_mlp_note(c);
  c.fused_grouped_mlp = l.fused_grouped_mlp && c.fused_grouped_mlp_note.empty();
  // Per-layer lists are read by their first entry.
  const std::string_view cp_type =
      std::string_view(l.cp_comm_type).substr(0, l.cp_comm_type.find(' '));
  c.cp_all_to_all = cp_type == "a2a";
  c.cp_overlapped = cp_type == "p2p" || cp_type == "a2a+p2p";
  const HardwareSpec& hw = w.hardware;
  const auto sm_share = [&](double sms) { return std::clamp(sms / hw.sm_count, 0.0, 1.0); };
  c.nccl_contention = sm_share(hw.nccl_comm_sms);
  c.userbuffers_contention = sm_share(hw.userbuffers_comm_sms);
  c.ep_contention = c.nccl_contention;
  if (l.dispatcher == Dispatcher::kFlex && l.flex_backend == FlexBackend::kDeepep) {
    c.ep_contention = sm_share(hw.deepep_comm_sms);
  } else if (l.dispatcher == Dispatcher::kFlex && l.flex_backend == FlexBackend::kHybridep) {
    c.ep_contention = sm_share(hw.hybridep_comm_sms);
  }
  return c;
}

// Each pipeline rank's work per microbatch and its step tail.
std::vector<StageWork> stage_works(const Context& c, const LayerParts& parts) {
  const Workload& w = c.w;
  const ResolvedLayout& r = c.r;
  const Layout& l = c.l;
  // Full recomputation repeats a layer's whole forward; per rank, `share` of its layers.
  auto full_share = [&](const StageLayers& stage) {
    if (l.recompute != RecomputeGranularity::kFull) return 0.0;
    const int layers = stage.decoder_layers() + stage.mtp_layers;
    if (layers == 0) return 0.0;
    if (l.recompute_method == RecomputeMethod::kUniform) return 1.0;
    const int chunk_layers = std::max(1, layers / r.vp);
    return std::min(
        1.0, std::min(l.recompute_num_layers, chunk_layers) * r.vp / static_cast<double>(layers));
  };
  const bool last_moe = is_moe_layer(w.model, w.model.num_layers - 1);
  const int p_count = l.pp;
  std::vector<StageWork> works;
  works.reserve(p_count);
  // EP overlap merges one chunk's forward with another's backward in the steady state of
  // (interleaved) 1F1B; a rank's warm-up forwards (one more with EP overlap) and its cool-down
  // backwards run alone. Without pipelining, only the first forward and the last backward.
  const double chunks = static_cast<double>(r.microbatches) * r.vp;
  auto merged_share = [&](int rank) {
    if (!l.ep_overlap) return 0.0;
    const double warmup =
        l.pp > 1 ? std::min(chunks, 2.0 * (l.pp - rank - 1) + (r.vp - 1.0) * l.pp + 1) : 1.0;
    return std::max(0.0, chunks - warmup) / chunks;
  };
  for (int rank = 0; rank < p_count; ++rank) {
    const double share = full_share(r.stages[rank]);
    const double merged = merged_share(rank);
    const LayerTimes dense = layer_times(c, parts, LayerKind::kDense, share, merged);
    const LayerTimes moe =
        is_moe(w.model) ? layer_times(c, parts, LayerKind::kMoe, share, merged) : dense;
    const LayerTimes& mtp_layer = last_moe ? moe : dense;
    works.push_back(stage_work(c, parts, StageLayerTimes{&dense, &moe, &mtp_layer}, rank));
    add_step_tail(c, rank, works.back());
  }
  return works;
}

// The step of (interleaved) 1F1B from the ranks' work: m microbatches at the pace of the slowest
// rank, plus fill and drain, and the data-parallel and optimizer tail of the slowest rank.
void step_breakdown(const Context& c, const std::vector<StageWork>& works, Prediction& p) {
  const ResolvedLayout& r = c.r;
  const Layout& l = c.l;
  const int p_count = l.pp;
  int critical = 0;
  double mean_microbatch = 0;
  for (int rank = 0; rank < p_count; ++rank) {
    mean_microbatch += works[rank].timing.microbatch_s / p_count;
    if (works[rank].timing.microbatch_s > works[critical].timing.microbatch_s) critical = rank;
  }
  int tail_rank = 0;
  for (int rank = 0; rank < p_count; ++rank) {
    const StageTiming& a = works[rank].timing;
    const StageTiming& b = works[tail_rank].timing;
    if (a.dp_comm_s + a.optimizer_s > b.dp_comm_s + b.optimizer_s) tail_rank = rank;
  }
  const double m = r.microbatches;
  const double bubble = p_count > 1 ? (p_count - 1.0) / r.vp * mean_microbatch : 0.0;
  const StageTiming& crit = works[critical].timing;
  const StageTiming& tail = works[tail_rank].timing;
  Breakdown& b = p.breakdown;
  b.gemm_s = m * (crit.forward.gemm_s + crit.backward.gemm_s);
  b.attention_s = m * (crit.forward.attention_s + crit.backward.attention_s);
  b.elementwise_s = m * (crit.forward.elementwise_s + crit.backward.elementwise_s);
  b.compute_s = b.gemm_s + b.attention_s + b.elementwise_s;
  auto comm = [&](double PhaseTimes::*field) {
    return m * (crit.forward.*field + crit.backward.*field + crit.recompute.*field);
  };
  b.tp_comm_s = comm(&PhaseTimes::tp_comm_s);
  b.cp_comm_s = comm(&PhaseTimes::cp_comm_s);
  b.ep_a2a_s = comm(&PhaseTimes::ep_a2a_s);
  b.host_s = comm(&PhaseTimes::host_s);
  b.recompute_s = m * crit.recompute.compute_s();
  b.pp_p2p_s = m * crit.pp_p2p_s;
  b.bubble_s = bubble;
  b.dp_comm_s = tail.dp_comm_s;
  b.optimizer_s = tail.optimizer_s;
  p.step_time_s = b.total_s();
  p.critical_stage = critical;
}

// Throughput, MFU and Megatron's TFLOP/s from the step time.
void step_rates(const Context& c, Prediction& p) {
  const Workload& w = c.w;
  const Layout& l = c.l;
  const double tokens = static_cast<double>(w.global_batch_size) * w.seq_length;
  p.tokens_per_s_per_gpu = tokens / (p.step_time_s * w.gpus);
  const double peak = (c.fp8 ? w.hardware.fp8_dense_tflops : w.hardware.bf16_dense_tflops) * 1e12;
  p.mfu = mfu_flops_per_token(w.model, w.seq_length, l.tp) * p.tokens_per_s_per_gpu / peak;
  p.megatron_tflops_per_gpu =
      megatron_flops_per_step(w.model, w.seq_length, w.global_batch_size, l.tp, l.mtp_layers) /
      (p.step_time_s * w.gpus * 1e12);
}

// Each stage's timing with its memory, and whether the step fits.
void stage_memory(const Context& c, std::vector<StageWork> works, Prediction& p) {
  const Workload& w = c.w;
  const ResolvedLayout& r = c.r;
  const int p_count = c.l.pp;
  p.memory_capacity_gib = w.hardware.hbm_capacity_gib;
  p.stages.reserve(p_count);
  p.peak_memory_gib_by_stage.reserve(p_count);
  for (int rank = 0; rank < p_count; ++rank) {
    StageTiming timing = works[rank].timing;
    timing.memory = estimate_stage_memory(w, r, rank, c.f);
    p.peak_memory_gib_by_stage.push_back(timing.memory.peak_gib);
    p.peak_memory_gib = std::max(p.peak_memory_gib, timing.memory.peak_gib);
    p.stages.push_back(std::move(timing));
  }
  p.fits_in_memory = p.peak_memory_gib <= p.memory_capacity_gib;
}

}  // namespace

Prediction predict_resolved(const Workload& w, const ResolvedLayout& r, const CostFactors& f) {
  const Context c = make_context(w, r, f);
  Prediction p;
  p.valid = true;
  p.layout = layout_summary(r);
  p.dp = r.dp;
  p.edp = r.edp;
  p.vp = r.vp;
  p.microbatches = r.microbatches;
  if (!c.fused_grouped_mlp_note.empty()) p.notes.push_back(c.fused_grouped_mlp_note);
  const LayerParts parts = layer_parts(c);
  std::vector<StageWork> works = stage_works(c, parts);
  step_breakdown(c, works, p);
  step_rates(c, p);
  stage_memory(c, std::move(works), p);
  ATTUNE_ASSERT(std::abs(p.breakdown.total_s() - p.step_time_s) <= 1e-9 * p.step_time_s,
                "the breakdown adds up to the step time");
  return p;
}

Prediction predict(const Workload& workload, const Recipe& recipe, const CostFactors& factors) {
  Result<Layout> layout = decode_layout(workload, recipe);
  if (!layout.ok()) {
    Prediction p;
    p.error = layout.error();
    return p;
  }
  Result<ResolvedLayout> resolved = resolve_layout(workload, layout.value());
  if (!resolved.ok()) {
    Prediction p;
    p.error = resolved.error();
    return p;
  }
  return predict_resolved(workload, resolved.value(), factors);
}

}  // namespace attune::sim
