#include "adapters/model/layout.h"

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "events/arg_catalog.h"
#include "events/assert.h"

namespace attune::sim {
namespace {

// The flags the model reads, by canonical spelling.
constexpr std::string_view kTp = "--tensor-model-parallel-size";
constexpr std::string_view kPp = "--pipeline-model-parallel-size";
constexpr std::string_view kCp = "--context-parallel-size";
constexpr std::string_view kEp = "--expert-model-parallel-size";
constexpr std::string_view kEtp = "--expert-tensor-parallel-size";
constexpr std::string_view kVirtualStages = "--num-virtual-stages-per-pipeline-rank";
constexpr std::string_view kLayersPerVirtualStage = "--num-layers-per-virtual-pipeline-stage";
constexpr std::string_view kPipelineLayout = "--pipeline-model-parallel-layout";
constexpr std::string_view kFirstStageLayers = "--decoder-first-pipeline-num-layers";
constexpr std::string_view kLastStageLayers = "--decoder-last-pipeline-num-layers";
constexpr std::string_view kAccountEmbedding = "--account-for-embedding-in-pipeline-split";
constexpr std::string_view kAccountLoss = "--account-for-loss-in-pipeline-split";
constexpr std::string_view kNoOverlapP2p = "--no-overlap-p2p-communication";
constexpr std::string_view kMicrobatchGroup = "--microbatch-group-size-per-virtual-pipeline-stage";
constexpr std::string_view kMicroBatch = "--micro-batch-size";
constexpr std::string_view kSequenceParallel = "--sequence-parallel";
constexpr std::string_view kTpCommOverlap = "--tp-comm-overlap";
constexpr std::string_view kRecomputeGranularity = "--recompute-granularity";
constexpr std::string_view kRecomputeMethod = "--recompute-method";
constexpr std::string_view kRecomputeNumLayers = "--recompute-num-layers";
constexpr std::string_view kRecomputeModules = "--recompute-modules";
constexpr std::string_view kRecomputeActivations = "--recompute-activations";
constexpr std::string_view kMoeLayerRecompute = "--moe-layer-recompute";
constexpr std::string_view kDistributeSaved = "--distribute-saved-activations";
constexpr std::string_view kDispatcher = "--moe-token-dispatcher-type";
constexpr std::string_view kFlexBackend = "--moe-flex-dispatcher-backend";
constexpr std::string_view kEnableDeepep = "--moe-enable-deepep";
constexpr std::string_view kExpertRankBudget = "--moe-expert-rank-capacity-factor";
constexpr std::string_view kGroupedTensor = "--moe-use-grouped-tensor";
constexpr std::string_view kEpOverlap = "--overlap-moe-expert-parallel-comm";
constexpr std::string_view kDelayWgrad = "--delay-wgrad-compute";
constexpr std::string_view kSharedExpertOverlap = "--moe-shared-expert-overlap";
constexpr std::string_view kGroupedGemm = "--moe-grouped-gemm";
constexpr std::string_view kPermuteFusion = "--moe-permute-fusion";
constexpr std::string_view kDistributedOptimizer = "--use-distributed-optimizer";
constexpr std::string_view kMegatronFsdp = "--use-megatron-fsdp";
constexpr std::string_view kOverlapGradReduce = "--overlap-grad-reduce";
constexpr std::string_view kOverlapParamGather = "--overlap-param-gather";
constexpr std::string_view kGradReduceBf16 = "--grad-reduce-in-bf16";
constexpr std::string_view kFp8ParamGather = "--fp8-param-gather";
constexpr std::string_view kPrecisionAware = "--use-precision-aware-optimizer";
constexpr std::string_view kCpuOffload = "--optimizer-cpu-offload";
constexpr std::string_view kOffloadFraction = "--optimizer-offload-fraction";
constexpr std::string_view kAttentionDropout = "--attention-dropout";
constexpr std::string_view kHiddenDropout = "--hidden-dropout";
constexpr std::string_view kOverlapCpuCopies = "--overlap-cpu-optimizer-d2h-h2d";
constexpr std::string_view kExpAvgDtype = "--exp-avg-dtype";
constexpr std::string_view kExpAvgSqDtype = "--exp-avg-sq-dtype";
constexpr std::string_view kOptimizerInstances = "--num-distributed-optimizer-instances";
constexpr std::string_view kCudaGraphImpl = "--cuda-graph-impl";
constexpr std::string_view kCudaGraphModules = "--cuda-graph-modules";
constexpr std::string_view kEnableCudaGraph = "--enable-cuda-graph";
constexpr std::string_view kExternalCudaGraph = "--external-cuda-graph";
constexpr std::string_view kNoCheckNan = "--no-check-for-nan-in-loss-and-grad";
constexpr std::string_view kCrossEntropyFusion = "--cross-entropy-loss-fusion";
constexpr std::string_view kNoRopeFusion = "--no-rope-fusion";  // the dest apply_rope_fusion
constexpr std::string_view kPositionEmbedding = "--position-embedding-type";
constexpr std::string_view kCpCommType = "--cp-comm-type";
constexpr std::string_view kHierarchicalCp = "--hierarchical-context-parallel-sizes";
constexpr std::string_view kTpPpDpMapping = "--use-tp-pp-dp-mapping";
constexpr std::string_view kDdpBucketSize = "--ddp-bucket-size";
constexpr std::string_view kDdpNumBuckets = "--ddp-num-buckets";
constexpr std::string_view kDeferEmbeddingWgrad = "--defer-embedding-wgrad-compute";
constexpr std::string_view kActivationOffloadLayers = "--cpu-offloading-num-layers";
constexpr std::string_view kMtpLayers = "--mtp-num-layers";
constexpr std::string_view kFp8Format = "--fp8-format";
constexpr std::string_view kFp8Recipe = "--fp8-recipe";
constexpr std::string_view kFp16 = "--fp16";
constexpr std::string_view kSeqLength = "--seq-length";
constexpr std::string_view kGlobalBatch = "--global-batch-size";
constexpr std::string_view kMaxConnectionsEnv = "CUDA_DEVICE_MAX_CONNECTIONS";
constexpr std::string_view kFusedGroupedMlpEnv = "NVTE_CUTEDSL_FUSED_GROUPED_MLP";
constexpr std::string_view kTeOpFuser = "--use-transformer-engine-op-fuser";
constexpr std::string_view kMoeGluInterleave = "--moe-mlp-glu-interleave-size";

// Megatron's text for each enum value, in enum order.
constexpr std::string_view kGranularityNames[] = {"", "selective", "full"};
constexpr std::string_view kMethodNames[] = {"", "uniform", "block"};
constexpr std::string_view kDispatcherNames[] = {"allgather", "alltoall", "flex"};
constexpr std::string_view kBackendNames[] = {"deepep", "hybridep", "ncclep"};
constexpr std::string_view kGraphImplNames[] = {"none", "local", "transformer_engine",
                                                "full_iteration"};

struct ModuleName {
  std::string_view name;
  std::uint32_t bit;
};
constexpr ModuleName kRecomputeModuleNames[] = {{"core_attn", kRecomputeCoreAttn},
                                                {"moe_act", kRecomputeMoeAct},
                                                {"layernorm", kRecomputeLayernorm},
                                                {"mla_up_proj", kRecomputeMlaUpProj},
                                                {"mlp", kRecomputeMlp},
                                                {"moe", kRecomputeMoe},
                                                {"shared_experts", kRecomputeSharedExperts},
                                                {"gdn_norm_out", kRecomputeOther},
                                                {"gdp_in_proj", kRecomputeOther},
                                                {"gdp_qkv", kRecomputeOther},
                                                {"mhc", kRecomputeOther}};
constexpr ModuleName kGraphModuleNames[] = {{"attn", kGraphAttn},
                                            {"mlp", kGraphMlp},
                                            {"moe", kGraphMoe},
                                            {"moe_router", kGraphMoeRouter},
                                            {"moe_preprocess", kGraphMoePreprocess}};

std::string str(std::string_view text) { return std::string(text); }

// Appends `word` to a `separator`-separated list.
void append_word(std::string& list, std::string_view word, std::string_view separator) {
  if (!list.empty()) list += separator;
  list += word;
}
std::string num(long long value) { return std::to_string(value); }

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t start = 0;
  while (start < text.size()) {
    while (start < text.size() && (text[start] == ' ' || text[start] == '\'')) ++start;
    std::size_t end = start;
    while (end < text.size() && text[end] != ' ' && text[end] != '\'') ++end;
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end;
  }
  return words;
}

// Reads the recipe's flags, falling back to the catalog's defaults.
class FlagReader {
 public:
  explicit FlagReader(const Recipe& recipe) : recipe_(recipe) {}

  const std::string* find(std::string_view flag) const {
    auto it = recipe_.flags.find(std::string(flag));
    return it == recipe_.flags.end() ? nullptr : &it->second;
  }
  bool has(std::string_view flag) const { return find(flag) != nullptr; }

