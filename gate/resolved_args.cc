#include "gate/resolved_args.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "events/arg_catalog.h"

namespace attune {
namespace {

constexpr std::string_view kHeader = "------------------------ arguments ------------------------";
constexpr std::string_view kFooterText = " end of arguments ";
constexpr std::size_t kDotsColumn = 48;  // Megatron pads a dest with (48 - length) dots

// Silent rewrites of validate_args and the config dataclasses, as the notes column of
// events/data/megatron_args.tsv describes them: setting `flag` can change the printed `dest`.
constexpr std::array<ArgImplication, 33> kImplications = {{
    {"--grad-reduce-in-bf16", "accumulate_allreduce_grads_in_fp32",
     "with --bf16 silently sets accumulate_allreduce_grads_in_fp32=False"},
    {"--bf16", "accumulate_allreduce_grads_in_fp32",
     "silently sets accumulate_allreduce_grads_in_fp32=True unless --grad-reduce-in-bf16"},
    {"--main-grads-dtype", "accumulate_allreduce_grads_in_fp32",
     "--bf16 sets fp32 accumulation only while main_grads_dtype is fp32"},
    {"--bf16", "params_dtype", "params in bf16"},
    {"--fp16", "params_dtype", "params in fp16"},
    {"--fp16", "check_for_nan_in_loss_and_grad",
     "without --loss-scale silently disables NaN checking"},
    {"--accumulate-allreduce-grads-in-fp32", "ddp_reduce_scatter_with_fp32_accumulation",
     "fp32 grad accumulation silently turns the flag off"},
    {"--accumulate-allreduce-grads-in-fp32", "gtp_remat_reduce_scatter_with_fp32_accumulation",
     "fp32 grad accumulation silently turns the flag off"},
    {"--cpu-offloading-num-layers", "cpu_offloading", "> 0 silently sets cpu_offloading=True"},
    {"--disable-bias-linear", "bias_gelu_fusion", "disabling bias turns off bias_gelu_fusion"},
    {"--disable-bias-linear", "add_qkv_bias", "add_bias_linear=True silently sets add_qkv_bias"},
    {"--use-transformer-engine-op-fuser", "moe_use_grouped_tensor",
     "with --moe-grouped-gemm silently enables moe_use_grouped_tensor"},
    {"--moe-grouped-gemm", "moe_use_grouped_tensor",
     "with --use-transformer-engine-op-fuser silently enables moe_use_grouped_tensor"},
    {"--moe-router-padding-for-fp8", "moe_router_padding_for_quantization",
     "deprecated alias: silently enables padding for quantization"},
    {"--moe-layer-recompute", "recompute_granularity", "silently sets selective recompute"},
    {"--moe-layer-recompute", "recompute_modules", "appends 'moe' to the recompute modules"},
    {"--recompute-activations", "recompute_granularity", "silently sets selective recompute"},
    {"--cuda-graph-impl", "te_rng_tracker",
     "any impl but none silently enables the TE RNG tracker"},
    {"--position-embedding-type", "apply_rope_fusion", "non-rope silently disables rope fusion"},
    {"--use-rotary-position-embeddings", "position_embedding_type",
     "deprecated: silently sets position_embedding_type='rope'"},
    {"--optimizer", "use_distributed_optimizer",
     "non adam/sgd optimizers convert the distributed optimizer into the layer-wise one"},
    {"--freeze-all-layers", "use_distributed_optimizer",
     "silently disables the distributed optimizer"},
    {"--freeze-all-layers", "overlap_param_gather", "silently disables overlap-param-gather"},
    {"--skip-train", "no_load_optim", "silently sets --no-load-optim"},
    {"--moe-use-upcycling", "no_load_optim", "silently sets --no-load-optim"},
    {"--moe-use-upcycling", "no_load_rng", "silently sets --no-load-rng"},
    {"--use-megatron-fsdp", "use_distributed_optimizer",
     "silently sets --use-distributed-optimizer (v1)"},
    {"--use-torch-fsdp2", "fp8_param_gather", "may silently disable --fp8-param-gather"},
    {"--tensor-model-parallel-size", "sequence_parallel",
     "TP == 1 silently turns off --sequence-parallel"},
    {"--apply-query-key-layer-scaling", "attention_softmax_in_fp32",
     "forces attention_softmax_in_fp32=True"},
    {"--megatron-fsdp-max-pool-double-buffer", "fsdp_double_buffer",
     "silently enables --fsdp-double-buffer"},
    {"--mtp-num-layers", "mtp_hsm", "--mtp-hsm is silently disabled when mtp_num_layers < 2"},
    {"--moe-enable-deepep", "moe_flex_dispatcher_backend",
     "deprecated: rewritten to moe_flex_dispatcher_backend='deepep'"},
}};

// Arguments Megatron derives in validate_args that no flag sets directly.
constexpr std::array<DerivedArg, 7> kDerivedArgs = {{
    {"rank", ObjectiveClass::kOther, "the printing process's rank"},
    {"world_size", ObjectiveClass::kStructural, "the GPU count, pinned by the broker"},
    {"data_parallel_size", ObjectiveClass::kStructural,
     "world size / (TP x PP x CP): follows the layout"},
    {"transformer_pipeline_model_parallel_size", ObjectiveClass::kStructural,
     "the pipeline degree of the transformer layers"},
    {"virtual_pipeline_model_parallel_size", ObjectiveClass::kStructural,
     "from --num-virtual-stages-per-pipeline-rank or --num-layers-per-virtual-pipeline-stage"},
    {"cpu_offloading", ObjectiveClass::kStructural,
     "activation offload, set from --cpu-offloading-num-layers"},
    {"params_dtype", ObjectiveClass::kNumeric, "the parameter dtype, from --bf16 or --fp16"},
}};

std::string shown(const std::optional<std::string>& value) {
  if (!value) return "absent";
  return value->empty() ? "''" : *value;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// Parses one body line, already stripped of its prefix, into (dest, value).
std::optional<std::pair<std::string, std::string>> parse_arg_line(std::string_view line) {
  if (!line.starts_with("  ")) return std::nullopt;
  line.remove_prefix(2);
  std::size_t name_end = 0;
  while (name_end < line.size()) {
    const char c = line[name_end];
    const bool word =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word) break;
    ++name_end;
  }
  if (name_end == 0 || (line[0] >= '0' && line[0] <= '9')) return std::nullopt;
  const std::string dest(line.substr(0, name_end));
  const std::size_t dots = dest.size() < kDotsColumn ? kDotsColumn - dest.size() : 0;
  // " ....... ", built in place: GCC 12 warns falsely at -O3 (-Wrestrict) on " " + std::string.
  std::string expected(dots + 2, '.');
  expected.front() = ' ';
  expected.back() = ' ';
  std::string_view rest = line.substr(name_end);
  if (!rest.starts_with(expected)) return std::nullopt;
  rest.remove_prefix(expected.size());
  return std::make_pair(dest, std::string(rest));
}

struct Block {
  ResolvedArgs args;
  std::size_t end_line = 0;  // 1-based line of the footer, i.e. 0-based index of the next line
};

std::string at(std::string_view source, std::size_t line) {
  return std::string(source) + ":" + std::to_string(line) + ": ";
}

// The lines of a log, without line terminators.
std::vector<std::string_view> split_lines(std::string_view log) {
  std::vector<std::string_view> lines;
  std::size_t begin = 0;
  while (begin < log.size()) {
    std::size_t end = log.find('\n', begin);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(begin, end - begin);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    begin = end + 1;
  }
  return lines;
}

// Parses the block whose header is lines[header] (0-based).
Result<Block> parse_block(const std::vector<std::string_view>& lines, std::size_t header,
                          std::string_view source) {
  const std::string_view prefix = lines[header].substr(0, lines[header].find(kHeader));
  Block block;
  block.args.header_line = header + 1;
  std::size_t body_lines = 0;
  for (std::size_t i = header + 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (!line.starts_with(prefix)) continue;  // another process's output
    line.remove_prefix(prefix.size());
    if (line.starts_with("---") && line.find(kFooterText) != std::string_view::npos) {
      block.end_line = i + 1;
      return block;
    }
    if (++body_lines > kResolvedArgsLinesMax) {
      return make_error(at(source, i + 1) + "more than " + std::to_string(kResolvedArgsLinesMax) +
                        " lines in the arguments block");
    }
    std::optional<std::pair<std::string, std::string>> parsed = parse_arg_line(line);
    if (!parsed) {
      return make_error(at(source, i + 1) +
                        "expected '  NAME ..... VALUE' (two spaces, the name, a space, 48 - "
                        "length dots, a space, the value) in the arguments block, found '" +
                        std::string(line) + "'");
    }
    if (!block.args.values.emplace(parsed->first, parsed->second).second) {
      return make_error(at(source, i + 1) + parsed->first +
                        " is printed twice in the arguments block");
    }
  }
  return make_error(at(source, header + 1) +
                    "the arguments block has no end line ('-------------------- end of arguments "
                    "---------------------')");
}

// Every catalog row by dest (several rows may write one dest).
using RowsByDest = std::map<std::string, std::vector<const ArgInfo*>, std::less<>>;

const RowsByDest& rows_by_dest() {
  static const RowsByDest table = [] {
    RowsByDest by_dest;
    for (const ArgInfo& info : ArgCatalog::megatron().all()) by_dest[info.dest].push_back(&info);
    return by_dest;
  }();
  return table;
}

// How strictly a class is judged, for a dest that several rows write: numeric is the strictest.
int strictness(ObjectiveClass cls) {
  switch (cls) {
    case ObjectiveClass::kNumeric:
      return 3;
    case ObjectiveClass::kSameMath:
      return 2;
    case ObjectiveClass::kStructural:
      return 1;
    case ObjectiveClass::kOther:
      return 0;
  }
  return 3;
}

// A policy value as Python prints it in the arguments block.
std::string printed_form(const std::optional<std::string>& value) {
  if (!value) return "None";
  if (*value == "true") return "True";
  if (*value == "false") return "False";
  return *value;
}

// What the policy and the catalog say about a printed dest.
struct DestClass {
  std::string flag;  // the first row's canonical spelling; empty when no row writes the dest
  SettingClass cls;
  const FrozenSetting* frozen = nullptr;
  std::string derived_note;  // for a derived argument
};

DestClass classify_dest(const Policy& policy, std::string_view dest) {
  DestClass out;
  const auto& by_dest = rows_by_dest();
  const auto it = by_dest.find(dest);
  if (it == by_dest.end()) {
    for (const DerivedArg& derived : kDerivedArgs) {
      if (derived.dest == dest) {
        out.cls.objective_class = derived.objective_class;
        out.cls.listed = true;
        out.derived_note = std::string(derived.note);
      }
    }
    return out;
  }
  out.flag = it->second.front()->canonical;
  bool first = true;
  for (const ArgInfo* info : it->second) {
    const SettingClass cls = classify_setting(policy, ChangeKind::kFlag, info->canonical);
    if (first || strictness(cls.objective_class) > strictness(out.cls.objective_class)) {
      out.cls = cls;
      first = false;
    }
    if (out.frozen == nullptr) out.frozen = policy.find_frozen(ChangeKind::kFlag, info->canonical);
  }
  return out;
}

bool flag_changed(std::string_view flag, const Recipe& baseline, const Recipe& candidate) {
  return effective_value(baseline, ChangeKind::kFlag, flag) !=
         effective_value(candidate, ChangeKind::kFlag, flag);
}

// The candidate flags that explain a dest's difference: its own flags that the recipe changed,
// and flags known to rewrite it silently whose value changed.
struct Causes {
  std::vector<std::string> set_by;
  std::vector<std::string> implied_by;

