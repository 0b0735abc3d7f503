// attune's copy of Megatron-LM's rules against Megatron-LM itself. The oracle in
// shared/tools/megatron-oracle runs Megatron's own start-up code (commit d98e8a64); its
// cases.json holds 300 tuner-like configurations of four models, each with Megatron's verdict and
// its resolved arguments. For each, attune reads the flags as the simulator and `sim predict` do
// (decode_layout, then resolve_layout) and must give Megatron's verdict; where both accept, the
// arguments attune prints for the run must hold Megatron's resolved values for the flags the case
// sets.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>

#include "adapters/model/layout.h"
#include "adapters/model/presets.h"
#include "adapters/model/recipe_values.h"
#include "adapters/model/sweep.h"
#include "adapters/world/megatron_log_writer.h"
#include "events/arg_catalog.h"
#include "events/recipe.h"
#include "events/sha256.h"
#include "tests/tools/shell_command.h"

namespace attune::sim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kOracleCases = "/work/shared/tools/megatron-oracle/cases.json";

// The oracle's model shapes and the presets with the same architecture.
const std::map<std::string, std::string> kPresetOf = {{"llama31-405b", "llama3.1-405b"},
                                                      {"mixtral-8x22b", "mixtral-8x22b"},
                                                      {"glm45", "glm-4.5"},
                                                      {"qwen3-30b-a3b", "qwen3-30b-a3b"}};

// The model's shape, as the oracle's cases give it with their own architecture flags. They may
// differ from the preset's (Mixtral-8x22B's Instruct vocabulary, Qwen3-30B-A3B's dense width):
// those values are the model's, not Megatron's rules, and are not compared.
const std::set<std::string> kArchitectureDests = {"num_layers",
                                                  "hidden_size",
                                                  "ffn_hidden_size",
                                                  "num_attention_heads",
                                                  "num_query_groups",
                                                  "kv_channels",
                                                  "vocab_size",
                                                  "max_position_embeddings",
                                                  "rotary_base",
                                                  "norm_epsilon",
                                                  "num_experts",
                                                  "moe_router_topk",
                                                  "moe_ffn_hidden_size",
                                                  "moe_layer_freq",
                                                  "moe_shared_expert_intermediate_size",
                                                  "moe_router_score_function",
                                                  "moe_router_enable_expert_bias",
                                                  "moe_router_topk_scaling_factor",
                                                  "moe_router_load_balancing_type",
                                                  "moe_aux_loss_coeff",
                                                  "qk_layernorm",
                                                  "add_qkv_bias",
                                                  "rotary_percent"};

// Checks Megatron makes only when the first training step runs, which the oracle (start-up code
// only) does not reach; attune refuses these before launch.
const std::set<std::string> kFirstStepChecks = {
    // megatron/core/transformer/moe/moe_layer.py, MoELayer.forward
    "During training, performance may degrade if MoE and tensor parallelismare enabled without "
    "also enabling sequence parallelism.",
};

std::string flag_value(const json& flags, const std::string& name) {
  for (std::size_t i = 0; i + 1 < flags.size(); ++i) {
    if (flags[i] == name) return flags[i + 1].get<std::string>();
  }
  return "";
}

struct Verdict {
  bool accepted = false;
  std::string message;
  std::map<std::string, std::string> arguments;
};