  // An int flag: `out` keeps its default when the flag is absent.
  void read_int(std::string_view flag, int& out) {
    const std::string* value = find(flag);
    if (!value) return;
    int parsed = 0;
    auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), parsed);
    if (ec != std::errc() || end != value->data() + value->size()) {
      fail(str(flag) + " expects an integer, found '" + *value + "'");
      return;
    }
    out = parsed;
  }
  void read_double(std::string_view flag, double& out) {
    const std::string* value = find(flag);
    if (!value) return;
    char* end = nullptr;
    const double parsed = std::strtod(value->c_str(), &end);
    if (end != value->c_str() + value->size()) {
      fail(str(flag) + " expects a number, found '" + *value + "'");
      return;
    }
    out = parsed;
  }
  // A store_true switch; a store_false switch (a "--no-x" row) turns `out` off.
  void read_switch(std::string_view flag, bool& out, bool store_false = false) {
    if (has(flag)) out = !store_false;
  }
  void read_text(std::string_view flag, std::string& out) {
    if (const std::string* value = find(flag)) out = *value;
  }
  template <typename Enum, std::size_t N>
  void read_enum(std::string_view flag, const std::string_view (&names)[N], Enum& out) {
    const std::string* value = find(flag);
    if (!value) return;
    for (std::size_t i = 0; i < N; ++i) {
      if (!names[i].empty() && names[i] == *value) {
        out = static_cast<Enum>(i);
        return;
      }
    }
    fail(str(flag) + " has no value '" + *value + "'");
  }

  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }
  const std::string& error() const { return error_; }

 private:
  const Recipe& recipe_;
  std::string error_;
};

int catalog_int(const ArgCatalog& catalog, std::string_view flag) {
  const ArgInfo* info = catalog.find(flag);
  ATTUNE_ASSERT(info != nullptr, "every layout field is in the table");
  int value = 0;
  const std::string& text = info->default_text;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;  // "None" reads as 0, the Layout's "not set"
}

bool catalog_switch(const ArgCatalog& catalog, std::string_view flag) {
  const ArgInfo* info = catalog.find(flag);
  ATTUNE_ASSERT(info != nullptr, "every layout field is in the table");
  return info->default_text == "True";
}

std::string catalog_text(const ArgCatalog& catalog, std::string_view flag) {
  const ArgInfo* info = catalog.find(flag);
  ATTUNE_ASSERT(info != nullptr, "every layout field is in the table");
  return info->default_text;
}

int dtype_bytes(std::string_view dtype) {
  if (dtype == "fp8") return 1;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  return 4;
}

Layout build_default_layout() {
  const ArgCatalog& c = ArgCatalog::megatron();
  Layout d;
  d.tp = catalog_int(c, kTp);
  d.pp = catalog_int(c, kPp);
  d.cp = catalog_int(c, kCp);
  d.ep = catalog_int(c, kEp);
  d.etp = catalog_int(c, kEtp);
  d.virtual_stages = catalog_int(c, kVirtualStages);
  d.layers_per_virtual_stage = catalog_int(c, kLayersPerVirtualStage);
  d.first_stage_layers = catalog_int(c, kFirstStageLayers);
  d.last_stage_layers = catalog_int(c, kLastStageLayers);
  d.account_for_embedding = catalog_switch(c, kAccountEmbedding);
  d.account_for_loss = catalog_switch(c, kAccountLoss);
  d.overlap_p2p = catalog_switch(c, kNoOverlapP2p);  // the dest overlap_p2p_comm
  d.microbatch_group_size = catalog_int(c, kMicrobatchGroup);
  d.micro_batch_size = catalog_int(c, kMicroBatch);
  d.sequence_parallel = catalog_switch(c, kSequenceParallel);
  d.tp_comm_overlap = catalog_switch(c, kTpCommOverlap);
  d.recompute_num_layers = catalog_int(c, kRecomputeNumLayers);
  d.distribute_saved_activations = catalog_switch(c, kDistributeSaved);
  const std::string dispatcher = catalog_text(c, kDispatcher);
  d.dispatcher = dispatcher == "flex"       ? Dispatcher::kFlex
                 : dispatcher == "alltoall" ? Dispatcher::kAlltoall
                                            : Dispatcher::kAllgather;
  const std::string backend = catalog_text(c, kFlexBackend);
  d.flex_backend = backend == "hybridep" ? FlexBackend::kHybridep
                   : backend == "ncclep" ? FlexBackend::kNcclep
                                         : FlexBackend::kDeepep;
  d.ep_overlap = catalog_switch(c, kEpOverlap);
  d.shared_expert_overlap = catalog_switch(c, kSharedExpertOverlap);
  d.grouped_gemm = catalog_switch(c, kGroupedGemm);
  d.permute_fusion = catalog_switch(c, kPermuteFusion);
  d.distributed_optimizer = catalog_switch(c, kDistributedOptimizer);
  d.megatron_fsdp = catalog_switch(c, kMegatronFsdp);
  d.overlap_grad_reduce = catalog_switch(c, kOverlapGradReduce);
  d.overlap_param_gather = catalog_switch(c, kOverlapParamGather);
  d.grad_reduce_in_bf16 = catalog_switch(c, kGradReduceBf16);
  d.fp8_param_gather = catalog_switch(c, kFp8ParamGather);
  d.precision_aware_optimizer = catalog_switch(c, kPrecisionAware);
  d.optimizer_cpu_offload = catalog_switch(c, kCpuOffload);
  d.optimizer_offload_fraction = std::stod(catalog_text(c, kOffloadFraction));
  d.overlap_cpu_optimizer_d2h_h2d = catalog_switch(c, kOverlapCpuCopies);
  d.adam_state_bytes =
      dtype_bytes(catalog_text(c, kExpAvgDtype)) + dtype_bytes(catalog_text(c, kExpAvgSqDtype));
  d.num_distributed_optimizer_instances = catalog_int(c, kOptimizerInstances);
  const std::string graph = catalog_text(c, kCudaGraphImpl);
  for (std::size_t i = 0; i < std::size(kGraphImplNames); ++i) {
    if (kGraphImplNames[i] == graph) d.cuda_graph = static_cast<CudaGraphImpl>(i);
  }
  d.check_for_nan = catalog_switch(c, kNoCheckNan);
  d.cross_entropy_fusion = catalog_switch(c, kCrossEntropyFusion);
  d.rope_fusion = catalog_switch(c, kNoRopeFusion);
  d.cp_comm_type = catalog_text(c, kCpCommType);
  d.tp_pp_dp_mapping = catalog_switch(c, kTpPpDpMapping);
  d.defer_embedding_wgrad = catalog_switch(c, kDeferEmbeddingWgrad);
  d.cpu_offloading_num_layers = catalog_int(c, kActivationOffloadLayers);
  d.mtp_layers = catalog_int(c, kMtpLayers);
  d.fp8_recipe = catalog_text(c, kFp8Recipe);
  d.fp16 = catalog_switch(c, kFp16);
  d.te_op_fuser = catalog_switch(c, kTeOpFuser);
  d.moe_glu_interleave_size = catalog_int(c, kMoeGluInterleave);
  return d;
}

// Checks an architecture flag of the recipe against the model.
void check_architecture(FlagReader& flags, std::string_view flag, int model_value,
                        const ModelSpec& model) {
  int value = model_value;
  flags.read_int(flag, value);
  if (value != model_value) {
    flags.fail("recipe sets " + str(flag) + " " + num(value) + " but model " + model.name +
               " has " + num(model_value));
  }
}

// The MLP's activation the recipe names (--swiglu, --squared-relu; neither: GeLU) must be the
// model's: the simulator would otherwise price and log a model the job does not train.
void check_activation(FlagReader& flags, const ModelSpec& model) {
  const std::string_view model_activation =
      model.gated_linear_unit ? std::string_view("swiglu") : std::string_view(model.activation);
  for (const std::string_view activation : {"swiglu", "squared-relu"}) {
    if (flags.has("--" + str(activation)) && activation != model_activation) {
      flags.fail("recipe sets --" + str(activation) + " but model " + model.name + "'s MLP is " +
                 str(model_activation));
    }
  }
}

// One virtual pipeline stage: its decoder layers (a contiguous range), MTP layers, E and L.
struct VirtualStage {
  int decoder_layers = 0;
  int mtp_layers = 0;
  bool embedding = false;
  bool loss = false;
};

// Expands Megatron's --pipeline-model-parallel-layout text ("E|(tt|)*30mL") into stages.
class LayoutParser {
 public:
  explicit LayoutParser(std::string_view text) : text_(text) {}

  Result<std::vector<std::string>> stages() {
    std::string flat;
    if (!sequence(flat) || pos_ != text_.size()) {
      return make_error("cannot parse --pipeline-model-parallel-layout '" + str(text_) + "'");
    }
    std::vector<std::string> out(1);
    for (char c : flat) {
      if (c == '|') {
        out.emplace_back();
      } else {
        out.back() += c;
      }
    }
    return out;
  }