  // "; set by --x", "; implied by --y", both, or the note that nothing explains it.
  std::string text() const {
    if (set_by.empty() && implied_by.empty()) {
      return "; no changed flag of the candidate explains it (a silent override)";
    }
    std::string out;
    if (!set_by.empty()) out += "; set by " + join(set_by, ", ");
    if (!implied_by.empty()) out += "; implied by " + join(implied_by, ", ");
    return out;
  }
};

Causes causes_of(std::string_view dest, const Recipe& baseline, const Recipe& candidate) {
  Causes causes;
  const auto& by_dest = rows_by_dest();
  if (const auto it = by_dest.find(dest); it != by_dest.end()) {
    for (const ArgInfo* info : it->second) {
      if (flag_changed(info->canonical, baseline, candidate)) {
        causes.set_by.push_back(info->canonical);
      }
    }
  }
  for (const ArgImplication& implication : kImplications) {
    if (implication.dest != dest) continue;
    const std::string flag(implication.flag);
    if (std::find(causes.set_by.begin(), causes.set_by.end(), flag) != causes.set_by.end() ||
        std::find(causes.implied_by.begin(), causes.implied_by.end(), flag) !=
            causes.implied_by.end()) {
      continue;
    }
    if (flag_changed(flag, baseline, candidate)) causes.implied_by.push_back(flag);
  }
  return causes;
}

// Judges one difference, given the setting's class, frozen row and swap row.
// Whether a swap's list holds a printed value; "absent" in the list means the flag's default.
bool swap_allows(const SameMathSwap& swap, const std::optional<std::string>& printed) {
  return std::any_of(swap.values.begin(), swap.values.end(),
                     [&](const std::optional<std::string>& allowed) {
                       if (swap.kind == ChangeKind::kEnv) return allowed == printed;
                       const std::optional<std::string> value =
                           allowed ? allowed : default_value(ChangeKind::kFlag, swap.setting);
                       return printed == printed_form(value);
                     });
}

// `cause` is appended to the values in the message (empty for an env var).
void judge(ResolvedDifference& d, const Policy& policy, const SettingClass& cls,
           const FrozenSetting* frozen, const std::string& label, const std::string& cause) {
  d.objective_class = cls.objective_class;
  const std::string head = label + " (" + to_string(cls.objective_class) + "): ";
  const std::string values = ": " + shown(d.before) + " -> " + shown(d.after);
  auto verdict = [&](CheckVerdict v, CheckRule rule, const std::string& why) {
    d.verdict = v;
    d.rule = rule;
    d.message = head + to_string(rule) + values + cause + ": " + why;
  };
  if (frozen != nullptr) {
    verdict(CheckVerdict::kRefused, CheckRule::kFrozen,
            "frozen by policy " + policy.name + ": " + frozen->reason);
  } else if (!cls.listed) {
    verdict(CheckVerdict::kRefused, CheckRule::kUnlisted,
            d.kind == ChangeKind::kFlag
                ? "no flag of the Megatron-LM catalog sets it; unlisted means numeric"
                : "not allowlisted by policy " + policy.name + "; unlisted means numeric");
  } else if (cls.objective_class == ObjectiveClass::kNumeric) {
    verdict(CheckVerdict::kRefused, CheckRule::kNumeric,
            "a numeric setting differs in the resolved run");
  } else if (cls.swap != nullptr && cls.swap->component_test != ComponentTest::kPassed) {
    verdict(CheckVerdict::kRefused, CheckRule::kSwapUntested,
            std::string("same-math swap whose component test is ") +
                to_string(cls.swap->component_test));
  } else if (cls.swap != nullptr && !swap_allows(*cls.swap, d.after)) {
    verdict(CheckVerdict::kRefused, CheckRule::kSwapValue,
            "same-math swap outside its allowed values");
  } else if (cls.swap != nullptr) {
    verdict(CheckVerdict::kAllowed, CheckRule::kSwap, "same-math swap inside its allowed values");
  } else if (cls.objective_class == ObjectiveClass::kOther) {
    verdict(CheckVerdict::kReported, CheckRule::kOther, "not part of the training step");
  } else {
    verdict(CheckVerdict::kAllowed,
            cls.objective_class == ObjectiveClass::kStructural ? CheckRule::kStructural
                                                               : CheckRule::kSameMath,
            "does not change the objective");
  }
}

// A defect of the policy read from the candidate's printed arguments; only defects whose
// conditions are all flag values that the block prints can be read this way.
std::optional<ConfigRefusal> printed_defect(const Policy& policy, const KnownDefect& defect,
                                            const ResolvedArgs& args) {
  std::string setting;
  for (const DefectCondition& condition : defect.conditions) {
    if (condition.kind != ChangeKind::kFlag || !condition.value) return std::nullopt;
    const ArgInfo* info = ArgCatalog::megatron().find(condition.setting);
    if (info == nullptr) return std::nullopt;
    const auto it = args.values.find(info->dest);
    if (it == args.values.end() || it->second != printed_form(condition.value)) return std::nullopt;
    setting += (setting.empty() ? "" : " ") + info->dest + "=" + it->second;
  }
  return ConfigRefusal{setting, std::nullopt, CheckRule::kDefect,
                       setting +
                           ": defect: the resolved arguments hold a known stack defect of "
                           "policy " +
                           policy.name + ": " + defect.reason};
}

// The new size in the first " > padded vocab (size: V) with D dummy tokens (new size: P)" line.
std::optional<std::string> padded_vocab_line_size(const std::vector<std::string_view>& lines) {
  constexpr std::string_view kMark = " > padded vocab (size: ";
  constexpr std::string_view kNewSize = "(new size: ";
  for (const std::string_view line : lines) {
    if (line.find(kMark) == std::string_view::npos) continue;
    const std::size_t at = line.find(kNewSize);
    if (at == std::string_view::npos) continue;
    const std::string_view rest = line.substr(at + kNewSize.size());
    const std::size_t end = rest.find(')');
    if (end == std::string_view::npos || end == 0) continue;
    const std::string_view digits = rest.substr(0, end);
    if (digits.find_first_not_of("0123456789") != std::string_view::npos) continue;
    return std::string(digits);
  }
  return std::nullopt;
}

}  // namespace

std::vector<ArgImplication> known_arg_implications() {
  return {kImplications.begin(), kImplications.end()};
}

std::vector<DerivedArg> known_derived_args() { return {kDerivedArgs.begin(), kDerivedArgs.end()}; }

Result<ResolvedArgs> parse_resolved_args(std::string_view log, std::string_view source_name) {
  const std::vector<std::string_view> lines = split_lines(log);
  std::optional<Block> first;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(kHeader) == std::string_view::npos) continue;
    Result<Block> block = parse_block(lines, i, source_name);
    if (!block.ok()) return make_error(block.error());
    const std::size_t after_footer = block->end_line;  // 0-based index of the next line
    if (!first) {
      first = std::move(block).value();
    } else if (block->args.values != first->args.values) {
      return make_error(at(source_name, i + 1) +
                        "a second arguments block differs from the first (line " +
                        std::to_string(first->args.header_line) + ")");
    }
    i = after_footer - 1;
  }
  if (!first) {
    return make_error(std::string(source_name) + ": no arguments block (expected a line '" +
                      std::string(kHeader) + "')");
  }
  // The block prints padded_vocab_size as None unless a flag pins it; the tokenizer pads the
  // vocabulary afterwards and says so: " > padded vocab (size: V) with D dummy tokens (new size:
  // P)". P is the size the run used.
  auto padded = first->args.values.find("padded_vocab_size");
  if (padded != first->args.values.end() && padded->second == "None") {
    if (const std::optional<std::string> size = padded_vocab_line_size(lines)) {
      padded->second = *size;
    }
  }
  return std::move(first->args);
}