Verdict attune_verdict(const json& c) {
  Verdict out;
  const json& flags = c.at("flags");
  std::string command;
  for (const auto& [name, value] : c.at("env").items()) {
    command += name + "=" + shell_quote(value.get<std::string>()) + " ";
  }
  command += "python pretrain_gpt.py";
  for (const json& word : flags) command += " " + shell_quote(word.get<std::string>());
  Result<Recipe> recipe = parse_recipe(command);
  if (!recipe.ok()) {
    out.message = "recipe: " + recipe.error();
    return out;
  }
  const bool fp8 = !flag_value(flags, "--fp8-format").empty();
  Result<Workload> workload =
      load_workload(kPresetOf.at(c.at("model")), c.at("gpu") == "10.0" ? "b200" : "h100",
                    c.at("world_size"), std::stoi(flag_value(flags, "--seq-length")),
                    std::stoi(flag_value(flags, "--global-batch-size")),
                    fp8 ? Precision::kFp8 : Precision::kBf16);
  if (!workload.ok()) {
    out.message = "workload: " + workload.error();
    return out;
  }
  Result<Layout> layout = decode_layout(*workload, *recipe);
  if (!layout.ok()) {
    out.message = layout.error();
    return out;
  }
  Result<ResolvedLayout> resolved = resolve_layout(*workload, *layout);
  if (!resolved.ok()) {
    out.message = resolved.error();
    return out;
  }
  out.accepted = true;
  for (auto& [dest, value] : effective_arguments(*workload, *recipe, *resolved, 100, 1)) {
    out.arguments[dest] = value;
  }
  return out;
}

// The dests the case's flags set.
std::set<std::string> dests_set_by(const json& flags) {
  std::set<std::string> out;
  for (const json& word : flags) {
    const std::string text = word.get<std::string>();
    if (!text.starts_with("--")) continue;
    if (const ArgInfo* info = ArgCatalog::megatron().find(text)) out.insert(info->dest);
  }
  return out;
}

TEST(MegatronConformance, TheRulesNameTheMegatronTheOracleRuns) {
  const fs::path commit = kOracleCases.parent_path() / "Megatron-LM.COMMIT";
  if (!fs::exists(commit)) GTEST_SKIP() << commit << " is not here";
  std::ifstream in(commit);
  std::string first;
  in >> first;
  EXPECT_EQ(first, kMegatronRulesCommit) << "the oracle runs another Megatron-LM: check the rules";
}

TEST(MegatronConformance, TheOraclesLabelledCasesGetMegatronsVerdict) {
  if (!fs::exists(kOracleCases)) GTEST_SKIP() << kOracleCases << " is not here";
  std::ifstream in(kOracleCases);
  const json all = json::parse(in);
  const json& baseline = all.at("meta").at("baseline").at("resolved");
  std::size_t verdicts_agree = 0, values_compared = 0, values_agree = 0, cases = 0, first_step = 0;
  for (const json& c : all.at("cases")) {
    ++cases;
    const Verdict ours = attune_verdict(c);
    const bool theirs = c.at("accepted").get<bool>();
    if (theirs && !ours.accepted && kFirstStepChecks.contains(ours.message)) {
      ++first_step;
      continue;
    }
    if (ours.accepted == theirs) {
      ++verdicts_agree;
    } else {
      ADD_FAILURE() << c.at("id").get<std::string>() << " (" << c.at("lever").get<std::string>()
                    << "): Megatron " << (theirs ? "accepts" : "refuses: ")
                    << (theirs ? "" : c.at("error").get<std::string>()) << "; attune "
                    << (ours.accepted ? "accepts" : "refuses: " + ours.message);
      continue;
    }
    if (!ours.accepted) continue;
    const json& resolved = c.at("resolved");
    for (const std::string& dest : dests_set_by(c.at("flags"))) {
      if (kArchitectureDests.contains(dest)) continue;
      const auto printed = ours.arguments.find(dest);
      if (printed == ours.arguments.end()) continue;
      const json& value =
          resolved.contains(dest) ? resolved.at(dest) : baseline.value(dest, json());
      if (!value.is_string()) continue;
      ++values_compared;
      if (printed->second == value.get<std::string>()) {
        ++values_agree;
      } else {
        ADD_FAILURE() << c.at("id").get<std::string>() << ": " << dest << " is "
                      << value.get<std::string>() << " in Megatron, " << printed->second
                      << " in attune";
      }
    }
  }
  std::cout << "Megatron's verdict on " << verdicts_agree << " of " << cases - first_step
            << " cases (and " << first_step
            << " refused for a first-step check the oracle does not run); its resolved value of "
               "the arguments the cases set on "
            << values_agree << " of " << values_compared << "\n";
}

// ---- configurations attune's sweep generates, against a live or cached oracle
// ---------------------

