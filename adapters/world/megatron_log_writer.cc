#include "adapters/world/megatron_log_writer.h"
#include "adapters/world/printf_text.h"
#include "events/assert.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <map>
#include <tuple>

#include "adapters/model/flops.h"
#include "adapters/model/memory_model.h"
#include "adapters/model/recipe_values.h"
#include "adapters/world/seeded_random.h"
#include "events/arg_catalog.h"

namespace attune::sim {
namespace {

constexpr std::string_view kArgumentsHeader =
    "------------------------ arguments ------------------------";
constexpr std::string_view kArgumentsFooter =
    "-------------------- end of arguments ---------------------";
constexpr std::string_view kMegatronDir = "/workspace/Megatron-LM";
constexpr std::string_view kPythonLib = "/usr/local/lib/python3.12/dist-packages";
constexpr std::string_view kNcclVersion = "2.28.9";
constexpr int kWorkerPidBase = 41200;          // pids of the simulated worker processes
constexpr int kExitCodeResultValidation = 17;  // Megatron's EXIT_CODE_FAILED_ON_RESULT_VALIDATION
constexpr int kExitCodeNvshmem = 255;          // NVSHMEM exits with -1

// Python's "{:.Nf}" of a value that may be NaN or infinite.
std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return format("%.*f", decimals, value);
}

std::string python_bool(bool value) { return value ? "True" : "False"; }

std::string python_list(const std::vector<std::string>& words, ArgValueKind kind) {
  std::string out = "[";
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += ", ";
    if (kind == ArgValueKind::kInt) {
      out += words[i];
    } else if (kind == ArgValueKind::kFloat) {
      out += python_float(std::strtod(words[i].c_str(), nullptr));
    } else {
      out += "'" + words[i] + "'";
    }
  }
  return out + "]";
}

// Python's str() of the value argparse stores for one recipe flag.
std::string printed_value(const ArgInfo& info, bool negated, const std::string& value) {
  if (info.value_kind == ArgValueKind::kSwitch) {
    if (info.negatable) return python_bool(!negated);
    return python_bool(info.type_text.find("store_false") == std::string::npos);
  }
  if (info.multi_value) return python_list(split_words(value), info.value_kind);
  if (info.value_kind == ArgValueKind::kFloat) {
    return python_float(std::strtod(value.c_str(), nullptr));
  }
  return value;
}

// validate_args turns the module names into CudaGraphModule members, printed by their repr.
std::string graph_module_enums(const std::string& names) {
  constexpr std::pair<std::string_view, int> kValues[] = {
      {"attn", 1}, {"mlp", 2}, {"moe", 3}, {"moe_router", 4}, {"moe_preprocess", 5}, {"mamba", 6}};
  std::string out = "[";
  for (const std::string& name : split_words(names)) {
    if (out.size() > 1) out += ", ";
    int value = 0;
    for (const auto& [known, number] : kValues) {
      if (known == name) value = number;
    }
    out += "<CudaGraphModule." + name + ": " + std::to_string(value) + ">";
  }
  return out + "]";
}

std::string none_or(int value) { return value > 0 ? std::to_string(value) : "None"; }

std::string moe_layer_freq(const ModelSpec& model) {
  if (model.first_dense_layers <= 0) return "1";
  std::string out = "[";
  for (int layer = 0; layer < model.num_layers; ++layer) {
    out += (layer > 0 ? ", " : "") + std::string(is_moe_layer(model, layer) ? "1" : "0");
  }
  return out + "]";
}

// Which Python exception carries a start-up refusal, and where it is raised.
struct Refusal {
  std::string exception;
  std::vector<std::string> frames;  // "file", "line", "function", "code" per frame, flattened
};

Refusal refusal_of(const std::string& message) {
  const std::string megatron(kMegatronDir);
  std::vector<std::string> frames = {
      megatron + "/pretrain_gpt.py",
      "321",
      "<module>",
      "pretrain(",
  };
  const auto add = [&frames](std::string file, int line, std::string function, std::string code) {
    frames.insert(frames.end(),
                  {std::move(file), std::to_string(line), std::move(function), std::move(code)});
  };
  if (message.starts_with("world_size (") || message.starts_with("The remainder of M")) {
    if (message.starts_with("world_size (")) {
      add(megatron + "/megatron/training/training.py", 712, "pretrain", "initialize_megatron(");
      add(megatron + "/megatron/training/initialize.py", 108, "initialize_megatron",
          "finish_mpu_init()");
      add(megatron + "/megatron/training/initialize.py", 90, "finish_mpu_init",
          "_initialize_distributed(get_embedding_ranks, get_position_embedding_ranks)");
      add(megatron + "/megatron/training/initialize.py", 356, "_initialize_distributed",
          "mpu.initialize_model_parallel(");
      add(megatron + "/megatron/core/parallel_state.py", 637, "initialize_model_parallel",
          "raise RuntimeError(");
    } else {
      add(megatron + "/megatron/training/training.py", 790, "pretrain",
          "iteration, num_floating_point_operations_so_far = train(");
      add(megatron + "/megatron/training/training.py", 2234, "train", ") = train_step(");
      add(megatron + "/megatron/training/training.py", 1383, "train_step",
          "losses_reduced = forward_backward_func(");
      add(megatron + "/megatron/core/pipeline_parallel/schedules.py", 915,
          "forward_backward_pipelining_with_interleaving", "raise RuntimeError(msg)");
    }
    return {"RuntimeError", frames};
  }
  if (message.find("contiguous micro-batches") != std::string::npos ||
      message.starts_with("During training, performance may degrade")) {
    add(megatron + "/megatron/training/training.py", 790, "pretrain",
        "iteration, num_floating_point_operations_so_far = train(");
    add(megatron + "/megatron/training/training.py", 2234, "train", ") = train_step(");
    add(megatron + "/megatron/training/training.py", 1383, "train_step",
        "losses_reduced = forward_backward_func(");
    if (message.starts_with("During")) {
      add(megatron + "/megatron/core/transformer/moe/moe_layer.py", 274, "forward",
          "raise ValueError(");
    } else {
      add(megatron + "/megatron/core/pipeline_parallel/schedules.py", 902,
          "forward_backward_pipelining_with_interleaving", "raise ValueError(");
    }
    return {"ValueError", frames};
  }
  add(megatron + "/megatron/training/training.py", 712, "pretrain", "initialize_megatron(");
  add(megatron + "/megatron/training/initialize.py", 87, "initialize_megatron",
      "validate_args(args, args_defaults)");
  add(megatron + "/megatron/training/arguments.py", 512, "validate_args", "assert (");
  return {"AssertionError", frames};
}

