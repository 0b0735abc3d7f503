#include "adapters/world/kineto_writer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "adapters/kineto/kineto_trace.h"
#include "adapters/model/memory_model.h"
#include "adapters/model/model_spec.h"
#include "adapters/world/process_groups.h"
#include "events/assert.h"

namespace attune::sim {
namespace {

constexpr int kTpStream = 20;
constexpr int kCpStream = 24;
constexpr int kEpStream = 28;
constexpr int kPpStream = 36;
constexpr int kDpStream = 44;
constexpr int kExpertDpStream = 48;
constexpr int kCpuPidBase = 41200;          // the worker processes' pids, as the log writer's
constexpr int kAutogradThreadOffset = 157;  // tid of the autograd thread, from the pid
constexpr double kLaunchLeadMaxUs = 1500;   // how far the host runs ahead of the GPU
// Kineto numbers CPU ops (External id) and runtime calls (correlation) separately.
constexpr std::int64_t kFirstExternalId = 1200;
constexpr std::int64_t kFirstCorrelation = 120000;
constexpr std::string_view kNcclVersion = "2.28.9";

// ---- Kernel names -------------------------------------------------------------------------

struct KernelNames {
  std::string gemm_fwd, gemm_dgrad, gemm_wgrad, grouped_fwd, grouped_bwd;
  std::string flash_fwd, flash_bwd;
  std::string norm_fwd, norm_bwd, act_fwd, act_bwd, add, permute, unpermute;
  std::string embedding_fwd, embedding_bwd, softmax_fwd, cross_entropy_fwd, cross_entropy_bwd;
  std::string adam, l2norm, scale;
  std::string deepep_dispatch, deepep_combine;
};

// cuBLAS's GEMMs and CUTLASS's grouped GEMM, as each GPU generation names them.
void set_gemm_names(const Workload& w, KernelNames& k) {
  const bool blackwell = w.hardware.compute_capability >= 10.0;
  const bool hopper = !blackwell && w.hardware.compute_capability >= 9.0;
  const bool fp8 = w.precision == Precision::kFp8;
  if (blackwell) {
    k.gemm_fwd = fp8 ? "nvjet_qqtst_256x256_128x2_2x1_v_bz_coopA_TNT"
                     : "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNT";
    k.gemm_dgrad = fp8 ? "nvjet_qqtst_256x256_128x2_2x1_v_bz_coopA_NNT"
                       : "nvjet_tst_192x192_64x3_2x1_v_bz_coopB_NNT";
    k.gemm_wgrad = fp8 ? "nvjet_qqtst_256x128_128x3_1x2_h_bz_coopB_NTN"
                       : "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTN";
  } else if (hopper) {
    const std::string types = fp8 ? "e4m3bf16_e4m3f32_f32" : "bf16bf16_bf16f32_f32";
    const std::string tile =
        fp8 ? "128x128x128_warpgroupsize1x1x1" : "128x256x64_warpgroupsize2x1x1";
    k.gemm_fwd = "sm90_xmma_gemm_" + types + "_tn_n_tilesize" + tile +
                 "_execute_segment_k_off_kernel__5x_cublas";
    k.gemm_dgrad = "sm90_xmma_gemm_" + types + "_nn_n_tilesize" + tile +
                   "_execute_segment_k_off_kernel__5x_cublas";
    k.gemm_wgrad = "sm90_xmma_gemm_" + types + "_nt_n_tilesize" + tile +
                   "_execute_segment_k_off_kernel__5x_cublas";
  } else {
    k.gemm_fwd = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn";
    k.gemm_dgrad = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_nn";
    k.gemm_wgrad = "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_nt";
  }
  const std::string arch = blackwell ? "Sm100" : hopper ? "Sm90" : "Sm80";
  k.grouped_fwd =
      "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::"
      "GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<"
      "cutlass::gemm::Mainloop" +
      arch +
      "ArrayTmaGmmaWarpSpecializedCooperative<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> "
      ">, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>, cute::tuple<cute::C<128>, "
      "cute::C<256>, cute::C<64> >, cutlass::bfloat16_t, cutlass::bfloat16_t>, "
      "cutlass::epilogue::collective::CollectiveEpilogue<cutlass::bfloat16_t>, void> >("
      "cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, "
      "int, int> > >::Params)";
  k.grouped_bwd = k.grouped_fwd;
}

// The layer's other kernels: flash attention, Transformer Engine's norms and activations,
// PyTorch's elementwise, permutation, embedding and loss kernels.
void set_layer_kernel_names(KernelNames& k) {
  k.flash_fwd =
      "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
      "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, "
      "true, false, false, true, true, false, false>(flash::Flash_fwd_params)";
  k.flash_bwd =
      "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, "
      "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, "
      "cutlass::bfloat16_t> >, true, false, true, false, false, false, false>("
      "flash::Flash_bwd_params)";
  k.norm_fwd =
      "void transformer_engine::normalization::rmsnorm_fwd_tuned_kernel<transformer_engine::"
      "normalization::Kernel_traits<float, __nv_bfloat16, __nv_bfloat16, float, unsigned int, "
      "4096u, 1u, 4u, 1u, 16u> >(transformer_engine::normalization::FwdParams)";
  k.norm_bwd =
      "void transformer_engine::normalization::rmsnorm_bwd_tuned_kernel<transformer_engine::"
      "normalization::Kernel_traits<float, __nv_bfloat16, __nv_bfloat16, float, unsigned int, "
      "4096u, 1u, 4u, 1u, 16u> >(transformer_engine::normalization::BwdParams)";
  k.act_fwd =
      "void transformer_engine::detail::gated_act_kernel<true, float, &transformer_engine::silu<"
      "float, float>, __nv_bfloat16, __nv_bfloat16>(__nv_bfloat16 const*, __nv_bfloat16*, float "
      "const*, float*, float*, unsigned long, unsigned long)";
  k.act_bwd =
      "void transformer_engine::detail::dgated_act_kernel<true, float, &transformer_engine::silu<"
      "float, float>, &transformer_engine::dsilu<float, float>, __nv_bfloat16, __nv_bfloat16>("
      "__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, unsigned long, unsigned long)";
  k.add =
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::"
      "BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
      "at::detail::Array<char*, 3>)";
  k.permute =
      "void moe_permute_kernel<__nv_bfloat16, __nv_bfloat16, false>(__nv_bfloat16 const*, "
      "__nv_bfloat16*, int const*, float const*, float*, int, int, int)";
  k.unpermute =
      "void moe_unpermute_kernel<__nv_bfloat16, float, true>(__nv_bfloat16 const*, "
      "__nv_bfloat16*, int const*, float const*, int, int, int)";
  k.embedding_fwd =
      "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, "
      "unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
      "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
      "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned "
      "int, long)";
  k.embedding_bwd =
      "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, "
      "float, long>(long const*, c10::BFloat16 const*, c10::BFloat16*, int, long, int)";
  k.softmax_fwd =
      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
      "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)";
  k.cross_entropy_fwd =
      "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, "
      "float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, "
      "long, long)";
  k.cross_entropy_bwd =
      "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
      "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, "
      "float const*, int)";
}

// The optimizer's multi-tensor kernels and DeepEP's dispatch and combine.
void set_optimizer_and_deepep_names(bool deepep_internode, KernelNames& k) {
  k.adam =
      "void multi_tensor_apply_kernel<TensorListMetadata<4>, transformer_engine::"
      "multi_tensor_adam::AdamFunctor<float, float, float, long>, int, float, float, float, "
      "float, float, float, transformer_engine::multi_tensor_adam::adamMode_t, float>(long, int "
      "volatile*, TensorListMetadata<4>, transformer_engine::multi_tensor_adam::AdamFunctor<"
      "float, float, float, long>, int, float, float, float, float, float, float, "
      "transformer_engine::multi_tensor_adam::adamMode_t, float)";
  k.l2norm =
      "void multi_tensor_apply_kernel<TensorListMetadata<1>, transformer_engine::"
      "multi_tensor_l2norm::L2NormFunctor<float>, float*, float*, int*, bool, int>(long, int "
      "volatile*, TensorListMetadata<1>, transformer_engine::multi_tensor_l2norm::L2NormFunctor<"
      "float>, float*, float*, int*, bool, int)";
  k.scale =
      "void multi_tensor_apply_kernel<TensorListMetadata<2>, transformer_engine::"
      "multi_tensor_scale::ScaleFunctor<float, float>, float>(long, int volatile*, "
      "TensorListMetadata<2>, transformer_engine::multi_tensor_scale::ScaleFunctor<float, "
      "float>, float)";
  const std::string where = deepep_internode ? "internode" : "intranode";
  k.deepep_dispatch = "void deep_ep::" + where +
                      "::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, "
                      "int*, void const*, float const*, long const*, float const*, int const*, "
                      "int, int, int, int, int, int, int, void**, int, int, int)";
  k.deepep_combine = "void deep_ep::" + where +
                     "::combine<__nv_bfloat16, 8, 768, 4096>(__nv_bfloat16*, float*, "
                     "__nv_bfloat16 const*, float const*, __nv_bfloat16 const*, __nv_bfloat16 "
                     "const*, int const*, int const*, int const*, int, int, int, int, void**, "
                     "int, int, int)";
}

KernelNames kernel_names(const Workload& w, bool deepep_internode) {
  KernelNames k;
  set_gemm_names(w, k);
  set_layer_kernel_names(k);
  set_optimizer_and_deepep_names(deepep_internode, k);
  return k;
}

std::string nccl_kernel(std::string_view collective, std::string_view dtype) {
  const std::string args = "(ncclDevKernelArgsStorage<4096ul>)";
  const std::string type = dtype == "Float" ? "f32" : "bf16";
  if (collective == "allgather") return "ncclDevKernel_AllGather_RING_LL" + args;
  if (collective == "reduce_scatter") {
    return "ncclDevKernel_ReduceScatter_Sum_" + type + "_RING_LL" + args;
  }
  if (collective == "allreduce") return "ncclDevKernel_AllReduce_Sum_" + type + "_RING_LL" + args;
  return "ncclDevKernel_SendRecv" + args;
}

// ---- The GPU timeline of one step ---------------------------------------------------------

struct CommArgs {
  std::string collective;  // Kineto's "Collective name"
  double in_nelems = 0;
  double out_nelems = 0;
  std::string dtype = "BFloat16";
  const ProcessGroup* group = nullptr;
};

struct Kernel {
  std::string name;
  int stream = kComputeStream;
  double start_us = 0;
  double dur_us = 0;
  bool backward_thread = false;
  bool comm = false;  // an NCCL kernel with CommArgs
  CommArgs args;
  int scope = -1;               // index of the CPU scope that launched it
  bool after_host_gap = false;  // the GPU waited for the host before it
};

struct Scope {
  std::string name;
  bool backward_thread = false;
};

enum class Cost : std::uint8_t { kGemm, kAttention, kElementwise, kTp, kCp, kEp };

// One kernel of a unit of work, with its weight within its cost term.
struct Op {
  Cost cost = Cost::kGemm;
  double weight = 0;
  const std::string* name = nullptr;  // compute kernels
  int stream = kComputeStream;        // communication kernels
  CommArgs args;
  bool deepep = false;  // a DeepEP kernel: communication on its own stream, no NCCL arguments
  std::string deepep_name;
};

class Timeline {
 public:
  explicit Timeline(double start_us) : cursor_us_(start_us) {}

