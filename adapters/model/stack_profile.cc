#include "adapters/model/stack_profile.h"

#include "adapters/model/performance_model.h"
#include "adapters/model/toml_fields.h"

namespace attune::sim {
namespace {

// A term may run up to this many times slower (or faster) than on the calibrated stack.
constexpr double kTermFactorMin = 0.2;
constexpr double kTermFactorMax = 20.0;
constexpr double kBetweenStepsMaxS = 3600.0;
constexpr double kPerMicrobatchMaxS = 60.0;

void read_factors(TomlFields& f, CostFactors& c) {
  const struct {
    const char* key;
    double* term;
  } terms[] = {{"step.gemm", &c.gemm},
               {"step.attention", &c.attention},
               {"step.elementwise", &c.elementwise},
               {"step.tp_comm", &c.tp_comm},
               {"step.cp_comm", &c.cp_comm},
               {"step.ep_a2a", &c.ep_a2a},
               {"step.pp_p2p", &c.pp_p2p},
               {"step.dp_comm", &c.dp_comm},
               {"step.optimizer", &c.optimizer},
               {"step.recompute", &c.recompute},
               {"step.host", &c.host},
               {"step.memory", &c.memory}};
  for (const auto& [key, term] : terms) {
    f.read(key, *term, false, kTermFactorMin, kTermFactorMax);
  }
}

}  // namespace

CostFactors times(CostFactors a, const CostFactors& b) {
  a.gemm *= b.gemm;
  a.attention *= b.attention;
  a.elementwise *= b.elementwise;
  a.tp_comm *= b.tp_comm;
  a.cp_comm *= b.cp_comm;
  a.ep_a2a *= b.ep_a2a;
  a.pp_p2p *= b.pp_p2p;
  a.dp_comm *= b.dp_comm;
  a.optimizer *= b.optimizer;
  a.recompute *= b.recompute;
  a.host *= b.host;
  a.memory *= b.memory;
  return a;
}

Dispatcher dispatcher_on_stack(const StackProfile& stack, Dispatcher asked) {
  return stack.variable_seq_lengths && asked == Dispatcher::kAllgather ? Dispatcher::kAlltoall
                                                                       : asked;
}

ResolvedLayout layout_on_stack(const StackProfile& stack, ResolvedLayout resolved) {
  if (!stack.cuda_graphs) resolved.layout.cuda_graph = CudaGraphImpl::kNone;
  resolved.layout.dispatcher = dispatcher_on_stack(stack, resolved.layout.dispatcher);
  if (!stack.p2p_overlap) resolved.layout.overlap_p2p = false;
  return resolved;
}

Prediction predict_on_stack(const Workload& workload, ResolvedLayout resolved,
                            const StackProfile& stack, const CostFactors& factors) {
  resolved = layout_on_stack(stack, std::move(resolved));
  Prediction p = predict_resolved(workload, resolved, factors);
  if (!p.valid) return p;
  const double microbatch_slots = resolved.microbatches + resolved.layout.pp - 1.0;
  const double loop_s = stack.per_microbatch_s * microbatch_slots + stack.between_steps_s;
  if (loop_s <= 0) return p;
  const double scale = p.step_time_s / (p.step_time_s + loop_s);
  p.step_time_s += loop_s;
  p.breakdown.loop_s += loop_s;
  p.tokens_per_s_per_gpu *= scale;
  p.mfu *= scale;
  p.megatron_tflops_per_gpu *= scale;
  return p;
}

Prediction predict_on_stack(const Workload& workload, const Recipe& recipe,
                            const StackProfile& stack) {
  Result<Layout> layout = decode_layout(workload, recipe);
  if (!layout.ok()) return predict(workload, recipe, stack.factors);
  Result<ResolvedLayout> resolved = resolve_layout(workload, layout.value());
  if (!resolved.ok()) return predict(workload, recipe, stack.factors);
  return predict_on_stack(workload, std::move(resolved).value(), stack, stack.factors);
}

Result<StackProfile> parse_stack_toml(std::string_view text, std::string_view source) {
  StackProfile stack;
  TomlFields f(text, source);
  f.read("name", stack.name, true);
  f.read("description", stack.description, false);
  read_factors(f, stack.factors);
  f.read("loop.between_steps_s", stack.between_steps_s, false, 0.0, kBetweenStepsMaxS);
  f.read("loop.per_microbatch_s", stack.per_microbatch_s, false, 0.0, kPerMicrobatchMaxS);
  f.read("loop.cuda_graphs", stack.cuda_graphs, false);
  f.read("loop.variable_seq_lengths", stack.variable_seq_lengths, false);
  f.read("loop.p2p_overlap", stack.p2p_overlap, false);
  Status status = f.finish();
  if (!status.ok()) return make_error(status.error());
  return stack;
}

}  // namespace attune::sim