std::vector<std::string> training_frames() {
  const std::string megatron(kMegatronDir);
  return {
      megatron + "/pretrain_gpt.py",
      "321",
      "<module>",
      "pretrain(",
      megatron + "/megatron/training/training.py",
      "790",
      "pretrain",
      "iteration, num_floating_point_operations_so_far = train(",
      megatron + "/megatron/training/training.py",
      "2234",
      "train",
      ") = train_step(",
      megatron + "/megatron/training/training.py",
      "1383",
      "train_step",
      "losses_reduced = forward_backward_func(",
  };
}

// PyTorch's format_size: "2.00 GiB", "512.00 MiB".
std::string torch_size(double gib) {
  if (gib >= 1.0) return format("%.2f GiB", gib);
  return format("%.2f MiB", gib * 1024.0);
}

std::string glog_time(std::int64_t unix_ns) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return format("%02d%02d %02d:%02d:%02d.%06d", tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                tm.tm_sec, static_cast<int>((unix_ns / 1000) % 1'000'000));
}

}  // namespace

std::string argument_line(const std::string& dest, const std::string& value) {
  const int dots = std::max(0, kArgumentDotsColumn - static_cast<int>(dest.size()));
  return "  " + dest + " " + std::string(static_cast<std::size_t>(dots), '.') + " " + value;
}

std::string megatron_datetime(std::int64_t unix_ns) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return format("%04d-%02d-%02d %02d:%02d:%02d.%06d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>((unix_ns / 1000) % 1'000'000));
}

std::vector<std::string> model_flags(const Workload& workload) {
  const ModelSpec& m = workload.model;
  std::vector<std::string> out;
  const auto add = [&out](std::initializer_list<std::string> words) {
    out.insert(out.end(), words.begin(), words.end());
  };
  add({"--num-layers", std::to_string(m.num_layers), "--hidden-size", std::to_string(m.hidden_size),
       "--num-attention-heads", std::to_string(m.num_attention_heads)});
  if (m.kv_channels > 0 && m.kv_channels * m.num_attention_heads != m.hidden_size) {
    add({"--kv-channels", std::to_string(m.kv_channels)});
  }
  if (m.ffn_hidden_size > 0 && m.ffn_hidden_size != default_ffn_hidden_size(m)) {
    add({"--ffn-hidden-size", std::to_string(m.ffn_hidden_size)});
  }
  if (m.attention == AttentionKind::kGroupedQuery && m.num_query_groups != m.num_attention_heads) {
    add({"--group-query-attention", "--num-query-groups", std::to_string(m.num_query_groups)});
  }
  if (m.attention == AttentionKind::kMultiLatent) {
    add({"--multi-latent-attention", "--kv-lora-rank", std::to_string(m.kv_lora_rank),
         "--qk-head-dim", std::to_string(m.qk_head_dim), "--qk-pos-emb-head-dim",
         std::to_string(m.qk_pos_emb_head_dim), "--v-head-dim", std::to_string(m.v_head_dim)});
    if (m.q_lora_rank > 0) add({"--q-lora-rank", std::to_string(m.q_lora_rank)});
  }
  if (m.gated_linear_unit) add({"--swiglu"});
  if (m.activation == "squared-relu") add({"--squared-relu"});
  if (m.rotary_percent != 1.0) add({"--rotary-percent", format("%g", m.rotary_percent)});
  if (!m.add_bias_linear) add({"--disable-bias-linear"});
  if (m.qk_layernorm) add({"--qk-layernorm"});
  if (m.untie_embeddings_and_output_weights) add({"--untie-embeddings-and-output-weights"});
  add({"--normalization", m.normalization, "--position-embedding-type", m.position_embedding_type,
       "--vocab-size", std::to_string(m.vocab_size), "--seq-length",
       std::to_string(workload.seq_length), "--max-position-embeddings",
       std::to_string(workload.seq_length)});
  if (m.make_vocab_size_divisible_by != 128) {
    add({"--make-vocab-size-divisible-by", std::to_string(m.make_vocab_size_divisible_by)});
  }
  if (is_moe(m)) {
    add({"--num-experts", std::to_string(m.num_experts), "--moe-router-topk",
         std::to_string(m.moe_router_topk), "--moe-ffn-hidden-size",
         std::to_string(m.moe_ffn_hidden_size)});
    if (m.moe_shared_expert_intermediate_size > 0) {
      add({"--moe-shared-expert-intermediate-size",
           std::to_string(m.moe_shared_expert_intermediate_size)});
    }
    if (m.first_dense_layers > 0) {
      add({"--moe-layer-freq", "([0]*" + std::to_string(m.first_dense_layers) + "+[1]*" +
                                   std::to_string(m.num_layers - m.first_dense_layers) + ")"});
    }
  }
  return out;
}