  double cursor_us() const { return cursor_us_; }
  void advance_to(double us) { cursor_us_ = std::max(cursor_us_, us); }
  // The GPU waits `us` for the host: the next compute kernel is launched just before it runs.
  void gap(double us) {
    cursor_us_ += std::max(0.0, us);
    host_gap_pending_ = host_gap_pending_ || us > 0;
  }

  int open_scope(std::string name, bool backward_thread) {
    scopes.push_back(Scope{std::move(name), backward_thread});
    return static_cast<int>(scopes.size()) - 1;
  }

  void compute(const std::string& name, double dur_us, int scope, bool backward_thread) {
    if (dur_us <= 0) return;
    kernels.push_back(
        Kernel{name, kComputeStream, cursor_us_, dur_us, backward_thread, false, {}, scope});
    kernels.back().after_host_gap = host_gap_pending_;
    host_gap_pending_ = false;
    cursor_us_ += dur_us;
  }

  // A communication kernel: the compute stream waits `exposed_us`; the rest overlaps it.
  void communicate(std::string name, int stream, double exposed_us, double hidden_us, bool nccl,
                   CommArgs args, int scope, bool backward_thread) {
    if (exposed_us + hidden_us <= 0) return;
    double& stream_end = stream_end_us_[stream];
    const double start = std::max(cursor_us_, stream_end);
    kernels.push_back(Kernel{std::move(name), stream, start, exposed_us + hidden_us,
                             backward_thread, nccl, std::move(args), scope});
    stream_end = start + exposed_us + hidden_us;
    cursor_us_ = start + exposed_us;
  }

  // A communication kernel that ran concurrently with the last `hidden_us` of compute.
  void communicate_behind(std::string name, int stream, double hidden_us, CommArgs args, int scope,
                          bool backward_thread) {
    if (hidden_us <= 0) return;
    double& stream_end = stream_end_us_[stream];
    const double start = std::max(cursor_us_ - hidden_us, stream_end);
    kernels.push_back(Kernel{std::move(name), stream, start, hidden_us, backward_thread, true,
                             std::move(args), scope});
    stream_end = start + hidden_us;
    cursor_us_ = std::max(cursor_us_, stream_end);
  }

  std::vector<Kernel> kernels;
  std::vector<Scope> scopes;