const fs::path kOracle = "/work/shared/tools/megatron-oracle/resolve.py";
const fs::path kAnswers = fs::path(ATTUNE_SOURCE_DIR) / "tests/data/megatron-oracle/answers.jsonl";
constexpr std::uint64_t kGenerationSeed = 20261201;
constexpr std::size_t kLayoutsPerPreset = 12;

// What a launch script adds around a recipe so that Megatron runs it alone: synthetic data, a
// tokenizer that needs no files, a learning rate and a length.
const std::vector<std::string> kRunFlags = {
    "--train-iters", "100", "--lr", "1.0e-4", "--mock-data", "--tokenizer-type", "NullTokenizer"};

// One-lever switches a tuner tries on a layout, valid or not: the lever catalog's flags.
const std::vector<std::vector<std::string>> kLeverSwitches = {
    {"--cuda-graph-impl", "transformer_engine"},
    {"--cuda-graph-impl", "local"},
    {"--cuda-graph-impl", "transformer_engine", "--cuda-graph-modules", "attn"},
    {"--cuda-graph-impl", "transformer_engine", "--cuda-graph-modules", "attn", "moe_router"},
    {"--cuda-graph-impl", "transformer_engine", "--cuda-graph-modules", "mlp"},
    {"--tp-comm-overlap"},
    {"--overlap-moe-expert-parallel-comm"},
    {"--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute"},
    {"--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers",
     "1"},
    {"--recompute-granularity", "selective", "--recompute-modules", "core_attn", "mlp"},
    {"--moe-token-dispatcher-type", "flex"},
    {"--moe-token-dispatcher-type", "allgather"},
    {"--grad-reduce-in-bf16"},
    {"--context-parallel-size", "2"},
    {"--num-virtual-stages-per-pipeline-rank", "2"},
    {"--expert-tensor-parallel-size", "2"},
    {"--micro-batch-size", "2"},
    {"--no-overlap-p2p-communication"},
    {"--fp8-format", "hybrid", "--fp8-recipe", "delayed"},
    {"--fp8-format", "e4m3", "--fp8-recipe", "blockwise"},
    {"--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"},
    {"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise", "--fp8-param-gather"},
};

// Every model preset, on 64 B200, from a plain recipe: the shapes no recipe preset covers
// (multi-latent attention, sliding windows, leading dense layers).
constexpr int kModelPresetGpus = 64;
constexpr std::size_t kLayoutsPerModel = 5;
const char* const kPlainRecipe =
    "CUDA_DEVICE_MAX_CONNECTIONS=1 python pretrain_gpt.py --bf16 --use-distributed-optimizer "
    "--micro-batch-size 1 --global-batch-size 512 --seq-length 4096";

struct GeneratedCase {
  std::string key;  // sha256 of the command Megatron runs
  std::string label;
  Workload workload;
  Recipe recipe;  // with the model's flags: what attune reads
  json oracle_input;
};

// "glm-4.5-b200x128" -> the workload of the preset's recipe.
Result<Workload> preset_workload(const std::string& name, const Recipe& recipe) {
  const std::size_t dash = name.rfind('-');
  const std::size_t x = name.rfind('x');
  const auto number = [&recipe](const char* flag) {
    const auto found = recipe.flags.find(flag);
    return found == recipe.flags.end() ? 0 : std::stoi(found->second);
  };
  return load_workload(name.substr(0, dash), name.substr(dash + 1, x - dash - 1),
                       std::stoi(name.substr(x + 1)), number("--seq-length"),
                       number("--global-batch-size"),
                       recipe.flags.contains("--fp8-format") ? Precision::kFp8 : Precision::kBf16);
}

std::vector<std::string> recipe_words(const Recipe& recipe) {
  std::vector<std::string> out;
  for (const auto& [flag, value] : recipe.flags) {
    for (std::string& word : split_words(flag_text(flag, value))) out.push_back(std::move(word));
  }
  return out;
}

