#include "adapters/tuner/expert_tuner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "adapters/model/layout.h"
#include "adapters/model/performance_model.h"
#include "adapters/model/sweep.h"
#include "adapters/tuner/learned_rules.h"
#include "adapters/tuner/micro_batch.h"
#include "core/lever_groups.h"
#include "gate/config_check.h"

namespace attune {
namespace {

// The rule a candidate launched as it is, to be retried with recomputation, is proposed under.
constexpr const char* kRule5Plan =
    "rule 5: expected out of memory at the parent's recomputation; a retry with recomputation "
    "follows";
// The rule a candidate the estimate puts inside its memory margin is proposed under.
constexpr const char* kRule5MarginPlan =
    "rule 5: within the memory estimate's margin of the capacity; if it runs out of memory, a "
    "retry with recomputation follows";
constexpr double kMemoryMarginMin = 0.03;  // pre-filter margin before any observation
// The rule that launches a layout at its parent's full recomputation to relax it next.
constexpr std::string_view kRelaxPlan = "rule 5 in reverse";
// A layout launched to take more rows per microbatch at the next step (its gain is in the pair).
constexpr std::string_view kMicroBatchPlan = "rows per microbatch next";
constexpr double kOomPlanDiscount = 0.8;  // a plan of two launches (a rule-5 retry, a next step)
constexpr double kOffDiagnosisConfidence = 0.6;
constexpr double kUnclearBottleneckRatio = 0.8;  // second cost within this of the first
// Rule 4's feasible limit for a lever probed on the leader: a lever whose target costs, at this
// many times the estimate, stay below the noise band cannot clear it, even by removing them.
constexpr double kProbeCeilingFactor = 2.0;
constexpr int kLayoutCandidatesMax = 60;
constexpr std::size_t kSweepsCachedMax = 64;

struct Candidate {
  Recipe recipe;
  RunId parent = 0;
  std::string lever;  // the catalog lever's name
  std::string set;    // the lever group it changes
  std::string mechanism;
  double expected_gain = 0;       // over the parent, by the estimator
  double score = 0;               // expected gain x confidence
  bool needs_retry = false;       // rule 5: expected to run out of memory, then retried
  double planned_gain = 0;        // over the parent after the planned next step (a plan's pair)
  std::string rule;               // which rule put it forward
  std::set<std::string> degrees;  // parallel degrees it changes: TP PP EP CP DP
};

std::string percent(double fraction) {
  std::ostringstream out;
  out.precision(fraction < 0.1 && fraction > -0.1 ? 2 : 3);
  out << fraction * 100 << "%";
  return out.str();
}

bool expert_group_crosses_domain(const sim::Workload& w, const sim::Layout& l) {
  const int etp = l.etp > 0 ? l.etp : l.tp;
  return w.model.num_experts > 0 && l.ep * etp > w.hardware.nvlink_domain_gpus;
}

std::optional<sim::ResolvedLayout> resolved_of(const sim::Workload& w, const Recipe& recipe) {
  auto layout = sim::decode_layout(w, recipe);
  if (!layout.ok()) return std::nullopt;
  auto resolved = sim::resolve_layout(w, layout.value());
  if (!resolved.ok()) return std::nullopt;
  return resolved.value();
}

std::set<std::string> changed_degrees(const sim::ResolvedLayout& a, const sim::ResolvedLayout& b) {
  std::set<std::string> out;
  if (a.layout.tp != b.layout.tp) out.insert("TP");
  if (a.layout.pp != b.layout.pp) out.insert("PP");
  if (a.layout.ep != b.layout.ep) out.insert("EP");
  if (a.layout.cp != b.layout.cp) out.insert("CP");
  if (a.dp != b.dp) out.insert("DP");
  return out;
}

// The catalog lever that names a layout change best.
std::string layout_lever_name(const sim::Workload& w, const sim::ResolvedLayout& from,
                              const sim::ResolvedLayout& to) {
  if (expert_group_crosses_domain(w, from.layout) && !expert_group_crosses_domain(w, to.layout)) {
    return "expert-parallel-inside-node";
  }
  if (to.layout.tp < from.layout.tp && to.layout.pp > from.layout.pp) {
    return "fewer-tensor-parallel-deeper-pipeline";
  }
  if (to.layout.cp != from.layout.cp) return "context-parallel";
  const std::set<std::string> degrees = changed_degrees(from, to);
  if (degrees.empty()) {
    if (to.vp != from.vp) return "virtual-pipeline-stages";
    return "uneven-end-stages";
  }
  if (degrees.contains("EP") && !degrees.contains("TP") && !degrees.contains("PP")) {
    return "expert-parallel-inside-node";
  }
  return "data-parallel-width";
}

const CatalogLever* find_lever(const LeverCatalog& catalog, const std::string& name) {
  for (const CatalogLever& lever : catalog.levers) {
    if (lever.name == name) return &lever;
  }
  return nullptr;
}

bool helps_against(const CatalogLever& lever, Bottleneck diagnosed) {
  return std::any_of(lever.helps_when.begin(), lever.helps_when.end(),
                     [&](Bottleneck listed) { return helps_under(listed, diagnosed); });
}

using Cost = std::pair<double, Bottleneck>;

std::string cost_text(const Cost& cost, double step) {
  return std::string(tag_of(cost.second)) + " " + percent(cost.first / step) + " of the step";
}

// The exposed costs of a prediction of `recipe`, each with the bottleneck it names.
std::vector<Cost> exposed_costs(const sim::Workload& w, const Recipe& recipe,
                                const sim::Prediction& p) {
  auto resolved = resolved_of(w, recipe);
  const bool cross = resolved && expert_group_crosses_domain(w, resolved->layout);
  const bool offload = resolved && resolved->layout.optimizer_cpu_offload;
  const sim::Breakdown& b = p.breakdown;
  return {
      {b.ep_a2a_s, cross ? Bottleneck::kEpA2aCrossNode : Bottleneck::kEpA2a},
      {b.tp_comm_s, Bottleneck::kTpComm},
      {b.cp_comm_s, Bottleneck::kCpComm},
      {b.pp_p2p_s, Bottleneck::kPpP2p},
      {b.bubble_s, Bottleneck::kBubble},
      {b.dp_comm_s, Bottleneck::kDpComm},
      {b.optimizer_s, offload ? Bottleneck::kOptimizerOffload : Bottleneck::kOptimizer},
      {b.recompute_s, Bottleneck::kRecompute},
      {b.host_s, Bottleneck::kHost},
  };
}

// The diagnosis of `recipe` from its estimate `p`.
ExpertDiagnosis diagnose_estimate(const sim::Workload& w, const Recipe& recipe,
                                  const sim::Prediction& p) {
  ExpertDiagnosis d;
  if (!p.valid) {
    d.bottleneck = Bottleneck::kInvalid;
    d.text = "the estimator cannot read the leader's layout: " + p.error;
    return d;
  }
  std::vector<Cost> costs = exposed_costs(w, recipe, p);
  std::stable_sort(costs.begin(), costs.end(),
                   [](const Cost& a, const Cost& c) { return a.first > c.first; });
  const double step = std::max(p.step_time_s, 1e-12);
  if (costs[0].first < 0.05 * step) {
    d.bottleneck = Bottleneck::kCompute;
    d.text = "compute-bound: no exposed cost above 5% of the step (estimate)";
    return d;
  }
  d.bottleneck = costs[0].second;
  d.text = cost_text(costs[0], step) + " on stage " + std::to_string(p.critical_stage) + ", then " +
           cost_text(costs[1], step) + " (estimate)";
  d.clear = costs[1].first <= kUnclearBottleneckRatio * costs[0].first;
  if (!d.clear) d.text += "; unclear";
  return d;
}

// The analyzer's name of an exposed communication, as a bottleneck; nullopt for "unknown".
std::optional<Bottleneck> bottleneck_of_comm(const std::string& kind, bool cross_node) {
  if (kind == "ep_a2a") return cross_node ? Bottleneck::kEpA2aCrossNode : Bottleneck::kEpA2a;
  if (kind == "tp") return Bottleneck::kTpComm;
  if (kind == "dp") return Bottleneck::kDpComm;
  if (kind == "cp") return Bottleneck::kCpComm;
  if (kind == "pp_p2p") return Bottleneck::kPpP2p;
  return std::nullopt;
}

std::optional<ExpertDiagnosis> diagnose_profile(const sim::Workload& w, const Recipe& recipe,
                                                const ProfileAnalyzed& profile) {
  if (profile.stages.empty()) return std::nullopt;
  const StageBreakdown* slowest = &profile.stages.front();
  for (const StageBreakdown& stage : profile.stages) {
    if (stage.stage == profile.slowest_stage) slowest = &stage;
  }
  auto resolved = resolved_of(w, recipe);
  const bool cross = resolved && expert_group_crosses_domain(w, resolved->layout);
  std::vector<Cost> costs;
  for (const CommTime& comm : slowest->exposed_comm) {
    if (auto bottleneck = bottleneck_of_comm(comm.kind, cross)) {
      costs.emplace_back(comm.exposed_ms, *bottleneck);
    }
  }
  costs.emplace_back(slowest->host_bound_ms, Bottleneck::kHost);
  if (resolved && resolved->layout.pp > 1)
    costs.emplace_back(slowest->idle_ms, Bottleneck::kBubble);
  std::stable_sort(costs.begin(), costs.end(),
                   [](const Cost& a, const Cost& c) { return a.first > c.first; });
  ExpertDiagnosis d;
  d.from_profile = true;
  const double step = std::max(slowest->step_ms, 1e-9);
  if (costs.empty() || costs[0].first < 0.05 * step) {
    d.bottleneck = Bottleneck::kCompute;
    d.text = "compute-bound on stage " + std::to_string(slowest->stage) + " (profile)";
    return d;
  }
  d.bottleneck = costs[0].second;
  d.text = cost_text(costs[0], step) + " on stage " + std::to_string(slowest->stage) + " (profile)";
  return d;
}

// What the campaign's measurements say of the estimator.
struct Evidence {
  double confidence = 1.0;  // 1 when measurements track the estimates
  double memory_margin = kMemoryMarginMin;
  std::string summary;
};

Evidence weigh_evidence(const sim::Workload& w, const sim::StackProfile& stack,
                        const ControlState& state, const Recipe& baseline) {
  Evidence e;
  std::vector<double> ratios;
  for (const auto& [id, run] : state.runs) {
    auto recipe = parse_recipe(run.recipe, "run");
    const Recipe& r = run.recipe.empty() || !recipe.ok() ? baseline : recipe.value();
    if (!run.measured && !(run.failed && run.failed->failure_class == FailureClass::kOom)) {
      continue;
    }
    const sim::Prediction p = sim::predict_on_stack(w, r, stack);
    if (!p.valid || p.tokens_per_s_per_gpu <= 0) continue;
    if (run.measured) {
      ratios.push_back(run.measured->tokens_per_sec_per_gpu / p.tokens_per_s_per_gpu);
      const auto& peaks = run.measured->peak_memory_gib_by_stage;
      if (!peaks.empty() && p.peak_memory_gib > 0) {
        const double observed = *std::max_element(peaks.begin(), peaks.end());
        e.memory_margin = std::max(e.memory_margin, observed / p.peak_memory_gib - 1);
      }
    } else if (p.peak_memory_gib > 0 && p.peak_memory_gib <= p.memory_capacity_gib) {
      // Ran out of memory although the estimate fitted: the margin must cover it.
      e.memory_margin =
          std::max(e.memory_margin, p.memory_capacity_gib / p.peak_memory_gib - 1 + 0.02);
    }
  }
  if (ratios.size() >= 2) {
    std::vector<double> sorted = ratios;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    double spread = 0;
    for (double r : ratios) spread = std::max(spread, std::abs(r / median - 1));
    e.confidence = std::clamp(1.0 - 2 * spread, 0.3, 1.0);
    e.summary = "measured/estimated throughput " + std::to_string(median).substr(0, 4) +
                ", spread " + percent(spread);
  }
  return e;
}

bool fits(const sim::Prediction& p, double margin) {
  return p.valid && p.peak_memory_gib * (1 + margin) <= p.memory_capacity_gib;
}

// `layout` with the parent's settings of every move but `move` (the move's own fields come from
// `moved`).
void copy_move_fields(sim::Layout& into, const sim::Layout& from, const std::string& move) {
  if (move == "recompute") {
    into.recompute = from.recompute;
    into.recompute_method = from.recompute_method;
    into.recompute_num_layers = from.recompute_num_layers;
    into.recompute_modules = from.recompute_modules;
  } else if (move == "dispatcher") {
    into.dispatcher = from.dispatcher;
    into.flex_backend = from.flex_backend;
    into.moe_enable_deepep = from.moe_enable_deepep;
    into.expert_rank_budget = from.expert_rank_budget;
  } else if (move == "optimizer-offload") {
    into.optimizer_cpu_offload = from.optimizer_cpu_offload;
    into.optimizer_offload_fraction = from.optimizer_offload_fraction;
    into.overlap_cpu_optimizer_d2h_h2d = from.overlap_cpu_optimizer_d2h_h2d;
  } else if (move == "cuda-graphs") {
    into.cuda_graph = from.cuda_graph;
    into.cuda_graph_modules = from.cuda_graph_modules;
  } else if (move == "tp-comm-overlap") {
    into.tp_comm_overlap = from.tp_comm_overlap;
  } else if (move == "dp-overlap") {
    into.overlap_grad_reduce = from.overlap_grad_reduce;
    into.overlap_param_gather = from.overlap_param_gather;
  } else if (move == "ep-overlap") {
    into.ep_overlap = from.ep_overlap;
  } else if (move == "micro-batch") {
    into.micro_batch_size = from.micro_batch_size;
  }
}

// The values a non-layout move can take from `parent` on `stack`.
// The recomputations other than the parent's: none, selective attention, the expert
// activations' variants on a MoE model, and full.
std::vector<sim::Layout> recompute_values(const sim::Layout& parent, bool moe) {
  std::vector<sim::Layout> out;
  sim::Layout none = parent;
  none.recompute = sim::RecomputeGranularity::kNone;
  none.recompute_method = sim::RecomputeMethod::kNone;
  none.recompute_num_layers = 0;
  sim::Layout selective = none;
  selective.recompute = sim::RecomputeGranularity::kSelective;
  selective.recompute_modules = sim::kRecomputeCoreAttn;
  sim::Layout full = none;
  full.recompute = sim::RecomputeGranularity::kFull;
  full.recompute_method = sim::RecomputeMethod::kUniform;
  full.recompute_num_layers = 1;
  std::vector<sim::Layout> values = {none, selective};
  if (moe) {
    // The expert activations are the largest activations of a MoE layer: recomputing them
    // (Megatron's moe_act module) saves most of what full recomputation saves, at a fraction of
    // its cost.
    const std::uint32_t moe_act = sim::kRecomputeMoeAct;
    for (const std::uint32_t modules :
         {moe_act, moe_act | sim::kRecomputeCoreAttn, moe_act | sim::kRecomputeLayernorm}) {
      sim::Layout l = selective;
      l.recompute_modules = modules;
      values.push_back(l);
    }
  }
  values.push_back(full);
  for (const sim::Layout& l : values) {
    if (l.recompute != parent.recompute || (l.recompute == sim::RecomputeGranularity::kSelective &&
                                            l.recompute_modules != parent.recompute_modules)) {
      out.push_back(l);
    }
  }
  return out;
}

// The data-parallel overlaps one flag at a time, in the order Megatron allows: the parameter
// all-gather overlap needs the gradient-reduce overlap (and the distributed optimizer).
std::vector<sim::Layout> dp_overlap_values(const sim::Layout& parent) {
  std::vector<sim::Layout> out;
  sim::Layout l = parent;
  if (parent.overlap_param_gather) {
    l.overlap_param_gather = false;
  } else if (parent.overlap_grad_reduce && parent.distributed_optimizer) {
    sim::Layout on = parent;
    on.overlap_param_gather = true;
    out.push_back(on);
    l.overlap_grad_reduce = false;
  } else {
    l.overlap_grad_reduce = !parent.overlap_grad_reduce;
  }
  out.push_back(l);
  return out;
}

std::vector<sim::Layout> move_values(const sim::Workload& w, const sim::StackProfile& stack,
                                     const sim::Layout& parent, const std::string& move) {
  std::vector<sim::Layout> out;
  const bool moe = w.model.num_experts > 0;
  auto push = [&](sim::Layout l) { out.push_back(std::move(l)); };
  if (move == "recompute") {
    out = recompute_values(parent, moe);
  } else if (move == "dispatcher" && moe) {
    for (sim::Dispatcher d :
         {sim::Dispatcher::kFlex, sim::Dispatcher::kAlltoall, sim::Dispatcher::kAllgather}) {
      if (d == parent.dispatcher) continue;
      // A dispatcher the stack swaps for another is no move of its own.
      if (sim::dispatcher_on_stack(stack, d) != d) continue;
      sim::Layout l = parent;
      l.dispatcher = d;
      l.flex_backend = sim::FlexBackend::kDeepep;
      push(l);
    }
  } else if (move == "optimizer-offload") {
    if (parent.optimizer_cpu_offload) {
      sim::Layout l = parent;
      l.optimizer_cpu_offload = false;
      l.optimizer_offload_fraction = 1.0;
      l.overlap_cpu_optimizer_d2h_h2d = false;
      push(l);
    }
  } else if (move == "cuda-graphs") {
    if (parent.cuda_graph == sim::CudaGraphImpl::kNone) {
      sim::Layout l = parent;
      l.cuda_graph = sim::CudaGraphImpl::kLocal;
      push(l);
    }
  } else if (move == "tp-comm-overlap") {
    if (parent.tp > 1) {
      sim::Layout l = parent;
      l.tp_comm_overlap = !parent.tp_comm_overlap;
      push(l);
    }
  } else if (move == "dp-overlap") {
    out = dp_overlap_values(parent);
  } else if (move == "ep-overlap" && moe && parent.ep > 1) {
    sim::Layout l = parent;
    l.ep_overlap = !parent.ep_overlap;
    push(l);
  } else if (move == "micro-batch") {
    // Doubled, quadrupled or halved; the layout check keeps the sizes that divide the global
    // batch, and layer 1 refuses any where the policy freezes the size.
    for (const int size : {2 * parent.micro_batch_size, 4 * parent.micro_batch_size,
                           parent.micro_batch_size % 2 == 0 ? parent.micro_batch_size / 2 : 0}) {
      if (size <= 0) continue;
      sim::Layout l = parent;
      l.micro_batch_size = size;
      push(l);
    }
  }
  return out;
}

struct Context {
  const sim::Workload& w;
  const sim::StackProfile& stack;  // the cluster's stack, which the estimator predicts on
  const Policy& policy;
  const LeverCatalog& catalog;
  const ControlState& state;
  const Recipe& baseline;
  std::set<std::string> seen;  // recipe hashes proposed or run
  Evidence evidence;
  ExpertDiagnosis diagnosis;
  std::vector<LearnedRule> learned;                           // read when the campaign opened
  std::map<std::string, sim::SweepResult>* sweeps = nullptr;  // by recipe hash
  std::vector<int> micro_batch_sizes = {};    // the sizes the policy frees (empty: none)
  std::vector<sim::Layout> cured_hangs = {};  // find_cured_hangs, once per answer
  sim::Prediction leader_estimate = {};       // the leader on the cluster's stack, once per answer
  // A run with DeepEP's expert group across NVLink domains failed to start NVSHMEM, its transport:
  // this cluster's network does not carry it, and such layouts are not proposed again.
  bool deepep_across_domains_fails = false;
};

// A value of `move` outside what the campaign may try: a microbatch size the policy does not free
// (the oracle and the black-box searches try the same set).
bool out_of_bounds(const Context& c, const std::string& move, const sim::Layout& value) {
  return move == "micro-batch" && std::find(c.micro_batch_sizes.begin(), c.micro_batch_sizes.end(),
                                            value.micro_batch_size) == c.micro_batch_sizes.end();
}

// The layout sweep around `recipe` (a pure function of it, so kept across answers).
Result<sim::SweepResult> layout_sweep(Context& c, const Recipe& recipe,
                                      const sim::SweepOptions& options) {
  const std::string key = recipe_hash(recipe);
  auto found = c.sweeps->find(key);
  if (found != c.sweeps->end()) return found->second;
  sim::SweepOptions on_stack = options;
  on_stack.stack = c.stack;
  on_stack.factors = c.stack.factors;
  // Only layouts the policy lets run (rule 3), so refused ones do not crowd out the rest.
  on_stack.admit = [&c](const Recipe& candidate) {
    return check_config(c.policy, c.baseline, candidate).allowed;
  };
  auto result = sim::sweep(c.w, recipe, on_stack);
  if (result.ok()) {
    if (c.sweeps->size() >= kSweepsCachedMax) c.sweeps->clear();
    (*c.sweeps)[key] = result.value();
  }
  return result;
}

// The fastest value of `move` for `layout` (its recipe built on `from`) that `accept` takes, the
// policy allows and fits with the campaign's memory margin: its recipe and prediction.
struct Valued {
  Recipe recipe;
  sim::Prediction prediction;
};
std::optional<Valued> fastest_value(const Context& c, const Recipe& from, const sim::Layout& layout,
                                    const std::string& move,
                                    const std::function<bool(const sim::Layout&)>& accept) {
  std::optional<Valued> best;
  for (const sim::Layout& value : move_values(c.w, c.stack, layout, move)) {
    if (!accept(value) || out_of_bounds(c, move, value)) continue;
    auto recipe = sim::apply_layout(from, value);
    if (!recipe.ok() || !check_config(c.policy, c.baseline, recipe.value()).allowed) continue;
    const sim::Prediction p = sim::predict_on_stack(c.w, recipe.value(), c.stack);
    if (!fits(p, c.evidence.memory_margin)) continue;
    if (best && p.tokens_per_s_per_gpu <= best->prediction.tokens_per_s_per_gpu) continue;
    best = Valued{std::move(recipe).value(), p};
  }
  return best;
}

// The fastest recomputation lighter than full that fits.
std::optional<Valued> fastest_relaxed(const Context& c, const Recipe& from,
                                      const sim::Layout& layout) {
  return fastest_value(c, from, layout, "recompute", [](const sim::Layout& value) {
    return value.recompute != sim::RecomputeGranularity::kFull;
  });
}

// The planned next step of a run launched as the first half of a plan (its mechanism names the
// plan), with the lever that takes it: nullopt for a run that is no plan's first half.
struct PlannedStep {
  Valued next;
  std::string lever;
  std::string_view plan;
};
std::optional<PlannedStep> planned_step(const Context& c, const std::string& mechanism,
                                        const Recipe& planned, const sim::Layout& layout) {
  if (mechanism.find(std::string(kRelaxPlan) + ":") != std::string::npos) {
    if (auto relaxed = fastest_relaxed(c, planned, layout)) {
      return PlannedStep{std::move(*relaxed), "recompute", kRelaxPlan};
    }
  } else if (mechanism.find(std::string(kMicroBatchPlan) + ":") != std::string::npos) {
    auto more = fastest_value(c, planned, layout, "micro-batch", [&](const sim::Layout& value) {
      return value.micro_batch_size > layout.micro_batch_size;
    });
    if (more) return PlannedStep{std::move(*more), "rows-per-microbatch", kMicroBatchPlan};
  }
  return std::nullopt;
}

Recipe recipe_of(const ControlState& state, RunId run_id, const Recipe& baseline) {
  if (run_id == 0) return baseline;
  const RunState* run = state.run(run_id);
  if (run == nullptr) return baseline;
  auto parsed = parse_recipe(run->recipe, "run " + std::to_string(run_id));
  return parsed.ok() ? parsed.value() : baseline;
}

bool searched(const RunState& run) {
  return run.purpose == RunPurpose::kSearch || run.purpose == RunPurpose::kRetry;
}

// The layouts of the runs whose hangs this campaign cured: each hung, and its retry with one
// data-parallel overlap fewer measured, so the overlaps it hung with are known to hang.
std::vector<sim::Layout> find_cured_hangs(const Context& c) {
  std::vector<sim::Layout> out;
  for (const auto& [id, run] : c.state.runs) {
    if (!searched(run) || !run.measured) continue;
    const auto proposal = c.state.proposals.find(run.proposal_id);
    if (proposal == c.state.proposals.end()) continue;
    const RunId parent_id = proposal->second.parent_run_id;
    const RunState* parent = c.state.run(parent_id);
    if (parent == nullptr || !parent->failed ||
        parent->failed->failure_class != FailureClass::kHang) {
      continue;
    }
    auto hung = sim::decode_layout(c.w, recipe_of(c.state, parent_id, c.baseline));
    if (hung.ok()) out.push_back(std::move(hung).value());
  }
  return out;
}

bool same_dp_overlaps(const sim::Layout& a, const sim::Layout& b) {
  return a.overlap_grad_reduce == b.overlap_grad_reduce &&
         a.overlap_param_gather == b.overlap_param_gather;
}

// Whether `l` runs DeepEP (--moe-enable-deepep reads as its backend) with its expert group across
// NVLink domains.
bool deepep_across_domains(const sim::Workload& w, const sim::Layout& l) {
  return l.dispatcher == sim::Dispatcher::kFlex && l.flex_backend == sim::FlexBackend::kDeepep &&
         expert_group_crosses_domain(w, l);
}

// Whether a search run of DeepEP across NVLink domains failed because its transport (NVSHMEM)
// could not start: the cause the failure's deciding evidence names.
bool deepep_failed_across_domains(const Context& c) {
  for (const auto& [id, run] : c.state.runs) {
    if (!searched(run) || !run.failed || run.failed->cause != FailureCause::kTransportStart) {
      continue;
    }
    auto layout = sim::decode_layout(c.w, recipe_of(c.state, id, c.baseline));
    if (layout.ok() && deepep_across_domains(c.w, layout.value())) return true;
  }
  return false;
}

// Whether the layout `l` repeats a hang this campaign cured: the parallel degrees and
// data-parallel overlaps of a run that hung, which dropping one overlap cured.
bool repeats_cured_hang(const Context& c, const sim::Layout& l) {
  return std::any_of(c.cured_hangs.begin(), c.cured_hangs.end(), [&](const sim::Layout& h) {
    return l.tp == h.tp && l.pp == h.pp && l.cp == h.cp && l.ep == h.ep && l.etp == h.etp &&
           same_dp_overlaps(l, h);
  });
}

// A candidate from `parent` to `recipe` if the rules let it be proposed: one lever, not seen,
// allowed by the policy, valid for Megatron, not a repeat of a cured hang, not DeepEP across
// domains after it failed to start there. Fills recipe, parent, set; the caller scores it.
std::optional<Candidate> admissible(Context& c, const Recipe& parent_recipe, RunId parent,
                                    Recipe recipe) {
  const std::vector<std::string> levers =
      LeverGroups::builtin().levers_of(effective_changes(parent_recipe, recipe));
  if (levers.size() != 1) return std::nullopt;  // rule 2
  if (c.seen.contains(recipe_hash(recipe))) return std::nullopt;
  if (!check_config(c.policy, c.baseline, recipe).allowed) return std::nullopt;  // rule 3
  if (!c.cured_hangs.empty() || c.deepep_across_domains_fails) {
    auto layout = sim::decode_layout(c.w, recipe);
    if (layout.ok() &&
        (repeats_cured_hang(c, layout.value()) ||
         (c.deepep_across_domains_fails && deepep_across_domains(c.w, layout.value())))) {
      return std::nullopt;
    }
  }
  Candidate out;
  out.recipe = std::move(recipe);
  out.parent = parent;
  out.set = levers.front();
  return out;
}

double confidence_of(const Context& c, const CatalogLever* lever, const std::string& action) {
  double prior = lever != nullptr && helps_against(*lever, c.diagnosis.bottleneck)
                     ? 1.0
                     : kOffDiagnosisConfidence;
  // Learned rules of earlier campaigns, under the same bottleneck.
  for (const LearnedRule& rule : c.learned) {
    if (lever == nullptr || rule.lever != lever->name ||
        rule.when != tag_of(c.diagnosis.bottleneck) ||
        (!rule.action.empty() && rule.action != action)) {
      continue;
    }
    prior = rule.effect == "helped" ? 1.0 : std::min(prior, kOffDiagnosisConfidence * 0.5);
  }
  return prior * c.evidence.confidence;
}

// Candidates of every non-layout move of the catalog from `parent` (decoded as `parent_layout`,
// predicted at `base` tokens/s/GPU), appended to `out`. A microbatch size that only fits with full
// recomputation (`with_full`: the parent at full recomputation) is launched as it is, expected
// to run out of memory, then retried with recomputation (rule 5).
void move_candidates(Context& c, const Recipe& parent_recipe, RunId parent,
                     const sim::Layout& parent_layout, const sim::Layout& with_full, double base,
                     std::vector<Candidate>& out) {
  std::set<std::string> moves;
  for (const CatalogLever& lever : c.catalog.levers) {
    if (lever.move != "layout") moves.insert(lever.move);
  }
  for (const std::string& move : moves) {
    const std::vector<const CatalogLever*> levers = c.catalog.of_move(move);
    for (const sim::Layout& value : move_values(c.w, c.stack, parent_layout, move)) {
      if (out_of_bounds(c, move, value)) continue;
      auto recipe = sim::apply_layout(parent_recipe, value);
      if (!recipe.ok()) continue;
      auto cand = admissible(c, parent_recipe, parent, std::move(recipe).value());
      if (!cand) continue;
      sim::Prediction p = sim::predict_on_stack(c.w, cand->recipe, c.stack);
      if (!p.valid) continue;
      if (fits(p, 0.0) && !fits(p, c.evidence.memory_margin)) {
        // Within the estimate's margin of the capacity: it may run, so it is launched as it is,
        // and retried with recomputation if it runs out of memory (rule 5).
        cand->needs_retry = true;
        cand->rule = kRule5MarginPlan;
      } else if (!fits(p, c.evidence.memory_margin)) {
        // More rows per microbatch cost memory only: one that fits with full recomputation is
        // launched as it is, expected to run out of memory, then retried with recomputation
        // (rule 5).
        if (move != "micro-batch") continue;
        sim::Layout saved_value = value;
        copy_move_fields(saved_value, with_full, "recompute");
        auto saved_recipe = sim::apply_layout(parent_recipe, saved_value);
        if (!saved_recipe.ok()) continue;
        p = sim::predict_on_stack(c.w, saved_recipe.value(), c.stack);
        if (!fits(p, c.evidence.memory_margin)) continue;
        cand->needs_retry = true;
        cand->rule = kRule5Plan;
      }
      const CatalogLever* lever = levers.front();
      cand->lever = lever->name;
      cand->mechanism = lever->mechanism;
      cand->expected_gain = p.tokens_per_s_per_gpu / base - 1;
      cand->score = cand->expected_gain *
                    confidence_of(c, lever, change_words(parent_recipe, cand->recipe)) *
                    (cand->needs_retry ? kOomPlanDiscount : 1.0);
      out.push_back(std::move(*cand));
    }
  }
}

// Every admissible single-lever candidate from `parent`, scored by the estimator.
// The layout candidates of one parent: each sweep entry made a candidate, with its plan of a
// second launch where one is worth more (more rows per microbatch, or a full recomputation
// relaxed).
struct LayoutProposer {
  Context& c;
  const Recipe& parent_recipe;
  RunId parent;
  const sim::ResolvedLayout& parent_resolved;
  const sim::Layout& decoded_parent;
  const Result<sim::Layout>& decoded_baseline;
  double base = 0;  // the parent's estimated tokens/s/GPU
  std::vector<Candidate>& out;