 private:
  double cursor_us_;
  bool host_gap_pending_ = false;
  std::map<int, double> stream_end_us_;
};

// What a unit of one pipeline rank does: its layers, in model order.
struct ChunkLayers {
  int dense = 0;
  int moe = 0;
  int mtp = 0;
  bool embedding = false;
  bool loss = false;
  int decoder() const { return dense + moe; }
};

struct StagePlan {
  const Workload* workload = nullptr;
  const ResolvedLayout* resolved = nullptr;
  const StageTiming* timing = nullptr;
  const KernelNames* names = nullptr;
  std::map<GroupKind, ProcessGroup> groups;
  std::vector<ChunkLayers> chunks;
  std::vector<double> chunk_share;  // of the stage's per-microbatch phase times
  double w_attention = 0, w_dense = 0, w_moe = 0, w_mtp_extra = 0, w_logits = 0;
  int layers_per_kernel = 1;  // coalescing of consecutive layers
  double tokens_local = 0;    // tokens of one microbatch on one context-parallel rank
  bool moe_model = false;
};

PhaseTimes scaled(const PhaseTimes& t, double k) {
  PhaseTimes o = t;
  for (double* v :
       {&o.gemm_s, &o.attention_s, &o.elementwise_s, &o.tp_comm_s, &o.cp_comm_s, &o.ep_a2a_s,
        &o.tp_comm_hidden_s, &o.cp_comm_hidden_s, &o.ep_a2a_hidden_s, &o.host_s}) {
    *v *= k;
  }
  return o;
}

CommArgs comm_args(const StagePlan& plan, std::string collective, double in, double out,
                   GroupKind group, std::string dtype = "BFloat16") {
  return CommArgs{std::move(collective), in, out, std::move(dtype), &plan.groups.at(group)};
}

// The tensor-parallel collective around a block of `count` layers: with sequence parallelism an
// all-gather before it (`gather`) and a reduce-scatter after; without, an all-reduce after.
void add_tp_comm(const StagePlan& plan, double count, bool gather, std::vector<Op>& ops) {
  const Layout& l = plan.resolved->layout;
  if (l.tp <= 1) return;
  const double h = plan.workload->model.hidden_size;
  const double tokens = plan.tokens_local;
  if (l.sequence_parallel) {
    ops.push_back(Op{Cost::kTp,
                     count,
                     nullptr,
                     kTpStream,
                     gather ? comm_args(plan, "allgather", tokens * h / l.tp, tokens * h,
                                        GroupKind::kTensorParallel)
                            : comm_args(plan, "reduce_scatter", tokens * h, tokens * h / l.tp,
                                        GroupKind::kTensorParallel),
                     false,
                     {}});
  } else if (!gather) {
    ops.push_back(
        Op{Cost::kTp,
           count,
           nullptr,
           kTpStream,
           comm_args(plan, "allreduce", tokens * h, tokens * h, GroupKind::kTensorParallel),
           false,
           {}});
  }
}

// The expert exchange of `count` MoE layers: the dispatch before the experts, or the combine
// after them, as the recipe's dispatcher runs it.
Op expert_exchange(const StagePlan& plan, double count, bool dispatch) {
  const Layout& l = plan.resolved->layout;
  const KernelNames& k = *plan.names;
  const double h = plan.workload->model.hidden_size;
  const double tokens = plan.tokens_local;
  if (l.dispatcher == Dispatcher::kFlex) {
    return Op{Cost::kEp,
              count,
              nullptr,
              kEpStream,
              {},
              true,
              dispatch ? k.deepep_dispatch : k.deepep_combine};
  }
  if (l.dispatcher == Dispatcher::kAllgather) {
    return Op{Cost::kEp,
              count,
              nullptr,
              kEpStream,
              dispatch ? comm_args(plan, "allgather", tokens * h / l.tp, tokens * h * l.ep,
                                   GroupKind::kExpertTensorAndModelParallel)
                       : comm_args(plan, "reduce_scatter", tokens * h * l.ep, tokens * h / l.tp,
                                   GroupKind::kExpertTensorAndModelParallel),
              false,
              {}};
  }
  const double routed = tokens * plan.workload->model.moe_router_topk * h / std::max(1, l.tp);
  return Op{Cost::kEp,
            count,
            nullptr,
            kEpStream,
            comm_args(plan, "all_to_allv", routed, routed, GroupKind::kExpertParallel),
            false,
            {}};
}

// The ops of one layer group (`count` layers of one kind), forward.
void forward_layer_ops(const StagePlan& plan, bool moe_layer, double count, bool mtp,
                       std::vector<Op>& ops) {
  const Layout& l = plan.resolved->layout;
  const KernelNames& k = *plan.names;
  const double tokens = plan.tokens_local;
  const auto compute = [&](Cost cost, double weight, const std::string& name) {
    ops.push_back(Op{cost, weight, &name, kComputeStream, {}, false, {}});
  };
  const double w_mlp = moe_layer ? plan.w_moe : plan.w_dense;
  compute(Cost::kElementwise, 0.15 * count, k.norm_fwd);
  if (mtp) compute(Cost::kGemm, plan.w_mtp_extra * count, k.gemm_fwd);
  add_tp_comm(plan, count, true, ops);
  compute(Cost::kGemm, 0.7 * plan.w_attention * count, k.gemm_fwd);
  if (l.cp > 1) {
    const double kv = 2.0 * key_value_width(plan.workload->model) / l.tp;
    ops.push_back(Op{Cost::kCp,
                     count,
                     nullptr,
                     kCpStream,
                     comm_args(plan, "send", tokens * kv, tokens * kv, GroupKind::kContextParallel),
                     false,
                     {}});
  }
  compute(Cost::kAttention, count, k.flash_fwd);
  compute(Cost::kGemm, 0.3 * plan.w_attention * count, k.gemm_fwd);
  add_tp_comm(plan, count, false, ops);
  compute(Cost::kElementwise, 0.1 * count, k.add);
  compute(Cost::kElementwise, 0.15 * count, k.norm_fwd);
  add_tp_comm(plan, count, true, ops);
  if (moe_layer) {
    compute(Cost::kGemm, 0.02 * w_mlp * count, k.gemm_fwd);
    compute(Cost::kElementwise, 0.15 * count, k.permute);
    ops.push_back(expert_exchange(plan, count, true));
    compute(Cost::kGemm, 0.66 * w_mlp * count, k.grouped_fwd);
    compute(Cost::kElementwise, 0.2 * count, k.act_fwd);
    compute(Cost::kGemm, 0.32 * w_mlp * count, k.grouped_fwd);
    ops.push_back(expert_exchange(plan, count, false));
    compute(Cost::kElementwise, 0.1 * count, k.unpermute);
  } else {
    compute(Cost::kGemm, 0.67 * w_mlp * count, k.gemm_fwd);
    compute(Cost::kElementwise, 0.35 * count, k.act_fwd);
    compute(Cost::kGemm, 0.33 * w_mlp * count, k.gemm_fwd);
  }
  add_tp_comm(plan, count, false, ops);
  compute(Cost::kElementwise, 0.1 * count, k.add);
}

// The same layer group, backward: dgrad and wgrad per GEMM, in reverse order.
void backward_layer_ops(const StagePlan& plan, bool moe_layer, double count, bool mtp,
                        std::vector<Op>& ops) {
  std::vector<Op> forward;
  forward_layer_ops(plan, moe_layer, count, mtp, forward);
  const KernelNames& k = *plan.names;
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    Op op = *it;
    if (op.cost == Cost::kGemm) {
      const bool grouped = op.name == &k.grouped_fwd;
      Op dgrad = op;
      dgrad.weight = op.weight * 0.5;
      dgrad.name = grouped ? &k.grouped_bwd : &k.gemm_dgrad;
      Op wgrad = dgrad;
      wgrad.name = grouped ? &k.grouped_bwd : &k.gemm_wgrad;
      ops.push_back(dgrad);
      ops.push_back(wgrad);
      continue;
    }
    if (op.name == &k.norm_fwd) op.name = &k.norm_bwd;
    if (op.name == &k.act_fwd) op.name = &k.act_bwd;
    if (op.name == &k.flash_fwd) op.name = &k.flash_bwd;
    if (op.name == &k.add) continue;  // the residual's gradient needs no kernel of its own
    if (op.name == &k.permute) op.name = &k.unpermute;
    if (op.deepep) {
      op.deepep_name = op.deepep_name == k.deepep_dispatch ? k.deepep_combine : k.deepep_dispatch;
    }
    if (op.args.collective == "allgather") {
      std::swap(op.args.in_nelems, op.args.out_nelems);
      op.args.collective = "reduce_scatter";
    } else if (op.args.collective == "reduce_scatter") {
      std::swap(op.args.in_nelems, op.args.out_nelems);
      op.args.collective = "allgather";
    }
    ops.push_back(op);
  }
}

// Ops of one unit (one chunk of one microbatch) in one direction.
enum class Direction : std::uint8_t { kForward, kRecompute, kBackward };

std::vector<Op> unit_ops(const StagePlan& plan, const ChunkLayers& chunk, Direction direction) {
  const KernelNames& k = *plan.names;
  std::vector<Op> ops;
  const auto compute = [&](Cost cost, double weight, const std::string& name) {
    ops.push_back(Op{cost, weight, &name, kComputeStream, {}, false, {}});
  };
  const auto layers = [&](bool backward) {
    // Model order: dense layers first, then MoE layers, then MTP depths; backward reversed.
    struct Group {
      bool moe;
      double count;
      bool mtp;
    };
    std::vector<Group> groups;
    const int g = std::max(1, plan.layers_per_kernel);
    for (int i = 0; i < chunk.dense; i += g)
      groups.push_back({false, 1.0 * std::min(g, chunk.dense - i), false});
    for (int i = 0; i < chunk.moe; i += g)
      groups.push_back({true, 1.0 * std::min(g, chunk.moe - i), false});
    for (int i = 0; i < chunk.mtp; i += g) {
      groups.push_back({plan.moe_model, 1.0 * std::min(g, chunk.mtp - i), true});
    }
    if (backward) std::reverse(groups.begin(), groups.end());
    for (const Group& group : groups) {
      if (backward) {
        backward_layer_ops(plan, group.moe, group.count, group.mtp, ops);
      } else {
        forward_layer_ops(plan, group.moe, group.count, group.mtp, ops);
      }
    }
  };
  if (direction == Direction::kBackward) {
    if (chunk.loss) {
      compute(Cost::kElementwise, 0.5, k.cross_entropy_bwd);
      compute(Cost::kGemm, 0.5 * plan.w_logits, k.gemm_dgrad);
      compute(Cost::kGemm, 0.5 * plan.w_logits, k.gemm_wgrad);
      compute(Cost::kElementwise, 0.15, k.norm_bwd);
    }
    layers(true);
    if (chunk.embedding) compute(Cost::kElementwise, 0.3, k.embedding_bwd);
    return ops;
  }
  if (chunk.embedding) compute(Cost::kElementwise, 0.3, k.embedding_fwd);
  layers(false);
  if (chunk.loss && direction == Direction::kForward) {
    compute(Cost::kElementwise, 0.15, k.norm_fwd);
    compute(Cost::kGemm, plan.w_logits, k.gemm_fwd);
    compute(Cost::kElementwise, 0.35, k.softmax_fwd);
    compute(Cost::kElementwise, 0.15, k.cross_entropy_fwd);
  }
  return ops;
}

// Emits one unit's ops with the unit's phase times (already scaled to microseconds).
void emit_unit(Timeline& timeline, const std::vector<Op>& ops, const PhaseTimes& t_us, int scope,
               bool backward_thread) {
  double sums[6] = {0, 0, 0, 0, 0, 0};
  int compute_ops = 0;
  for (const Op& op : ops) {
    sums[static_cast<int>(op.cost)] += op.weight;
    if (op.name != nullptr) ++compute_ops;
  }
  const auto share = [&](const Op& op, double total) {
    const double sum = sums[static_cast<int>(op.cost)];
    return sum > 0 ? total * op.weight / sum : 0.0;
  };
  const double host_gap_us = compute_ops > 0 ? t_us.host_s / compute_ops : 0.0;
  for (const Op& op : ops) {
    switch (op.cost) {
      case Cost::kGemm:
      case Cost::kAttention:
      case Cost::kElementwise: {
        const double total = op.cost == Cost::kGemm        ? t_us.gemm_s
                             : op.cost == Cost::kAttention ? t_us.attention_s
                                                           : t_us.elementwise_s;
        timeline.gap(host_gap_us);
        timeline.compute(*op.name, share(op, total), scope, backward_thread);
        break;
      }
      case Cost::kTp:
      case Cost::kCp:
      case Cost::kEp: {
        const double exposed = op.cost == Cost::kTp   ? t_us.tp_comm_s
                               : op.cost == Cost::kCp ? t_us.cp_comm_s
                                                      : t_us.ep_a2a_s;
        const double hidden = op.cost == Cost::kTp   ? t_us.tp_comm_hidden_s
                              : op.cost == Cost::kCp ? t_us.cp_comm_hidden_s
                                                     : t_us.ep_a2a_hidden_s;
        if (op.deepep) {
          timeline.communicate(op.deepep_name, op.stream, share(op, exposed), share(op, hidden),
                               false, {}, scope, backward_thread);
        } else {
          timeline.communicate(nccl_kernel(op.args.collective, op.args.dtype), op.stream,
                               share(op, exposed), share(op, hidden), true, op.args, scope,
                               backward_thread);
        }
        break;
      }
    }
  }
}

// The layers of each model chunk of pipeline rank `stage`.
std::vector<ChunkLayers> chunks_of(const StageLayers& stage, int vp) {
  std::vector<ChunkLayers> chunks(static_cast<std::size_t>(std::max(1, vp)));
  const int n = static_cast<int>(chunks.size());
  for (int c = 0; c < n; ++c) {
    const auto part = [&](int total) { return total / n + (c < total % n ? 1 : 0); };
    chunks[static_cast<std::size_t>(c)].dense = part(stage.dense_layers);
    chunks[static_cast<std::size_t>(c)].moe = part(stage.moe_layers);
  }
  chunks.front().embedding = stage.embedding;
  chunks.back().loss = stage.loss;
  chunks.back().mtp = stage.mtp_layers;
  return chunks;
}

// Kernels one microbatch launches with `layers_per_kernel` coalescing.
int kernels_per_microbatch(const StagePlan& plan) {
  int total = 0;
  for (const ChunkLayers& chunk : plan.chunks) {
    total += static_cast<int>(unit_ops(plan, chunk, Direction::kForward).size()) +
             static_cast<int>(unit_ops(plan, chunk, Direction::kBackward).size()) + 4;
    if (plan.timing->recompute.compute_s() > 0) {
      total += static_cast<int>(unit_ops(plan, chunk, Direction::kRecompute).size());
    }
  }
  return total;
}

// ---- Where the traced rank sits ------------------------------------------------------------

std::string device_name(const HardwareSpec& hw) {
  if (hw.name == "h100") return "NVIDIA H100 80GB HBM3";
  if (hw.name == "h200") return "NVIDIA H200";
  if (hw.name == "b200") return "NVIDIA B200";
  if (hw.name == "gb200") return "NVIDIA GB200";
  if (hw.name == "a100-80g") return "NVIDIA A100-SXM4-80GB";
  return "NVIDIA " + hw.name;
}

int sm_count(const HardwareSpec& hw) {
  if (hw.compute_capability >= 10.0) return 148;
  if (hw.compute_capability >= 9.0) return 132;
  return 108;
}

RankGrid rank_grid(const ResolvedLayout& resolved, int world) {
  const Layout& l = resolved.layout;
  RankGrid grid;
  grid.world = world;
  grid.tp = l.tp;
  grid.cp = l.cp;
  grid.pp = l.pp;
  grid.dp = resolved.dp;
  grid.etp = l.etp > 0 ? l.etp : l.tp;
  grid.ep = l.ep;
  grid.edp = resolved.edp;
  if (grid.etp * grid.ep * grid.edp != grid.stage_size()) {  // no expert layers: a plain grid
    grid.etp = grid.tp;
    grid.ep = 1;
    grid.edp = grid.stage_size() / grid.tp;
  }
  return grid;
}

// The traced rank of one pipeline stage and everything its kernels are made from. Not movable:
// the plan points into it.
struct TracedStage {
  TracedStage() = default;
  TracedStage(const TracedStage&) = delete;
  TracedStage& operator=(const TracedStage&) = delete;