 private:
  bool sequence(std::string& out) {
    while (pos_ < text_.size() && text_[pos_] != ')') {
      std::string item;
      if (text_[pos_] == '(') {
        ++pos_;
        if (!sequence(item) || pos_ >= text_.size() || text_[pos_] != ')') return false;
        ++pos_;
      } else if (text_[pos_] == ',' || text_[pos_] == ' ') {
        ++pos_;
        continue;
      } else {
        const char c = text_[pos_++];
        if (c != 'E' && c != 't' && c != 'm' && c != 'L' && c != '|') return false;
        item = c;
      }
      int repeat = 1;
      if (pos_ < text_.size() && text_[pos_] == '*') {
        ++pos_;
        std::size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
        if (pos_ == start || pos_ - start > 6) return false;
        repeat = std::stoi(str(text_.substr(start, pos_ - start)));
      }
      for (int i = 0; i < repeat; ++i) out += item;
    }
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// The virtual stages of an explicit layout string, in virtual-stage order.
Result<std::vector<VirtualStage>> split_by_layout_string(const ModelSpec& model, const Layout& l,
                                                         int& vp) {
  Result<std::vector<std::string>> stages = LayoutParser(l.pipeline_layout).stages();
  if (!stages.ok()) return make_error(stages.error());
  const int count = static_cast<int>(stages->size());
  if (count % l.pp != 0) {
    return make_error(
        "The length of pipeline_model_parallel_layout must be divisible by "
        "pipeline_model_parallel_size (" +
        num(count) + " vs " + num(l.pp) + ")");
  }
  vp = count / l.pp;
  std::vector<VirtualStage> out(count);
  int embeddings = 0;
  int losses = 0;
  int decoders = 0;
  int mtps = 0;
  bool mtp_seen = false;
  bool first = true;
  char last = ' ';
  for (int i = 0; i < count; ++i) {
    for (char c : (*stages)[i]) {
      if (first && c != 'E') {
        return make_error("The first layer must be embedding, but got " + std::string(1, c));
      }
      first = false;
      last = c;
      switch (c) {
        case 'E':
          ++embeddings;
          out[i].embedding = true;
          break;
        case 'L':
          ++losses;
          out[i].loss = true;
          break;
        case 't':
          if (mtp_seen) return make_error("decoder layers must be placed before MTP layers");
          ++decoders;
          ++out[i].decoder_layers;
          break;
        default:
          mtp_seen = true;
          ++mtps;
          ++out[i].mtp_layers;
      }
    }
  }
  if (last != 'L')
    return make_error("The last layer must be loss, but got " + std::string(1, last));
  if (embeddings != 1) return make_error("Embedding must be specified exactly once");
  if (losses != 1) return make_error("Loss must be specified exactly once");
  if (decoders != model.num_layers) {
    return make_error("Number of decoder layers " + num(decoders) + "must match num_layers " +
                      num(model.num_layers));
  }
  if (mtps != l.mtp_layers)
    return make_error("Number of mtp layers in layout must match mtp_num_layers");
  return out;
}

// The virtual stages of the flag-based splits (even, --account-for-*, uneven first/last), with
// Megatron's checks, in virtual-stage order.
// The virtual stages per pipeline rank (`vp`) the flags ask for, with Megatron's refusals.
Status check_virtual_stages(const Layout& l, int layers, int& vp) {
  const int pp = l.pp;
  if (l.virtual_stages > 0 && l.layers_per_virtual_stage > 0) {
    return make_error(
        "No more than one of the following arguments can be set at the same time: "
        "--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,"
        "--pipeline-model-parallel-layout.");
  }
  const bool uneven = l.first_stage_layers_set || l.last_stage_layers_set;
  if (l.layers_per_virtual_stage > 0 && uneven) {
    return make_error(
        "please use --num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel "
        "degree when enable uneven pipeline parallelism");
  }
  const int accounted = layers + (l.account_for_embedding ? 1 : 0) + (l.account_for_loss ? 1 : 0);
  vp = l.virtual_stages > 1 ? l.virtual_stages : 1;
  if (l.layers_per_virtual_stage > 0) {
    if (accounted % pp != 0) {
      return make_error(
          "number of layers of the model must be divisible pipeline model parallel size");
    }
    if ((accounted / pp) % l.layers_per_virtual_stage != 0) {
      return make_error(
          "number of layers per pipeline stage must be divisible number of layers per virtual "
          "pipeline stage");
    }
    vp = accounted / pp / l.layers_per_virtual_stage;
  }
  if (vp > 1 && pp == 1) {
    return make_error(
        "When interleaved schedule is used, pipeline-model-parallel size should be greater than 1");
  }
  if (vp > 1 && !l.overlap_p2p && pp <= 2) {
    return make_error(
        "When interleaved schedule is used and p2p communication overlap is disabled, "
        "pipeline-model-parallel size should be greater than 2 to avoid having multiple p2p "
        "sends and recvs between same 2 ranks per communication batch");
  }

  return Ok{};
}

// Decoder layers per pipeline rank with a first or last stage of its own size.
Result<std::vector<int>> uneven_rank_layers(const Layout& l, int layers, int vp) {
  const int pp = l.pp;
  std::vector<int> rank_layers(pp, 0);
  if (l.account_for_embedding || l.account_for_loss) {
    return make_error(
        "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot be"
        "set at the same time with account_for_embedding_in_pipeline_split"
        "and account_for_loss_in_pipeline_split");
  }
  if (l.first_stage_layers_set && l.first_stage_layers <= 0) {
    return make_error("num_layers_in_first_pipeline_stage must be larger than 0");
  }
  if (l.last_stage_layers_set && l.last_stage_layers <= 0) {
    return make_error("num_layers_in_last_pipeline_stage must be larger than 0");
  }
  if (l.first_stage_layers_set && l.first_stage_layers % vp != 0) {
    return make_error("number of layers at first stage: " + num(l.first_stage_layers) +
                      "must be divisible by virtual pipelineparallel degree " + num(vp));
  }
  if (l.last_stage_layers_set && l.last_stage_layers % vp != 0) {
    return make_error("number of layers at last stage: " + num(l.last_stage_layers) +
                      "must be divisible by virtual pipelineparallel degree " + num(vp));
  }
  const int first = l.first_stage_layers_set ? l.first_stage_layers : 0;
  const int last = l.last_stage_layers_set ? l.last_stage_layers : 0;
  const int middle_layers = layers - first - last;
  const int middle_stages =
      pp - (l.first_stage_layers_set ? 1 : 0) - (l.last_stage_layers_set ? 1 : 0);
  if ((middle_stages <= 0 && middle_layers != 0) || middle_layers < 0) {
    return make_error("Mismatch: " + num(middle_layers) + " middle layers remaining but " +
                      num(middle_stages) + " middle PP stages available.");
  }
  if (middle_stages > 0) {
    if (middle_layers % middle_stages != 0) {
      return make_error("number of layers at middle stage: " + num(middle_layers) +
                        " must be divisible bythe middle pipeline model parallel size " +
                        num(middle_stages));
    }
    const int per_middle = middle_layers / middle_stages;
    if (per_middle % vp != 0) {
      return make_error("number of layers on each middle pipeline rank:" + num(per_middle) +
                        " must be divisible by virtualpipeline parallel degree " + num(vp));
    }
    for (int& count : rank_layers) count = per_middle;
  }
  if (l.first_stage_layers_set) rank_layers.front() = first;
  if (l.last_stage_layers_set) rank_layers.back() = last;
  return rank_layers;
}

// Decoder layers per pipeline rank, all alike: the embedding and the loss counted as layers
// (`accounted`) or not.
Result<std::vector<int>> even_rank_layers(const Layout& l, int layers, int vp) {
  const int pp = l.pp;
  std::vector<int> rank_layers(pp, 0);
  if (l.account_for_embedding || l.account_for_loss) {
    const int accounted = layers + (l.account_for_embedding ? 1 : 0) + (l.account_for_loss ? 1 : 0);
    if (vp == 1 && accounted % pp != 0) {
      return make_error("number of middle layers: " + num(accounted) +
                        " must be divisible by middle pipeline_model_parallel_size " + num(pp));
    }
    if (vp > 1 && accounted % pp != 0) {
      return make_error("num_layers: " + num(accounted) +
                        " after enableaccount_for_embedding_in_pipeline_split or "
                        "account_for_loss_in_pipeline_split must be divisibleby "
                        "pipeline_model_parallel_size " +
                        num(pp));
    }
    if (vp > 1 && (accounted / pp) % vp != 0) {
      return make_error("number of layers on each pipeline rank: " + num(accounted / pp) +
                        " must be divisible byvirtual_pipeline_model_parallel_size" + num(vp));
    }
    for (int& count : rank_layers) count = accounted / pp;
    return rank_layers;
  }
  if (layers % pp != 0) {
    return make_error("Number of layers should be divisible by the pipeline-model-parallel size");
  }
  if ((layers / pp) % vp != 0) {
    return make_error("number of layers on each pipeline rank: " + num(layers / pp) +
                      " must be divisible byvirtual_pipeline_model_parallel_size" + num(vp));
  }
  for (int& count : rank_layers) count = layers / pp;
  return rank_layers;
}

Result<std::vector<VirtualStage>> split_by_flags(const ModelSpec& model, const Layout& l, int& vp) {
  const int pp = l.pp;
  const bool uneven = l.first_stage_layers_set || l.last_stage_layers_set;
  if (Status s = check_virtual_stages(l, model.num_layers, vp); !s.ok())
    return make_error(s.error());
  auto rank_layers = uneven ? uneven_rank_layers(l, model.num_layers, vp)
                            : even_rank_layers(l, model.num_layers, vp);
  if (!rank_layers.ok()) return make_error(rank_layers.error());
  std::vector<VirtualStage> out(pp * vp);
  for (int i = 0; i < pp * vp; ++i) out[i].decoder_layers = (*rank_layers)[i % pp] / vp;
  out.front().embedding = true;
  out.back().loss = true;
  if (!uneven) {
    if (l.account_for_embedding) out.front().decoder_layers -= 1;
    if (l.account_for_loss) out.back().decoder_layers -= 1;
  }
  out.back().mtp_layers = l.mtp_layers;
  return out;
}

// Megatron's rules for recomputation.
// Megatron's checks on --distribute-saved-activations.
Status check_distributed_saved_activations(const Layout& l) {
  if (l.tp == 1) {
    return make_error(
        "can distribute recomputed activations only across tensor model parallel groups");
  }
  if (l.recompute != RecomputeGranularity::kFull) {
    return make_error(
        "distributed recompute activations is only application to full recompute granularity");
  }
  if (l.recompute_method == RecomputeMethod::kNone) {
    return make_error(
        "for distributed recompute activations to work you need to use a recompute method ");
  }
  if (l.sequence_parallel) {
    return make_error(
        "distribute_saved_activations: True must be false when sequence parallel is enabled: "
        "True");
  }
  return Ok{};
}

// Megatron's checks on selective recomputation and its modules.
Status check_selective_recompute(const Workload& w, const Layout& l) {
  const ModelSpec& model = w.model;
  if (l.recompute_method != RecomputeMethod::kNone) {
    return make_error(
        "recompute method is not yet supported for selective recomputing granularity");
  }
  if (l.recompute_num_layers != 0) {
    return make_error(
        "When using recompute_granularity: selective recompute_num_layers must be None.");
  }
  if (!l.unknown_recompute_modules.empty()) {
    std::string names;
    for (std::string_view word : split_words(l.unknown_recompute_modules)) {
      append_word(names, "'" + str(word) + "'", ", ");
    }
    return make_error("Invalid choices for recompute_modules: {" + names +
                      "}. Allowed modules are: {core_attn, moe_act, layernorm, mla_up_proj, "
                      "mlp, moe, shared_experts, gdn_norm_out, gdp_in_proj, gdp_qkv, mhc}");
  }
  if ((l.recompute_modules & kRecomputeMoeAct) && !l.grouped_gemm) {
    return make_error("moe_act in recompute_modules is only supported with moe_grouped_gemm.");
  }
  if ((l.recompute_modules & kRecomputeMlaUpProj) &&
      model.attention != AttentionKind::kMultiLatent) {
    return make_error(
        "mla_up_proj in recompute_modules is only supported with multi_latent_attention.");
  }
  if ((l.recompute_modules & kRecomputeSharedExperts) && l.shared_expert_overlap) {
    return make_error("shared_experts recompute cannot work with --moe-shared-expert-overlap.");
  }
  if (w.precision == Precision::kFp8 && l.fp8_recipe == "delayed" &&
      (l.recompute_modules & (kRecomputeMoeAct | kRecomputeLayernorm))) {
    return make_error("Delayed scaling does not support moe_act and layernorm recompute for fp8.");
  }
  return Ok{};
}

// Megatron's checks on full recomputation.
Status check_full_recompute(const Workload& w, const Layout& l) {
  const ModelSpec& model = w.model;
  if (l.recompute_method == RecomputeMethod::kNone) {
    return make_error(
        "Using recompute_granularity: full so recompute_method must be \"block\" or \"uniform\"");
  }
  const int per_rank = model.num_layers / l.pp;
  if (l.recompute_num_layers < 1 || l.recompute_num_layers > per_rank) {
    return make_error(
        "When using recompute_granularity: full recompute_num_layers must be between 1 and "
        "num_layers_per_pipeline_rank: " +
        num(per_rank));
  }
  if (l.cuda_graph != CudaGraphImpl::kNone && l.cuda_graph != CudaGraphImpl::kFullIteration) {
    return make_error("full recompute is only supported with full iteration CUDA graph.");
  }
  return Ok{};
}

Status check_recompute(const Workload& w, Layout& l) {
  if (l.moe_layer_recompute) {
    if (l.recompute == RecomputeGranularity::kFull) {
      return make_error("Do not set --moe-layer-recompute with full recompute granularity. ");
    }
    l.recompute = RecomputeGranularity::kSelective;
    l.recompute_modules |= kRecomputeMoe;
  }
  if (l.distribute_saved_activations) {
    if (Status s = check_distributed_saved_activations(l); !s.ok()) return s;
  }
  if (l.recompute == RecomputeGranularity::kSelective) return check_selective_recompute(w, l);
  if (l.recompute == RecomputeGranularity::kFull) return check_full_recompute(w, l);
  return Ok{};
}

// Megatron's rules for the optimizer, data parallelism and overlaps.
Status check_optimizer(const Workload& w, const Layout& l) {
  if (l.overlap_param_gather && !l.distributed_optimizer && !l.megatron_fsdp) {
    return make_error(
        "--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or "
        "dist_muon");
  }
  if (l.overlap_param_gather && !l.overlap_grad_reduce) {
    return make_error("Must use --overlap-param-gather with --overlap-grad-reduce");
  }
  if (l.fp8_param_gather && !l.distributed_optimizer && !l.megatron_fsdp) {
    return make_error(
        "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron "
        "fsdp, or inference mode");
  }
  if (l.fp8_param_gather && w.precision != Precision::kFp8) {
    return make_error("--fp8-param-gather requires --fp8-format");
  }
  if (l.optimizer_cpu_offload && !l.precision_aware_optimizer) {
    return make_error(
        "The optimizer cpu offload must be used in conjunction with "
        "`--use-precision-aware-optimizer`, as the hybrid device optimizer reuses the code path "
        "of this flag.");
  }
  if (l.optimizer_cpu_offload && l.fp8_param_gather && l.fp8_recipe != "delayed") {
    return make_error(
        "When `--fp8-param-gather` is enabled, the optimizer cpu offload must be used in "
        "conjunction with `--fp8-recipe delayed`.");
  }
  if (l.precision_aware_optimizer && !l.distributed_optimizer) {
    return make_error("--use-precision-aware-optimizer only supported with distributed optimizer");
  }
  if (l.adam_state_bytes != 8 && !l.precision_aware_optimizer) {
    return make_error("exp_avg_dtype can only be fp32 when not using precision-aware optimizer");
  }
  return Ok{};
}

// Megatron's rules for the MoE dispatcher and expert-parallel overlap.
Status check_dispatcher(const ResolvedLayout& r) {
  const Layout& l = r.layout;
  if (l.moe_enable_deepep && l.dispatcher != Dispatcher::kFlex) {
    return make_error("DeepEP backend is only supported with flex token dispatcher.");
  }
  if (l.shared_expert_overlap && l.dispatcher == Dispatcher::kAllgather) {
    return make_error(
        "moe_shared_expert_overlap only works with alltoall or flex token dispatcher.");
  }
  if (l.expert_rank_budget && l.flex_backend != FlexBackend::kHybridep &&
      l.flex_backend != FlexBackend::kNcclep) {
    return make_error(
        "moe_expert_rank_capacity_factor requires moe_flex_dispatcher_backend to be 'hybridep' "
        "or 'ncclep'.");
  }
  if (l.expert_rank_budget && l.flex_backend == FlexBackend::kHybridep && !l.te_op_fuser &&
      !l.grouped_tensor) {
    return make_error(
        "moe_expert_rank_capacity_factor with the 'hybridep' backend requires "
        "use_transformer_engine_op_fuser=True or moe_use_grouped_tensor=True.");
  }
  if (l.delay_wgrad_compute && !l.ep_overlap) {
    return make_error(
        "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute");
  }
  if (!l.ep_overlap) return Ok{};
  if (l.ep == 1) {
    return make_error(
        "overlap_moe_expert_parallel_comm is only supported with expert model parallelism");
  }
  if (l.dispatcher == Dispatcher::kAllgather) {
    return make_error(
        "overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher");
  }
  if (l.pp > 1 && r.vp == 1) {
    return make_error(
        "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when "
        "pipeline_model_parallel_size > 1");
  }
  if (l.recompute == RecomputeGranularity::kFull) {
    return make_error("disable full recomputation when enabling overlap_moe_expert_parallel_comm");
  }
  if (l.recompute == RecomputeGranularity::kSelective && (l.recompute_modules & kRecomputeMoe)) {
    return make_error(
        "disable moe recompute_modules when enabling overlap_moe_expert_parallel_comm");
  }
  if (l.shared_expert_overlap) {
    return make_error(
        "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm");
  }
  if (l.mtp_layers > 1) {
    return make_error(
        "MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm.");
  }
  return Ok{};
}

// Megatron's rules for context-parallel communication, rank ordering, buckets and activation
// offload.
Status check_other(const Workload& w, const ResolvedLayout& r) {
  const Layout& l = r.layout;
  const std::vector<std::string_view> cp_types = split_words(l.cp_comm_type);
  if (cp_types.size() > 1 && static_cast<int>(cp_types.size()) != w.model.num_layers) {
    return make_error("Length of cp_comm_type (" + num(static_cast<long long>(cp_types.size())) +
                      ") should equal to the total number of transformer layers (" +
                      num(w.model.num_layers) + ")!");
  }
  for (std::string_view type : cp_types) {
    if (type == "a2a+p2p" && !l.hierarchical_cp_sizes_set) {
      return make_error(
          "--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm");
    }
  }
  if (l.tp_pp_dp_mapping && l.pp > 1 && r.edp != r.dp) {
    return make_error(
        "When not using pp-last rank ordering, the data parallel size of the attention and moe "
        "layers must be the same");
  }
  if (l.ddp_bucket_size_set && l.ddp_num_buckets_set) {
    return make_error("Cannot specify both num_buckets and bucket_size");
  }
  if (l.defer_embedding_wgrad && l.pp == 1) {
    return make_error(
        "Cannot defer embedding wgrad compute when pipeline model parallel is not used");
  }
  if (l.cpu_offloading_num_layers > 0) {
    if (l.cpu_offloading_num_layers >= w.model.num_layers) {
      return make_error("CPU offloading can be done only for layers less than " +
                        num(w.model.num_layers));
    }
    if (l.pp > 1) {
      return make_error(
          "Currently there is no support for Pipeline parallelism with CPU offloading");
    }
    if (l.recompute != RecomputeGranularity::kNone) {
      return make_error("CPU offloading does not work when activation recomputation is enabled");
    }
    if (l.cuda_graph != CudaGraphImpl::kNone) {
      return make_error("CUDA graphs not supported with CPU offloading.");
    }
  }
  return Ok{};
}

// A selectively recomputed module inside a graph cannot draw random numbers: no dropout in a
// graphed, recomputed attention or MLP/MoE. A graph without modules captures the whole layer.
Status check_graphed_recompute(const Layout& l) {
  if (l.cuda_graph == CudaGraphImpl::kNone || l.recompute != RecomputeGranularity::kSelective) {
    return Ok{};
  }
  const bool whole = l.cuda_graph == CudaGraphImpl::kFullIteration || l.cuda_graph_modules == 0;
  const auto outside = [&](std::uint32_t graph_module, std::uint32_t recompute_module) {
    return (!whole && !(l.cuda_graph_modules & graph_module)) ||
           !(l.recompute_modules & recompute_module);
  };
  if (l.attention_dropout != 0.0 && !outside(kGraphAttn, kRecomputeCoreAttn)) {
    return make_error("attention dropout is not supported with graphed attention recomputation.");
  }
  if (l.hidden_dropout != 0.0 &&
      !(outside(kGraphMlp, kRecomputeMlp) && outside(kGraphMoe, kRecomputeMoe))) {
    return make_error("hidden dropout is not supported with graphed MLP/MoE recomputation.");
  }
  return Ok{};
}

// TransformerConfig's checks of a per-layer (local or transformer_engine) graph's modules against
// the model (check_cuda_graphs has refused a MoE-layer graph and one with both moe and
// moe_router).
Status check_graph_modules(const ModelSpec& model, const Layout& l) {
  if (l.cuda_graph != CudaGraphImpl::kLocal && l.cuda_graph != CudaGraphImpl::kTransformerEngine) {
    return Ok{};
  }
  const std::uint32_t modules = l.cuda_graph_modules;
  if ((modules & kGraphMoePreprocess) && !(modules & kGraphMoeRouter)) {
    return make_error("moe_preprocess cuda graph is only supported with moe_router cuda graph.");
  }
  if (!is_moe(model) && (modules & kGraphMoeRouter)) {
    return make_error("moe cuda graph is only supported for MoE.");
  }
  if (is_moe(model) && model.first_dense_layers <= 0 && (modules & kGraphMlp)) {
    return make_error(
        "mlp cuda graph is only supported for dense layers, but not found in the model.");
  }
  return Ok{};
}

Status check_cuda_graphs(const Layout& l) {
  if (l.cuda_graph == CudaGraphImpl::kFullIteration && l.check_for_nan) {
    return make_error(
        "--no-check-for-nan-in-loss-and-grad should be set with --cuda-graph-impl=full_iteration "
        "for training.");
  }
  if (l.cuda_graph == CudaGraphImpl::kFullIteration && l.cuda_graph_modules != 0) {
    return make_error("--cuda-graph-modules must be empty when --cuda-graph-impl=full_iteration.");
  }
  if ((l.cuda_graph_modules & kGraphMoe) && (l.cuda_graph_modules & kGraphMoeRouter)) {
    return make_error("cuda_graph_modules must not contain both moe and moe_router.");
  }
  if (l.cuda_graph != CudaGraphImpl::kNone && (l.cuda_graph_modules & kGraphMoe)) {
    return make_error("moe cuda graph is only supported with drop-padding MoE.");
  }
  return check_graphed_recompute(l);
}

}  // namespace

const Layout& default_layout() {
  static const Layout layout = build_default_layout();
  return layout;
}

namespace {

// The parallel degrees, pipeline split, microbatch and tensor-parallel settings.
void read_parallel(FlagReader& f, Layout& l) {
  f.read_int(kTp, l.tp);
  f.read_int(kPp, l.pp);
  f.read_int(kCp, l.cp);
  f.read_int(kEp, l.ep);
  f.read_int(kEtp, l.etp);
  f.read_int(kVirtualStages, l.virtual_stages);
  f.read_int(kLayersPerVirtualStage, l.layers_per_virtual_stage);
  f.read_text(kPipelineLayout, l.pipeline_layout);
  l.first_stage_layers_set = f.has(kFirstStageLayers);
  l.last_stage_layers_set = f.has(kLastStageLayers);
  f.read_int(kFirstStageLayers, l.first_stage_layers);
  f.read_int(kLastStageLayers, l.last_stage_layers);
  f.read_switch(kAccountEmbedding, l.account_for_embedding);
  f.read_switch(kAccountLoss, l.account_for_loss);
  f.read_switch(kNoOverlapP2p, l.overlap_p2p, true);
  f.read_int(kMicrobatchGroup, l.microbatch_group_size);
  f.read_int(kMicroBatch, l.micro_batch_size);
  f.read_switch(kSequenceParallel, l.sequence_parallel);
  f.read_switch(kTpCommOverlap, l.tp_comm_overlap);
}

// Recomputation: granularity, method, layer count and modules.
void read_recompute(FlagReader& f, Layout& l) {
  f.read_enum(kRecomputeGranularity, kGranularityNames, l.recompute);
  if (f.has(kRecomputeActivations)) l.recompute = RecomputeGranularity::kSelective;
  f.read_enum(kRecomputeMethod, kMethodNames, l.recompute_method);
  f.read_int(kRecomputeNumLayers, l.recompute_num_layers);
  if (const std::string* modules = f.find(kRecomputeModules)) {
    l.recompute_modules = 0;
    for (std::string_view word : split_words(*modules)) {
      bool known = false;
      for (const ModuleName& module : kRecomputeModuleNames) {
        if (module.name == word) {
          l.recompute_modules |= module.bit;
          known = true;
        }
      }
      if (!known) append_word(l.unknown_recompute_modules, word, " ");
    }
  }
  f.read_switch(kMoeLayerRecompute, l.moe_layer_recompute);
  f.read_switch(kDistributeSaved, l.distribute_saved_activations);
}

// The MoE dispatcher, its backend and overlaps, grouped GEMMs and permutation fusion.
void read_moe(FlagReader& f, Layout& l) {
  f.read_enum(kDispatcher, kDispatcherNames, l.dispatcher);
  f.read_enum(kFlexBackend, kBackendNames, l.flex_backend);
  f.read_switch(kEnableDeepep, l.moe_enable_deepep);
  if (l.moe_enable_deepep) l.flex_backend = FlexBackend::kDeepep;
  l.expert_rank_budget = f.has(kExpertRankBudget);
  f.read_switch(kGroupedTensor, l.grouped_tensor);
  f.read_switch(kEpOverlap, l.ep_overlap);
  f.read_switch(kDelayWgrad, l.delay_wgrad_compute);
  f.read_switch(kSharedExpertOverlap, l.shared_expert_overlap);
  f.read_switch(kGroupedGemm, l.grouped_gemm);
  f.read_switch(kPermuteFusion, l.permute_fusion);
}

// The data-parallel and optimizer settings.
void read_optimizer(FlagReader& f, Layout& l) {
  f.read_switch(kDistributedOptimizer, l.distributed_optimizer);
  f.read_switch(kMegatronFsdp, l.megatron_fsdp);
  f.read_switch(kOverlapGradReduce, l.overlap_grad_reduce);
  f.read_switch(kOverlapParamGather, l.overlap_param_gather);
  f.read_switch(kGradReduceBf16, l.grad_reduce_in_bf16);
  f.read_switch(kFp8ParamGather, l.fp8_param_gather);
  f.read_switch(kPrecisionAware, l.precision_aware_optimizer);
  f.read_switch(kCpuOffload, l.optimizer_cpu_offload);
  f.read_double(kOffloadFraction, l.optimizer_offload_fraction);
  f.read_double(kAttentionDropout, l.attention_dropout);
  f.read_double(kHiddenDropout, l.hidden_dropout);
  f.read_switch(kOverlapCpuCopies, l.overlap_cpu_optimizer_d2h_h2d);
  std::string exp_avg = "fp32";
  std::string exp_avg_sq = "fp32";
  f.read_text(kExpAvgDtype, exp_avg);
  f.read_text(kExpAvgSqDtype, exp_avg_sq);
  l.adam_state_bytes = dtype_bytes(exp_avg) + dtype_bytes(exp_avg_sq);
  f.read_int(kOptimizerInstances, l.num_distributed_optimizer_instances);
}

// CUDA graphs: the implementation (or a deprecated flag) and the captured modules.
void read_graphs(FlagReader& f, Layout& l) {
  const bool graph_impl_set = f.has(kCudaGraphImpl);
  f.read_enum(kCudaGraphImpl, kGraphImplNames, l.cuda_graph);
  if (f.has(kEnableCudaGraph) || f.has(kExternalCudaGraph)) {
    if (graph_impl_set) {
      f.fail("Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl.");
    }
    l.deprecated_cuda_graph_flag = true;
    l.cuda_graph =
        f.has(kExternalCudaGraph) ? CudaGraphImpl::kTransformerEngine : CudaGraphImpl::kLocal;
  }
  if (const std::string* modules = f.find(kCudaGraphModules)) {
    for (std::string_view word : split_words(*modules)) {
      bool known = false;
      for (const ModuleName& module : kGraphModuleNames) {
        if (module.name == word) {
          l.cuda_graph_modules |= module.bit;
          known = true;
        }
      }
      if (!known) f.fail("--cuda-graph-modules has no module '" + str(word) + "'");
    }
    // TransformerConfig: the local implementation graphs the MoE router and its preprocessing
    // together.
    if (l.cuda_graph == CudaGraphImpl::kLocal &&
        (l.cuda_graph_modules & (kGraphMoeRouter | kGraphMoePreprocess))) {
      l.cuda_graph_modules |= kGraphMoeRouter | kGraphMoePreprocess;
    }
  }
}

// The other settings the model reads, and the environment it reads.
void read_other(FlagReader& f, const Recipe& recipe, Layout& l) {
  f.read_switch(kNoCheckNan, l.check_for_nan, true);
  f.read_switch(kCrossEntropyFusion, l.cross_entropy_fusion);
  f.read_switch(kNoRopeFusion, l.rope_fusion, true);
  f.read_text(kPositionEmbedding, l.position_embedding_type);
  f.read_text(kCpCommType, l.cp_comm_type);
  l.hierarchical_cp_sizes_set = f.has(kHierarchicalCp);
  f.read_switch(kTpPpDpMapping, l.tp_pp_dp_mapping);
  l.ddp_bucket_size_set = f.has(kDdpBucketSize);
  l.ddp_num_buckets_set = f.has(kDdpNumBuckets);
  f.read_switch(kDeferEmbeddingWgrad, l.defer_embedding_wgrad);
  f.read_int(kActivationOffloadLayers, l.cpu_offloading_num_layers);
  f.read_int(kMtpLayers, l.mtp_layers);
  l.fp8_format_set = f.has(kFp8Format);
  f.read_text(kFp8Recipe, l.fp8_recipe);
  f.read_switch(kFp16, l.fp16);
  f.read_switch(kTeOpFuser, l.te_op_fuser);
  f.read_int(kMoeGluInterleave, l.moe_glu_interleave_size);
  auto env = recipe.env.find(std::string(kMaxConnectionsEnv));
  l.cuda_device_max_connections_one = env != recipe.env.end() && env->second == "1";
  auto fused_mlp = recipe.env.find(std::string(kFusedGroupedMlpEnv));
  l.fused_grouped_mlp = fused_mlp != recipe.env.end() && fused_mlp->second == "1";
}

// The recipe against the campaign's workload and model: sequence length, global batch,
// architecture, MTP layers and precision.
void check_against_workload(FlagReader& f, const Workload& workload, const Layout& l) {
  const ModelSpec& model = workload.model;
  // The workload is fixed by the campaign; a recipe that says otherwise is a mistake.
  int seq_length = workload.seq_length;
  f.read_int(kSeqLength, seq_length);
  if (seq_length != workload.seq_length) {
    f.fail("recipe sets --seq-length " + num(seq_length) +
           " but the workload's sequence length is " + num(workload.seq_length));
  }
  int global_batch = workload.global_batch_size;
  f.read_int(kGlobalBatch, global_batch);
  if (global_batch != workload.global_batch_size) {
    f.fail("recipe sets --global-batch-size " + num(global_batch) +
           " but the workload's global batch is " + num(workload.global_batch_size));
  }
  check_architecture(f, "--num-layers", model.num_layers, model);
  check_architecture(f, "--hidden-size", model.hidden_size, model);
  check_architecture(f, "--num-attention-heads", model.num_attention_heads, model);
  if (model.ffn_hidden_size > 0)
    check_architecture(f, "--ffn-hidden-size", model.ffn_hidden_size, model);
  check_activation(f, model);
  if (is_moe(model)) {
    check_architecture(f, "--num-experts", model.num_experts, model);
    check_architecture(f, "--moe-router-topk", model.moe_router_topk, model);
    check_architecture(f, "--moe-ffn-hidden-size", model.moe_ffn_hidden_size, model);
  } else if (f.has("--num-experts")) {
    f.fail("recipe sets --num-experts but model " + model.name + " is dense");
  }
  if (l.mtp_layers > model.mtp_num_layers) {
    f.fail("recipe sets --mtp-num-layers " + num(l.mtp_layers) + " but model " + model.name +
           " has " + num(model.mtp_num_layers) + " MTP layer(s)");
  }
  if (l.fp8_format_set && workload.precision != Precision::kFp8) {
    f.fail("recipe sets --fp8-format but the workload's precision is bf16");
  }
  if (l.fp16) f.fail("recipe sets --fp16; the simulator models bf16 and fp8 training only");
}

}  // namespace

const std::string& position_embedding_type(const Layout& l, const ModelSpec& model) {
  return l.position_embedding_type.empty() ? model.position_embedding_type
                                           : l.position_embedding_type;
}

bool applies_rope_fusion(const Layout& l, std::string_view position_embedding_type) {
  return l.rope_fusion && position_embedding_type == "rope";
}

std::string_view recompute_granularity_name(RecomputeGranularity granularity) {
  return kGranularityNames[static_cast<int>(granularity)];
}

std::string_view dispatcher_name(Dispatcher dispatcher) {
  return kDispatcherNames[static_cast<int>(dispatcher)];
}

Result<Layout> decode_layout(const Workload& workload, const Recipe& recipe) {
  Layout l = default_layout();
  FlagReader f(recipe);
  read_parallel(f, l);
  read_recompute(f, l);
  read_moe(f, l);
  read_optimizer(f, l);
  read_graphs(f, l);
  read_other(f, recipe, l);
  check_against_workload(f, workload, l);
  if (!f.error().empty()) return make_error(f.error());
  return l;
}

namespace {

// The parallel sizes against the world size, data and expert-data parallelism, and the
// environment tensor or context parallelism needs.
Status resolve_world(const Workload& w, ResolvedLayout& r) {
  Layout& l = r.layout;
  const int world = w.gpus;
  if (l.tp < 1 || l.pp < 1 || l.cp < 1 || l.ep < 1 || l.etp < 0) {
    return make_error("parallel sizes must be positive");
  }
  if (w.precision == Precision::kFp8 && w.hardware.compute_capability < 8.9) {
    return make_error("Device compute capability 8.9 or higher required for FP8 execution.");
  }

  const int model_size = l.tp * l.pp * l.cp;
  if (world % model_size != 0) {
    return make_error(
        "world size (" + num(world) +
        ") is not divisible by total_model_size (total_model_size=" + num(model_size) + ")");
  }
  r.dp = world / model_size;
  if (l.etp == 0) l.etp = l.tp;
  const int expert_grid = l.etp * l.ep * l.pp;
  if (world % expert_grid != 0) {
    return make_error("world_size (" + num(world) +
                      ") is not divisible by expert_tensor_model_pipeline_parallel size (" +
                      num(expert_grid) + ")");
  }
  r.edp = world / expert_grid;
  if ((r.dp * l.cp) % l.num_distributed_optimizer_instances != 0) {
    return make_error("Data parallel size should be divisible by partial DistOpt shard factor");
  }
  if (w.hardware.compute_capability < 10.0 && (l.tp > 1 || l.cp > 1) && !l.megatron_fsdp &&
      !l.ep_overlap && !l.cuda_device_max_connections_one) {
    return make_error(
        "Using tensor model parallelism or context parallelism require setting the environment "
        "variable CUDA_DEVICE_MAX_CONNECTIONS to 1");
  }
  if (l.megatron_fsdp && l.cuda_device_max_connections_one) {
    return make_error("FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset.");
  }

  return Ok{};
}

// The layers of each pipeline stage, from a layout string or from the split flags.
Status assign_stages(const ModelSpec& model, ResolvedLayout& r) {
  Layout& l = r.layout;
  Result<std::vector<VirtualStage>> split = make_error("");
  if (!l.pipeline_layout.empty()) {
    if (l.virtual_stages > 0 || l.layers_per_virtual_stage > 0) {
      return make_error(
          "No more than one of the following arguments can be set at the same time: "
          "--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,"
          "--pipeline-model-parallel-layout.");
    }
    if (l.first_stage_layers_set || l.last_stage_layers_set || l.account_for_embedding ||
        l.account_for_loss) {
      return make_error(
          "pipeline_model_parallel_layout cannot be set with other pipeline layout arguments.");
    }
    split = split_by_layout_string(model, l, r.vp);
  } else {
    split = split_by_flags(model, l, r.vp);
  }
  if (!split.ok()) return make_error(split.error());
  r.stages.assign(l.pp, StageLayers{});
  int next_layer = 0;
  for (std::size_t i = 0; i < split->size(); ++i) {
    const VirtualStage& vs = (*split)[i];
    StageLayers& stage = r.stages[i % l.pp];
    for (int k = 0; k < vs.decoder_layers; ++k, ++next_layer) {
      if (is_moe_layer(model, next_layer)) {
        ++stage.moe_layers;
      } else {
        ++stage.dense_layers;
      }
    }
    stage.mtp_layers += vs.mtp_layers;
    stage.embedding = stage.embedding || vs.embedding;
    stage.loss = stage.loss || vs.loss;
    stage.max_chunk_layers = std::max(stage.max_chunk_layers, vs.decoder_layers + vs.mtp_layers);
  }
  return Ok{};
}

// Heads, widths and sequence length against tensor, context and expert parallelism; Megatron
// turns sequence parallelism off at TP 1.
Status check_widths(const Workload& w, Layout& l) {
  const ModelSpec& model = w.model;
  if (model.num_attention_heads % l.tp != 0) {
    return make_error("num_attention_heads (" + num(model.num_attention_heads) +
                      ") must be a multiple of tensor_model_parallel_size (" + num(l.tp) + ").");
  }
  if (model.attention == AttentionKind::kGroupedQuery) {
    const int groups = model.num_query_groups;
    if (groups % l.tp != 0 && l.tp % groups != 0) {
      return make_error("num_query_groups (" + num(groups) +
                        ") must be a multiple or divisor of tensor_model_parallel_size (" +
                        num(l.tp) + ").");
    }
  }
  const bool has_dense_mlp = !is_moe(model) || model.first_dense_layers > 0;
  if (has_dense_mlp && model.ffn_hidden_size % l.tp != 0) {
    return make_error(num(model.ffn_hidden_size) + " is not divisible by " + num(l.tp));
  }
  if (l.cp > 1 && w.seq_length % (2 * l.cp) != 0) {
    return make_error(
        "seq-length should be a multiple of 2 * context-parallel-size if context-parallel-size > "
        "1.");
  }
  if (l.ep > 1 && !is_moe(model)) {
    return make_error("num_experts must be non None to use expert model parallelism");
  }
  if (is_moe(model)) {
    if (model.num_experts % l.ep != 0) {
      return make_error("Number of experts should be a multiple of expert model parallel_size.");
    }
    if (model.add_bias_linear && l.etp != 1) {
      return make_error("Bias in Moe is only supported when ETP==1");
    }
    if (model.moe_ffn_hidden_size % l.etp != 0) {
      return make_error(num(model.moe_ffn_hidden_size) + " is not divisible by " + num(l.etp));
    }
    if (model.moe_shared_expert_intermediate_size % l.tp != 0) {
      return make_error(num(model.moe_shared_expert_intermediate_size) + " is not divisible by " +
                        num(l.tp));
    }
  }
  if (l.tp == 1) l.sequence_parallel = false;  // Megatron disables it with a warning
  if (l.tp_comm_overlap && !l.sequence_parallel) {
    return make_error(
        "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is "
        "enabled");
  }

  return Ok{};
}

// The microbatch size against the global batch, and the microbatch count.
Status resolve_batch(const Workload& w, ResolvedLayout& r) {
  const Layout& l = r.layout;
  if (l.micro_batch_size <= 0) {
    return make_error("micro_batch_size must be set to a positive integer (--micro-batch-size)");
  }
  if (w.global_batch_size % (l.micro_batch_size * r.dp) != 0) {
    return make_error("global batch size (" + num(w.global_batch_size) +
                      ") is not divisible by micro batch size (" + num(l.micro_batch_size) +
                      ") times data parallel size (" + num(r.dp) + ")");
  }
  r.microbatches = w.global_batch_size / (l.micro_batch_size * r.dp);
  if (r.microbatches < 1) {
    return make_error("number of microbatches should be at least 1, got " + num(r.microbatches) +
                      ".");
  }

  return Ok{};
}

// Checks that fire when the job runs its first step, not while parsing arguments.
Status check_first_step(const Workload& w, const ResolvedLayout& r) {
  const ModelSpec& model = w.model;
  const Layout& l = r.layout;
  if (r.vp > 1) {
    const int group = l.microbatch_group_size > 0 ? l.microbatch_group_size : l.pp;
    if (group < l.pp || group > r.microbatches) {
      return make_error(
          "The number of contiguous micro-batches in a virtual pipeline stageshould range in [PP=" +
          num(l.pp) + " , M=" + num(r.microbatches) + "]");
    }
    const int remainder = r.microbatches % group;
    if (remainder != 0 && remainder < l.pp) {
      return make_error(
          "The remainder of M (the total micro-batches) divided by N (number of contiguous "
          "micro-batches in a virtual pipeline stage) should be 0, or larger than or equal to the "
          "pipeline-parallel size, but it is " +
          num(remainder) +
          ". Otherwise, it introduces dependency bubbles in the pipeline and reduces throughput.");
    }
  }
  if (is_moe(model) && l.dispatcher == Dispatcher::kFlex && l.tp * l.ep == 1) {
    if (l.flex_backend == FlexBackend::kDeepep) {
      return make_error("DeepEP dispatcher requires TPxEP > 1");
    }
    if (l.flex_backend == FlexBackend::kNcclep) {
      return make_error("NCCL EP dispatcher requires TPxEP > 1");
    }
  }
  if (is_moe(model) && l.tp > 1 && !l.sequence_parallel) {
    return make_error(
        "During training, performance may degrade if MoE and tensor parallelism"
        "are enabled without also enabling sequence parallelism.");
  }

  return Ok{};
}

}  // namespace

Result<ResolvedLayout> resolve_layout(const Workload& w, const Layout& layout) {
  ResolvedLayout r;
  r.layout = layout;
  Layout& l = r.layout;
  if (Status s = resolve_world(w, r); !s.ok()) return make_error(s.error());
  if (Status s = assign_stages(w.model, r); !s.ok()) return make_error(s.error());
  if (Status s = check_widths(w, l); !s.ok()) return make_error(s.error());
  if (Status s = resolve_batch(w, r); !s.ok()) return make_error(s.error());
  if (Status s = check_recompute(w, l); !s.ok()) return make_error(s.error());
  if (Status s = check_optimizer(w, l); !s.ok()) return make_error(s.error());
  if (Status s = check_cuda_graphs(l); !s.ok()) return make_error(s.error());
  if (Status s = check_graph_modules(w.model, l); !s.ok()) return make_error(s.error());
  if (Status s = check_dispatcher(r); !s.ok()) return make_error(s.error());
  if (Status s = check_other(w, r); !s.ok()) return make_error(s.error());
  if (Status s = check_first_step(w, r); !s.ok()) return make_error(s.error());
  return r;
}

namespace {

// Writes a layout's flags into a recipe: a value equal to Megatron's default removes the flag.
// The first refusal of a value is kept.
class FlagWriter {
 public:
  explicit FlagWriter(Recipe recipe) : recipe_(std::move(recipe)) {}
  void remove(std::string_view flag) {
    if (recipe_.flags.contains(str(flag))) (void)remove_flag(recipe_, flag);
  }
  void put(std::string_view flag, const std::string& value) {
    Status s = set_flag(recipe_, flag, value);
    if (!s.ok() && error_.empty()) error_ = s.error();
  }
  void put_int(std::string_view flag, int value, int default_value) {
    if (value == default_value) {
      remove(flag);
    } else {
      put(flag, num(value));
    }
  }
  void put_switch(std::string_view flag, bool on) {
    if (on) {
      put(flag, "true");
    } else {
      remove(flag);
    }
  }
  Result<Recipe> result() && {
    if (!error_.empty()) return make_error(error_);
    return std::move(recipe_);
  }

