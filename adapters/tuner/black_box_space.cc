#include "adapters/tuner/black_box_space.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "adapters/model/pipeline_split.h"

namespace attune {

using nlohmann::json;

namespace {

// TPE's value for a recomputation setting: Megatron's text, "none" for none.
std::string recompute_name(sim::RecomputeGranularity g) {
  const std::string_view name = sim::recompute_granularity_name(g);
  return name.empty() ? "none" : std::string(name);
}

std::vector<int> powers_of_two(int limit) {
  std::vector<int> out;
  for (int v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

}  // namespace

json search_space(const sim::Workload& w, const sim::Layout& baseline,
                  const std::vector<int>& micro_batch_sizes) {
  const bool moe = w.model.num_experts > 0;
  json space;
  space["tp"] = powers_of_two(std::max(1, std::min(8, w.hardware.nvlink_domain_gpus)));
  space["pp"] = powers_of_two(std::min({32, w.gpus, w.model.num_layers}));
  space["cp"] = std::vector<int>{1, 2};
  space["vp"] = std::vector<int>{1, 2, 4};
  space["recompute"] = std::vector<std::string>{"none", "selective", "full"};
  std::vector<std::string> splits;
  for (sim::PipelineSplit split : sim::pipeline_splits()) {
    splits.emplace_back(sim::split_name(split));
  }
  space["split"] = splits;
  if (moe) {
    space["ep"] = powers_of_two(std::min({64, w.model.num_experts, w.gpus}));
    space["dispatcher"] = std::vector<std::string>{"alltoall", "allgather", "flex"};
  }
  if (baseline.optimizer_cpu_offload) space["offload"] = std::vector<int>{0, 1};
  if (!micro_batch_sizes.empty()) space["mbs"] = micro_batch_sizes;
  return space;
}

json params_of(const sim::Workload& w, const sim::Layout& l, const json& space) {
  json p;
  p["tp"] = l.tp;
  p["pp"] = l.pp;
  p["cp"] = l.cp;
  p["vp"] = std::max(1, l.virtual_stages);
  p["recompute"] = recompute_name(l.recompute);
  const std::optional<sim::PipelineSplit> split = sim::split_of(w.model.num_layers, l);
  p["split"] = split ? std::string(sim::split_name(*split)) : "other";  // "other": not in space
  if (w.model.num_experts > 0) {
    p["ep"] = l.ep;
    p["dispatcher"] = std::string(sim::dispatcher_name(l.dispatcher));
  }
  if (space.contains("offload")) p["offload"] = l.optimizer_cpu_offload ? 1 : 0;
  if (space.contains("mbs")) p["mbs"] = l.micro_batch_size;
  return p;
}

bool in_space(const json& p, const json& space) {
  for (const auto& [name, choices] : space.items()) {
    if (!p.contains(name)) return false;
    bool found = false;
    for (const json& choice : choices) found = found || choice == p[name];
    if (!found) return false;
  }
  return true;
}

std::optional<sim::Layout> layout_at(const sim::Workload& w, const sim::Layout& baseline,
                                     const json& p) {
  sim::Layout l = baseline;
  l.tp = p["tp"].get<int>();
  l.pp = p["pp"].get<int>();
  l.cp = p["cp"].get<int>();
  const int vp = p["vp"].get<int>();
  l.virtual_stages = vp > 1 ? vp : 0;
  l.layers_per_virtual_stage = 0;
  l.sequence_parallel = l.tp > 1;
  const std::optional<sim::PipelineSplit> split = sim::split_named(p["split"].get<std::string>());
  if (!split || !sim::apply_split(*split, w.model.num_layers, l)) return std::nullopt;
  const std::string recompute = p["recompute"].get<std::string>();
  l.recompute = recompute == "none"        ? sim::RecomputeGranularity::kNone
                : recompute == "selective" ? sim::RecomputeGranularity::kSelective
                                           : sim::RecomputeGranularity::kFull;
  l.recompute_method =
      recompute == "full" ? sim::RecomputeMethod::kUniform : sim::RecomputeMethod::kNone;
  l.recompute_num_layers = recompute == "full" ? 1 : 0;
  if (p.contains("ep")) {
    l.ep = p["ep"].get<int>();
    const std::string d = p["dispatcher"].get<std::string>();
    l.dispatcher = d == "flex"        ? sim::Dispatcher::kFlex
                   : d == "allgather" ? sim::Dispatcher::kAllgather
                                      : sim::Dispatcher::kAlltoall;
    l.flex_backend = sim::FlexBackend::kDeepep;
  }
  if (p.contains("offload")) l.optimizer_cpu_offload = p["offload"].get<int>() == 1;
  if (p.contains("mbs")) l.micro_batch_size = p["mbs"].get<int>();
  return l;
}

}  // namespace attune
