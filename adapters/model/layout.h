// The layout of one launch: every recipe setting the performance and memory model reads, decoded
// from a Recipe (flags the recipe does not set take Megatron-LM's defaults from ArgCatalog), and
// its resolution against a workload: data-parallel sizes, microbatches, the layers each pipeline
// rank holds, checked by every layout rule of Megatron-LM (megatron_lm.md §1) with Megatron's own
// assertion message, as the real job would fail at start-up.
//
// decode_layout -> resolve_layout is what predict() does with a recipe; the sweep builds Layouts
// directly and turns the winners back into recipes with apply_layout. All functions are pure and
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/workload.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune::sim {

// The Megatron-LM whose start-up checks and argument rewrites these rules copy: the commit the
// conformance tests run (shared/tools/megatron-oracle). attune assumes this version's rules
// whatever version a baseline's log reports; where a rule differs in another version, the
// verdict here is this version's.
inline constexpr std::string_view kMegatronRulesCommit = "d98e8a64ddf34856e74b24714e3bedb2f5a39553";

enum class RecomputeGranularity : std::uint8_t { kNone, kSelective, kFull };
enum class RecomputeMethod : std::uint8_t { kNone, kUniform, kBlock };
enum class Dispatcher : std::uint8_t { kAllgather, kAlltoall, kFlex };
enum class FlexBackend : std::uint8_t { kDeepep, kHybridep, kNcclep };
enum class CudaGraphImpl : std::uint8_t { kNone, kLocal, kTransformerEngine, kFullIteration };

// --recompute-modules, as bits.
enum RecomputeModule : std::uint32_t {
  kRecomputeCoreAttn = 1u << 0,
  kRecomputeMoeAct = 1u << 1,
  kRecomputeLayernorm = 1u << 2,
  kRecomputeMlaUpProj = 1u << 3,
  kRecomputeMlp = 1u << 4,
  kRecomputeMoe = 1u << 5,
  kRecomputeSharedExperts = 1u << 6,
  kRecomputeOther = 1u << 7,  // gdn_norm_out, gdp_in_proj, gdp_qkv, mhc: no such module here
};

// --cuda-graph-modules, as bits; 0 = the whole layer.
enum CudaGraphModule : std::uint32_t {
  kGraphAttn = 1u << 0,
  kGraphMlp = 1u << 1,
  kGraphMoe = 1u << 2,
  kGraphMoeRouter = 1u << 3,
  kGraphMoePreprocess = 1u << 4,
};

struct Layout {
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int ep = 1;
  int etp = 0;                       // 0: not set, experts use TP
  int virtual_stages = 0;            // --num-virtual-stages-per-pipeline-rank; 0: not set
  int layers_per_virtual_stage = 0;  // --num-layers-per-virtual-pipeline-stage; 0: not set
  std::string pipeline_layout;       // --pipeline-model-parallel-layout; empty: not set
  int first_stage_layers = 0;        // --decoder-first-pipeline-num-layers; 0: not set
  int last_stage_layers = 0;         // --decoder-last-pipeline-num-layers; 0: not set
  bool first_stage_layers_set = false;
  bool last_stage_layers_set = false;
  bool account_for_embedding = false;
  bool account_for_loss = false;
  bool overlap_p2p = true;
  int microbatch_group_size = 0;  // 0: not set (Megatron uses PP)
  int micro_batch_size = 0;       // 0: not set (an error)

  bool sequence_parallel = false;
  bool tp_comm_overlap = false;

  RecomputeGranularity recompute = RecomputeGranularity::kNone;
  RecomputeMethod recompute_method = RecomputeMethod::kNone;
  int recompute_num_layers = 0;  // 0: not set
  std::uint32_t recompute_modules = kRecomputeCoreAttn;
  std::string unknown_recompute_modules;  // names Megatron refuses, space-separated
  bool moe_layer_recompute = false;
  bool distribute_saved_activations = false;

  Dispatcher dispatcher = Dispatcher::kAllgather;
  FlexBackend flex_backend = FlexBackend::kDeepep;
  bool moe_enable_deepep = false;
  // --moe-expert-rank-capacity-factor: a fixed receive budget per EP rank, so HybridEP and NCCL EP
  // size their buffers without reading the token counts back to the host.
  bool expert_rank_budget = false;
  bool grouped_tensor = false;  // --moe-use-grouped-tensor
  bool ep_overlap = false;      // --overlap-moe-expert-parallel-comm
  bool delay_wgrad_compute = false;
  bool shared_expert_overlap = false;
  bool grouped_gemm = false;
  bool permute_fusion = false;

  bool distributed_optimizer = false;
  bool megatron_fsdp = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool grad_reduce_in_bf16 = false;
  bool fp8_param_gather = false;
  bool precision_aware_optimizer = false;
  bool optimizer_cpu_offload = false;
  double optimizer_offload_fraction = 1.0;
  bool overlap_cpu_optimizer_d2h_h2d = false;
  int adam_state_bytes = 8;  // bytes of exp_avg plus exp_avg_sq per parameter
  int num_distributed_optimizer_instances = 1;

  CudaGraphImpl cuda_graph = CudaGraphImpl::kNone;
  std::uint32_t cuda_graph_modules = 0;
  bool deprecated_cuda_graph_flag = false;  // --enable-cuda-graph or --external-cuda-graph
  bool check_for_nan = true;
  // Read, never tuned: a graphed recompute cannot draw random numbers (Megatron refuses dropout
  // inside a graphed, recomputed module).
  double attention_dropout = 0.1;
  double hidden_dropout = 0.1;

  std::string cp_comm_type = "p2p";  // one word for every layer, or one per layer
  bool hierarchical_cp_sizes_set = false;
  bool tp_pp_dp_mapping = false;
  bool ddp_bucket_size_set = false;
  bool ddp_num_buckets_set = false;
  bool defer_embedding_wgrad = false;
  int cpu_offloading_num_layers = 0;  // activation offload

  bool cross_entropy_fusion = false;
  // --no-rope-fusion unset; Megatron also turns the fusion off for any position embedding but
  // "rope" (applies_rope_fusion).
  bool rope_fusion = true;
  // --position-embedding-type as the recipe gives it (it overrides the model file's; the argument
  // catalog has already checked it against Megatron's choices); empty when the recipe leaves it to
  // the model.
  std::string position_embedding_type;
  int mtp_layers = 0;
  bool fp8_format_set = false;  // --fp8-format given
  std::string fp8_recipe = "delayed";
  bool fp16 = false;
  bool cuda_device_max_connections_one = false;  // env CUDA_DEVICE_MAX_CONNECTIONS=1
  // env NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: Transformer Engine's fused grouped MLP for the experts
  // (CuTe DSL): both grouped GEMMs and the activation in one kernel. Transformer Engine runs it
  // only through its op fuser, on compute capability 10, with an MXFP8 recipe; elsewhere the
  // variable does nothing (performance_model.cc).
  bool fused_grouped_mlp = false;
  bool te_op_fuser = false;  // --use-transformer-engine-op-fuser
  // --moe-mlp-glu-interleave-size: the experts' FC1 interleaves gate and linear rows in blocks of
  // this many (0 = not interleaved); the fused grouped MLP's kernel takes only 32.
  int moe_glu_interleave_size = 0;
};

// A Layout with Megatron's default for every setting, read from ArgCatalog::megatron().
const Layout& default_layout();

// The position embedding a run of `model` uses: the recipe's --position-embedding-type, which
// overrides the model's, else the model's.
const std::string& position_embedding_type(const Layout& l, const ModelSpec& model);

// Megatron's apply_rope_fusion after validate_args: the recipe's switch (--no-rope-fusion turns it
// off), and off for any position embedding but "rope".
bool applies_rope_fusion(const Layout& l, std::string_view position_embedding_type);

// Megatron's text for a value: --recompute-granularity's ("" for none, which Megatron prints as
// None) and --moe-token-dispatcher-type's.
std::string_view recompute_granularity_name(RecomputeGranularity granularity);
std::string_view dispatcher_name(Dispatcher dispatcher);

// Decodes the settings the model reads. Fails on values that do not parse and on flags that
// contradict the workload (a --seq-length, --global-batch-size or architecture flag that differs
// from it, --fp8-format under a bf16 workload); Megatron's own checks are resolve_layout's.
Result<Layout> decode_layout(const Workload& workload, const Recipe& recipe);

// What one pipeline rank holds, over all its model chunks.
struct StageLayers {
  int dense_layers = 0;  // decoder layers with a dense MLP
  int moe_layers = 0;    // decoder layers with a MoE MLP
  int mtp_layers = 0;
  bool embedding = false;
  bool loss = false;
  int max_chunk_layers = 0;  // decoder + MTP layers of its largest chunk
  int decoder_layers() const { return dense_layers + moe_layers; }
};

struct ResolvedLayout {
  Layout layout;  // as given, except etp filled in and sequence parallelism off at TP 1
  int vp = 1;     // model chunks per pipeline rank
  int dp = 1;     // data-parallel size of attention and dense layers
  int edp = 1;    // expert data-parallel size
  int microbatches = 1;
  std::vector<StageLayers> stages;  // one per pipeline rank
};

// Checks `layout` against the workload with Megatron's rules; the error is Megatron's assertion
// message for the first rule the launch breaks.
Result<ResolvedLayout> resolve_layout(const Workload& workload, const Layout& layout);

// `base` with every layout setting replaced by `layout`'s (flags equal to Megatron's default are
// removed), so that decode_layout(workload, apply_layout(base, layout)) gives `layout` back.
Result<Recipe> apply_layout(const Recipe& base, const Layout& layout);

// Short text of the parallel layout, e.g. "TP2 PP8 VP4 CP1 EP16 ETP1 MBS1".
std::string layout_summary(const ResolvedLayout& resolved);

}  // namespace attune::sim