  // From a parent that recomputes fully (a rule-5 retry): the layout's gain once its
  // recomputation is relaxed to the fastest lighter one that fits (none, selective, or the
  // moe_act variants); the recompute lever does it at the next step.
  std::optional<double> relaxed_gain(const sim::Layout& layout) const {
    if (parent_resolved.layout.recompute != sim::RecomputeGranularity::kFull ||
        !decoded_baseline.ok() || decoded_baseline->recompute == sim::RecomputeGranularity::kFull) {
      return std::nullopt;
    }
    const std::optional<Valued> relaxed = fastest_relaxed(c, parent_recipe, layout);
    if (!relaxed) return std::nullopt;
    return relaxed->prediction.tokens_per_s_per_gpu / base - 1;
  }

  // A layout's gain over the parent once it takes more rows per microbatch, where the policy
  // lets them change: the pair is a plan of two launches.
  std::optional<double> micro_batch_gain(const Recipe& recipe, const sim::Layout& layout) const {
    if (c.micro_batch_sizes.empty()) return std::nullopt;
    auto more = fastest_value(c, recipe, layout, "micro-batch", [&](const sim::Layout& value) {
      return value.micro_batch_size > layout.micro_batch_size;
    });
    if (!more) return std::nullopt;
    return more->prediction.tokens_per_s_per_gpu / base - 1;
  }