std::optional<GeneratedCase> make_case(const std::string& label, const Workload& workload,
                                       const Recipe& recipe) {
  // The model's and the run's flags, where the recipe does not set them itself.
  std::vector<std::string> flags;
  bool skipping = false;
  std::vector<std::string> around = model_flags(workload);
  around.insert(around.end(), kRunFlags.begin(), kRunFlags.end());
  for (const std::string& word : around) {
    if (word.starts_with("--")) skipping = recipe.flags.contains(word);
    if (!skipping) flags.push_back(word);
  }
  for (const std::string& word : recipe_words(recipe)) flags.push_back(word);
  std::string command;
  for (const auto& [name, value] : recipe.env) command += name + "=" + shell_quote(value) + " ";
  command += "python pretrain_gpt.py";
  for (const std::string& word : flags) command += " " + shell_quote(word);
  Result<Recipe> full = parse_recipe(command);
  if (!full.ok()) {
    ADD_FAILURE() << label << ": " << full.error();
    return std::nullopt;
  }
  GeneratedCase c;
  c.label = label;
  c.workload = workload;
  c.workload.precision = recipe.flags.contains("--fp8-format") ? Precision::kFp8 : Precision::kBf16;
  c.recipe = *full;
  const std::string gpu = workload.hardware.compute_capability >= 10.0 ? "10.0" : "9.0";
  c.oracle_input = {
      {"world_size", workload.gpus}, {"flags", flags}, {"env", recipe.env}, {"gpu", gpu}};
  c.key = to_hex(sha256(c.oracle_input.dump()));
  c.oracle_input["id"] = c.key;
  return c;
}

// Keeps the cases drawn, each configuration once.
struct Draw {
  std::vector<GeneratedCase> cases;
  std::set<std::string> keys;
  std::mt19937_64 random;

  void keep(std::optional<GeneratedCase> c) {
    if (c && keys.insert(c->key).second) cases.push_back(std::move(*c));
  }
};

// The baseline, then `count` layouts of the sweep drawn at random, each also with one lever
// switched.
void sample_layouts(const std::string& label, const Workload& workload, const Recipe& baseline,
                    std::size_t count, Draw& draw) {
  draw.keep(make_case(label + " baseline", workload, baseline));
  SweepOptions options;
  options.top_k = 60;
  Result<SweepResult> swept = sweep(workload, baseline, options);
  EXPECT_TRUE(swept.ok()) << label << ": " << swept.error();
  if (!swept.ok()) return;
  std::vector<const SweepEntry*> entries;
  for (const SweepEntry& entry : swept->best) entries.push_back(&entry);
  std::shuffle(entries.begin(), entries.end(), draw.random);
  for (std::size_t i = 0; i < entries.size() && i < count; ++i) {
    const Recipe& layout = entries[i]->recipe;
    draw.keep(make_case(label + " sweep", workload, layout));
    const std::vector<std::string>& lever = kLeverSwitches[draw.random() % kLeverSwitches.size()];
    std::string words;
    for (const auto& [flag, value] : layout.flags) {
      if (std::find(lever.begin(), lever.end(), flag) == lever.end()) {
        words += " " + flag_text(flag, value);
      }
    }
    for (const std::string& word : lever) words += " " + shell_quote(word);
    Result<Recipe> mutated = parse_recipe("python pretrain_gpt.py " + words);
    if (!mutated.ok()) continue;
    mutated->env = layout.env;
    draw.keep(make_case(label + " sweep+" + lever.front(), workload, *mutated));
  }
}

