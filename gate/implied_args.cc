#include "gate/implied_args.h"

#include <algorithm>

#include "gate/config_check.h"

namespace attune {
namespace {

std::optional<std::string> flag_value(const Recipe& recipe, std::string_view flag) {
  return effective_value(recipe, ChangeKind::kFlag, flag);
}

bool is_on(const Recipe& recipe, std::string_view flag) {
  return flag_value(recipe, flag) == std::optional<std::string>("true");
}

// validate_args: CUDA graphs under Transformer Engine set te_rng_tracker = True. Graphs come from
// --cuda-graph-impl (any but none) or its deprecated switches --enable-cuda-graph (local) and
// --external-cuda-graph (transformer_engine); --transformer-impl local leaves the tracker off.
std::optional<std::string> te_rng_tracker(const Recipe& recipe) {
  const std::optional<std::string> impl = flag_value(recipe, "--cuda-graph-impl");
  const bool graphs = (impl && *impl != "none") || is_on(recipe, "--enable-cuda-graph") ||
                      is_on(recipe, "--external-cuda-graph");
  if (!graphs || flag_value(recipe, "--transformer-impl") !=
                     std::optional<std::string>("transformer_engine")) {
    return std::nullopt;
  }
  return "true";
}

// validate_args: under --bf16 with fp32 main grads, gradients are reduced and accumulated in
// fp32 unless --grad-reduce-in-bf16, which turns the accumulation off.
std::optional<std::string> accumulate_in_fp32(const Recipe& recipe) {
  if (!is_on(recipe, "--bf16")) return std::nullopt;
  const std::optional<std::string> main_grads = flag_value(recipe, "--main-grads-dtype");
  if (main_grads && *main_grads != "fp32") return std::nullopt;
  return is_on(recipe, "--grad-reduce-in-bf16") ? "false" : "true";
}

// validate_args: --apply-query-key-layer-scaling forces the softmax into fp32.
std::optional<std::string> softmax_in_fp32(const Recipe& recipe) {
  if (!is_on(recipe, "--apply-query-key-layer-scaling")) return std::nullopt;
  return "true";
}

struct RuleImpl {
  ImpliedSettingRule rule;
  std::optional<std::string> (*fires)(const Recipe&);
};

const std::vector<RuleImpl>& rule_impls() {
  static const std::vector<RuleImpl> rules = {
      {{"--te-rng-tracker", "--cuda-graph-impl, --enable-cuda-graph, --external-cuda-graph",
        "CUDA graphs under Transformer Engine silently enable the TE RNG tracker"},
       te_rng_tracker},
      {{"--accumulate-allreduce-grads-in-fp32", "--bf16, --grad-reduce-in-bf16, --main-grads-dtype",
        "--bf16 with fp32 main grads accumulates in fp32 unless --grad-reduce-in-bf16"},
       accumulate_in_fp32},
      {{"--attention-softmax-in-fp32", "--apply-query-key-layer-scaling",
        "query-key layer scaling forces the attention softmax into fp32"},
       softmax_in_fp32},
  };
  return rules;
}

const RuleImpl* impl_for(std::string_view setting) {
  const auto& rules = rule_impls();
  const auto it = std::find_if(rules.begin(), rules.end(),
                               [&](const RuleImpl& r) { return r.rule.setting == setting; });
  return it == rules.end() ? nullptr : &*it;
}

}  // namespace

const std::vector<ImpliedSettingRule>& implied_setting_rules() {
  static const std::vector<ImpliedSettingRule> rules = [] {
    std::vector<ImpliedSettingRule> out;
    for (const RuleImpl& impl : rule_impls()) out.push_back(impl.rule);
    return out;
  }();
  return rules;
}

std::optional<std::string> implied_value(const ImpliedSettingRule& rule, const Recipe& recipe) {
  const RuleImpl* impl = impl_for(rule.setting);
  return impl == nullptr ? std::nullopt : impl->fires(recipe);
}

std::optional<std::string> resolved_flag_value(const Recipe& recipe, std::string_view setting) {
  if (const RuleImpl* impl = impl_for(setting)) {
    if (std::optional<std::string> implied = impl->fires(recipe)) return implied;
  }
  return flag_value(recipe, setting);
}

const ImpliedSettingRule* implied_rule_for(std::string_view setting) {
  const RuleImpl* impl = impl_for(setting);
  return impl == nullptr ? nullptr : &impl->rule;
}

}  // namespace attune