ResolvedComparison compare_resolved(const Policy& policy, const ResolvedRun& baseline,
                                    const ResolvedRun& candidate) {
  ResolvedComparison result;
  std::set<std::string> dests;
  for (const auto& [dest, value] : baseline.args.values) dests.insert(dest);
  for (const auto& [dest, value] : candidate.args.values) dests.insert(dest);
  for (const std::string& dest : dests) {
    ResolvedDifference d;
    d.kind = ChangeKind::kFlag;
    d.name = dest;
    if (auto it = baseline.args.values.find(dest); it != baseline.args.values.end()) {
      d.before = it->second;
    }
    if (auto it = candidate.args.values.find(dest); it != candidate.args.values.end()) {
      d.after = it->second;
    }
    if (d.before == d.after) continue;
    const DestClass dest_class = classify_dest(policy, dest);
    d.flag = dest_class.flag;
    const Causes causes = causes_of(dest, baseline.recipe, candidate.recipe);
    d.implied_by = causes.set_by;
    d.implied_by.insert(d.implied_by.end(), causes.implied_by.begin(), causes.implied_by.end());
    const std::string label = dest + (d.flag.empty() ? "" : " (" + d.flag + ")");
    judge(d, policy, dest_class.cls, dest_class.frozen, label, causes.text());
    if (!dest_class.derived_note.empty()) d.message += " (" + dest_class.derived_note + ")";
    result.differences.push_back(std::move(d));
  }

  result.env_compared = baseline.env.has_value() && candidate.env.has_value();
  if (result.env_compared) {
    std::set<std::string> names;
    for (const auto& [name, value] : *baseline.env) names.insert(name);
    for (const auto& [name, value] : *candidate.env) names.insert(name);
    for (const std::string& name : names) {
      ResolvedDifference d;
      d.kind = ChangeKind::kEnv;
      d.name = name;
      if (auto it = baseline.env->find(name); it != baseline.env->end()) d.before = it->second;
      if (auto it = candidate.env->find(name); it != candidate.env->end()) d.after = it->second;
      if (d.before == d.after) continue;
      judge(d, policy, classify_setting(policy, ChangeKind::kEnv, name),
            policy.find_frozen(ChangeKind::kEnv, name), name, "");
      result.differences.push_back(std::move(d));
    }
  }

  for (const ResolvedDifference& d : result.differences) {
    if (d.verdict != CheckVerdict::kRefused) continue;
    result.failures.push_back({d.name, d.objective_class, d.rule, d.message});
  }
  for (const KnownDefect& defect : policy.defects) {
    if (std::optional<ConfigRefusal> refusal = printed_defect(policy, defect, candidate.args)) {
      result.failures.push_back(std::move(*refusal));
    }
  }
  result.passed = result.failures.empty();
  return result;
}

}  // namespace attune