std::vector<GeneratedCase> generated_cases() {
  // ATTUNE_CONFORMANCE_SEED draws another sample; its cases go to the oracle, live.
  const char* seed_text = std::getenv("ATTUNE_CONFORMANCE_SEED");
  Draw draw;
  draw.random.seed(seed_text != nullptr ? std::stoull(seed_text) : kGenerationSeed);
  for (const std::string& preset : recipe_preset_names()) {
    Result<Recipe> baseline = load_recipe_preset(preset);
    EXPECT_TRUE(baseline.ok()) << preset << ": " << baseline.error();
    if (!baseline.ok()) continue;
    Result<Workload> workload = preset_workload(preset, *baseline);
    EXPECT_TRUE(workload.ok()) << preset << ": " << workload.error();
    if (workload.ok()) sample_layouts(preset, *workload, *baseline, kLayoutsPerPreset, draw);
  }
  const Result<Recipe> plain = parse_recipe(kPlainRecipe);
  EXPECT_TRUE(plain.ok()) << plain.error();
  for (const std::string& model : model_preset_names()) {
    Result<Workload> workload =
        load_workload(model, "b200", kModelPresetGpus, 4096, 512, Precision::kBf16);
    EXPECT_TRUE(workload.ok()) << model << ": " << workload.error();
    if (workload.ok() && plain.ok()) {
      sample_layouts(model + "-b200x64", *workload, *plain, kLayoutsPerModel, draw);
    }
  }
  return std::move(draw.cases);
}

std::map<std::string, json> cached_answers() {
  std::map<std::string, json> out;
  std::ifstream in(kAnswers);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json answer = json::parse(line);
    const std::string key = answer.at("key").get<std::string>();
    out[key] = std::move(answer);
  }
  return out;
}