 private:
  Recipe recipe_;
  std::string error_;
};

// The parallel degrees, the pipeline's split and the microbatch.
void write_parallel_layout(const Layout& layout, FlagWriter& w) {
  const Layout& d = default_layout();
  w.put_int(kTp, layout.tp, d.tp);
  w.put_int(kPp, layout.pp, d.pp);
  w.put_int(kCp, layout.cp, d.cp);
  w.put_int(kEp, layout.ep, d.ep);
  w.put_int(kEtp, layout.etp, d.etp);
  w.put_int(kVirtualStages, layout.virtual_stages, d.virtual_stages);
  w.put_int(kLayersPerVirtualStage, layout.layers_per_virtual_stage, d.layers_per_virtual_stage);
  if (layout.pipeline_layout.empty()) {
    w.remove(kPipelineLayout);
  } else {
    w.put(kPipelineLayout, layout.pipeline_layout);
  }
  if (layout.first_stage_layers_set) {
    w.put(kFirstStageLayers, num(layout.first_stage_layers));
  } else {
    w.remove(kFirstStageLayers);
  }
  if (layout.last_stage_layers_set) {
    w.put(kLastStageLayers, num(layout.last_stage_layers));
  } else {
    w.remove(kLastStageLayers);
  }
  w.put_switch(kAccountEmbedding, layout.account_for_embedding);
  w.put_switch(kAccountLoss, layout.account_for_loss);
  w.put_switch(kNoOverlapP2p, !layout.overlap_p2p);
  w.put_int(kMicroBatch, layout.micro_batch_size, d.micro_batch_size);
  w.put_switch(kSequenceParallel, layout.sequence_parallel);
  w.put_switch(kTpCommOverlap, layout.tp_comm_overlap);
}

// Recomputation: granularity, method, layer count and modules.
void write_recompute(const Layout& layout, FlagWriter& w) {
  const Layout& d = default_layout();
  w.remove(kRecomputeActivations);
  w.remove(kMoeLayerRecompute);
  if (layout.recompute == RecomputeGranularity::kNone) {
    w.remove(kRecomputeGranularity);
  } else {
    w.put(kRecomputeGranularity, str(kGranularityNames[static_cast<int>(layout.recompute)]));
  }
  if (layout.recompute_method == RecomputeMethod::kNone) {
    w.remove(kRecomputeMethod);
  } else {
    w.put(kRecomputeMethod, str(kMethodNames[static_cast<int>(layout.recompute_method)]));
  }
  w.put_int(kRecomputeNumLayers, layout.recompute_num_layers, d.recompute_num_layers);
  if (layout.recompute_modules == d.recompute_modules && layout.unknown_recompute_modules.empty()) {
    w.remove(kRecomputeModules);
  } else {
    std::string modules;
    for (const ModuleName& module : kRecomputeModuleNames) {
      if ((layout.recompute_modules & module.bit) && module.bit != kRecomputeOther) {
        append_word(modules, module.name, " ");
      }
    }
    if (!layout.unknown_recompute_modules.empty()) {
      append_word(modules, layout.unknown_recompute_modules, " ");
    }
    w.put(kRecomputeModules, modules);
  }
}

// The token dispatcher and its backend, and the communication and optimizer overlaps.
void write_dispatch_and_overlaps(const Layout& layout, FlagWriter& w) {
  const Layout& d = default_layout();
  w.put(kDispatcher, str(kDispatcherNames[static_cast<int>(layout.dispatcher)]));
  if (layout.dispatcher == d.dispatcher) w.remove(kDispatcher);
  w.remove(kEnableDeepep);
  if (layout.flex_backend == d.flex_backend) {
    w.remove(kFlexBackend);
  } else {
    w.put(kFlexBackend, str(kBackendNames[static_cast<int>(layout.flex_backend)]));
  }
  // The budget per EP rank is the base recipe's value; it goes with a backend that cannot use it.
  if (!layout.expert_rank_budget || (layout.flex_backend != FlexBackend::kHybridep &&
                                     layout.flex_backend != FlexBackend::kNcclep)) {
    w.remove(kExpertRankBudget);
  }
  w.put_switch(kEpOverlap, layout.ep_overlap);
  w.put_switch(kDelayWgrad, layout.delay_wgrad_compute);
  w.put_switch(kSharedExpertOverlap, layout.shared_expert_overlap);
  w.put_switch(kOverlapGradReduce, layout.overlap_grad_reduce);
  w.put_switch(kOverlapParamGather, layout.overlap_param_gather);
  w.put_switch(kCpuOffload, layout.optimizer_cpu_offload);
  w.put_switch(kOverlapCpuCopies, layout.overlap_cpu_optimizer_d2h_h2d);
  // A default the base writes out is dropped like any other; rule 2 and the duplicate check
  // compare the values Megatron uses (gate::effective_changes), so that is no change.
  if (layout.optimizer_offload_fraction == d.optimizer_offload_fraction) {
    w.remove(kOffloadFraction);
  } else {
    w.put(kOffloadFraction, std::to_string(layout.optimizer_offload_fraction));
  }
}

// CUDA graphs: implementation and captured modules.
void write_cuda_graphs(const Layout& layout, FlagWriter& w) {
  const Layout& d = default_layout();
  // A recipe that names its graphs with a deprecated alias keeps it.
  if (!layout.deprecated_cuda_graph_flag) {
    w.remove(kEnableCudaGraph);
    w.remove(kExternalCudaGraph);
    if (layout.cuda_graph == d.cuda_graph) {
      w.remove(kCudaGraphImpl);
    } else {
      w.put(kCudaGraphImpl, str(kGraphImplNames[static_cast<int>(layout.cuda_graph)]));
    }
  }
  if (layout.cuda_graph_modules == d.cuda_graph_modules) {
    w.remove(kCudaGraphModules);
  } else {
    std::string modules;
    for (const ModuleName& module : kGraphModuleNames) {
      if (layout.cuda_graph_modules & module.bit) append_word(modules, module.name, " ");
    }
    w.put(kCudaGraphModules, modules);
  }
}

}  // namespace

Result<Recipe> apply_layout(const Recipe& base, const Layout& layout) {
  FlagWriter w(base);
  write_parallel_layout(layout, w);
  write_recompute(layout, w);
  write_dispatch_and_overlaps(layout, w);
  write_cuda_graphs(layout, w);
  return std::move(w).result();
}

std::string layout_summary(const ResolvedLayout& r) {
  const Layout& l = r.layout;
  std::string text = "TP" + num(l.tp) + " PP" + num(l.pp);
  if (r.vp > 1) text += " VP" + num(r.vp);
  text += " CP" + num(l.cp) + " DP" + num(r.dp);
  if (l.ep > 1 || l.etp != l.tp) text += " EP" + num(l.ep) + " ETP" + num(l.etp);
  text += " MBS" + num(l.micro_batch_size);
  if (l.first_stage_layers_set || l.last_stage_layers_set) {
    text += " first/last " + num(r.stages.front().decoder_layers()) + "/" +
            num(r.stages.back().decoder_layers());
  }
  if (l.account_for_embedding || l.account_for_loss) text += " account-for-E/L";
  if (l.recompute == RecomputeGranularity::kFull) {
    text += " recompute=full";
  } else if (l.recompute == RecomputeGranularity::kSelective) {
    std::string modules;
    for (const ModuleName& module : kRecomputeModuleNames) {
      if ((l.recompute_modules & module.bit) && module.bit != kRecomputeOther) {
        append_word(modules, module.name, "+");
      }
    }
    text += " recompute=" + modules;
  }
  if (l.ep > 1) text += " dispatcher=" + str(kDispatcherNames[static_cast<int>(l.dispatcher)]);
  if (l.optimizer_cpu_offload) text += " cpu-offload";
  if (l.cuda_graph != CudaGraphImpl::kNone) {
    text += " cuda-graphs=" + str(kGraphImplNames[static_cast<int>(l.cuda_graph)]);
  }
  return text;
}

}  // namespace attune::sim