  // Replaces the candidate's own gain by a plan's where the plan is worth more.
  void plan_second_launch(Candidate& cand, const CatalogLever* lever,
                          const sim::Layout& layout) const {
    const std::optional<double> relaxed = relaxed_gain(layout);
    const std::optional<double> more_rows = micro_batch_gain(cand.recipe, layout);
    if (more_rows && *more_rows * kOomPlanDiscount > cand.expected_gain &&
        (!relaxed || *more_rows > *relaxed)) {
      cand.planned_gain = *more_rows * kOomPlanDiscount;
      cand.score = cand.planned_gain * confidence_of(c, lever, "");
      cand.rule = std::string(kMicroBatchPlan) + ": this layout at more rows per microbatch (" +
                  percent(*more_rows) +
                  " over the parent); the rows-per-microbatch lever takes it next";
      return;
    }
    if (relaxed && *relaxed * kOomPlanDiscount > cand.expected_gain) {
      cand.planned_gain = *relaxed * kOomPlanDiscount;
      cand.score = cand.planned_gain * confidence_of(c, lever, "");
      cand.rule = std::string(kRelaxPlan) +
                  ": this layout fits without the parent's full recomputation (" +
                  percent(*relaxed) +
                  " over the parent once relaxed); the recompute lever "
                  "relaxes it next";
    }
  }