  ResolvedLayout resolved;
  RankGrid grid;
  KernelNames names;
  StagePlan plan;
  int stage = 0;
  int rank = 0;
  int device = 0;
  int pid = 0;
  int autograd_tid = 0;
  int microbatches = 1;
  int microbatches_per_unit = 1;  // microbatches one unit of the schedule stands for
  int groups = 1;                 // units per chunk in the schedule
};

// Each chunk's share of the stage's per-microbatch times, by its GEMM weight.
void share_by_weight(StagePlan& plan) {
  double total_weight = 0;
  for (const ChunkLayers& c : plan.chunks) {
    const double w = c.dense * (plan.w_attention + plan.w_dense) +
                     c.moe * (plan.w_attention + plan.w_moe) +
                     c.mtp * (plan.w_attention + plan.w_moe + plan.w_mtp_extra) +
                     (c.loss ? plan.w_logits : 0.0) + (c.embedding ? 0.01 * plan.w_attention : 0);
    plan.chunk_share.push_back(w);
    total_weight += w;
  }
  for (double& share : plan.chunk_share) {
    share = total_weight > 0 ? share / total_weight : 1.0 / plan.chunk_share.size();
  }
}

void plan_stage(const Workload& workload, const Recipe& recipe, const SimulatedRun& run, int stage,
                const TraceOptions& options, TracedStage& t) {
  // The kernels are those of the layout as it ran on the stack (graphs it cannot capture run
  // eagerly, a dispatcher it swaps runs as the other one).
  if (run.layout) {
    t.resolved = *run.layout;
  } else {
    Result<Layout> layout = decode_layout(workload, recipe);
    ATTUNE_ASSERT(layout.ok(), "a simulated run has a valid layout");
    Result<ResolvedLayout> resolved = resolve_layout(workload, *layout);
    ATTUNE_ASSERT(resolved.ok(), "a simulated run has a valid layout");
    t.resolved = std::move(resolved).value();
  }
  const Layout& l = t.resolved.layout;
  ATTUNE_ASSERT(stage >= 0 && stage < l.pp, "the traced stage exists");
  t.stage = stage;
  t.rank = first_rank_of_stage(workload.gpus, l.pp, stage);
  t.device = t.rank % std::max(1, options.gpus_per_node);
  t.pid = kCpuPidBase + t.device;
  t.autograd_tid = t.pid + kAutogradThreadOffset;
  t.grid = rank_grid(t.resolved, workload.gpus);
  const bool deepep_internode =
      std::max(1, t.grid.etp) * l.ep > workload.hardware.nvlink_domain_gpus;
  t.names = kernel_names(workload, deepep_internode);
  StagePlan& plan = t.plan;
  plan.workload = &workload;
  plan.resolved = &t.resolved;
  plan.timing = &run.prediction.stages[static_cast<std::size_t>(stage)];
  plan.names = &t.names;
  plan.groups = process_groups(t.grid, t.rank);
  plan.chunks = chunks_of(t.resolved.stages[static_cast<std::size_t>(stage)], t.resolved.vp);
  const ModelSpec& model = workload.model;
  plan.moe_model = is_moe(model);
  const LayerParams lp = layer_params(model);
  plan.w_attention = lp.attention;
  plan.w_dense = lp.dense_mlp;
  plan.w_moe =
      lp.moe_shared +
      (model.num_experts > 0 ? lp.moe_experts * model.moe_router_topk / model.num_experts : 0.0);
  plan.w_mtp_extra = lp.mtp_extra;
  plan.w_logits = static_cast<double>(padded_vocab_size(model, l.tp)) * model.hidden_size;
  plan.tokens_local =
      static_cast<double>(workload.seq_length) * std::max(1, l.micro_batch_size) / l.cp;
  share_by_weight(plan);
}

// Coalesce layers, then microbatches, until a step fits the kernel budget.
void coalesce(TracedStage& t) {
  StagePlan& plan = t.plan;
  t.microbatches = std::max(1, t.resolved.microbatches);
  int max_chunk_layers = 1;
  for (const ChunkLayers& c : plan.chunks) {
    max_chunk_layers = std::max(max_chunk_layers, std::max({c.dense, c.moe, c.mtp}));
  }
  while (plan.layers_per_kernel < max_chunk_layers &&
         t.microbatches * kernels_per_microbatch(plan) > kTraceKernelsPerStepMax) {
    ++plan.layers_per_kernel;
  }
  const int per_microbatch = kernels_per_microbatch(plan);
  t.microbatches_per_unit = std::max(
      1, (t.microbatches * per_microbatch + kTraceKernelsPerStepMax - 1) / kTraceKernelsPerStepMax);
  t.groups = (t.microbatches + t.microbatches_per_unit - 1) / t.microbatches_per_unit;
}

// ---- The schedule ---------------------------------------------------------------------------

struct Unit {
  bool forward = true;
  int group = 0;
  int chunk = 0;
};

struct Schedule {
  std::vector<Unit> units;
  std::size_t cooldown_start = 0;  // the first unit of the backward-only cooldown
};

// The 1F1B schedule (interleaved when vp > 1) of the traced rank, over microbatch groups.
Schedule one_forward_one_backward(const TracedStage& t) {
  const int vp = static_cast<int>(t.plan.chunks.size());
  const int pp = t.resolved.layout.pp;
  std::vector<Unit> forwards, backwards;
  for (int block = 0; block < t.groups; block += pp) {
    for (int c = 0; c < vp; ++c) {
      for (int m = block; m < std::min(t.groups, block + pp); ++m) {
        forwards.push_back({true, m, c});
        backwards.push_back({false, m, vp - 1 - c});
      }
    }
  }
  const int total_units = static_cast<int>(forwards.size());
  const int warmup =
      std::min(total_units, vp > 1 ? (pp - t.stage - 1) * 2 + (vp - 1) * pp : pp - t.stage - 1);
  Schedule schedule;
  int f = 0, b = 0;
  for (; f < warmup; ++f) schedule.units.push_back(forwards[static_cast<std::size_t>(f)]);
  while (f < total_units) {
    schedule.units.push_back(forwards[static_cast<std::size_t>(f++)]);
    schedule.units.push_back(backwards[static_cast<std::size_t>(b++)]);
  }
  schedule.cooldown_start = schedule.units.size();
  while (b < total_units) schedule.units.push_back(backwards[static_cast<std::size_t>(b++)]);
  return schedule;
}

// The stage's model times, and its idle share of the step, spent waiting on its pipeline
// neighbours (the earlier the stage, the more of the wait comes at the start), apart from the
// stack's loop time, which the GPU spends waiting on the host before each microbatch.
struct PipelineTimes {
  double model_step_s = 0;
  double idle_s = 0;
  double loop_s = 0;
  double wait_start_share = 0;
  int p2p_per_microbatch = 0;
  double pp_elements = 0;
};

PipelineTimes pipeline_times(const TracedStage& t, const SimulatedRun& run) {
  const StageTiming& timing = *t.plan.timing;
  const Layout& l = t.resolved.layout;
  const double busy_s =
      t.microbatches * timing.microbatch_s + timing.dp_comm_s + timing.optimizer_s;
  PipelineTimes times;
  times.model_step_s = std::max(run.prediction.step_time_s, busy_s);
  times.loop_s =
      std::min(run.prediction.breakdown.loop_s, std::max(0.0, run.prediction.step_time_s - busy_s));
  times.idle_s = std::max(0.0, run.prediction.step_time_s - busy_s - times.loop_s);
  times.wait_start_share = l.pp > 1 ? static_cast<double>(t.stage) / (l.pp - 1) : 0.0;
  const int vp = static_cast<int>(t.plan.chunks.size());
  for (int c = 0; c < vp; ++c) {
    const bool first_chunk = t.stage == 0 && c == 0;
    const bool last_chunk = t.stage == l.pp - 1 && c == vp - 1;
    if (!first_chunk) times.p2p_per_microbatch += 2;  // receive activations, send gradients
    if (!last_chunk) times.p2p_per_microbatch += 2;   // send activations, receive gradients
  }
  times.pp_elements = t.plan.tokens_local * t.plan.workload->model.hidden_size /
                      (l.sequence_parallel && l.tp > 1 ? l.tp : 1);
  return times;
}

// ---- One traced step ------------------------------------------------------------------------

// The forward and backward units of the schedule, with their pipeline sends and receives. The
// stage's idle time is a receive that waits: before the first forward, and in the cooldown.
void trace_pipeline(Timeline& timeline, const TracedStage& t, const Schedule& schedule,
                    const PipelineTimes& times, double k_us) {
  const StageTiming& timing = *t.plan.timing;
  const int vp = static_cast<int>(t.plan.chunks.size());
  const bool first_stage = t.stage == 0;
  const bool last_stage = t.stage == t.resolved.layout.pp - 1;
  const double p2p_us =
      times.p2p_per_microbatch > 0
          ? timing.pp_p2p_s * k_us * t.microbatches_per_unit / times.p2p_per_microbatch
          : 0.0;
  double wait_start_us = times.idle_s * k_us * times.wait_start_share;
  double wait_cooldown_us = times.idle_s * k_us - wait_start_us;
  const auto p2p = [&](bool send, int scope, bool backward_thread, double wait_us) {
    timeline.communicate(nccl_kernel("send", "BFloat16"), kPpStream, p2p_us + wait_us, 0.0, true,
                         comm_args(t.plan, send ? "send" : "recv", times.pp_elements,
                                   times.pp_elements, GroupKind::kPipelineParallel),
                         scope, backward_thread);
  };
  for (std::size_t i = 0; i < schedule.units.size(); ++i) {
    const Unit& unit = schedule.units[i];
    const ChunkLayers& chunk = t.plan.chunks[static_cast<std::size_t>(unit.chunk)];
    const int in_group =
        std::min(t.microbatches_per_unit, t.microbatches - unit.group * t.microbatches_per_unit);
    const double unit_us =
        k_us * in_group * t.plan.chunk_share[static_cast<std::size_t>(unit.chunk)];
    const bool first_chunk = first_stage && unit.chunk == 0;
    const bool last_chunk = last_stage && unit.chunk == vp - 1;
    if (unit.forward) {
      // The stack's loop readies each microbatch on the host while the GPU waits.
      timeline.gap(times.loop_s * k_us * in_group *
                   t.plan.chunk_share[static_cast<std::size_t>(unit.chunk)] /
                   std::max(1, t.microbatches));
      const int scope =
          timeline.open_scope("nn.Module: TransformerBlock_" + std::to_string(unit.chunk), false);
      if (!first_chunk) p2p(false, scope, false, std::exchange(wait_start_us, 0.0));
      emit_unit(timeline, unit_ops(t.plan, chunk, Direction::kForward),
                scaled(timing.forward, unit_us), scope, false);
      if (!last_chunk) p2p(true, scope, false, 0.0);
      continue;
    }
    const int scope = timeline.open_scope(
        "autograd::engine::evaluate_function: "
        "LinearWithGradAccumulationAndAsyncCommunicationBackward",
        true);
    const bool cooldown = i >= schedule.cooldown_start;
    if (!last_chunk) p2p(false, scope, true, cooldown ? std::exchange(wait_cooldown_us, 0.0) : 0.0);
    if (timing.recompute.compute_s() > 0) {
      emit_unit(timeline, unit_ops(t.plan, chunk, Direction::kRecompute),
                scaled(timing.recompute, unit_us), scope, true);
    }
    emit_unit(timeline, unit_ops(t.plan, chunk, Direction::kBackward),
              scaled(timing.backward, unit_us), scope, true);
    if (!first_chunk) p2p(true, scope, true, 0.0);
  }
  if (wait_cooldown_us > 0) timeline.gap(wait_cooldown_us);  // nothing left to receive
}

// The data-parallel gradient reduction of one step: dense gradients over the data-parallel group
// with CP, expert gradients over the expert data-parallel group.
void trace_gradient_reduction(Timeline& timeline, const TracedStage& t, const StageParams& params,
                              double total_us, bool behind, int scope) {
  const Layout& l = t.resolved.layout;
  const double expert_share = params.dense + params.expert > 0 && t.grid.edp > 1
                                  ? params.expert / (params.dense + params.expert)
                                  : 0.0;
  const std::string dtype = l.grad_reduce_in_bf16 ? "BFloat16" : "Float";
  const bool dist_opt = l.distributed_optimizer;
  const std::string collective = dist_opt ? "reduce_scatter" : "allreduce";
  const std::string name = nccl_kernel(collective, dtype);
  const auto args_for = [&](double elems, int size, GroupKind kind) {
    return comm_args(t.plan, collective, elems, dist_opt ? elems / std::max(1, size) : elems, kind,
                     dtype);
  };
  const CommArgs dense =
      args_for(params.dense, t.grid.dp * t.grid.cp, GroupKind::kDataParallelWithCp);
  const CommArgs expert = args_for(params.expert, t.grid.edp, GroupKind::kExpertDataParallel);
  const double dense_us = total_us * (1.0 - expert_share);
  const double expert_us = total_us * expert_share;
  if (behind) {
    timeline.communicate_behind(name, kDpStream, dense_us, dense, scope, true);
    timeline.communicate_behind(name, kExpertDpStream, expert_us, expert, scope, true);
  } else {
    timeline.communicate(name, kDpStream, dense_us, 0.0, true, dense, scope, false);
    timeline.communicate(name, kExpertDpStream, expert_us, 0.0, true, expert, scope, false);
  }
}

// After the last backward: the gradient reduction (its hidden part behind the last backward,
// then its exposed part), the optimizer step, and the parameter all-gather of the distributed
// optimizer.
void trace_tail(Timeline& timeline, const TracedStage& t, const StageParams& params, double k_us) {
  const StageTiming& timing = *t.plan.timing;
  const Layout& l = t.resolved.layout;
  const int scope = timeline.open_scope("Optimizer.step#FusedAdam.step", false);
  const double dp_exposed_us = timing.dp_comm_s * k_us;
  const bool dist_opt = l.distributed_optimizer;
  trace_gradient_reduction(timeline, t, params, timing.dp_comm_hidden_s * k_us, true, scope);
  trace_gradient_reduction(timeline, t, params, dp_exposed_us * (dist_opt ? 0.6 : 1.0), false,
                           scope);
  const double optimizer_us = timing.optimizer_s * k_us;
  if (l.optimizer_cpu_offload) {
    timeline.compute("Memcpy DtoH (Device -> Pinned)", optimizer_us * 0.35, scope, false);
    timeline.gap(optimizer_us * 0.3);  // the CPU runs Adam
    timeline.compute("Memcpy HtoD (Pinned -> Device)", optimizer_us * 0.35, scope, false);
  } else {
    timeline.compute(t.names.l2norm, optimizer_us * 0.1, scope, false);
    timeline.compute(t.names.scale, optimizer_us * 0.05, scope, false);
    timeline.compute(t.names.adam, optimizer_us * 0.85, scope, false);
  }
  if (!dist_opt) return;
  const double elems = params.dense;
  timeline.communicate(nccl_kernel("allgather", "BFloat16"), kDpStream, dp_exposed_us * 0.4, 0.0,
                       true,
                       comm_args(t.plan, "allgather", elems / std::max(1, t.grid.dp * t.grid.cp),
                                 elems, GroupKind::kDataParallelWithCp),
                       scope, false);
}

// What the traced steps did on the GPU, in microseconds from the trace's base second.
struct GpuSteps {
  std::vector<Kernel> kernels;
  std::vector<Scope> scopes;
  std::vector<std::pair<double, double>> step_windows;  // [start, end) of each ProfilerStep
};

GpuSteps trace_steps(const TracedStage& t, const Workload& workload, const SimulatedRun& run,
                     const TraceOptions& options, std::int64_t base_ns) {
  ATTUNE_ASSERT(run.profiled && run.first_profiled_step > 0,
                "a trace is written for a profiled run");
  ATTUNE_ASSERT(run.step_times_s.size() >= run.steps_requested,
                "a profiled run completed its steps");
  const Schedule schedule = one_forward_one_backward(t);
  const PipelineTimes times = pipeline_times(t, run);
  const StageParams params = stage_params(workload, t.resolved, t.stage);
  double step_start_s = run.startup_s;
  for (std::uint32_t s = 1; s < run.first_profiled_step; ++s) {
    step_start_s += run.step_times_s[s - 1];
  }
  const double start_offset_us = (options.start_unix_ns - base_ns) / 1000.0;
  GpuSteps out;
  for (std::uint32_t step = run.first_profiled_step; step <= run.steps_requested; ++step) {
    const double step_s = run.step_times_s[step - 1];
    const double k_us = 1e6 * step_s / times.model_step_s;  // model seconds to trace µs
    const double step_start_us = start_offset_us + step_start_s * 1e6;
    Timeline timeline(step_start_us + 25.0);
    trace_pipeline(timeline, t, schedule, times, k_us);
    trace_tail(timeline, t, params, k_us);
    const double step_end_us = step_start_us + step_s * 1e6;
    out.step_windows.emplace_back(step_start_us, std::max(step_end_us, timeline.cursor_us()));
    const int scope_offset = static_cast<int>(out.scopes.size());
    for (Kernel& kernel : timeline.kernels) {
      kernel.scope += scope_offset;
      out.kernels.push_back(std::move(kernel));
    }
    for (Scope& scope : timeline.scopes) out.scopes.push_back(std::move(scope));
    step_start_s += step_s;
  }
  return out;
}

// ---- The host side ----------------------------------------------------------------------------

std::int64_t ns_of(double us, std::int64_t base_ns) {
  return base_ns + static_cast<std::int64_t>(std::llround(us * 1000.0));
}

// When the host launched each kernel: in program order, ahead of the GPU by at most
// kLaunchLeadMaxUs, never after the kernel starts; a kernel that follows a host gap was launched
// just before it ran. Also the span of each CPU scope around its launches.
struct Launches {
  std::vector<double> at_us;
  std::vector<std::pair<double, double>> scope_span;
  double launch_us = 0;
};

Launches launch_times(const GpuSteps& gpu, const Workload& workload) {
  Launches out;
  out.launch_us = std::max(2.0, 0.5 * workload.hardware.host_op_us);
  double main_cursor = gpu.step_windows.front().first + 5.0;
  double autograd_cursor = main_cursor;
  out.at_us.resize(gpu.kernels.size());
  out.scope_span.assign(gpu.scopes.size(), {HUGE_VAL, -HUGE_VAL});
  std::size_t window = 0;
  for (std::size_t i = 0; i < gpu.kernels.size(); ++i) {
    const Kernel& kernel = gpu.kernels[i];
    while (window + 1 < gpu.step_windows.size() &&
           kernel.start_us >= gpu.step_windows[window + 1].first) {
      ++window;
      main_cursor = std::max(main_cursor, gpu.step_windows[window].first + 5.0);
      autograd_cursor = std::max(autograd_cursor, gpu.step_windows[window].first + 5.0);
    }
    double& cursor = kernel.backward_thread ? autograd_cursor : main_cursor;
    double at = std::max(cursor, kernel.start_us - kLaunchLeadMaxUs);
    if (kernel.after_host_gap) at = std::max(at, kernel.start_us - out.launch_us - 0.5);
    at = std::min(at, kernel.start_us - out.launch_us - 0.5);
    out.at_us[i] = at;
    cursor = std::max(cursor, at + out.launch_us);
    if (kernel.scope >= 0) {
      auto& span = out.scope_span[static_cast<std::size_t>(kernel.scope)];
      span.first = std::min(span.first, at - 3.0);
      span.second = std::max(span.second, at + out.launch_us + 2.0);
    }
  }
  return out;
}

kineto::CollectiveArgs collective_of(const CommArgs& args) {
  kineto::CollectiveArgs c;
  c.collective = args.collective;
  c.in_nelems = std::llround(args.in_nelems);
  c.out_nelems = std::llround(args.out_nelems);
  c.group_size = static_cast<int>(args.group->ranks.size());
  c.dtype = args.dtype;
  c.group_name = args.group->name;
  c.group_description = args.group->desc;
  c.group_ranks = args.group->ranks;
  return c;
}

// The CPU operations (one per scope) and the ProfilerStep annotations, as host rows.
void host_operations(const TracedStage& t, const GpuSteps& gpu, const Launches& launches,
                     const SimulatedRun& run, std::int64_t base_ns, kineto::TraceRecords& records) {
  for (std::size_t s = 0; s < gpu.scopes.size(); ++s) {
    const auto& [first, last] = launches.scope_span[s];
    if (first > last) continue;
    kineto::HostRow row;
    row.category = "cpu_op";
    row.name = gpu.scopes[s].name;
    row.pid = t.pid;
    row.tid = gpu.scopes[s].backward_thread ? t.autograd_tid : t.pid;
    row.start_ns = ns_of(first, base_ns);
    row.end_ns = ns_of(last, base_ns);
    row.external_id = kFirstExternalId + static_cast<std::int64_t>(s);
    records.host.push_back(std::move(row));
  }
  std::int64_t next_id = kFirstExternalId + static_cast<std::int64_t>(gpu.scopes.size());
  for (std::size_t w = 0; w < gpu.step_windows.size(); ++w) {
    const std::uint32_t iteration = run.first_profiled_step + static_cast<std::uint32_t>(w);
    kineto::HostRow row;
    row.category = "user_annotation";
    row.name = "ProfilerStep#" + std::to_string(iteration - 1);
    row.pid = row.tid = t.pid;
    row.start_ns = ns_of(gpu.step_windows[w].first, base_ns);
    row.end_ns = ns_of(gpu.step_windows[w].second, base_ns);
    row.external_id = next_id++;
    records.host.push_back(std::move(row));
  }
}

// Each kernel: the host call that launched it (and, for NCCL, the record_param_comms operator
// that carries its collective's arguments), and its row on the GPU.
void kernel_rows(const TracedStage& t, const GpuSteps& gpu, const Launches& launches,
                 const Workload& workload, std::int64_t base_ns, kineto::TraceRecords& records) {
  for (std::size_t i = 0; i < gpu.kernels.size(); ++i) {
    const Kernel& k = gpu.kernels[i];
    const std::int64_t correlation = kFirstCorrelation + static_cast<std::int64_t>(i);
    const std::int64_t external = k.scope >= 0 ? kFirstExternalId + k.scope : correlation;
    const bool nccl = k.name.starts_with("ncclDevKernel");
    const bool memcpy = k.name.starts_with("Memcpy");
    const std::int64_t tid = k.backward_thread ? t.autograd_tid : t.pid;
    const double at = launches.at_us[i];
    if (nccl) {
      records.host.push_back(kineto::HostRow{
          "cpu_op", "record_param_comms", t.pid, tid, ns_of(at - 1.0, base_ns),
          ns_of(at + launches.launch_us + 1.0, base_ns), -1, -1, collective_of(k.args), external});
    }
    records.host.push_back(kineto::HostRow{nccl ? "cuda_driver" : "cuda_runtime",
                                           nccl     ? "cuLaunchKernelEx"
                                           : memcpy ? "cudaMemcpyAsync"
                                                    : "cudaLaunchKernel",
                                           t.pid, tid, ns_of(at, base_ns),
                                           ns_of(at + launches.launch_us, base_ns), correlation,
                                           nccl     ? 652
                                           : memcpy ? 41
                                                    : 211,
                                           std::nullopt, external});
    kineto::GpuRow row;
    row.kind = memcpy ? kineto::GpuRowKind::kMemcpy : kineto::GpuRowKind::kKernel;
    row.name = k.name;
    row.device = t.device;
    row.stream = k.stream;
    row.correlation = correlation;
    row.external_id = external;
    row.start_ns = ns_of(k.start_us, base_ns);
    row.end_ns = ns_of(k.start_us + k.dur_us, base_ns);
    if (memcpy) {
      row.bytes =
          std::llround(k.dur_us * 1e-6 * workload.hardware.host_link_bandwidth_gb_per_s * 1e9);
    } else {
      const bool comm = nccl || k.name.find("deep_ep") != std::string::npos;
      row.grid[0] = comm ? 32 : sm_count(workload.hardware);
      row.grid[1] = row.grid[2] = 1;
      row.block[0] = comm ? 544 : 384;
      row.block[1] = row.block[2] = 1;
    }
    if (k.comm) row.collective = collective_of(k.args);
    records.gpu.push_back(std::move(row));
  }
}

// The rank's devices, process groups and names, as Kineto writes them.
void describe_rank(const TracedStage& t, const GpuSteps& gpu, const Workload& workload,
                   const TraceOptions& options, kineto::TraceRecords& records) {
  records.rank = t.rank;
  records.world_size = workload.gpus;
  records.trace_name = "/tmp/torch_profile/" + kineto::trace_file_name(t.rank, true);
  records.nccl_version = std::string(kNcclVersion);
  const HardwareSpec& hw = workload.hardware;
  const int devices = std::max(1, std::min(options.gpus_per_node, workload.gpus));
  for (int d = 0; d < devices; ++d) {
    records.devices.push_back(kineto::TraceDevice{
        d, device_name(hw), static_cast<std::int64_t>(hw.hbm_capacity_gib * 1024.0 * 1024 * 1024),
        static_cast<int>(hw.compute_capability),
        static_cast<int>(std::lround(hw.compute_capability * 10)) % 10, sm_count(hw)});
  }
  std::vector<int> everyone(static_cast<std::size_t>(workload.gpus));
  std::iota(everyone.begin(), everyone.end(), 0);
  records.process_groups.push_back({"0", "default_pg", workload.gpus, everyone});
  std::vector<ProcessGroup> member_groups;
  for (const GroupKind kind : group_creation_order())
    member_groups.push_back(t.plan.groups.at(kind));
  std::sort(member_groups.begin(), member_groups.end(),
            [](const ProcessGroup& a, const ProcessGroup& b) {
              return std::stoi(a.name) < std::stoi(b.name);
            });
  for (const ProcessGroup& g : member_groups) {
    records.process_groups.push_back({g.name, g.desc, static_cast<int>(g.ranks.size()), g.ranks});
  }
  std::set<int> streams;
  for (const Kernel& k : gpu.kernels) streams.insert(k.stream);
  auto& n = records.names;
  n.push_back({"process_name", t.pid, 0, "name", "python", false});
  n.push_back({"process_labels", t.pid, 0, "labels", "CPU", false});
  n.push_back({"process_name", t.device, 0, "name", "python", false});
  n.push_back({"process_labels", t.device, 0, "labels", "GPU " + std::to_string(t.device), false});
  n.push_back(
      {"process_sort_index", t.device, 0, "sort_index", std::to_string(16777216 + t.device), true});
  for (const int stream : streams) {
    n.push_back(
        {"thread_name", t.device, stream, "name", "stream " + std::to_string(stream) + " ", false});
    n.push_back(
        {"thread_sort_index", t.device, stream, "sort_index", std::to_string(stream), true});
  }
  n.push_back({"thread_name", t.pid, t.pid, "name", "thread " + std::to_string(t.pid) + " (python)",
               false});
  n.push_back({"thread_name", t.pid, t.autograd_tid, "name",
               "thread " + std::to_string(t.autograd_tid) + " (pt_autograd_0)", false});
}

}  // namespace

