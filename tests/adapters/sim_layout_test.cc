// Decoding a recipe into a layout: Megatron's defaults for unset flags (from the catalog), and
// every layout rule with Megatron's own assertion message (megatron_lm.md §1).
#include <gtest/gtest.h>

#include "adapters/model/layout.h"
#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "events/arg_catalog.h"

namespace attune::sim {
namespace {

Workload workload(const char* model, const char* gpu, int gpus, int seq, int gbs,
                  Precision precision = Precision::kBf16) {
  Workload w;
  w.model = load_model(model).value();
  w.hardware = load_hardware(gpu).value();
  w.gpus = gpus;
  w.seq_length = seq;
  w.global_batch_size = gbs;
  w.precision = precision;
  return w;
}

Recipe recipe(const std::string& flags) {
  Result<Recipe> r = parse_recipe("CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py " + flags);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : Recipe{};
}

// The Megatron message a launch of `flags` fails with, or "" when it starts.
std::string failure(const Workload& w, const std::string& flags) {
  const Prediction p = predict(w, recipe(flags));
  return p.valid ? "" : p.error;
}

TEST(SimLayout, UnsetFlagsTakeTheCatalogsDefaults) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  const Layout& d = default_layout();
  EXPECT_EQ(catalog.find("--tensor-model-parallel-size")->default_text, "1");
  EXPECT_EQ(d.tp, 1);
  EXPECT_EQ(d.pp, 1);
  EXPECT_EQ(d.cp, 1);
  EXPECT_EQ(d.ep, 1);
  EXPECT_EQ(catalog.find("--expert-tensor-parallel-size")->default_text, "None");
  EXPECT_EQ(d.etp, 0);  // None: experts follow TP
  EXPECT_EQ(catalog.find("--moe-token-dispatcher-type")->default_text, "allgather");
  EXPECT_EQ(d.dispatcher, Dispatcher::kAllgather);
  EXPECT_EQ(catalog.find("--moe-flex-dispatcher-backend")->default_text, "deepep");
  EXPECT_EQ(d.flex_backend, FlexBackend::kDeepep);
  EXPECT_EQ(d.recompute, RecomputeGranularity::kNone);
  EXPECT_EQ(d.recompute_modules, kRecomputeCoreAttn);  // Megatron's default list
  EXPECT_EQ(catalog.find("--no-overlap-p2p-communication")->default_text, "True");
  EXPECT_TRUE(d.overlap_p2p);
  EXPECT_TRUE(d.check_for_nan);
  EXPECT_FALSE(d.distributed_optimizer);
  EXPECT_FALSE(d.sequence_parallel);
  EXPECT_EQ(catalog.find("--optimizer-offload-fraction")->default_text, "1.0");
  EXPECT_EQ(d.optimizer_offload_fraction, 1.0);
  EXPECT_EQ(d.adam_state_bytes, 8);  // fp32 exp_avg and exp_avg_sq
  EXPECT_EQ(d.cuda_graph, CudaGraphImpl::kNone);
  EXPECT_EQ(d.fp8_recipe, "delayed");
  EXPECT_EQ(d.micro_batch_size, 0);  // None: a launch without it fails
}

TEST(SimLayout, AnUnsetDispatcherIsAllgather) {
  const Workload w = workload("qwen3-30b-a3b", "b200", 16, 4096, 256);
  Layout l =
      decode_layout(w, recipe("--expert-model-parallel-size 8 --micro-batch-size 1")).value();
  EXPECT_EQ(l.dispatcher, Dispatcher::kAllgather);
  EXPECT_EQ(l.ep, 8);
  const ResolvedLayout r = resolve_layout(w, l).value();
  EXPECT_EQ(r.layout.etp, 1);  // follows TP
  EXPECT_EQ(r.dp, 16);
  EXPECT_EQ(r.edp, 2);
  EXPECT_EQ(r.microbatches, 16);
}

TEST(SimLayout, StagesFollowMegatronsSplits) {
  const Workload glm = workload("glm-4.5", "b200", 128, 4096, 2048);
  const ResolvedLayout r =
      resolve_layout(glm,
                     decode_layout(glm, load_recipe_preset("glm-4.5-b200x128").value()).value())
          .value();
  ASSERT_EQ(r.stages.size(), 8u);
  EXPECT_EQ(r.stages[0].dense_layers, 3);  // GLM-4.5's three leading dense layers
  EXPECT_EQ(r.stages[0].moe_layers, 7);
  EXPECT_TRUE(r.stages[0].embedding);
  EXPECT_EQ(r.stages[3].decoder_layers(), 12);  // (92 - 10 - 10) / 6
  EXPECT_EQ(r.stages[7].decoder_layers(), 10);
  EXPECT_EQ(r.stages[7].mtp_layers, 1);
  EXPECT_TRUE(r.stages[7].loss);

  const Workload llama = workload("llama3.1-405b", "b200", 128, 8192, 64, Precision::kFp8);
  const ResolvedLayout l =
      resolve_layout(
          llama, decode_layout(llama, load_recipe_preset("llama3.1-405b-b200x128").value()).value())
          .value();
  EXPECT_EQ(l.vp, 8);
  EXPECT_EQ(l.stages[0].decoder_layers(), 15);  // 16 slots, one taken by the embedding
  EXPECT_EQ(l.stages[3].decoder_layers(), 16);
  EXPECT_EQ(l.stages[7].decoder_layers(), 15);  // one taken by the loss
  EXPECT_EQ(l.dp, 2);
  EXPECT_EQ(l.microbatches, 32);

  const Workload dsv3 = workload("deepseek-v3", "h100", 1024, 4096, 8192, Precision::kFp8);
  const ResolvedLayout d =
      resolve_layout(
          dsv3, decode_layout(dsv3, recipe("--tensor-model-parallel-size 2 --sequence-parallel "
                                           "--pipeline-model-parallel-size 8 "
                                           "--expert-model-parallel-size 64 --micro-batch-size 1 "
                                           "--pipeline-model-parallel-layout 'Et|(tt|)*30mL' "
                                           "--mtp-num-layers 1"))
                    .value())
          .value();
  EXPECT_EQ(d.vp, 4);
  EXPECT_EQ(d.stages[0].decoder_layers(), 1 + 2 + 2 + 2);  // "Et" and three "tt" chunks
  EXPECT_EQ(d.stages[7].decoder_layers(), 2 + 2 + 2);      // three "tt" chunks and "mL"
  EXPECT_EQ(d.stages[7].mtp_layers, 1);
}

TEST(SimLayout, WorldAndExpertGrid) {
  const Workload llama = workload("llama3.1-8b", "b200", 8, 4096, 64);
  EXPECT_EQ(failure(llama, "--tensor-model-parallel-size 3 --micro-batch-size 1"),
            "world size (8) is not divisible by total_model_size (total_model_size=3)");
  const Workload qwen = workload("qwen3-30b-a3b", "b200", 16, 4096, 256);
  EXPECT_EQ(failure(qwen, "--expert-model-parallel-size 32 --micro-batch-size 1"),
            "world_size (16) is not divisible by expert_tensor_model_pipeline_parallel size (32)");
  const Workload mixtral = workload("mixtral-8x7b", "b200", 16, 4096, 256);
  EXPECT_EQ(failure(mixtral, "--expert-model-parallel-size 16 --micro-batch-size 1"),
            "Number of experts should be a multiple of expert model parallel_size.");
  EXPECT_EQ(failure(llama, "--expert-model-parallel-size 2 --micro-batch-size 1"),
            "num_experts must be non None to use expert model parallelism");
}

TEST(SimLayout, HeadsAndSequence) {
  const Workload llama = workload("llama3.1-8b", "b200", 24, 4096, 48);
  EXPECT_EQ(failure(llama, "--tensor-model-parallel-size 3 --micro-batch-size 1"),
            "num_attention_heads (32) must be a multiple of tensor_model_parallel_size (3).");
  const Workload minimax = workload("minimax-m2", "b200", 48, 4096, 48);
  EXPECT_EQ(
      failure(minimax,
              "--tensor-model-parallel-size 6 --sequence-parallel "
              "--micro-batch-size 1"),
      "num_query_groups (8) must be a multiple or divisor of tensor_model_parallel_size (6).");
  EXPECT_EQ(failure(llama, "--context-parallel-size 3 --micro-batch-size 1"),
            "seq-length should be a multiple of 2 * context-parallel-size if "
            "context-parallel-size > 1.");
}

TEST(SimLayout, PipelineSplits) {
  const Workload llama = workload("llama3.1-8b", "b200", 24, 4096, 48);
  EXPECT_EQ(failure(llama, "--pipeline-model-parallel-size 3 --micro-batch-size 1"),
            "Number of layers should be divisible by the pipeline-model-parallel size");
  const Workload small = workload("llama3.1-8b", "b200", 8, 4096, 64);
  EXPECT_EQ(failure(small, "--num-virtual-stages-per-pipeline-rank 2 --micro-batch-size 1"),
            "When interleaved schedule is used, pipeline-model-parallel size should be greater "
            "than 1");
  EXPECT_EQ(failure(small,
                    "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 "
                    "--num-layers-per-virtual-pipeline-stage 4 --micro-batch-size 1"),
            "No more than one of the following arguments can be set at the same time: "
            "--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,"
            "--pipeline-model-parallel-layout.");
  EXPECT_EQ(failure(small,
                    "--pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split "
                    "--account-for-loss-in-pipeline-split --micro-batch-size 1"),
            "number of middle layers: 34 must be divisible by middle "
            "pipeline_model_parallel_size 4");

  const Workload glm = workload("glm-4.5", "b200", 128, 4096, 2048);
  const std::string base =
      "--tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 8 "
      "--expert-model-parallel-size 8 --micro-batch-size 1 ";
  EXPECT_EQ(failure(glm, base + "--decoder-first-pipeline-num-layers 10 "
                                "--decoder-last-pipeline-num-layers 11"),
            "number of layers at middle stage: 71 must be divisible bythe middle pipeline model "
            "parallel size 6");
  EXPECT_EQ(failure(glm, base + "--num-virtual-stages-per-pipeline-rank 4 "
                                "--decoder-first-pipeline-num-layers 10 "
                                "--decoder-last-pipeline-num-layers 10"),
            "number of layers at first stage: 10must be divisible by virtual pipelineparallel "
            "degree 4");
  EXPECT_EQ(failure(glm, base + "--decoder-first-pipeline-num-layers 10 "
                                "--decoder-last-pipeline-num-layers 10 "
                                "--account-for-loss-in-pipeline-split"),
            "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot "
            "beset at the same time with account_for_embedding_in_pipeline_splitand "
            "account_for_loss_in_pipeline_split");
  EXPECT_EQ(failure(glm, base + "--decoder-first-pipeline-num-layers 50 "
                                "--decoder-last-pipeline-num-layers 50"),
            "Mismatch: -8 middle layers remaining but 6 middle PP stages available.");
}

TEST(SimLayout, InterleavedScheduleNeedsWholeMicrobatchGroups) {
  const Workload llama = workload("llama3.1-8b", "b200", 8, 4096, 12);
  const std::string flags =
      "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
      "--micro-batch-size 1";
  EXPECT_EQ(failure(llama, flags),
            "The remainder of M (the total micro-batches) divided by N (number of contiguous "
            "micro-batches in a virtual pipeline stage) should be 0, or larger than or equal to "
            "the pipeline-parallel size, but it is 2. Otherwise, it introduces dependency bubbles "
            "in the pipeline and reduces throughput.");
  const Workload tiny = workload("llama3.1-8b", "b200", 8, 4096, 4);
  EXPECT_EQ(failure(tiny, flags),
            "The number of contiguous micro-batches in a virtual pipeline stageshould range in "
            "[PP=4 , M=2]");
}

TEST(SimLayout, Batch) {
  const Workload llama = workload("llama3.1-8b", "b200", 8, 4096, 64);
  EXPECT_EQ(failure(llama, "--micro-batch-size 3"),
            "global batch size (64) is not divisible by micro batch size (3) times data parallel "
            "size (8)");
  EXPECT_EQ(failure(llama, "--global-batch-size 128 --micro-batch-size 1"),
            "recipe sets --global-batch-size 128 but the workload's global batch is 64");
}

// A recipe that names another MLP activation than the model's is refused: it trains another model.
TEST(SimLayout, TheRecipesActivationMustBeTheModels) {
  const Workload llama = workload("llama3.1-8b", "b200", 8, 4096, 64);
  EXPECT_EQ(failure(llama, "--micro-batch-size 1 --swiglu"), "");
  EXPECT_EQ(failure(llama, "--micro-batch-size 1 --squared-relu"),
            "recipe sets --squared-relu but model llama3.1-8b's MLP is swiglu");
  const Workload nemotron = workload("nemotron4-15b", "h100", 16, 4096, 64);
  EXPECT_EQ(failure(nemotron,
                    "--tensor-model-parallel-size 4 --sequence-parallel "
                    "--micro-batch-size 4 --squared-relu"),
            "");
  EXPECT_EQ(failure(nemotron,
                    "--tensor-model-parallel-size 4 --sequence-parallel "
                    "--micro-batch-size 4 --swiglu"),
            "recipe sets --swiglu but model nemotron4-15b's MLP is squared-relu");
}

TEST(SimLayout, Recompute) {
  const Workload llama = workload("llama3.1-8b", "b200", 8, 4096, 64);
  EXPECT_EQ(failure(llama, "--micro-batch-size 1 --recompute-granularity full"),
            "Using recompute_granularity: full so recompute_method must be \"block\" or "
            "\"uniform\"");
  EXPECT_EQ(failure(llama,
                    "--micro-batch-size 1 --recompute-granularity full "
                    "--recompute-method uniform"),
            "When using recompute_granularity: full recompute_num_layers must be between 1 and "
            "num_layers_per_pipeline_rank: 32");
  EXPECT_EQ(failure(llama,
                    "--micro-batch-size 1 --recompute-granularity selective "
                    "--recompute-method block"),
            "recompute method is not yet supported for selective recomputing granularity");
  EXPECT_EQ(failure(llama,
                    "--micro-batch-size 1 --recompute-granularity selective "
                    "--recompute-modules attention"),
            "Invalid choices for recompute_modules: {'attention'}. Allowed modules are: "
            "{core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts, gdn_norm_out, "
            "gdp_in_proj, gdp_qkv, mhc}");
  EXPECT_EQ(failure(llama,
                    "--micro-batch-size 1 --recompute-granularity selective "
                    "--recompute-modules mla_up_proj"),
            "mla_up_proj in recompute_modules is only supported with multi_latent_attention.");
  const Workload qwen = workload("qwen3-30b-a3b", "b200", 8, 4096, 64);
  EXPECT_EQ(failure(qwen,
                    "--micro-batch-size 1 --expert-model-parallel-size 8 "
                    "--recompute-granularity selective --recompute-modules moe_act"),
            "moe_act in recompute_modules is only supported with moe_grouped_gemm.");
  EXPECT_EQ(failure(qwen,
                    "--micro-batch-size 1 --expert-model-parallel-size 8 "
                    "--moe-layer-recompute --recompute-granularity full "
                    "--recompute-method uniform --recompute-num-layers 1"),
            "Do not set --moe-layer-recompute with full recompute granularity. ");
}

TEST(SimLayout, ParallelismFlagsThatNeedOthers) {
  const Workload qwen = workload("qwen3-30b-a3b", "b200", 16, 4096, 256);
  EXPECT_EQ(failure(qwen,
                    "--tensor-model-parallel-size 2 --expert-model-parallel-size 8 "
                    "--micro-batch-size 1"),
            "During training, performance may degrade if MoE and tensor parallelismare enabled "
            "without also enabling sequence parallelism.");
  EXPECT_EQ(failure(qwen, "--micro-batch-size 1 --moe-token-dispatcher-type flex"),
            "DeepEP dispatcher requires TPxEP > 1");
  // A fixed receive budget per EP rank needs a backend that uses it (Megatron's own messages).
  EXPECT_EQ(failure(qwen,
                    "--micro-batch-size 1 --expert-model-parallel-size 8 --moe-grouped-gemm "
                    "--moe-token-dispatcher-type alltoall --moe-expert-rank-capacity-factor 1.5"),
            "moe_expert_rank_capacity_factor requires moe_flex_dispatcher_backend to be "
            "'hybridep' or 'ncclep'.");
  EXPECT_EQ(failure(qwen,
                    "--micro-batch-size 1 --expert-model-parallel-size 8 --moe-grouped-gemm "
                    "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
                    "--moe-expert-rank-capacity-factor 1.5"),
            "moe_expert_rank_capacity_factor with the 'hybridep' backend requires "
            "use_transformer_engine_op_fuser=True or moe_use_grouped_tensor=True.");
  const std::string budget =
      "--micro-batch-size 1 --expert-model-parallel-size 8 --moe-grouped-gemm "
      "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
      "--moe-expert-rank-capacity-factor 1.5 ";
  EXPECT_EQ(failure(qwen, budget + "--use-transformer-engine-op-fuser"), "");
  EXPECT_EQ(failure(qwen, budget + "--moe-use-grouped-tensor"), "");
  const Workload llama = workload("llama3.1-8b", "b200", 8, 4096, 64);
  EXPECT_EQ(failure(llama, "--tensor-model-parallel-size 2 --tp-comm-overlap --micro-batch-size 1"),
            "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism "
            "is enabled");
  const Workload hopper = workload("llama3.1-8b", "h100", 8, 4096, 64);
  Result<Recipe> without_env =
      parse_recipe("--tensor-model-parallel-size 2 --sequence-parallel --micro-batch-size 1");
  EXPECT_EQ(predict(hopper, without_env.value()).error,
            "Using tensor model parallelism or context parallelism require setting the "
            "environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1");
  const Workload glm = workload("glm-4.5", "b200", 128, 4096, 2048);
  EXPECT_EQ(failure(glm,
                    "--tensor-model-parallel-size 2 --sequence-parallel "
                    "--pipeline-model-parallel-size 4 --expert-model-parallel-size 8 "
                    "--micro-batch-size 1 "
                    "--decoder-first-pipeline-num-layers 23 "
                    "--decoder-last-pipeline-num-layers 23 "
                    "--moe-token-dispatcher-type alltoall "
                    "--overlap-moe-expert-parallel-comm"),
            "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified "
            "when pipeline_model_parallel_size > 1");
}

TEST(SimLayout, OptimizerFlagsThatNeedOthers) {
  const Workload llama = workload("llama3.1-8b", "b200", 8, 4096, 64);
  EXPECT_EQ(failure(llama, "--micro-batch-size 1 --overlap-grad-reduce --overlap-param-gather"),
            "--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or "
            "dist_muon");
  EXPECT_EQ(failure(llama,
                    "--micro-batch-size 1 --use-distributed-optimizer "
                    "--overlap-param-gather"),
            "Must use --overlap-param-gather with --overlap-grad-reduce");
  EXPECT_EQ(failure(llama,
                    "--micro-batch-size 1 --use-distributed-optimizer "
                    "--optimizer-cpu-offload"),
            "The optimizer cpu offload must be used in conjunction with "
            "`--use-precision-aware-optimizer`, as the hybrid device optimizer reuses the code "
            "path of this flag.");
  EXPECT_EQ(failure(llama, "--micro-batch-size 1 --use-precision-aware-optimizer"),
            "--use-precision-aware-optimizer only supported with distributed optimizer");
  const Workload a100 = workload("llama3.1-8b", "a100-80g", 8, 4096, 64, Precision::kFp8);
  EXPECT_EQ(failure(a100, "--micro-batch-size 1"),
            "Device compute capability 8.9 or higher required for FP8 execution.");
}

TEST(SimLayout, ContextParallelBucketsAndOffload) {
  const Workload llama = workload("llama3.1-8b", "b200", 8, 8192, 64);
  EXPECT_EQ(failure(llama, "--context-parallel-size 2 --cp-comm-type a2a+p2p --micro-batch-size 1"),
            "--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm");
  EXPECT_EQ(failure(llama, "--context-parallel-size 2 --cp-comm-type p2p a2a --micro-batch-size 1"),
            "Length of cp_comm_type (2) should equal to the total number of transformer layers "
            "(32)!");
  EXPECT_EQ(failure(llama, "--micro-batch-size 1 --ddp-bucket-size 1000 --ddp-num-buckets 4"),
            "Cannot specify both num_buckets and bucket_size");
  EXPECT_EQ(failure(llama, "--micro-batch-size 1 --defer-embedding-wgrad-compute"),
            "Cannot defer embedding wgrad compute when pipeline model parallel is not used");
  EXPECT_EQ(failure(llama,
                    "--micro-batch-size 1 --cpu-offloading-num-layers 4 "
                    "--pipeline-model-parallel-size 2"),
            "Currently there is no support for Pipeline parallelism with CPU offloading");
  // Ulysses all-to-all cannot hide behind attention as the p2p ring does.
  const Prediction ring = predict(llama, recipe("--context-parallel-size 4 --micro-batch-size 1"));
  const Prediction ulysses =
      predict(llama, recipe("--context-parallel-size 4 --cp-comm-type a2a --micro-batch-size 1"));
  ASSERT_TRUE(ring.valid && ulysses.valid);
  EXPECT_EQ(ring.breakdown.cp_comm_s, 0);
  EXPECT_GT(ulysses.breakdown.cp_comm_s, 0);
}

TEST(SimLayout, ApplyLayoutRoundTrips) {
  const Workload glm = workload("glm-4.5", "b200", 128, 4096, 2048);
  const Recipe base = load_recipe_preset("glm-4.5-b200x128").value();
  Layout l = decode_layout(glm, base).value();
  l.tp = 1;
  l.sequence_parallel = false;
  l.pp = 16;
  l.ep = 8;
  l.first_stage_layers = 6;
  l.last_stage_layers = 2;
  l.recompute = RecomputeGranularity::kFull;
  l.recompute_method = RecomputeMethod::kUniform;
  l.recompute_num_layers = 1;
  l.dispatcher = Dispatcher::kFlex;
  const Recipe changed = apply_layout(base, l).value();
  const Layout back = decode_layout(glm, changed).value();
  EXPECT_EQ(back.tp, 1);
  EXPECT_FALSE(back.sequence_parallel);
  EXPECT_EQ(back.pp, 16);
  EXPECT_EQ(back.ep, 8);
  EXPECT_EQ(back.first_stage_layers, 6);
  EXPECT_EQ(back.last_stage_layers, 2);
  EXPECT_EQ(back.recompute, RecomputeGranularity::kFull);
  EXPECT_EQ(back.recompute_method, RecomputeMethod::kUniform);
  EXPECT_EQ(back.recompute_num_layers, 1);
  EXPECT_EQ(back.dispatcher, Dispatcher::kFlex);
  EXPECT_FALSE(changed.flags.contains("--tensor-model-parallel-size"));  // 1 is the default
  EXPECT_EQ(changed.flags.at("--pipeline-model-parallel-size"), "16");
  EXPECT_FALSE(changed.flags.contains("--sequence-parallel"));
  EXPECT_EQ(changed.flags.at("--bf16"), "");  // untouched settings stay
}

}  // namespace
}  // namespace attune::sim

