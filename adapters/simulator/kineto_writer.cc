#include "adapters/simulator/kineto_writer.h"
#include "adapters/simulator/printf_text.h"

#include <zlib.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "adapters/simulator/memory_model.h"
#include "adapters/simulator/model_spec.h"
#include "adapters/simulator/process_groups.h"

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

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
  }
  return out + "]";
}

// ---- Kernel names -------------------------------------------------------------------------

struct KernelNames {
  std::string gemm_fwd, gemm_dgrad, gemm_wgrad, grouped_fwd, grouped_bwd;
  std::string flash_fwd, flash_bwd;
  std::string norm_fwd, norm_bwd, act_fwd, act_bwd, add, permute, unpermute;
  std::string embedding_fwd, embedding_bwd, softmax_fwd, cross_entropy_fwd, cross_entropy_bwd;
  std::string adam, l2norm, scale;
  std::string deepep_dispatch, deepep_combine;
};

KernelNames kernel_names(const Workload& w, bool deepep_internode) {
  KernelNames k;
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

// The ops of one layer group (`count` layers of one kind), forward.
void forward_layer_ops(const StagePlan& plan, bool moe_layer, double count, bool mtp,
                       std::vector<Op>& ops) {
  const Layout& l = plan.resolved->layout;
  const KernelNames& k = *plan.names;
  const double h = plan.workload->model.hidden_size;
  const double tokens = plan.tokens_local;
  const bool sp = l.sequence_parallel && l.tp > 1;
  const auto compute = [&](Cost cost, double weight, const std::string& name) {
    ops.push_back(Op{cost, weight, &name, kComputeStream, {}, false, {}});
  };
  const auto tp_comm = [&](bool gather) {
    if (l.tp <= 1) return;
    if (sp) {
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
  };
  const double w_mlp = moe_layer ? plan.w_moe : plan.w_dense;
  compute(Cost::kElementwise, 0.15 * count, k.norm_fwd);
  if (mtp) compute(Cost::kGemm, plan.w_mtp_extra * count, k.gemm_fwd);
  tp_comm(true);
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
  tp_comm(false);
  compute(Cost::kElementwise, 0.1 * count, k.add);
  compute(Cost::kElementwise, 0.15 * count, k.norm_fwd);
  tp_comm(true);
  if (moe_layer) {
    const double routed = tokens * plan.workload->model.moe_router_topk * h / std::max(1, l.tp);
    compute(Cost::kGemm, 0.02 * w_mlp * count, k.gemm_fwd);
    compute(Cost::kElementwise, 0.15 * count, k.permute);
    if (l.dispatcher == Dispatcher::kFlex) {
      ops.push_back(Op{Cost::kEp, count, nullptr, kEpStream, {}, true, k.deepep_dispatch});
    } else if (l.dispatcher == Dispatcher::kAllgather) {
      ops.push_back(Op{Cost::kEp,
                       count,
                       nullptr,
                       kEpStream,
                       comm_args(plan, "allgather", tokens * h / l.tp, tokens * h * l.ep,
                                 GroupKind::kExpertTensorAndModelParallel),
                       false,
                       {}});
    } else {
      ops.push_back(Op{Cost::kEp,
                       count,
                       nullptr,
                       kEpStream,
                       comm_args(plan, "all_to_allv", routed, routed, GroupKind::kExpertParallel),
                       false,
                       {}});
    }
    compute(Cost::kGemm, 0.66 * w_mlp * count, k.grouped_fwd);
    compute(Cost::kElementwise, 0.2 * count, k.act_fwd);
    compute(Cost::kGemm, 0.32 * w_mlp * count, k.grouped_fwd);
    if (l.dispatcher == Dispatcher::kFlex) {
      ops.push_back(Op{Cost::kEp, count, nullptr, kEpStream, {}, true, k.deepep_combine});
    } else if (l.dispatcher == Dispatcher::kAllgather) {
      ops.push_back(Op{Cost::kEp,
                       count,
                       nullptr,
                       kEpStream,
                       comm_args(plan, "reduce_scatter", tokens * h * l.ep, tokens * h / l.tp,
                                 GroupKind::kExpertTensorAndModelParallel),
                       false,
                       {}});
    } else {
      ops.push_back(Op{Cost::kEp,
                       count,
                       nullptr,
                       kEpStream,
                       comm_args(plan, "all_to_allv", routed, routed, GroupKind::kExpertParallel),
                       false,
                       {}});
    }
    compute(Cost::kElementwise, 0.1 * count, k.unpermute);
  } else {
    compute(Cost::kGemm, 0.67 * w_mlp * count, k.gemm_fwd);
    compute(Cost::kElementwise, 0.35 * count, k.act_fwd);
    compute(Cost::kGemm, 0.33 * w_mlp * count, k.gemm_fwd);
  }
  tp_comm(false);
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

// ---- JSON ---------------------------------------------------------------------------------

void append_escaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += format("\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
}

std::string us(double value) { return format("%.3f", value); }

struct CpuEvent {
  std::string cat;
  std::string name;
  int tid = 0;
  double ts_us = 0;
  double dur_us = 0;
  std::string args;  // the inside of "args": {...}
};

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

}  // namespace

std::string trace_file_name(int rank) { return "rank-" + std::to_string(rank) + ".json.gz"; }

std::vector<int> traced_ranks(int world_size, int pipeline_stages) {
  std::vector<int> ranks;
  for (int stage = 0; stage < pipeline_stages; ++stage) {
    ranks.push_back(first_rank_of_stage(world_size, pipeline_stages, stage));
  }
  return ranks;
}

std::string kineto_trace_json(const Workload& workload, const Recipe& recipe,
                              const SimulatedRun& run, int stage, const TraceOptions& options) {
  assert(run.profiled && run.first_profiled_step > 0);
  assert(run.step_times_s.size() >= run.steps_requested);
  Result<Layout> layout = decode_layout(workload, recipe);
  assert(layout.ok());
  Result<ResolvedLayout> resolved_result = resolve_layout(workload, *layout);
  assert(resolved_result.ok());
  const ResolvedLayout& resolved = *resolved_result;
  const Layout& l = resolved.layout;
  assert(stage >= 0 && stage < l.pp);
  const StageTiming& timing = run.prediction.stages[static_cast<std::size_t>(stage)];
  const int world = workload.gpus;
  const int rank = first_rank_of_stage(world, l.pp, stage);
  const int device = rank % std::max(1, options.gpus_per_node);
  const int pid = kCpuPidBase + device;
  const int autograd_tid = pid + kAutogradThreadOffset;
  const ModelSpec& model = workload.model;

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

  const bool deepep_internode = std::max(1, grid.etp) * l.ep > workload.hardware.nvlink_domain_gpus;
  const KernelNames names = kernel_names(workload, deepep_internode);
  StagePlan plan;
  plan.workload = &workload;
  plan.resolved = &resolved;
  plan.timing = &timing;
  plan.names = &names;
  plan.groups = process_groups(grid, rank);
  plan.chunks = chunks_of(resolved.stages[static_cast<std::size_t>(stage)], resolved.vp);
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

  // Each chunk's share of the stage's per-microbatch times, by its GEMM weight.
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

  // Coalesce layers, then microbatches, until a step fits the kernel budget.
  const int microbatches = std::max(1, resolved.microbatches);
  int max_chunk_layers = 1;
  for (const ChunkLayers& c : plan.chunks) {
    max_chunk_layers = std::max(max_chunk_layers, std::max({c.dense, c.moe, c.mtp}));
  }
  while (plan.layers_per_kernel < max_chunk_layers &&
         microbatches * kernels_per_microbatch(plan) > kTraceKernelsPerStepMax) {
    ++plan.layers_per_kernel;
  }
  const int per_microbatch = kernels_per_microbatch(plan);
  const int microbatches_per_unit = std::max(
      1, (microbatches * per_microbatch + kTraceKernelsPerStepMax - 1) / kTraceKernelsPerStepMax);
  const int groups = (microbatches + microbatches_per_unit - 1) / microbatches_per_unit;

  // The 1F1B schedule (interleaved when vp > 1) of this rank, over microbatch groups.
  const int vp = static_cast<int>(plan.chunks.size());
  struct Unit {
    bool forward;
    int group;
    int chunk;
  };
  std::vector<Unit> forwards, backwards;
  for (int block = 0; block < groups; block += l.pp) {
    for (int c = 0; c < vp; ++c) {
      for (int m = block; m < std::min(groups, block + l.pp); ++m) {
        forwards.push_back({true, m, c});
        backwards.push_back({false, m, vp - 1 - c});
      }
    }
  }
  const int total_units = static_cast<int>(forwards.size());
  const int warmup =
      std::min(total_units, vp > 1 ? (l.pp - stage - 1) * 2 + (vp - 1) * l.pp : l.pp - stage - 1);
  std::vector<Unit> schedule;
  int f = 0, b = 0;
  for (; f < warmup; ++f) schedule.push_back(forwards[static_cast<std::size_t>(f)]);
  while (f < total_units) {
    schedule.push_back(forwards[static_cast<std::size_t>(f++)]);
    schedule.push_back(backwards[static_cast<std::size_t>(b++)]);
  }
  const std::size_t cooldown_start = schedule.size();
  while (b < total_units) schedule.push_back(backwards[static_cast<std::size_t>(b++)]);

  // Times: the stage's model times scaled to each measured step; its idle share of the step is
  // spent waiting on the pipeline neighbours.
  const double busy_s = microbatches * timing.microbatch_s + timing.dp_comm_s + timing.optimizer_s;
  const double model_step_s = std::max(run.prediction.step_time_s, busy_s);
  const double idle_s = std::max(0.0, run.prediction.step_time_s - busy_s);
  const double wait_start_share = l.pp > 1 ? static_cast<double>(stage) / (l.pp - 1) : 0.0;
  const bool first_stage = stage == 0;
  const bool last_stage = stage == l.pp - 1;
  int p2p_per_microbatch = 0;
  for (int c = 0; c < vp; ++c) {
    const bool first_chunk = first_stage && c == 0;
    const bool last_chunk = last_stage && c == vp - 1;
    if (!first_chunk) p2p_per_microbatch += 2;  // receive activations, send gradients
    if (!last_chunk) p2p_per_microbatch += 2;   // send activations, receive gradients
  }
  const double pp_elements =
      plan.tokens_local * model.hidden_size / (l.sequence_parallel && l.tp > 1 ? l.tp : 1);

  const StageParams params = stage_params(workload, resolved, stage);
  const std::string grad_dtype = l.grad_reduce_in_bf16 ? "BFloat16" : "Float";

  std::vector<Kernel> kernels;
  std::vector<Scope> scopes;
  std::vector<CpuEvent> cpu;
  std::vector<std::pair<double, double>> step_windows;  // CPU [start, end) of each ProfilerStep
  double step_start_s = run.startup_s;
  for (std::uint32_t s = 1; s < run.first_profiled_step; ++s)
    step_start_s += run.step_times_s[s - 1];
  const std::int64_t base_ns = options.start_unix_ns / 1'000'000'000 * 1'000'000'000;
  const double start_offset_us = (options.start_unix_ns - base_ns) / 1000.0;

  for (std::uint32_t step = run.first_profiled_step; step <= run.steps_requested; ++step) {
    const double step_s = run.step_times_s[step - 1];
    const double k_us = 1e6 * step_s / model_step_s;  // model seconds to trace microseconds
    const double step_start_us = start_offset_us + step_start_s * 1e6;
    Timeline timeline(step_start_us + 25.0);
    const double p2p_us = p2p_per_microbatch > 0
                              ? timing.pp_p2p_s * k_us * microbatches_per_unit / p2p_per_microbatch
                              : 0.0;
    double wait_start_us = idle_s * k_us * wait_start_share;
    double wait_cooldown_us = idle_s * k_us - wait_start_us;
    const auto p2p = [&](bool send, int scope, bool backward_thread, double wait_us) {
      timeline.communicate(nccl_kernel("send", "BFloat16"), kPpStream, p2p_us + wait_us, 0.0, true,
                           comm_args(plan, send ? "send" : "recv", pp_elements, pp_elements,
                                     GroupKind::kPipelineParallel),
                           scope, backward_thread);
    };
    for (std::size_t i = 0; i < schedule.size(); ++i) {
      const Unit& unit = schedule[i];
      const ChunkLayers& chunk = plan.chunks[static_cast<std::size_t>(unit.chunk)];
      const int in_group =
          std::min(microbatches_per_unit, microbatches - unit.group * microbatches_per_unit);
      const double unit_us =
          k_us * in_group * plan.chunk_share[static_cast<std::size_t>(unit.chunk)];
      const bool first_chunk = first_stage && unit.chunk == 0;
      const bool last_chunk = last_stage && unit.chunk == vp - 1;
      if (unit.forward) {
        const int scope =
            timeline.open_scope("nn.Module: TransformerBlock_" + std::to_string(unit.chunk), false);
        if (!first_chunk) {
          p2p(false, scope, false, wait_start_us);
          wait_start_us = 0;
        }
        emit_unit(timeline, unit_ops(plan, chunk, Direction::kForward),
                  scaled(timing.forward, unit_us), scope, false);
        if (!last_chunk) p2p(true, scope, false, 0.0);
      } else {
        const int scope = timeline.open_scope(
            "autograd::engine::evaluate_function: "
            "LinearWithGradAccumulationAndAsyncCommunicationBackward",
            true);
        const double wait_us = i >= cooldown_start ? wait_cooldown_us : 0.0;
        if (!last_chunk) {
          p2p(false, scope, true, wait_us);
          if (i >= cooldown_start) wait_cooldown_us = 0;
        }
        if (timing.recompute.compute_s() > 0) {
          emit_unit(timeline, unit_ops(plan, chunk, Direction::kRecompute),
                    scaled(timing.recompute, unit_us), scope, true);
        }
        emit_unit(timeline, unit_ops(plan, chunk, Direction::kBackward),
                  scaled(timing.backward, unit_us), scope, true);
        if (!first_chunk) p2p(true, scope, true, 0.0);
      }
    }
    if (wait_cooldown_us > 0) timeline.gap(wait_cooldown_us);  // nothing left to receive

    // Data-parallel gradient reduction (hidden part behind the last backward, exposed part),
    // the optimizer step, and the parameter all-gather of the distributed optimizer.
    const int tail_scope = timeline.open_scope("Optimizer.step#FusedAdam.step", false);
    const double expert_share = params.dense + params.expert > 0 && grid.edp > 1
                                    ? params.expert / (params.dense + params.expert)
                                    : 0.0;
    const double dp_hidden_us = timing.dp_comm_hidden_s * k_us;
    const double dp_exposed_us = timing.dp_comm_s * k_us;
    const bool dist_opt = l.distributed_optimizer;
    const double dense_elems = params.dense;
    const double expert_elems = params.expert;
    const auto reduce = [&](double us_total, bool behind) {
      const double dense_us = us_total * (1.0 - expert_share);
      const double expert_us = us_total * expert_share;
      const std::string collective = dist_opt ? "reduce_scatter" : "allreduce";
      const auto args_for = [&](double elems, int size, GroupKind kind) {
        return comm_args(plan, collective, elems, dist_opt ? elems / std::max(1, size) : elems,
                         kind, grad_dtype);
      };
      const std::string name = nccl_kernel(collective, grad_dtype);
      if (behind) {
        timeline.communicate_behind(
            name, kDpStream, dense_us,
            args_for(dense_elems, grid.dp * grid.cp, GroupKind::kDataParallelWithCp), tail_scope,
            true);
        timeline.communicate_behind(
            name, kExpertDpStream, expert_us,
            args_for(expert_elems, grid.edp, GroupKind::kExpertDataParallel), tail_scope, true);
      } else {
        timeline.communicate(
            name, kDpStream, dense_us, 0.0, true,
            args_for(dense_elems, grid.dp * grid.cp, GroupKind::kDataParallelWithCp), tail_scope,
            false);
        timeline.communicate(name, kExpertDpStream, expert_us, 0.0, true,
                             args_for(expert_elems, grid.edp, GroupKind::kExpertDataParallel),
                             tail_scope, false);
      }
    };
    reduce(dp_hidden_us, true);
    reduce(dp_exposed_us * (dist_opt ? 0.6 : 1.0), false);
    const double optimizer_us = timing.optimizer_s * k_us;
    if (l.optimizer_cpu_offload) {
      timeline.compute("Memcpy DtoH (Device -> Pinned)", optimizer_us * 0.35, tail_scope, false);
      timeline.gap(optimizer_us * 0.3);  // the CPU runs Adam
      timeline.compute("Memcpy HtoD (Pinned -> Device)", optimizer_us * 0.35, tail_scope, false);
    } else {
      timeline.compute(names.l2norm, optimizer_us * 0.1, tail_scope, false);
      timeline.compute(names.scale, optimizer_us * 0.05, tail_scope, false);
      timeline.compute(names.adam, optimizer_us * 0.85, tail_scope, false);
    }
    if (dist_opt) {
      timeline.communicate(
          nccl_kernel("allgather", "BFloat16"), kDpStream, dp_exposed_us * 0.4, 0.0, true,
          comm_args(plan, "allgather", dense_elems / std::max(1, grid.dp * grid.cp), dense_elems,
                    GroupKind::kDataParallelWithCp),
          tail_scope, false);
    }

    const double step_end_us = step_start_us + step_s * 1e6;
    step_windows.emplace_back(step_start_us, std::max(step_end_us, timeline.cursor_us()));
    const int scope_offset = static_cast<int>(scopes.size());
    for (Kernel& kernel : timeline.kernels) {
      kernel.scope += scope_offset;
      kernels.push_back(std::move(kernel));
    }
    for (Scope& scope : timeline.scopes) scopes.push_back(std::move(scope));
    step_start_s += step_s;
  }

  // Host launches: in program order, ahead of the GPU by at most kLaunchLeadMaxUs, never after
  // the kernel starts; a kernel that follows a host gap was launched just before it ran.
  const double launch_us = std::max(2.0, 0.5 * workload.hardware.host_op_us);
  double main_cursor = step_windows.front().first + 5.0;
  double autograd_cursor = main_cursor;
  std::vector<double> launch_at(kernels.size());
  std::vector<std::pair<double, double>> scope_span(scopes.size(), {HUGE_VAL, -HUGE_VAL});
  std::size_t window = 0;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& kernel = kernels[i];
    while (window + 1 < step_windows.size() && kernel.start_us >= step_windows[window + 1].first) {
      ++window;
      main_cursor = std::max(main_cursor, step_windows[window].first + 5.0);
      autograd_cursor = std::max(autograd_cursor, step_windows[window].first + 5.0);
    }
    double& cursor = kernel.backward_thread ? autograd_cursor : main_cursor;
    double at = std::max(cursor, kernel.start_us - kLaunchLeadMaxUs);
    // After a host gap the host, not the GPU, was behind: the launch comes just before the run.
    if (kernel.after_host_gap) at = std::max(at, kernel.start_us - launch_us - 0.5);
    at = std::min(at, kernel.start_us - launch_us - 0.5);
    launch_at[i] = at;
    cursor = std::max(cursor, at + launch_us);
    if (kernel.scope >= 0) {
      auto& span = scope_span[static_cast<std::size_t>(kernel.scope)];
      span.first = std::min(span.first, at - 3.0);
      span.second = std::max(span.second, at + launch_us + 2.0);
    }
  }
  for (std::size_t s = 0; s < scopes.size(); ++s) {
    if (scope_span[s].first > scope_span[s].second) continue;
    cpu.push_back(CpuEvent{"cpu_op", scopes[s].name, scopes[s].backward_thread ? autograd_tid : pid,
                           scope_span[s].first, scope_span[s].second - scope_span[s].first,
                           format("\"External id\": %lld,\"Ev Idx\": %zu",
                                  static_cast<long long>(kFirstExternalId + s), s)});
  }
  std::int64_t next_id = kFirstExternalId + static_cast<std::int64_t>(scopes.size());
  for (std::size_t w = 0; w < step_windows.size(); ++w) {
    const std::uint32_t iteration = run.first_profiled_step + static_cast<std::uint32_t>(w);
    cpu.push_back(CpuEvent{"user_annotation", "ProfilerStep#" + std::to_string(iteration - 1), pid,
                           step_windows[w].first, step_windows[w].second - step_windows[w].first,
                           format("\"External id\": %lld,\"Record function id\": %lld, \"Ev Idx\": "
                                  "%zu",
                                  static_cast<long long>(next_id), static_cast<long long>(next_id),
                                  scopes.size() + w)});
    ++next_id;
  }
  std::stable_sort(cpu.begin(), cpu.end(),
                   [](const CpuEvent& a, const CpuEvent& b) { return a.ts_us < b.ts_us; });

  // ---- Serialise, in Kineto's layout.
  std::string out;
  out.reserve(kernels.size() * 900 + 4096);
  out += "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n";
  const int devices = std::max(1, std::min(options.gpus_per_node, world));
  const long long memory_bytes =
      static_cast<long long>(workload.hardware.hbm_capacity_gib * 1024.0 * 1024.0 * 1024.0);
  const int major = static_cast<int>(workload.hardware.compute_capability);
  const int minor = static_cast<int>(std::lround(workload.hardware.compute_capability * 10)) % 10;
  for (int d = 0; d < devices; ++d) {
    out += "    {\n      \"id\": " + std::to_string(d) + ", \"name\": \"";
    append_escaped(out, device_name(workload.hardware));
    out += format(
        "\", \"totalGlobalMem\": %lld,\n      \"computeMajor\": %d, \"computeMinor\": %d,\n"
        "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
        "      \"regsPerBlock\": 65536, \"warpSize\": 32,\n"
        "      \"sharedMemPerBlock\": 49152, \"numSms\": %d\n"
        "    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, "
        "\"sharedMemPerMultiprocessor\": 233472\n    }%s\n",
        memory_bytes, major, minor, sm_count(workload.hardware), d + 1 < devices ? "," : "");
  }
  out += "  ],\n";
  std::vector<ProcessGroup> member_groups;
  member_groups.push_back(ProcessGroup{"0", "default_pg", {}});
  for (int r = 0; r < world; ++r) member_groups.front().ranks.push_back(r);
  for (const GroupKind kind : group_creation_order()) member_groups.push_back(plan.groups.at(kind));
  std::sort(member_groups.begin() + 1, member_groups.end(),
            [](const ProcessGroup& a, const ProcessGroup& b) {
              return std::stoi(a.name) < std::stoi(b.name);
            });
  out += format(
      "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, "
      "\"pg_count\": %zu, \"pg_config\": [",
      rank, world, member_groups.size());
  for (std::size_t i = 0; i < member_groups.size(); ++i) {
    const ProcessGroup& g = member_groups[i];
    out += format(
        "%s{\"pg_name\": \"%s\", \"pg_desc\": \"%s\", \"backend_config\": \"cuda:nccl\", "
        "\"pg_size\": %zu, \"ranks\": ",
        i > 0 ? ", " : "", g.name.c_str(), g.desc.c_str(), g.ranks.size());
    out += rank_list(g.ranks) + "}";
  }
  out += "], \"nccl_version\": \"" + std::string(kNcclVersion) + "\"},\n";
  out += "  \"traceEvents\": [\n";
  bool first_event = true;
  const auto open_event = [&]() {
    out += first_event ? "  {\n" : ",\n  {\n";
    first_event = false;
  };
  for (const CpuEvent& e : cpu) {
    open_event();
    out += "    \"ph\": \"X\", \"cat\": \"" + e.cat + "\", \"name\": \"";
    append_escaped(out, e.name);
    out += format(
        "\", \"pid\": %d, \"tid\": %d,\n    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n"
        "      %s\n    }\n  }",
        pid, e.tid, us(e.ts_us).c_str(), us(e.dur_us).c_str(), e.args.c_str());
  }
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    const long long correlation = static_cast<long long>(kFirstCorrelation + i);
    const int tid = k.backward_thread ? autograd_tid : pid;
    const bool nccl = k.name.starts_with("ncclDevKernel");
    const bool memcpy = k.name.starts_with("Memcpy");
    const long long external =
        k.scope >= 0 ? static_cast<long long>(kFirstExternalId + k.scope) : correlation;
    if (nccl) {
      open_event();
      out += format(
          "    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": %d, "
          "\"tid\": %d,\n    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": "
          "%lld,\"Collective name\": \"%s\", \"In msg nelems\": %lld, \"Out msg nelems\": %lld, "
          "\"Group size\": %zu, \"dtype\": \"%s\", \"In split size\": \"[]\", \"Out split size\": "
          "\"[]\", \"Process Group Name\": \"%s\", \"Process Group Description\": \"%s\", "
          "\"Process Group Ranks\": \"%s\"\n    }\n  }",
          pid, tid, us(launch_at[i] - 1.0).c_str(), us(launch_us + 2.0).c_str(), external,
          k.args.collective.c_str(), std::llround(k.args.in_nelems),
          std::llround(k.args.out_nelems), k.args.group->ranks.size(), k.args.dtype.c_str(),
          k.args.group->name.c_str(), k.args.group->desc.c_str(),
          rank_list(k.args.group->ranks).c_str());
    }
    open_event();
    const char* runtime = nccl     ? "cuLaunchKernelEx"
                          : memcpy ? "cudaMemcpyAsync"
                                   : "cudaLaunchKernel";
    const int cbid = nccl ? 652 : memcpy ? 41 : 211;
    out += format(
        "    \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
        "    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": %lld,     "
        " \"cbid\": %d, \"correlation\": %lld\n    }\n  }",
        nccl ? "cuda_driver" : "cuda_runtime", runtime, pid, tid, us(launch_at[i]).c_str(),
        us(launch_us).c_str(), external, cbid, correlation);
    open_event();
    out += format(
        "    \"ph\": \"s\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": %s,\n"
        "    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }",
        correlation, pid, tid, us(launch_at[i]).c_str());
    open_event();
    out += format("    \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"",
                  memcpy ? "gpu_memcpy" : "kernel");
    append_escaped(out, k.name);
    out += format("\", \"pid\": %d, \"tid\": %d,\n    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n",
                  device, k.stream, us(k.start_us).c_str(), us(k.dur_us).c_str());
    if (memcpy) {
      out += format(
          "      \"External id\": %lld,      \"device\": %d, \"context\": 1,      "
          "\"stream\": %d, \"correlation\": %lld,      \"bytes\": %lld, \"memory "
          "bandwidth (GB/s)\": %.3f\n    }\n  }",
          external, device, k.stream, correlation,
          std::llround(k.dur_us * 1e-6 * workload.hardware.host_link_bandwidth_gb_per_s * 1e9),
          workload.hardware.host_link_bandwidth_gb_per_s);
    } else {
      const bool comm = nccl || k.name.find("deep_ep") != std::string::npos;
      out += format(
          "      \"External id\": %lld,      \"queued\": 0, \"device\": %d, \"context\": "
          "1,      \"stream\": %d, \"correlation\": %lld,      \"registers per "
          "thread\": %d,      \"shared memory\": %d,      \"blocks per SM\": %s,      "
          "\"warps per SM\": %s,      \"grid\": [%d, 1, 1],      \"block\": [%d, 1, 1], "
          "     \"est. achieved occupancy %%\": %d",
          external, device, k.stream, correlation, comm ? 96 : 168, comm ? 87568 : 213504,
          comm ? "0.242424" : "1.000000", comm ? "4.121212" : "12.000000",
          comm ? 32 : sm_count(workload.hardware), comm ? 544 : 384, comm ? 0 : 19);
      if (k.comm) {
        out += format(
            ", \"Collective name\": \"%s\", \"In msg nelems\": %lld, \"Out msg "
            "nelems\": %lld, \"Group size\": %zu, \"dtype\": \"%s\", \"In split size\": "
            "\"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"%s\", "
            "\"Process Group Description\": \"%s\", \"Process Group Ranks\": \"%s\"",
            k.args.collective.c_str(), std::llround(k.args.in_nelems),
            std::llround(k.args.out_nelems), k.args.group->ranks.size(), k.args.dtype.c_str(),
            k.args.group->name.c_str(), k.args.group->desc.c_str(),
            rank_list(k.args.group->ranks).c_str());
      }
      out += "\n    }\n  }";
    }
    open_event();
    out += format(
        "    \"ph\": \"f\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": %s,\n"
        "    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }",
        correlation, device, k.stream, us(k.start_us).c_str());
  }
  // Process and thread names, as Kineto closes its event list.
  const double meta_ts = step_windows.front().first;
  const auto meta = [&](const char* name, int meta_pid, int meta_tid, const std::string& args) {
    open_event();
    out += format(
        "    \"name\": \"%s\", \"ph\": \"M\", \"ts\": %s, \"pid\": %d, \"tid\": %d,\n"
        "    \"args\": {\n      %s\n    }\n  }",
        name, us(meta_ts).c_str(), meta_pid, meta_tid, args.c_str());
  };
  meta("process_name", pid, 0, "\"name\": \"python\"");
  meta("process_labels", pid, 0, "\"labels\": \"CPU\"");
  meta("process_name", device, 0, "\"name\": \"python\"");
  meta("process_labels", device, 0, format("\"labels\": \"GPU %d\"", device));
  meta("process_sort_index", device, 0, format("\"sort_index\": %d", 16777216 + device));
  std::vector<int> streams;
  for (const Kernel& k : kernels) {
    if (std::find(streams.begin(), streams.end(), k.stream) == streams.end()) {
      streams.push_back(k.stream);
    }
  }
  std::sort(streams.begin(), streams.end());
  for (const int stream : streams) {
    meta("thread_name", device, stream, format("\"name\": \"stream %d \"", stream));
    meta("thread_sort_index", device, stream, format("\"sort_index\": %d", stream));
  }
  meta("thread_name", pid, pid, format("\"name\": \"thread %d (python)\"", pid));
  meta("thread_name", pid, autograd_tid,
       format("\"name\": \"thread %d (pt_autograd_0)\"", autograd_tid));
  out += "\n  ],\n";
  out += "  \"traceName\": \"/tmp/torch_profile/" + trace_file_name(rank) + "\",\n";
  out += "  \"displayTimeUnit\": \"ms\",\n";
  out += format("  \"baseTimeNanoseconds\": %lld\n}\n", static_cast<long long>(base_ns));
  return out;
}

std::string gzip_compress(std::string_view text) {
  z_stream stream{};
  // windowBits 15 + 16: a gzip wrapper with a zeroed header (no name, no time).
  const int init = deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  assert(init == Z_OK);
  (void)init;
  std::string out;
  out.resize(deflateBound(&stream, static_cast<uLong>(text.size())));
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&stream, Z_FINISH);
  assert(result == Z_STREAM_END);
  (void)result;
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

Result<std::vector<std::string>> write_kineto_traces(const std::string& directory,
                                                     const Workload& workload, const Recipe& recipe,
                                                     const SimulatedRun& run,
                                                     const TraceOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) return make_error(directory + ": cannot create the directory: " + error.message());
  const int stages = static_cast<int>(run.prediction.stages.size());
  std::vector<std::string> paths;
  for (int stage = 0; stage < stages; ++stage) {
    const int rank = first_rank_of_stage(workload.gpus, stages, stage);
    const std::string path = (std::filesystem::path(directory) / trace_file_name(rank)).string();
    const std::string bytes =
        gzip_compress(kineto_trace_json(workload, recipe, run, stage, options));
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) return make_error(path + ": cannot write the trace");
    paths.push_back(path);
  }
  return paths;
}

}  // namespace attune::sim