std::vector<int> traced_ranks(int world_size, int pipeline_stages) {
  std::vector<int> ranks;
  for (int stage = 0; stage < pipeline_stages; ++stage) {
    ranks.push_back(first_rank_of_stage(world_size, pipeline_stages, stage));
  }
  return ranks;
}

kineto::TraceRecords stage_trace(const Workload& workload, const Recipe& recipe,
                                 const SimulatedRun& run, int stage, const TraceOptions& options) {
  TracedStage traced;
  plan_stage(workload, recipe, run, stage, options, traced);
  coalesce(traced);
  const std::int64_t base_ns = options.start_unix_ns / 1'000'000'000 * 1'000'000'000;
  const GpuSteps gpu = trace_steps(traced, workload, run, options, base_ns);
  const Launches launches = launch_times(gpu, workload);
  kineto::TraceRecords records;
  describe_rank(traced, gpu, workload, options, records);
  host_operations(traced, gpu, launches, run, base_ns, records);
  kernel_rows(traced, gpu, launches, workload, base_ns, records);
  return records;
}

std::string kineto_trace_json(const Workload& workload, const Recipe& recipe,
                              const SimulatedRun& run, int stage, const TraceOptions& options) {
  return kineto::kineto_trace_json(stage_trace(workload, recipe, run, stage, options));
}

Result<std::vector<std::string>> write_kineto_traces(const std::string& directory,
                                                     const Workload& workload, const Recipe& recipe,
                                                     const SimulatedRun& run,
                                                     const TraceOptions& options) {
  const int stages = static_cast<int>(run.prediction.stages.size());
  std::vector<std::string> paths;
  for (int stage = 0; stage < stages; ++stage) {
    auto path = kineto::write_trace_file(directory,
                                         stage_trace(workload, recipe, run, stage, options), true);
    if (!path.ok()) return make_error(path.error());
    paths.push_back(std::move(path).value());
  }
  return paths;
}

}  // namespace attune::sim