namespace {

// A function that writes one value of the arguments block into `args`.
auto setter(std::map<std::string, std::string>& args) {
  return [&args](const std::string& dest, std::string value) { args[dest] = std::move(value); };
}

// The model and the workload, as the launch script passes them, into `args`.
void set_model_arguments(std::map<std::string, std::string>& args, const Workload& workload,
                         const Recipe& recipe, const ResolvedLayout& resolved,
                         std::uint32_t train_iters, std::uint32_t log_interval) {
  const auto set = setter(args);
  const ModelSpec& m = workload.model;
  const Layout& l = resolved.layout;
  set("num_layers", std::to_string(m.num_layers));
  set("hidden_size", std::to_string(m.hidden_size));
  set("num_attention_heads", std::to_string(m.num_attention_heads));
  set("kv_channels", std::to_string(m.kv_channels));
  set("ffn_hidden_size",
      std::to_string(m.ffn_hidden_size > 0 ? m.ffn_hidden_size : default_ffn_hidden_size(m)));
  const bool gqa =
      m.attention == AttentionKind::kGroupedQuery && m.num_query_groups != m.num_attention_heads;
  set("group_query_attention", python_bool(gqa));
  // Without grouped-query attention Megatron leaves num_query_groups at its argparse default.
  if (gqa) set("num_query_groups", std::to_string(m.num_query_groups));
  set("multi_latent_attention", python_bool(m.attention == AttentionKind::kMultiLatent));
  if (m.attention == AttentionKind::kMultiLatent) {
    set("q_lora_rank", none_or(m.q_lora_rank));
    set("kv_lora_rank", std::to_string(m.kv_lora_rank));
    set("qk_head_dim", std::to_string(m.qk_head_dim));
    set("qk_pos_emb_head_dim", std::to_string(m.qk_pos_emb_head_dim));
    set("v_head_dim", std::to_string(m.v_head_dim));
  }
  set("swiglu", python_bool(m.gated_linear_unit));
  if (m.activation == "squared-relu") set("squared_relu", "True");
  if (m.rotary_percent != 1.0 && !recipe.flags.contains("--rotary-percent")) {
    set("rotary_percent", format("%g", m.rotary_percent));
  }
  set("add_bias_linear", python_bool(m.add_bias_linear));
  set("qk_layernorm", python_bool(m.qk_layernorm));
  set("untie_embeddings_and_output_weights", python_bool(m.untie_embeddings_and_output_weights));
  for (const auto& [flag, dest, value] :
       {std::tuple{"--normalization", "normalization", m.normalization},
        std::tuple{"--position-embedding-type", "position_embedding_type",
                   m.position_embedding_type},
        std::tuple{"--tokenizer-type", "tokenizer_type", m.tokenizer_type}}) {
    if (!recipe.flags.contains(flag)) set(dest, value);
  }
  set("vocab_size", std::to_string(m.vocab_size));
  set("make_vocab_size_divisible_by", std::to_string(m.make_vocab_size_divisible_by));
  // Unless the recipe pins --padded-vocab-size, the block prints None: the tokenizer pads the
  // vocabulary after it is printed, and says so in its own line (arguments_text).
  set("seq_length", std::to_string(workload.seq_length));
  if (args["max_position_embeddings"] == "None") {
    set("max_position_embeddings", std::to_string(workload.seq_length));
  }
  set("global_batch_size", std::to_string(workload.global_batch_size));
  set("micro_batch_size", std::to_string(l.micro_batch_size));
  if (is_moe(m)) {
    set("num_experts", std::to_string(m.num_experts));
    set("moe_router_topk", std::to_string(m.moe_router_topk));
    set("moe_ffn_hidden_size", std::to_string(m.moe_ffn_hidden_size));
    set("moe_shared_expert_intermediate_size", none_or(m.moe_shared_expert_intermediate_size));
    set("moe_layer_freq", moe_layer_freq(m));
  }
  set("mtp_num_layers", none_or(l.mtp_layers));
  if (!l.fp16) set("bf16", "True");
  set("params_dtype", l.fp16 ? "torch.float16" : "torch.bfloat16");
  if (workload.precision == Precision::kFp8 && args["fp8"] == "None") set("fp8", "hybrid");
  if (args["lr"] == "None") set("lr", python_float(kFallbackLearningRate));
  set("train_iters", std::to_string(train_iters));
  set("log_interval", std::to_string(log_interval));
  set("log_throughput", "True");
}

// The layout as it resolved, and the rewrites validate_args makes silently, into `args`.
void set_layout_arguments(std::map<std::string, std::string>& args, const Workload& workload,
                          const Recipe& recipe, const ResolvedLayout& resolved) {
  const Layout& l = resolved.layout;
  const auto set = setter(args);
  set("world_size", std::to_string(workload.gpus));
  set("rank", "0");
  set("data_parallel_size", std::to_string(resolved.dp));
  set("tensor_model_parallel_size", std::to_string(l.tp));
  set("pipeline_model_parallel_size", std::to_string(l.pp));
  set("transformer_pipeline_model_parallel_size", std::to_string(l.pp));
  set("context_parallel_size", std::to_string(l.cp));
  set("expert_model_parallel_size", std::to_string(l.ep));
  set("expert_tensor_parallel_size", std::to_string(l.etp > 0 ? l.etp : l.tp));
  set("sequence_parallel", python_bool(l.sequence_parallel && l.tp > 1));
  set("virtual_pipeline_model_parallel_size",
      resolved.vp > 1 ? std::to_string(resolved.vp) : "None");
  if (args["num_virtual_stages_per_pipeline_rank"] == "1") {
    set("num_virtual_stages_per_pipeline_rank", "None");
  }
  if (resolved.vp <= 1) {
    set("overlap_p2p_comm", "False");
    set("align_param_gather", "False");
  }
  const bool fp32_accumulation = !l.fp16 && !l.grad_reduce_in_bf16;
  set("accumulate_allreduce_grads_in_fp32", python_bool(fp32_accumulation));
  if (fp32_accumulation) set("ddp_reduce_scatter_with_fp32_accumulation", "False");
  const std::string_view granularity = recompute_granularity_name(l.recompute);
  set("recompute_granularity", granularity.empty() ? "None" : std::string(granularity));
  if (l.moe_enable_deepep) set("moe_flex_dispatcher_backend", "deepep");
  set("apply_rope_fusion", python_bool(applies_rope_fusion(l, args["position_embedding_type"])));
  if (l.cuda_graph != CudaGraphImpl::kNone) set("te_rng_tracker", "True");
  if (const std::optional<std::string> modules = recipe_flag(recipe, "--cuda-graph-modules")) {
    set("cuda_graph_modules", graph_module_enums(*modules));
  }
  for (const char* list_of_one : {"moe_aux_loss_coeff", "moe_router_load_balancing_type"}) {
    // Megatron unwraps one-element lists of these two.
    std::string& value = args[list_of_one];
    if (value.starts_with("[") && value.find(", ") == std::string::npos && value.size() > 2) {
      value = value.substr(1, value.size() - 2);
      if (value.starts_with("'")) value = value.substr(1, value.size() - 2);
    }
  }
  set("consumed_train_samples", "0");
  set("consumed_valid_samples", "0");
}

// The arguments in the order Megatron prints them: sorted by their printed line ("  dest .....
// value"), case-insensitively.
std::vector<std::pair<std::string, std::string>> sorted_arguments(
    std::map<std::string, std::string> args) {
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> keyed;
  keyed.reserve(args.size());
  for (auto& [dest, value] : args) {
    std::string key = argument_line(dest, value);
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    keyed.emplace_back(std::move(key), std::make_pair(dest, std::move(value)));
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::pair<std::string, std::string>> sorted;
  sorted.reserve(keyed.size());
  for (auto& entry : keyed) sorted.push_back(std::move(entry.second));
  return sorted;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> effective_arguments(const Workload& workload,
                                                                     const Recipe& recipe,
                                                                     const ResolvedLayout& resolved,
                                                                     std::uint32_t train_iters,
                                                                     std::uint32_t log_interval) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  std::map<std::string, std::string> args;
  for (const ArgInfo& info : catalog.all()) args.emplace(info.dest, info.default_text);
  for (const auto& [flag, value] : recipe.flags) {
    bool negated = false;
    const ArgInfo* info = catalog.find(flag, &negated);
    if (info == nullptr) continue;  // argparse would refuse it; the layout check reports it
    args[info->dest] = printed_value(*info, negated, value);
  }
  set_model_arguments(args, workload, recipe, resolved, train_iters, log_interval);
  set_layout_arguments(args, workload, recipe, resolved);
  return sorted_arguments(std::move(args));
}

MegatronLogWriter::MegatronLogWriter(const Workload& workload, const Recipe& recipe,
                                     const SimulatedRun& run, int gpus_per_node)
    : workload_(workload), recipe_(recipe), run_(run), gpus_per_node_(std::max(1, gpus_per_node)) {
  const double interval = recipe_number(recipe_, "--log-interval", 0);
  log_interval_ = recipe_flag(recipe_, "--log-interval") && interval >= 1
                      ? static_cast<std::uint32_t>(interval)
                      : 1;
  if (run_.outcome != JobOutcome::kInvalidAtStartup) {
    Result<Layout> layout = decode_layout(workload_, recipe_);
    if (layout.ok()) {
      Result<ResolvedLayout> resolved = resolve_layout(workload_, *layout);
      if (resolved.ok()) {
        resolved_ = std::move(resolved).value();
        resolved_ok_ = true;
      }
    }
  }
  const int tp = resolved_ok_ ? resolved_.layout.tp : 1;
  const int mtp = resolved_ok_ ? resolved_.layout.mtp_layers : 0;
  tflop_per_gpu_per_step_ = megatron_flops_per_step(workload_.model, workload_.seq_length,
                                                    workload_.global_batch_size, tp, mtp) /
                            (1e12 * workload_.gpus);
}

std::string MegatronLogWriter::node_of_rank(int rank) const {
  const std::size_t node = static_cast<std::size_t>(rank / gpus_per_node_);
  if (node < run_.nodes.size()) return run_.nodes[node];
  return format("node-%03d", static_cast<int>(node) + 1);
}

std::string MegatronLogWriter::arguments_text() const {
  if (!resolved_ok_) return "";
  const Layout& l = resolved_.layout;
  std::string out = format(
      "using world size: %d, data-parallel size: %d, context-parallel size: %d, hierarchical "
      "context-parallel sizes: None, tensor-model-parallel size: %d, pipeline-model-parallel "
      "size: %d\n",
      workload_.gpus, resolved_.dp, l.cp, l.tp, l.pp);
  if (resolved_.vp > 1) {
    out += format("Number of virtual stages per pipeline stage: %d\n", resolved_.vp);
  }
  out += std::string(kArgumentsHeader) + "\n";
  for (const auto& [dest, value] :
       effective_arguments(workload_, recipe_, resolved_, run_.steps_requested, log_interval_)) {
    out += argument_line(dest, value) + "\n";
  }
  out += std::string(kArgumentsFooter) + "\n";
  if (!recipe_.flags.contains("--padded-vocab-size")) {
    // build_tokenizer, after the block: the vocabulary padded to a multiple of
    // make_vocab_size_divisible_by x TP.
    const int padded = padded_vocab_size(workload_.model, l.tp);
    out += format(
        "INFO:megatron.core.tokenizers.utils.build_tokenizer: > padded vocab (size: %d) with %d "
        "dummy tokens (new size: %d)\n",
        workload_.model.vocab_size, padded - workload_.model.vocab_size, padded);
  }
  return out;
}

std::string MegatronLogWriter::training_start_text(std::int64_t now_unix_ns) const {
  std::string out;
  if (resolved_ok_) {
    const Layout& l = resolved_.layout;
    for (int stage = 0; stage < l.pp; ++stage) {
      const StageParams params = stage_params(workload_, resolved_, stage);
      const long long count = std::llround(params.dense + params.expert);
      for (int t = 0; t < l.tp; ++t) {
        out += format(
            " > number of parameters on (tensor, gtp_weight_remat, pipeline) model parallel "
            "rank (%d, 0, %d): %lld\n",
            t, stage, count);
      }
    }
  }
  out += "[before the start of training step] datetime: " + megatron_datetime(now_unix_ns) + " \n";
  return out;
}

std::string MegatronLogWriter::iteration_line(std::uint32_t step, std::int64_t now_unix_ns) const {
  const std::uint32_t first = interval_first_step_;
  ATTUNE_ASSERT(first <= step && step <= run_.step_times_s.size(),
                "the window lies within the run");
  const std::uint32_t count = step - first + 1;
  double elapsed_s = 0;
  for (std::uint32_t s = first; s <= step; ++s) elapsed_s += run_.step_times_s[s - 1];
  const double per_iteration_s = elapsed_s / count;

  std::string out = " [" + megatron_datetime(now_unix_ns) + "]";
  out += format(" iteration %8u/%8u |", step, run_.steps_requested);
  out += format(" consumed samples: %12lld |",
                static_cast<long long>(step) * workload_.global_batch_size);
  out += format(" elapsed time per iteration (ms): %.1f |", per_iteration_s * 1000.0);
  out += format(" throughput per GPU (TFLOP/s/GPU): %.1f |",
                tflop_per_gpu_per_step_ / per_iteration_s);
  out += format(" learning rate: %.6E |", run_.loss.learning_rate[step - 1]);
  out += format(" global batch size: %5d |", workload_.global_batch_size);
  std::uint32_t nan_iterations = 0;
  const auto average = [&](const std::vector<double>& values) {
    double sum = 0;
    for (std::uint32_t s = first; s <= step; ++s) sum += values[s - 1];
    return sum / count;
  };
  for (std::uint32_t s = first; s <= step; ++s) {
    if (std::isnan(run_.loss.lm_loss[s - 1])) ++nan_iterations;
  }
  const auto loss_segment = [&](const std::string& key, const std::vector<double>& values) {
    const double avg = average(values);
    if (avg >= 0.0) out += format(" %s: %.6E |", key.c_str(), avg);
  };
  loss_segment("lm loss", run_.loss.lm_loss);
  for (const LossSeries& series : run_.loss.other_losses) loss_segment(series.name, series.values);
  out += " loss scale: 1.0 |";
  out += " grad norm: " + fixed(run_.loss.grad_norm[step - 1], 3) + " |";
  out += format(" number of skipped iterations: %3d |", 0);
  out += format(" number of nan iterations: %3u |", nan_iterations);
  return out + "\n";
}

std::string MegatronLogWriter::memory_report(std::uint32_t step) const {
  if (!resolved_ok_) return "";
  const Layout& l = resolved_.layout;
  std::string out;
  for (int stage = 0; stage < l.pp; ++stage) {
    if (static_cast<std::size_t>(stage) >= run_.prediction.stages.size()) break;
    const StageMemory& m = run_.prediction.stages[static_cast<std::size_t>(stage)].memory;
    const int first = first_rank_of_stage(workload_.gpus, l.pp, stage);
    for (int c = 0; c < l.cp; ++c) {
      for (int t = 0; t < l.tp; ++t) {
        const int rank = first + t + l.tp * c;
        // Ranks of one stage differ a little (padding, routing buffers); the first log comes
        // before the allocator reached its steady peak.
        const double jitter =
            1.0 + 0.002 * SeededStream(combine(hash_text("rank memory"), rank)).uniform(-1.0, 1.0);
        const double warmup = logs_printed_ == 0 ? 0.985 : 1.0;
        const double allocated_mb = (m.weights_gib + m.gradients_gib + m.optimizer_gib) * 1024.0;
        const double max_allocated_mb = (m.weights_gib + m.gradients_gib + m.optimizer_gib +
                                         m.activations_gib + m.transient_gib) *
                                        1024.0 * jitter * warmup;
        double max_reserved_mb = std::max(max_allocated_mb * 1.02,
                                          (m.peak_gib - m.reserved_gib) * 1024.0 * jitter * warmup);
        max_reserved_mb = std::ceil(max_reserved_mb / 2.0) * 2.0;  // 2 MiB allocator blocks
        out += format(
            "[Rank %d] (after %u iterations) memory (MB) | allocated: %.2f | max allocated: %.2f "
            "| reserved: %.2f | max reserved: %.2f\n",
            rank, step, allocated_mb * jitter, max_allocated_mb, max_reserved_mb, max_reserved_mb);
      }
    }
  }
  return out;
}

std::string MegatronLogWriter::step_text(std::uint32_t step, std::int64_t now_unix_ns) {
  ATTUNE_ASSERT(step >= 1 && step <= run_.step_times_s.size(), "the step lies within the run");
  const bool interval_end = step % log_interval_ == 0;
  if (!interval_end && step != 1) return "";
  std::string out = iteration_line(step, now_unix_ns);
  if (logs_printed_ < 2) out += memory_report(step);
  ++logs_printed_;
  if (interval_end) interval_first_step_ = step + 1;
  return out;
}

std::string MegatronLogWriter::completion_text(std::int64_t now_unix_ns) const {
  ATTUNE_ASSERT(run_.outcome == JobOutcome::kCompleted, "only a completed run prints its summary");
  return "[after training is done] datetime: " + megatron_datetime(now_unix_ns) + " \n";
}

std::string MegatronLogWriter::traceback(int rank, const std::vector<std::string>& frames,
                                         const std::string& error) const {
  const std::string prefix = "[rank" + std::to_string(rank) + "]: ";
  std::string out = prefix + "Traceback (most recent call last):\n";
  ATTUNE_ASSERT(frames.size() % 4 == 0, "a traceback has whole frames");
  for (std::size_t i = 0; i + 3 < frames.size(); i += 4) {
    out += prefix + "  File \"" + frames[i] + "\", line " + frames[i + 1] + ", in " +
           frames[i + 2] + "\n";
    out += prefix + "    " + frames[i + 3] + "\n";
  }
  std::size_t begin = 0;
  while (begin <= error.size()) {
    std::size_t end = error.find('\n', begin);
    if (end == std::string::npos) end = error.size();
    out += prefix + error.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
  return out;
}

std::string MegatronLogWriter::child_failed(int rank, int exit_code,
                                            std::int64_t now_unix_ns) const {
  const int local_rank = rank % gpus_per_node_;
  const int pid = kWorkerPidBase + local_rank;
  const std::string lib(kPythonLib);
  std::string when = megatron_datetime(now_unix_ns).substr(0, 19);
  when[10] = '_';
  std::string out = format(
      "E%s %d torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: %d) "
      "local_rank: %d (pid: %d) of binary: /usr/bin/python\n",
      glog_time(now_unix_ns).c_str(), kWorkerPidBase - 1, exit_code, local_rank, pid);
  out += "Traceback (most recent call last):\n";
  out += "  File \"/usr/local/bin/torchrun\", line 8, in <module>\n";
  out += "    sys.exit(main())\n";
  out += "  File \"" + lib +
         "/torch/distributed/elastic/multiprocessing/errors/__init__.py\", line 355, in wrapper\n";
  out += "    return f(*args, **kwargs)\n";
  out += "  File \"" + lib + "/torch/distributed/run.py\", line 892, in main\n";
  out += "    run(args)\n";
  out += "  File \"" + lib + "/torch/distributed/run.py\", line 883, in run\n";
  out += "    elastic_launch(\n";
  out += "  File \"" + lib + "/torch/distributed/launcher/api.py\", line 139, in __call__\n";
  out += "    return launch_agent(self._config, self._entrypoint, list(args))\n";
  out += "  File \"" + lib + "/torch/distributed/launcher/api.py\", line 270, in launch_agent\n";
  out += "    raise ChildFailedError(\n";
  out += "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n";
  out += "============================================================\n";
  out += "pretrain_gpt.py FAILED\n";
  out += "------------------------------------------------------------\n";
  out += "Failures:\n";
  out += "  <NO_OTHER_FAILURES>\n";
  out += "------------------------------------------------------------\n";
  out += "Root Cause (first observed failure):\n";
  out += "[0]:\n";
  out += "  time      : " + when + "\n";
  out += "  host      : " + node_of_rank(rank) + "\n";
  out += format("  rank      : %d (local_rank: %d)\n", rank, local_rank);
  out += format("  exitcode  : %d (pid: %d)\n", exit_code, pid);
  out += "  error_file: <N/A>\n";
  out +=
      "  traceback : To enable traceback see: "
      "https://pytorch.org/docs/stable/elastic/errors.html\n";
  out += "============================================================\n";
  return out;
}

// The stack of an out-of-memory error: in building the model's gradient buffer at setup, or in
// a forward step.
std::vector<std::string> MegatronLogWriter::out_of_memory_frames(bool at_setup) const {
  const std::string megatron(kMegatronDir);
  std::vector<std::string> frames = training_frames();
  if (at_setup) {
    frames.resize(4);
    frames.insert(
        frames.end(),
        {megatron + "/megatron/training/training.py", "745", "pretrain",
         "model, optimizer, opt_param_scheduler = setup_model_and_optimizer(",
         megatron + "/megatron/training/training.py", "1186", "setup_model_and_optimizer",
         "model = get_model(model_provider_func, "
         "model_type)",
         megatron + "/megatron/training/training.py", "1052", "get_model", "model = [DDP(",
         megatron + "/megatron/core/distributed/param_and_grad_buffer.py", "712", "__init__",
         "self.grad_data = torch.zeros("});
  } else {
    frames.insert(
        frames.end(),
        {megatron + "/megatron/core/pipeline_parallel/schedules.py", "2011",
         "forward_backward_pipelining_without_interleaving",
         "output_tensor, num_tokens = forward_step(",
         megatron + "/megatron/core/pipeline_parallel/schedules.py", "402", "forward_step",
         "output_tensor, loss_func = forward_step_func(data_iterator, model)",
         megatron + "/pretrain_gpt.py", "244", "forward_step",
         "output_tensor = model(tokens, position_ids, attention_mask,"});
  }
  return frames;
}

// The traceback of the rank that ran out of memory: at setup, the first persistent buffer that
// does not fit; in a step, one activation-sized tensor.
std::string MegatronLogWriter::out_of_memory_text(std::int64_t now_unix_ns) const {
  const int world = workload_.gpus;
  const int pp = resolved_ok_ ? resolved_.layout.pp : 1;
  const int stage = std::max(0, run_.failed_stage);
  const int rank = first_rank_of_stage(world, pp, std::min(stage, pp - 1));
  const double capacity = workload_.hardware.hbm_capacity_gib;
  const double peak =
      run_.peak_memory_gib_by_stage.empty()
          ? capacity * 1.1
          : run_.peak_memory_gib_by_stage[static_cast<std::size_t>(
                std::min<std::size_t>(stage, run_.peak_memory_gib_by_stage.size() - 1))];
  SeededStream draw(combine(hash_text("oom"), static_cast<std::uint64_t>(rank)));
  const double non_pytorch_gib = std::max(0.5, workload_.hardware.memory_reserved_gib * 0.3);
  const StageMemory* memory = static_cast<std::size_t>(stage) < run_.prediction.stages.size()
                                  ? &run_.prediction.stages[static_cast<std::size_t>(stage)].memory
                                  : nullptr;
  const bool at_setup = run_.failed_step == 0;
  double free_gib = draw.uniform(0.3, 1.4);
  double unallocated_gib = draw.uniform(0.8, 3.5);
  double tried_gib = 0.5;
  if (at_setup && memory != nullptr) {
    // The first persistent buffer that does not fit: weights, then the contiguous gradient
    // buffer, then the optimizer state, allocated one after the other.
    double used_gib = non_pytorch_gib;
    unallocated_gib = draw.uniform(0.0, 0.05);
    for (const double buffer_gib :
         {memory->weights_gib, memory->gradients_gib, memory->optimizer_gib}) {
      tried_gib = buffer_gib;
      if (used_gib + buffer_gib > capacity) break;
      used_gib += buffer_gib;
    }
    free_gib = std::max(0.01, capacity - used_gib - unallocated_gib);
  } else if (memory != nullptr) {
    // One activation-sized tensor of the step.
    const int layers = std::max(
        1, resolved_ok_ ? resolved_.stages[static_cast<std::size_t>(stage)].decoder_layers() : 1);
    const double chunk_gib = memory->activations_gib / layers + 0.5 * memory->transient_gib;
    tried_gib = std::clamp(std::min(peak - capacity + free_gib, chunk_gib), 0.02, capacity);
  }
  const double in_use_gib = capacity - free_gib;
  const double allocated_gib = in_use_gib - non_pytorch_gib - unallocated_gib;
  const std::vector<std::string> frames = out_of_memory_frames(at_setup);
  const std::string error = format(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. GPU %d has a total "
      "capacity of %.2f GiB of which %s is free. Including non-PyTorch memory, this process "
      "has %.2f GiB memory in use. Of the allocated memory %.2f GiB is allocated by "
      "PyTorch, and %s is reserved by PyTorch but unallocated. If reserved but unallocated "
      "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
      "avoid fragmentation.  See documentation for Memory Management  "
      "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
      torch_size(tried_gib).c_str(), rank % gpus_per_node_, capacity, torch_size(free_gib).c_str(),
      in_use_gib, allocated_gib, torch_size(unallocated_gib).c_str());
  return traceback(rank, frames, error) + child_failed(rank, 1, now_unix_ns);
}

// A crash: NVSHMEM failing to start DeepEP across NVLink domains, or Megatron's NaN check on the
// loss of the last pipeline stage.
std::string MegatronLogWriter::crash_text(std::int64_t now_unix_ns) const {
  const int world = workload_.gpus;
  const std::string megatron(kMegatronDir);
  if (run_.defect == StackDefect::kDeepepAcrossNvlinkDomains) {
    const int rank = 0;
    std::string out =
        "/opt/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_init:275: init "
        "failed for transport: IBGDA\n"
        "/opt/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_init:287: Unable "
        "to initialize any transports. returning error.\n"
        "/opt/nvshmem/src/host/init/init.cu:995: non-zero status: 7 nvshmem detect topo "
        "failed\n"
        "\n"
        "/opt/nvshmem/src/host/init/init.cu:nvshmemi_check_state_and_init:1080: nvshmem "
        "initialization failed, exiting\n";
    return out + child_failed(rank, kExitCodeNvshmem, now_unix_ns);
  }
  // Megatron's NaN check on the loss of the last pipeline stage.
  const int rank = world - 1;
  const std::uint32_t iteration = run_.failed_step;
  std::string out = format(
      "[rank%d]: Unexpected result nan on rank %d at iteration #%u invocation #1 "
      "(message='found NaN in local forward loss calculation')\n",
      rank, rank, iteration);
  std::vector<std::string> frames = training_frames();
  frames.insert(frames.end(), {megatron + "/megatron/core/rerun_state_machine.py", "523",
                               "validate_result", "raise RuntimeError(full_message)"});
  out += traceback(rank, frames,
                   format("RuntimeError: Rank %d, node %s, device %d, iteration %u: "
                          "Unexpected result nan (message='found NaN in local forward loss "
                          "calculation')",
                          rank, node_of_rank(rank).c_str(), rank % gpus_per_node_, iteration));
  return out + child_failed(rank, kExitCodeResultValidation, now_unix_ns);
}

// An infrastructure failure as NCCL and Slurm report it: a failed link, or a lost node.
std::string MegatronLogWriter::infrastructure_text(std::int64_t now_unix_ns) const {
  const int world = workload_.gpus;
  const std::string blamed = run_.blamed_node.empty() ? node_of_rank(0) : run_.blamed_node;
  std::size_t blamed_index = 0;
  for (std::size_t i = 0; i < run_.nodes.size(); ++i) {
    if (run_.nodes[i] == blamed) blamed_index = i;
  }
  // A network fault is reported by the ranks of the node whose link failed (their NCCL
  // warning names that host); a lost node cannot print, so a rank on another node reports
  // its peer gone.
  const bool lost = run_.infra == InfraFailure::kNodeLost;
  const std::size_t observer_node =
      lost && run_.nodes.size() > 1 ? (blamed_index + 1) % run_.nodes.size() : blamed_index;
  const std::size_t peer_node =
      run_.nodes.size() > 1 && !lost ? (blamed_index + 1) % run_.nodes.size() : blamed_index;
  const int rank = std::min(world - 1, static_cast<int>(observer_node) * gpus_per_node_ + 3);
  const std::string peer_ip = format("10.10.%d.%d", static_cast<int>(peer_node / 250),
                                     static_cast<int>(peer_node % 250) + 2);
  const std::string wc_error = format(
      "NET/IB : Got completion from peer %s<45821> with status=12 opcode=0 len=0 vendor err "
      "129 (Recv) localGid ::ffff:10.10.%d.%d remoteGid ::ffff:%s",
      peer_ip.c_str(), static_cast<int>(observer_node / 250),
      static_cast<int>(observer_node % 250) + 2, peer_ip.c_str());
  std::string out;
  if (run_.infra == InfraFailure::kNetworkError) {
    out +=
        format("%s:%d:%d [%d] transport/net_ib.cc:2011 NCCL WARN %s\n", node_of_rank(rank).c_str(),
               kWorkerPidBase + rank % gpus_per_node_, kWorkerPidBase + 900 + rank % gpus_per_node_,
               rank % gpus_per_node_, wc_error.c_str());
  }
  out += format(
      "[rank%d]:[E%s ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank %d] "
      "Process group watchdog thread terminated with exception: NCCL error: remote process "
      "exited or there was a network error, NCCL version %s\n",
      rank, glog_time(now_unix_ns).c_str(), rank, std::string(kNcclVersion).c_str());
  out += format(
      "[rank%d]: ncclRemoteError: A call failed possibly due to a network error or a "
      "remote process exiting prematurely.\n",
      rank);
  out += format("[rank%d]: Last error:\n", rank);
  out += format("[rank%d]: %s\n", rank, wc_error.c_str());
  std::vector<std::string> frames = training_frames();
  out += traceback(rank, frames,
                   format("torch.distributed.DistBackendError: NCCL error in: "
                          "/opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
                          "ProcessGroupNCCL.cpp:3356, remote process exited or there was a "
                          "network error, NCCL version %s\nncclRemoteError: A call failed "
                          "possibly due to a network error or a remote process exiting "
                          "prematurely.",
                          std::string(kNcclVersion).c_str()));
  if (run_.infra == InfraFailure::kNodeLost) {
    std::string when = megatron_datetime(now_unix_ns).substr(0, 19);
    when[10] = 'T';
    out += "srun: error: Node failure on " + blamed + "\n";
    out += "slurmstepd: error: *** STEP 4242.0 ON " + node_of_rank(0) + " CANCELLED AT " + when +
           " DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n";
    return out;
  }
  return out + child_failed(rank, 1, now_unix_ns);
}

std::string MegatronLogWriter::failure_text(std::int64_t now_unix_ns) const {
  switch (run_.outcome) {
    case JobOutcome::kCompleted:
    case JobOutcome::kHang:
      return "";
    case JobOutcome::kInvalidAtStartup: {
      const Refusal refusal = refusal_of(run_.error);
      return traceback(0, refusal.frames, refusal.exception + ": " + run_.error) +
             child_failed(0, 1, now_unix_ns);
    }
    case JobOutcome::kOutOfMemory:
      return out_of_memory_text(now_unix_ns);
    case JobOutcome::kCrash:
      return crash_text(now_unix_ns);
    case JobOutcome::kInfrastructure:
      return infrastructure_text(now_unix_ns);
  }
  return "";
}

}  // namespace attune::sim