namespace attune::sim {
namespace {

// Megatron refuses dropout inside a graphed, recomputed module (the conformance suite against
// Megatron-LM d98e8a64 found attune accepting it): a graph without modules captures the whole
// layer, so it covers the recomputed core attention.
TEST(SimLayout, DropoutInAGraphedRecomputedModuleIsRefused) {
  const Workload w = workload("llama3.1-8b", "h100", 8, 4096, 64);
  const std::string graphed =
      "--tensor-model-parallel-size 2 --micro-batch-size 1 --cuda-graph-impl transformer_engine "
      "--recompute-granularity selective";
  EXPECT_EQ(failure(w, graphed),
            "attention dropout is not supported with graphed attention recomputation.");
  EXPECT_EQ(failure(w, graphed + " --attention-dropout 0"), "");
  // Attention outside the graph's modules, or not recomputed: allowed with dropout.
  EXPECT_EQ(failure(w, graphed + " --cuda-graph-modules mlp"), "");
  EXPECT_EQ(failure(w, graphed + " --recompute-modules layernorm"), "");
  EXPECT_EQ(failure(w, graphed + " --attention-dropout 0 --recompute-modules core_attn mlp"),
            "hidden dropout is not supported with graphed MLP/MoE recomputation.");
}

// A budget per EP rank is kept while the backend can use it and goes with one that cannot
// (Megatron refuses it for DeepEP).
TEST(SimLayout, AnExpertRankBudgetGoesWithTheBackendThatUsesIt) {
  const Workload qwen = workload("qwen3-30b-a3b", "b200", 16, 4096, 256);
  const Recipe base = recipe(
      "--micro-batch-size 1 --expert-model-parallel-size 8 --moe-grouped-gemm "
      "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
      "--use-transformer-engine-op-fuser --moe-expert-rank-capacity-factor 1.5");
  Layout l = decode_layout(qwen, base).value();
  ASSERT_TRUE(l.expert_rank_budget);
  l.ep = 4;
  const Recipe kept = apply_layout(base, l).value();
  EXPECT_EQ(kept.flags.at("--moe-expert-rank-capacity-factor"), "1.5");
  l.flex_backend = FlexBackend::kDeepep;
  const Recipe moved = apply_layout(base, l).value();
  EXPECT_FALSE(moved.flags.contains("--moe-expert-rank-capacity-factor"));
  EXPECT_TRUE(predict(qwen, moved).valid);
}

}  // namespace
}  // namespace attune::sim