// Runs the oracle on the cases it has no answer for; their answers, keyed. Empty when the oracle
// cannot run here (no python3-torch).
std::map<std::string, json> ask_oracle(const std::vector<const GeneratedCase*>& missing) {
  std::map<std::string, json> out;
  const fs::path dir = fs::temp_directory_path() / ("attune-oracle-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  json batch = json::array();
  for (const GeneratedCase* c : missing) batch.push_back(c->oracle_input);
  std::ofstream(dir / "in.json") << batch.dump();
  const auto run = testing_support::run_shell("/usr/bin/python3 " + kOracle.string() + " --batch " +
                                              (dir / "in.json").string() + " --out " +
                                              (dir / "out.json").string());
  std::ifstream in(dir / "out.json");
  if (run.exit_code == 0 && in) {
    for (const json& answer : json::parse(in)) out[answer.at("id").get<std::string>()] = answer;
  }
  fs::remove_all(dir);
  return out;
}

// Keeps the oracle's answers in tests/data/megatron-oracle/answers.jsonl, one line a case (those
// of earlier draws too): the verdict, the message, and the resolved values of the dests the test
// compares.
void write_answers(const std::vector<GeneratedCase>& cases, const std::map<std::string, json>& all);

// The dests compared for a case: those its flags set, and those attune derives for the layout.
std::set<std::string> compared_dests(const json& flags) {
  std::set<std::string> out = dests_set_by(flags);
  for (const char* derived :
       {"data_parallel_size", "virtual_pipeline_model_parallel_size", "expert_tensor_parallel_size",
        "accumulate_allreduce_grads_in_fp32", "overlap_p2p_comm", "align_param_gather",
        "te_rng_tracker", "recompute_granularity", "ffn_hidden_size", "kv_channels",
        "num_query_groups", "padded_vocab_size", "params_dtype",
        "transformer_pipeline_model_parallel_size", "moe_layer_freq", "max_position_embeddings"}) {
    out.insert(derived);
  }
  for (const char* run_only : {"train_iters", "lr", "mock_data", "tokenizer_type"}) {
    out.erase(run_only);
  }

  return out;
}

void write_answers(const std::vector<GeneratedCase>& cases,
                   const std::map<std::string, json>& all) {
  std::map<std::string, const GeneratedCase*> by_key;
  for (const GeneratedCase& c : cases) by_key[c.key] = &c;
  fs::create_directories(kAnswers.parent_path());
  std::ofstream out(kAnswers, std::ios::trunc);
  for (const auto& [key, answer] : all) {
    if (answer.contains("oracle_error")) continue;
    const auto drawn = by_key.find(key);
    if (drawn == by_key.end() || answer.contains("key")) {  // kept from an earlier draw
      out << answer.dump() << "\n";
      continue;
    }
    const GeneratedCase& c = *drawn->second;
    json kept = {{"key", key},
                 {"case", c.label},
                 {"world_size", c.oracle_input.at("world_size")},
                 {"accepted", answer.at("accepted")},
                 {"error", answer.value("error", json())},
                 {"resolved", nullptr}};
    if (answer.contains("resolved") && answer.at("resolved").is_object()) {
      kept["resolved"] = json::object();
      for (const std::string& dest : compared_dests(c.oracle_input.at("flags"))) {
        if (answer.at("resolved").contains(dest)) {
          kept["resolved"][dest] = answer.at("resolved").at(dest);
        }
      }
    }
    out << kept.dump() << "\n";
  }
}

TEST(MegatronConformance, ConfigurationsTheSweepGeneratesGetMegatronsVerdict) {
  const std::vector<GeneratedCase> cases = generated_cases();
  ASSERT_GE(cases.size(), 60U);
  std::map<std::string, json> answers = cached_answers();
  std::vector<const GeneratedCase*> missing;
  for (const GeneratedCase& c : cases) {
    if (!answers.contains(c.key)) missing.push_back(&c);
  }
  if (!missing.empty()) {
    const bool oracle_here =
        fs::exists(kOracle) &&
        testing_support::run_shell("/usr/bin/python3 -c 'import torch' 2>/dev/null").exit_code == 0;
    ASSERT_TRUE(oracle_here) << missing.size()
                             << " cases have no cached answer and the oracle cannot run here "
                                "(it needs /usr/bin/python3 with python3-torch)";
    for (auto& [key, answer] : ask_oracle(missing)) answers[key] = answer;
    if (std::getenv("ATTUNE_WRITE_ORACLE_ANSWERS") != nullptr) write_answers(cases, answers);
  }
  std::size_t verdicts = 0, agree = 0, first_step = 0, compared = 0, same = 0, refused = 0;
  for (const GeneratedCase& c : cases) {
    const auto found = answers.find(c.key);
    ASSERT_NE(found, answers.end()) << c.label << ": the oracle gave no answer";
    const json& answer = found->second;
    ASSERT_FALSE(answer.contains("oracle_error")) << c.label << ": " << answer.dump();
    const bool theirs = answer.at("accepted").get<bool>();
    Verdict ours;
    Result<Layout> layout = decode_layout(c.workload, c.recipe);
    Result<ResolvedLayout> resolved = layout.ok()
                                          ? resolve_layout(c.workload, *layout)
                                          : Result<ResolvedLayout>(make_error(layout.error()));
    ours.accepted = resolved.ok();
    ours.message = resolved.ok() ? "" : resolved.error();
    if (theirs && !ours.accepted && kFirstStepChecks.contains(ours.message)) {
      ++first_step;
      continue;
    }
    ++verdicts;
    if (ours.accepted != theirs) {
      ADD_FAILURE() << c.label << " (" << c.key.substr(0, 12) << "): Megatron "
                    << (theirs ? "accepts" : "refuses: " + answer.at("error").get<std::string>())
                    << "; attune " << (ours.accepted ? "accepts" : "refuses: " + ours.message);
      continue;
    }
    ++agree;
    refused += ours.accepted ? 0 : 1;
    if (!ours.accepted || !answer.at("resolved").is_object()) continue;
    const std::set<std::string> compared_here = compared_dests(c.oracle_input.at("flags"));
    for (auto& [dest, value] : effective_arguments(c.workload, c.recipe, *resolved, 100, 1)) {
      if (!compared_here.contains(dest)) continue;
      const json& theirs_value = answer.at("resolved").value(dest, json());
      if (!theirs_value.is_string()) continue;
      ++compared;
      if (theirs_value.get<std::string>() == value) {
        ++same;
      } else {
        ADD_FAILURE() << c.label << " (" << c.key.substr(0, 12) << "): " << dest << " is "
                      << theirs_value.get<std::string>() << " in Megatron, " << value
                      << " in attune";
      }
    }
  }
  std::cout << "generated configurations: Megatron's verdict on " << agree << " of " << verdicts
            << " (" << refused << " refused by both, and " << first_step
            << " refused for a first-step check); its resolved value on " << same << " of "
            << compared << " compared arguments\n";
}

}  // namespace
}  // namespace attune::sim
