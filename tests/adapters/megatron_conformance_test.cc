// attune's copy of Megatron-LM's rules against Megatron-LM itself. The oracle in
// shared/tools/megatron-oracle runs Megatron's own start-up code (commit d98e8a64); its
// cases.json holds 300 tuner-like configurations of four models, each with Megatron's verdict and
// its resolved arguments. For each, attune reads the flags as the simulator and `sim predict` do
// (decode_layout, then resolve_layout) and must give Megatron's verdict; where both accept, the
// arguments attune prints for the run must hold Megatron's resolved values for the flags the case
// sets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "adapters/model/layout.h"
#include "adapters/model/presets.h"
#include "adapters/world/megatron_log_writer.h"
#include "events/arg_catalog.h"
#include "events/recipe.h"

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

}  // namespace
}  // namespace attune::sim