  void add(const sim::SweepEntry& entry, bool needs_retry) {
    sim::Layout layout = entry.layout.layout;
    if (needs_retry) copy_move_fields(layout, decoded_parent, "recompute");
    auto recipe = sim::apply_layout(parent_recipe, layout);
    if (!recipe.ok()) return;
    auto cand = admissible(c, parent_recipe, parent, std::move(recipe).value());
    if (!cand) return;
    const sim::Prediction p = sim::predict_on_stack(c.w, cand->recipe, c.stack);
    if (!p.valid) return;  // infeasible: scores zero without a launch
    if (!needs_retry && !fits(p, c.evidence.memory_margin)) return;
    if (needs_retry && (fits(p, 0.0) || !fits(entry.prediction, c.evidence.memory_margin))) return;
    auto to = resolved_of(c.w, cand->recipe);
    if (!to) return;
    cand->lever = layout_lever_name(c.w, parent_resolved, *to);
    cand->degrees = changed_degrees(parent_resolved, *to);
    const CatalogLever* lever = find_lever(c.catalog, cand->lever);
    cand->mechanism = lever ? lever->mechanism : "parallel layout";
    cand->expected_gain = entry.prediction.tokens_per_s_per_gpu / base - 1;
    cand->needs_retry = needs_retry;
    cand->score =
        cand->expected_gain * confidence_of(c, lever, "") * (needs_retry ? kOomPlanDiscount : 1.0);
    cand->rule = needs_retry ? kRule5Plan : "";
    if (!needs_retry) plan_second_launch(*cand, lever, layout);
    out.push_back(std::move(*cand));
  }
};

// The candidates from the leader (`parent_recipe`, run `parent`; estimated in c.leader_estimate).
std::vector<Candidate> candidates_from(Context& c, const Recipe& parent_recipe, RunId parent) {
  std::vector<Candidate> out;
  auto parent_resolved = resolved_of(c.w, parent_recipe);
  const sim::Prediction& parent_p = c.leader_estimate;
  if (!parent_resolved || !parent_p.valid || parent_p.tokens_per_s_per_gpu <= 0) return out;
  const sim::Layout& pl = parent_resolved->layout;
  auto decoded_parent = sim::decode_layout(c.w, parent_recipe);
  if (!decoded_parent.ok()) return out;

  // Layouts: the parent's other settings kept (rule 5: no memory savings beyond the parent's).
  sim::SweepOptions options;
  options.top_k = kLayoutCandidatesMax;
  options.vary_recompute = false;
  options.vary_dispatcher = false;
  options.vary_offload = false;
  // The overlap switches are catalog levers of their own: a layout that also flips one would be
  // two levers.
  options.vary_overlaps = false;
  options.vary_cuda_graphs = false;  // CUDA graphs are a catalog lever of their own, too
  auto plain = layout_sweep(c, parent_recipe, options);
  // Layouts that only fit with full recomputation: proposed as they are, expected to run out of
  // memory, then retried with recomputation (rule 5).
  sim::Layout with_full = decoded_parent.value();
  with_full.recompute = sim::RecomputeGranularity::kFull;
  with_full.recompute_method = sim::RecomputeMethod::kUniform;
  with_full.recompute_num_layers = 1;
  auto full_recipe = sim::apply_layout(parent_recipe, with_full);
  Result<sim::SweepResult> saved = make_error("parent already recomputes fully");
  if (full_recipe.ok() && pl.recompute != sim::RecomputeGranularity::kFull) {
    saved = layout_sweep(c, full_recipe.value(), options);
  }
  const auto decoded_baseline = sim::decode_layout(c.w, c.baseline);
  LayoutProposer proposer{c,
                          parent_recipe,
                          parent,
                          *parent_resolved,
                          decoded_parent.value(),
                          decoded_baseline,
                          parent_p.tokens_per_s_per_gpu,
                          out};
  if (plain.ok()) {
    for (const sim::SweepEntry& entry : plain->best) proposer.add(entry, false);
  }
  if (saved.ok()) {
    for (const sim::SweepEntry& entry : saved->best) proposer.add(entry, true);
  }

  move_candidates(c, parent_recipe, parent, decoded_parent.value(), with_full,
                  parent_p.tokens_per_s_per_gpu, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  return out;
}

TunerProposal to_proposal(const Context& c, const Candidate& cand, const std::string& rules) {
  TunerProposal proposal;
  proposal.recipe = cand.recipe;
  proposal.parent_run_id = cand.parent;
  proposal.hypothesis.bottleneck = c.diagnosis.text;
  proposal.hypothesis.bottleneck_tag = std::string(tag_of(c.diagnosis.bottleneck));
  std::string mechanism = cand.lever + ": " + cand.mechanism;
  if (!cand.rule.empty()) mechanism += " [" + cand.rule + "]";
  mechanism += " | " + rules;
  proposal.hypothesis.mechanism = mechanism;
  proposal.hypothesis.expected_gain_fraction = cand.expected_gain;
  return proposal;
}

// What the campaign has tried: the levers per parent, the parallel degrees probed (rule 4), the
// runs already retried (rule 5), and the rule state every hypothesis records.
struct History {
  std::set<std::string> probed;
  std::map<RunId, std::set<std::string>> levers_tried_on;  // parent -> lever sets
  std::set<RunId> retried;                                 // parents of a later proposal
  std::vector<std::string> levers_tested;
  std::vector<std::string> degrees;  // the degrees rule 4 probes
  std::string rules;
};

void record_proposal(const sim::Workload& w, const std::optional<sim::ResolvedLayout>& baseline,
                     const CandidateProposed& proposal, History& h) {
  for (const Lever& lever : proposal.levers) {
    h.levers_tried_on[proposal.parent_run_id].insert(lever.name);
    if (std::find(h.levers_tested.begin(), h.levers_tested.end(), lever.name) ==
        h.levers_tested.end()) {
      h.levers_tested.push_back(lever.name);
    }
  }
  h.retried.insert(proposal.parent_run_id);
  auto parsed = parse_recipe(proposal.recipe, "proposal");
  if (!parsed.ok() || !baseline) return;
  if (auto r = resolved_of(w, parsed.value())) {
    for (const std::string& degree : changed_degrees(*baseline, *r)) h.probed.insert(degree);
  }
}

History history_of(const Context& c) {
  History h;
  const auto baseline = resolved_of(c.w, c.baseline);
  for (const auto& [id, proposal] : c.state.proposals) {
    if (proposal.purpose == RunPurpose::kSearch) record_proposal(c.w, baseline, proposal, h);
  }
  h.degrees = {"TP", "PP", "CP", "DP"};
  if (c.w.model.num_experts > 0) h.degrees.insert(h.degrees.begin() + 2, "EP");
  std::string probed_text;
  std::string unprobed;
  for (const std::string& d : h.degrees) {
    std::string& list = h.probed.contains(d) ? probed_text : unprobed;
    list += (list.empty() ? "" : ",") + d;
  }
  h.rules = "rules: r4 degrees probed {" + probed_text + "} unprobed {" + unprobed +
            "}; memory margin " + percent(c.evidence.memory_margin) + "; estimator confidence " +
            percent(c.evidence.confidence);
  return h;
}

// A retry of a search run that failed with `failure` and has not been retried: one value of
// `move` that `accept` takes, from the failed layout.
struct FailureRetry {
  FailureClass failure;
  std::string move;
  std::string lever;
  std::function<bool(const sim::Layout& failed, const sim::Layout& value)> accept;
  std::string why;
  bool avoid_hung_overlaps = false;  // a retry that would repeat a cured hang is ruled out
  // Of the accepted values, the fastest the estimate fits within the campaign's memory margin
  // (which a run that ran out of memory inside its estimate has widened to cover it); when none
  // does, the one with the lowest estimated peak.
  bool fastest_that_fits = false;
};

// In flight with no outcome yet (a run is charged after its outcome is recorded).
bool pending(const RunState& run) { return run.in_flight() && !run.measured && !run.failed; }

// Whether a retry of a failed run is still in flight: its outcome (a retry that fails again is
// retried in turn) is the evidence for the next, so retries go one at a time.
bool retry_in_flight(const ControlState& state) {
  for (const auto& [id, run] : state.runs) {
    if (!searched(run) || !pending(run)) continue;
    const auto proposal = state.proposals.find(run.proposal_id);
    if (proposal == state.proposals.end()) continue;
    const RunState* parent = state.run(proposal->second.parent_run_id);
    if (parent != nullptr && parent->failed) return true;
  }
  return false;
}

// The retry, by the estimator, of one failed search run that has not been retried: the value of
// `move` that `accept` takes from the failed layout. A retry that would keep the data-parallel
// overlaps of a run whose hang was cured by dropping one is expected to hang too, and is ruled out
// without a launch: dropping the overlap as well would change two levers (rule 2).
std::optional<Candidate> retry_of_run(Context& c, const FailureRetry& retry, RunId id,
                                      const sim::Prediction& leader_p,
                                      const std::vector<sim::Layout>& hung) {
  const Recipe failed = recipe_of(c.state, id, c.baseline);
  auto layout = sim::decode_layout(c.w, failed);
  if (!layout.ok()) return std::nullopt;
  std::optional<Candidate> leanest;
  double leanest_gib = 0;
  std::optional<Candidate> fastest;
  double fastest_tokens = 0;
  for (const sim::Layout& value : move_values(c.w, c.stack, layout.value(), retry.move)) {
    if (!retry.accept(layout.value(), value)) continue;
    const bool hangs = std::any_of(
        hung.begin(), hung.end(), [&](const sim::Layout& h) { return same_dp_overlaps(value, h); });
    if (hangs) continue;
    auto recipe = sim::apply_layout(failed, value);
    if (!recipe.ok()) continue;
    auto cand = admissible(c, failed, id, std::move(recipe).value());
    if (!cand) continue;
    const sim::Prediction p = sim::predict_on_stack(c.w, cand->recipe, c.stack);
    if (!p.valid) continue;
    const CatalogLever* lever = find_lever(c.catalog, retry.lever);
    cand->lever = retry.lever;
    cand->mechanism = lever ? lever->mechanism : retry.lever;
    cand->expected_gain =
        leader_p.valid ? p.tokens_per_s_per_gpu / leader_p.tokens_per_s_per_gpu - 1 : 0;
    cand->rule = "run " + std::to_string(id) + " " + retry.why;
    if (!retry.fastest_that_fits) return cand;
    if (fits(p, c.evidence.memory_margin) && p.tokens_per_s_per_gpu > fastest_tokens) {
      fastest_tokens = p.tokens_per_s_per_gpu;
      fastest = cand;
    }
    if (!leanest || p.peak_memory_gib < leanest_gib) {
      leanest_gib = p.peak_memory_gib;
      leanest = std::move(cand);
    }
  }
  return fastest ? fastest : leanest;
}

// A retry of a failed search run, one at a time: while one is in flight the others wait for its
// outcome (siblings that failed alike tend to fail alike once retried). Of the runs not yet
// retried, the one whose retry is expected to beat the leader by the most, if by more than
// `min_gain`; the others are not launched while that holds (asked again at every step). Without
// a prediction of the leader there is nothing to compare with, and the first retry is taken.
std::optional<Candidate> retry_one(Context& c, const History& h, const FailureRetry& retry,
                                   const sim::Prediction& leader_p, double min_gain) {
  if (retry_in_flight(c.state)) return std::nullopt;
  const std::vector<sim::Layout> hung =
      retry.avoid_hung_overlaps ? c.cured_hangs : std::vector<sim::Layout>{};
  std::optional<Candidate> best;
  for (const auto& [id, run] : c.state.runs) {
    if (run.purpose != RunPurpose::kSearch || !run.failed ||
        run.failed->failure_class != retry.failure || h.retried.contains(id)) {
      continue;
    }
    std::optional<Candidate> cand = retry_of_run(c, retry, id, leader_p, hung);
    if (!cand) continue;
    if (!leader_p.valid) return cand;
    if (cand->expected_gain > min_gain && (!best || cand->expected_gain > best->expected_gain)) {
      best = std::move(cand);
    }
  }
  return best;
}

// A run launched as the first half of a plan takes its planned step next, once, before it is
// judged: a layout launched at its parent's full recomputation because it fits without it ("rule
// 5 in reverse: ...") has its recomputation relaxed to the fastest that fits; a layout launched
// for more rows per microbatch ("rows per microbatch next: ...") takes the fastest larger size
// that fits.
std::optional<Candidate> follow_plans(Context& c, const sim::Prediction& leader_p,
                                      double min_gain) {
  std::set<RunId> parents;
  for (const auto& [id, proposal] : c.state.proposals) parents.insert(proposal.parent_run_id);
  for (const auto& [id, run] : c.state.runs) {
    if (!searched(run) || !run.measured || parents.contains(id)) continue;
    const auto proposal = c.state.proposals.find(run.proposal_id);
    if (proposal == c.state.proposals.end()) continue;
    const Recipe planned = recipe_of(c.state, id, c.baseline);
    auto layout = sim::decode_layout(c.w, planned);
    if (!layout.ok()) continue;
    std::optional<PlannedStep> step =
        planned_step(c, proposal->second.hypothesis.mechanism, planned, layout.value());
    if (!step) continue;
    auto cand = admissible(c, planned, id, std::move(step->next.recipe));
    if (!cand) continue;
    const CatalogLever* lever = find_lever(c.catalog, step->lever);
    cand->lever = step->lever;
    cand->mechanism = lever ? lever->mechanism : step->lever;
    cand->expected_gain =
        leader_p.valid
            ? step->next.prediction.tokens_per_s_per_gpu / leader_p.tokens_per_s_per_gpu - 1
            : 0;
    if (leader_p.valid && cand->expected_gain <= min_gain) continue;
    cand->rule = "run " + std::to_string(id) + " was launched to take this step next (" +
                 std::string(step->plan) + "): the fastest that fits";
    return cand;
  }
  return std::nullopt;
}

// Failed runs are retried before they are ruled out: a hang with one data-parallel overlap fewer
// (overlapping streams can deadlock), and, rule 5, an out-of-memory layout with its memory
// savings back.
std::optional<Candidate> retry_failures(Context& c, const History& h, double min_gain) {
  const sim::Prediction& leader_p = c.leader_estimate;
  const FailureRetry hang{FailureClass::kHang, "dp-overlap", "data-parallel-overlap",
                          [](const sim::Layout& failed, const sim::Layout& value) {
                            return failed.overlap_grad_reduce &&
                                   !(value.overlap_param_gather && !failed.overlap_param_gather);
                          },
                          "hung; overlapping streams can deadlock, so it is retried with one "
                          "data-parallel overlap fewer before it is ruled out"};
  if (auto cand = retry_one(c, h, hang, leader_p, min_gain)) return cand;
  // Rule 5's retry adds recomputation back: the fastest recomputation the estimate expects to fit,
  // or the one that saves the most (full recomputation) when none is expected to.
  const FailureRetry oom{.failure = FailureClass::kOom,
                         .move = "recompute",
                         .lever = "recompute",
                         .accept =
                             [](const sim::Layout& failed, const sim::Layout& value) {
                               return failed.recompute != sim::RecomputeGranularity::kFull &&
                                      value.recompute != sim::RecomputeGranularity::kNone;
                             },
                         .why =
                             "ran out of memory; rule 5: retried with recomputation (the "
                             "fastest expected to fit, else full) before it is ruled out",
                         .avoid_hung_overlaps = true,
                         .fastest_that_fits = true};
  if (auto cand = retry_one(c, h, oom, leader_p, min_gain)) return cand;
  return follow_plans(c, leader_p, min_gain);
}

// The share of the leader's estimated step that a lever's target costs (its catalog tags) take:
// the most the lever can gain by removing them. Unbounded (1) for compute, which is no exposed
// cost; a leader that ran is never short of memory.
double target_share(const CatalogLever& lever, const std::vector<Cost>& costs, double step_s) {
  double share = 0;
  for (const Bottleneck tag : lever.helps_when) {
    if (tag == Bottleneck::kCompute || tag == Bottleneck::kInvalid) return 1.0;
    for (const Cost& cost : costs) {
      if (helps_under(tag, cost.second)) share += cost.first;
    }
  }
  return share / std::max(step_s, 1e-12);
}

// The catalog levers of `ranked` (other than layouts) at their feasible limit on the leader: their
// target costs, at kProbeCeilingFactor times the estimate, stay below the noise band, so no value
// of them can clear it. Rule 4 counts them as ruled out without a launch.
std::set<std::string> levers_at_feasible_limit(const Context& c,
                                               const std::vector<Candidate>& ranked,
                                               const Recipe& leader, double band) {
  std::set<std::string> out;
  const sim::Prediction& estimate = c.leader_estimate;
  if (!estimate.valid) return out;
  const std::vector<Cost> costs = exposed_costs(c.w, leader, estimate);
  for (const Candidate& cand : ranked) {
    const CatalogLever* lever = find_lever(c.catalog, cand.lever);
    if (cand.set == "parallel-layout" || lever == nullptr) continue;
    if (kProbeCeilingFactor * target_share(*lever, costs, estimate.step_time_s) < band) {
      out.insert(lever->name);
    }
  }
  return out;
}

// The lever groups the leader's own proposal changed: its parent and the leader are the same
// recipe at two values of them, both measured.
std::set<std::string> leader_levers(const ControlState& state, RunId leader_id) {
  std::set<std::string> out;
  const RunState* leader = state.run(leader_id);
  if (leader == nullptr || leader->purpose != RunPurpose::kSearch) return out;
  const auto proposal = state.proposals.find(leader->proposal_id);
  if (proposal == state.proposals.end()) return out;
  for (const Lever& lever : proposal->second.levers) out.insert(lever.name);
  return out;
}

// Rule 4: probe every parallel degree before the topology counts as exhausted, and count a lever
// as ruled out on the leader only once a second value of it was measured on the same recipe, or
// at its feasible limit. A lever that made the leader has its second value in the leader's
// parent. A lever with a value the estimate expects to run out of memory (more rows per
// microbatch, less recomputation) sits at its feasible limit on the leader: that launch would
// measure nothing, its rule-5 retry is not expected to clear the band (else it would have been
// proposed for its gain), and the lever's values the other way give memory back for time.
std::optional<Candidate> probe_unexplored(const ControlState& state, const History& h,
                                          const std::vector<Candidate>& ranked, RunId leader_id,
                                          const std::set<std::string>& at_limit) {
  for (const std::string& degree : h.degrees) {
    if (h.probed.contains(degree)) continue;
    for (const Candidate& cand : ranked) {
      if (cand.set != "parallel-layout" || !cand.degrees.contains(degree)) continue;
      Candidate probe = cand;
      // Appended: a plan's rule text must survive (follow_plans reads it).
      probe.rule = (probe.rule.empty() ? "" : probe.rule + "; ") + "rule 4: probing " + degree +
                   " before the topology counts as exhausted";
      return probe;
    }
  }
  const auto tried = h.levers_tried_on.find(leader_id);
  std::set<std::string> settled = leader_levers(state, leader_id);
  for (const Candidate& cand : ranked) {
    if (cand.rule == kRule5Plan) settled.insert(cand.set);
  }
  for (const Candidate& cand : ranked) {
    if (cand.set == "parallel-layout" || at_limit.contains(cand.lever) ||
        settled.contains(cand.set) ||
        (tried != h.levers_tried_on.end() && tried->second.contains(cand.set))) {
      continue;
    }
    Candidate probe = cand;
    probe.rule = (probe.rule.empty() ? "" : probe.rule + "; ") + "rule 4: a second value of " +
                 cand.set + " on the leader";
    return probe;
  }
  return std::nullopt;
}

// The single lever a measured search run changed and whether it beat its parent by the band.
std::optional<std::string> winning_lever(const ControlState& state, const RunState& run,
                                         double band) {
  auto proposal = state.proposals.find(run.proposal_id);
  if (proposal == state.proposals.end() || proposal->second.levers.size() != 1) {
    return std::nullopt;
  }
  const std::string set = proposal->second.levers.front().name;
  if (set == "parallel-layout") return std::nullopt;
  const RunState* parent = state.run(proposal->second.parent_run_id);
  const double parent_tps = parent && parent->measured
                                ? parent->measured->tokens_per_sec_per_gpu
                                : state.view.baseline_band.mean_tokens_per_s_per_gpu;
  if (run.measured->tokens_per_sec_per_gpu <= parent_tps * (1 + band)) return std::nullopt;
  return set;
}

// Rule 6: levers that won on an earlier layout, re-tested on the leader.
std::optional<Candidate> retest_winners(Context& c, const Recipe& leader, RunId leader_id,
                                        double band) {
  auto leader_layout = sim::decode_layout(c.w, leader);
  if (!leader_layout.ok()) return std::nullopt;
  for (const auto& [id, run] : c.state.runs) {
    if (run.purpose != RunPurpose::kSearch || !run.measured || id == leader_id) continue;
    const std::optional<std::string> set = winning_lever(c.state, run, band);
    if (!set) continue;
    auto winner_layout = sim::decode_layout(c.w, recipe_of(c.state, id, c.baseline));
    if (!winner_layout.ok()) continue;
    for (const CatalogLever& lever : c.catalog.levers) {
      if (lever.set != *set || lever.move == "layout") continue;
      sim::Layout moved = leader_layout.value();
      copy_move_fields(moved, winner_layout.value(), lever.move);
      auto recipe = sim::apply_layout(leader, moved);
      if (!recipe.ok()) continue;
      auto cand = admissible(c, leader, leader_id, std::move(recipe).value());
      if (!cand) continue;
      const sim::Prediction p = sim::predict_on_stack(c.w, cand->recipe, c.stack);
      if (!fits(p, c.evidence.memory_margin)) continue;
      cand->lever = lever.name;
      cand->mechanism = lever.mechanism;
      cand->rule = "rule 6: " + *set + " won on run " + std::to_string(id) +
                   "'s layout; re-tested on the leader";
      return cand;
    }
  }
  return std::nullopt;
}

// The most the estimator expects of the search runs in flight, over the leader: a candidate
// expected to lose to one of them would most likely be superseded before it could lead, so it
// waits for them rather than spend GPU-hours beside them. Runs expected not to fit count nothing.
double in_flight_expected_gain(const Context& c) {
  const sim::Prediction& leader_p = c.leader_estimate;
  if (!leader_p.valid) return 0;
  double best = 0;
  for (const auto& [id, run] : c.state.runs) {
    if (!searched(run) || !pending(run)) continue;
    const Recipe recipe = recipe_of(c.state, id, c.baseline);
    const sim::Prediction p = sim::predict_on_stack(c.w, recipe, c.stack);
    if (fits(p, c.evidence.memory_margin)) {
      best = std::max(best, p.tokens_per_s_per_gpu / leader_p.tokens_per_s_per_gpu - 1);
    }
    // A run launched as the first half of a plan counts at the plan's end.
    const auto proposal = c.state.proposals.find(run.proposal_id);
    auto layout = sim::decode_layout(c.w, recipe);
    if (proposal == c.state.proposals.end() || !layout.ok()) continue;
    if (const std::optional<PlannedStep> step =
            planned_step(c, proposal->second.hypothesis.mechanism, recipe, layout.value())) {
      const double gain =
          step->next.prediction.tokens_per_s_per_gpu / leader_p.tokens_per_s_per_gpu - 1;
      best = std::max(best, gain * kOomPlanDiscount);
    }
  }
  return best;
}

TunerStop stop_with_evidence(const Context& c, const History& h,
                             const std::vector<Candidate>& ranked, RunId leader_id, double band,
                             const std::set<std::string>& at_limit) {
  TunerStop stop;
  std::ostringstream evidence;
  evidence << "leader run " << leader_id << " at " << percent(c.state.view.leader.gain_fraction)
           << " over the baseline; no single-lever candidate is expected to clear the band ("
           << percent(band) << ")";
  if (!ranked.empty()) {
    evidence << "; best remaining " << ranked.front().lever << " expected "
             << percent(ranked.front().expected_gain);
  }
  if (!at_limit.empty()) {
    std::string names;
    for (const std::string& name : at_limit) names += (names.empty() ? "" : ",") + name;
    evidence << "; at their feasible limit (target costs below half the band): {" << names << "}";
  }
  evidence << "; " << h.rules;
  if (!c.evidence.summary.empty()) evidence << "; " << c.evidence.summary;
  stop.evidence = evidence.str();
  stop.levers_tested = h.levers_tested;
  stop.last_diagnosis = c.diagnosis.text;
  return stop;
}

}  // namespace

ExpertTuner::ExpertTuner(sim::Workload workload, Policy policy, LeverCatalog catalog,
                         sim::StackProfile stack)
    : workload_(std::move(workload)),
      policy_(std::move(policy)),
      catalog_(std::move(catalog)),
      stack_(std::move(stack)) {}

TunerAnswer ExpertTuner::next(const TunerView& view) {
  const ControlState& state = view.state;
  Context c{workload_, stack_, policy_, catalog_, state, view.baseline, {}, {}, {}, {}, &sweeps_};
  if (!micro_batch_sizes_) micro_batch_sizes_ = free_micro_batch_sizes(policy_, view.baseline);
  c.micro_batch_sizes = *micro_batch_sizes_;
  for (const auto& [id, proposal] : state.proposals) c.seen.insert(proposal.recipe_hash);
  c.seen.insert(recipe_hash(view.baseline));
  c.evidence = weigh_evidence(workload_, stack_, state, view.baseline);
  c.cured_hangs = find_cured_hangs(c);
  c.deepep_across_domains_fails = deepep_failed_across_domains(c);
  if (!state.view.settings.learned_rules.empty()) {
    auto learned = parse_learned_rules(state.view.settings.learned_rules, "learned rules");
    if (learned.ok()) c.learned = std::move(learned).value();
  }
  const double band = std::max(state.view.baseline_band.band_fraction, 0.01);
  const RunId leader_id = state.view.leader.run_id;
  const Recipe leader = recipe_of(state, leader_id, view.baseline);
  const RunState* leader_run = state.run(leader_id);
  const bool leader_profiled = leader_run != nullptr && leader_run->profile_analyzed;
  std::optional<ExpertDiagnosis> profiled;
  if (leader_profiled)
    profiled = diagnose_profile(workload_, leader, *leader_run->profile_analyzed);
  c.leader_estimate = sim::predict_on_stack(workload_, leader, stack_);
  c.diagnosis = profiled ? *profiled : diagnose_estimate(workload_, leader, c.leader_estimate);
  const History h = history_of(c);

  // Nothing expected to lose to a run in flight is launched beside it.
  const double pending_gain = in_flight_expected_gain(c);
  if (auto cand = retry_failures(c, h, pending_gain + 0.5 * band)) {
    return to_proposal(c, *cand, h.rules);
  }
  const std::vector<Candidate> ranked = candidates_from(c, leader, leader_id);
  // A layout expected to run out of memory waits while a retry is in flight: its own retry would
  // have to wait for that one's outcome too.
  const bool retry_pending = retry_in_flight(state);
  for (const Candidate& cand : ranked) {
    const double gain = std::max(cand.expected_gain, cand.planned_gain);
    if (gain <= 0.5 * band || cand.score <= 0) break;
    if ((cand.needs_retry && retry_pending) || gain <= pending_gain + 0.5 * band) continue;
    TunerProposal proposal = to_proposal(c, cand, h.rules);
    // An unclear diagnosis of an unprofiled leader: the run is profiled, to tell the costs apart.
    proposal.profile = !c.diagnosis.clear && !leader_profiled;
    return proposal;
  }
  // Nothing expected to clear the band, or only candidates that wait for runs in flight. Wait for
  // those: they may move the leader.
  if (state.runs_in_flight() > 0) return TunerWait{};
  const std::set<std::string> at_limit = levers_at_feasible_limit(c, ranked, leader, band);
  if (auto probe = probe_unexplored(state, h, ranked, leader_id, at_limit)) {
    return to_proposal(c, *probe, h.rules);
  }
  if (auto retest = retest_winners(c, leader, leader_id, band)) {
    return to_proposal(c, *retest, h.rules);
  }
  return stop_with_evidence(c, h, ranked, leader_id, band, at_limit);
}

}  // namespace attune
