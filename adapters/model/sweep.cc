#include "adapters/model/sweep.h"

#include <algorithm>
#include <cstdint>

#include "adapters/model/performance_model.h"

namespace attune::sim {
namespace {

constexpr int kTpChoices[] = {1, 2, 4, 8, 16};
constexpr int kCpChoices[] = {1, 2, 4, 8, 16};
// Context parallelism below this many tokens per rank only adds communication.
constexpr int kCpMinTokensPerRank = 1024;

// How the decoder layers are split over pipeline ranks, in Megatron's terms.
struct Split {
  bool account_embedding = false;
  bool account_loss = false;
  int first = 0;  // 0: not set
  int last = 0;
  std::vector<int> rank_layers;  // decoder-layer slots per rank, for VP divisibility
};

std::vector<Split> pipeline_splits(int layers, int pp) {
  std::vector<Split> splits;
  auto even = [&](int total, bool embedding, bool loss) {
    if (total % pp != 0) return;
    Split s;
    s.account_embedding = embedding;
    s.account_loss = loss;
    s.rank_layers.assign(pp, total / pp);
    splits.push_back(s);
  };
  even(layers, false, false);
  if (pp == 1) return splits;
  even(layers + 2, true, true);
  even(layers + 1, true, false);
  even(layers + 1, false, true);
  // Light end stages: the first, the last or both hold fewer layers than the middle ones.
  const int most = (layers + pp - 1) / pp + 1;
  for (int x = 1; x <= most; ++x) {
    if (pp >= 3 && (layers - 2 * x) > 0 && (layers - 2 * x) % (pp - 2) == 0) {
      const int middle = (layers - 2 * x) / (pp - 2);
      if (middle > x) {
        Split s;
        s.first = x;
        s.last = x;
        s.rank_layers.assign(pp, middle);
        s.rank_layers.front() = x;
        s.rank_layers.back() = x;
        splits.push_back(s);
      }
    }
    if ((layers - x) > 0 && (layers - x) % (pp - 1) == 0) {
      const int middle = (layers - x) / (pp - 1);
      if (middle > x) {
        Split first;
        first.first = x;
        first.rank_layers.assign(pp, middle);
        first.rank_layers.front() = x;
        splits.push_back(first);
        Split last;
        last.last = x;
        last.rank_layers.assign(pp, middle);
        last.rank_layers.back() = x;
        splits.push_back(last);
      }
    }
  }
  return splits;
}

struct RecomputeChoice {
  RecomputeGranularity granularity = RecomputeGranularity::kNone;
  RecomputeMethod method = RecomputeMethod::kNone;
  int num_layers = 0;
  std::uint32_t modules = kRecomputeCoreAttn;

  bool operator==(const RecomputeChoice&) const = default;
};

std::vector<RecomputeChoice> recompute_choices(const Workload& w, const Layout& base, bool vary) {
  std::vector<RecomputeChoice> choices;
  auto add = [&](RecomputeChoice c) {
    if (std::find(choices.begin(), choices.end(), c) == choices.end()) choices.push_back(c);
  };
  RecomputeChoice baseline{base.recompute, base.recompute_method, base.recompute_num_layers,
                           base.recompute_modules};
  if (base.moe_layer_recompute) {
    baseline.granularity = RecomputeGranularity::kSelective;
    baseline.modules |= kRecomputeMoe;
  }
  add(baseline);
  if (!vary) return choices;
  add({RecomputeGranularity::kNone, RecomputeMethod::kNone, 0, base.recompute_modules});
  add({RecomputeGranularity::kSelective, RecomputeMethod::kNone, 0, kRecomputeCoreAttn});
  if (is_moe(w.model) && base.grouped_gemm) {
    add({RecomputeGranularity::kSelective, RecomputeMethod::kNone, 0, kRecomputeMoeAct});
    add({RecomputeGranularity::kSelective, RecomputeMethod::kNone, 0,
         kRecomputeMoeAct | kRecomputeLayernorm});
  }
  if (w.model.ffn_hidden_size > 0) {
    add({RecomputeGranularity::kSelective, RecomputeMethod::kNone, 0,
         kRecomputeCoreAttn | kRecomputeMlp});
  }
  add({RecomputeGranularity::kFull, RecomputeMethod::kUniform, 1, base.recompute_modules});
  return choices;
}

// Keeps the `k` fastest entries, fastest first; earlier entries win ties.
class Best {
 public:
  explicit Best(int k) : k_(std::max(1, k)) {}

  bool admits(double throughput) const {
    return static_cast<int>(entries_.size()) < k_ ||
           throughput > entries_.back().prediction.tokens_per_s_per_gpu;
  }
  void add(SweepEntry entry) {
    const double throughput = entry.prediction.tokens_per_s_per_gpu;
    auto at = std::find_if(entries_.begin(), entries_.end(), [&](const SweepEntry& e) {
      return e.prediction.tokens_per_s_per_gpu < throughput;
    });
    entries_.insert(at, std::move(entry));
    if (static_cast<int>(entries_.size()) > k_) entries_.pop_back();
  }
  std::vector<SweepEntry> take() { return std::move(entries_); }

 private:
  int k_;
  std::vector<SweepEntry> entries_;
};

// Where tensors, the sequence and the layers go: everything but the experts.
struct ParallelShape {
  int tp = 1;
  int cp = 1;
  int pp = 1;
  int vp = 1;
  int dp = 1;
  const Split* split = nullptr;
};

std::vector<ParallelShape> parallel_shapes(const Workload& w, const SweepOptions& options,
                                           const std::vector<std::vector<Split>>& splits_by_pp) {
  std::vector<ParallelShape> shapes;
  const ModelSpec& model = w.model;
  for (int tp : kTpChoices) {
    if (tp > options.max_tp || tp > w.hardware.nvlink_domain_gpus) continue;
    if (model.num_attention_heads % tp != 0 || w.gpus % tp != 0) continue;
    for (int cp : kCpChoices) {
      if (cp > options.max_cp || w.gpus % (tp * cp) != 0) continue;
      if (cp > 1 && (w.seq_length % (2 * cp) != 0 || w.seq_length / cp < kCpMinTokensPerRank)) {
        continue;
      }
      const int ranks = w.gpus / (tp * cp);
      for (int pp = 1; pp <= std::min(ranks, model.num_layers); ++pp) {
        if (ranks % pp != 0) continue;
        for (const Split& split : splits_by_pp[pp]) {
          for (int vp = 1; vp <= (pp > 1 ? options.max_vp : 1); ++vp) {
            bool divisible = true;
            for (int layers : split.rank_layers) divisible = divisible && layers % vp == 0;
            if (!divisible || (vp > 1 && split.rank_layers.front() / vp < 1)) continue;
            shapes.push_back(ParallelShape{tp, cp, pp, vp, ranks / pp, &split});
          }
        }
      }
    }
  }
  return shapes;
}

struct ExpertShape {
  int ep = 1;
  int etp = 0;  // 0: not set (a dense model)
};

std::vector<ExpertShape> expert_shapes(const ModelSpec& model, int tp, int ranks_per_stage) {
  if (!is_moe(model)) return {ExpertShape{}};
  std::vector<ExpertShape> shapes;
  for (int ep = 1; ep <= model.num_experts; ++ep) {
    if (model.num_experts % ep != 0) continue;
    for (int etp : tp > 1 ? std::vector<int>{1, tp} : std::vector<int>{1}) {
      if (ranks_per_stage % (ep * etp) == 0) shapes.push_back(ExpertShape{ep, etp});
    }
  }
  return shapes;
}

// The settings varied around a layout.
struct Knobs {
  int micro_batch_size = 1;
  RecomputeChoice recompute;
  Dispatcher dispatcher = Dispatcher::kAllgather;
  bool offload = false;
  bool tp_comm_overlap = false;
  bool ep_overlap = false;
  CudaGraphImpl cuda_graph = CudaGraphImpl::kNone;
  std::uint32_t cuda_graph_modules = 0;
};

std::vector<Knobs> knob_choices(const Workload& w, const Layout& base,
                                const SweepOptions& options) {
  std::vector<int> micro_batches = options.micro_batch_sizes;
  if (micro_batches.empty()) micro_batches.push_back(std::max(1, base.micro_batch_size));
  std::vector<Dispatcher> dispatchers{base.dispatcher};
  if (options.vary_dispatcher && is_moe(w.model)) {
    for (Dispatcher d : {Dispatcher::kAlltoall, Dispatcher::kFlex, Dispatcher::kAllgather}) {
      // A dispatcher the stack swaps for another runs as that one's draw.
      const bool swapped = dispatcher_on_stack(options.stack, d) != d;
      if (d != base.dispatcher && !swapped) dispatchers.push_back(d);
    }
  }
  std::vector<bool> offloads{base.optimizer_cpu_offload};
  if (options.vary_offload && base.precision_aware_optimizer) {
    offloads.push_back(!base.optimizer_cpu_offload);
  }
  std::vector<bool> tp_overlaps{base.tp_comm_overlap};
  std::vector<bool> ep_overlaps{base.ep_overlap};
  if (options.vary_overlaps) {
    tp_overlaps.push_back(!base.tp_comm_overlap);
    if (is_moe(w.model)) ep_overlaps.push_back(!base.ep_overlap);
  }
  struct Graphs {
    CudaGraphImpl impl;
    std::uint32_t modules;
  };
  std::vector<Graphs> graphs{{base.cuda_graph, base.cuda_graph_modules}};
  if (options.vary_cuda_graphs && options.stack.cuda_graphs) {
    // The modules of published MoE recipes (perf_model.md §3c); a dense model's graphs take whole
    // layers.
    const std::uint32_t modules =
        is_moe(w.model) ? kGraphAttn | kGraphMoeRouter | kGraphMoePreprocess : 0u;
    for (Graphs g :
         {Graphs{CudaGraphImpl::kNone, 0u}, Graphs{CudaGraphImpl::kTransformerEngine, modules}}) {
      if (g.impl != base.cuda_graph) graphs.push_back(g);
    }
  }
  std::vector<Knobs> knobs;
  for (int mbs : micro_batches) {
    for (const RecomputeChoice& rc : recompute_choices(w, base, options.vary_recompute)) {
      for (Dispatcher dispatcher : dispatchers) {
        for (bool offload : offloads) {
          for (bool tp_overlap : tp_overlaps) {
            for (bool ep_overlap : ep_overlaps) {
              for (const Graphs& graph : graphs) {
                knobs.push_back(Knobs{mbs, rc, dispatcher, offload, tp_overlap, ep_overlap,
                                      graph.impl, graph.modules});
              }
            }
          }
        }
      }
    }
  }
  return knobs;
}

bool recomputes_moe(const RecomputeChoice& r) {
  return r.granularity == RecomputeGranularity::kFull ||
         (r.granularity == RecomputeGranularity::kSelective && (r.modules & kRecomputeMoe));
}

// Whether Megatron accepts expert-parallel overlap on this layout (megatron_lm.md §1.8), so that
// the sweep does not try the same layout twice.
bool ep_overlap_allowed(const Layout& base, const ParallelShape& s, const ExpertShape& e,
                        const Knobs& k) {
  return e.ep > 1 && k.dispatcher != Dispatcher::kAllgather && (s.pp == 1 || s.vp > 1) &&
         !recomputes_moe(k.recompute) && base.mtp_layers <= 1;
}

// The baseline with one candidate's layout and knobs. Settings the candidate makes invalid are
// dropped: sequence parallelism and TP overlap at TP 1, expert-parallel overlap where Megatron
// refuses it, shared-expert overlap beside it or with the allgather dispatcher.
Layout candidate(const Layout& base, const ParallelShape& s, const ExpertShape& e, const Knobs& k) {
  Layout l = base;
  l.tp = s.tp;
  l.pp = s.pp;
  l.cp = s.cp;
  l.ep = e.ep;
  l.etp = e.etp;
  l.virtual_stages = s.vp > 1 ? s.vp : 0;
  l.layers_per_virtual_stage = 0;
  l.pipeline_layout.clear();
  l.account_for_embedding = s.split->account_embedding;
  l.account_for_loss = s.split->account_loss;
  l.first_stage_layers_set = s.split->first > 0;
  l.first_stage_layers = s.split->first;
  l.last_stage_layers_set = s.split->last > 0;
  l.last_stage_layers = s.split->last;
  l.microbatch_group_size = 0;
  l.micro_batch_size = k.micro_batch_size;
  l.sequence_parallel = s.tp > 1;
  l.tp_comm_overlap = k.tp_comm_overlap && s.tp > 1;
  l.recompute = k.recompute.granularity;
  l.recompute_method = k.recompute.method;
  l.recompute_num_layers = k.recompute.num_layers;
  l.recompute_modules = k.recompute.modules;
  l.moe_layer_recompute = false;
  l.dispatcher = k.dispatcher;
  l.ep_overlap = k.ep_overlap && ep_overlap_allowed(base, s, e, k);
  l.delay_wgrad_compute = base.delay_wgrad_compute && l.ep_overlap;
  l.shared_expert_overlap =
      base.shared_expert_overlap && k.dispatcher != Dispatcher::kAllgather && !l.ep_overlap;
  l.optimizer_cpu_offload = k.offload;
  if (k.cuda_graph != base.cuda_graph) {
    l.cuda_graph = k.cuda_graph;
    l.deprecated_cuda_graph_flag = false;
    l.cuda_graph_modules = k.cuda_graph_modules;
  }
  return l;
}

// Where the stack swaps the baseline's dispatcher (allgather runs as alltoall), a draw of the
// dispatcher it runs as, without the overlaps the swapped one cannot have, is the run the
// baseline's own draw already is.
bool swapped_twin_of_base(const StackProfile& stack, const Layout& base, const Layout& l) {
  return dispatcher_on_stack(stack, base.dispatcher) != base.dispatcher &&
         l.dispatcher == dispatcher_on_stack(stack, base.dispatcher) && !l.ep_overlap &&
         !l.shared_expert_overlap;
}

}  // namespace

Result<SweepResult> sweep(const Workload& w, const Recipe& baseline, const SweepOptions& options) {
  Result<Layout> decoded = decode_layout(w, baseline);
  if (!decoded.ok()) return make_error(decoded.error());
  const Layout& base = decoded.value();
  SweepResult result;
  Result<ResolvedLayout> resolved_base = resolve_layout(w, base);
  result.baseline = resolved_base.ok()
                        ? predict_on_stack(w, resolved_base.value(), options.stack, options.factors)
                        : predict(w, baseline, options.factors);

  std::vector<std::vector<Split>> splits_by_pp(w.model.num_layers + 1);
  for (int pp = 1; pp <= w.model.num_layers; ++pp) {
    if (w.gpus % pp == 0) splits_by_pp[pp] = pipeline_splits(w.model.num_layers, pp);
  }
  const std::vector<Knobs> knobs = knob_choices(w, base, options);
  Best best(options.top_k);
  for (const ParallelShape& shape : parallel_shapes(w, options, splits_by_pp)) {
    for (const ExpertShape& experts : expert_shapes(w.model, shape.tp, w.gpus / shape.pp)) {
      for (const Knobs& k : knobs) {
        if (w.global_batch_size % (k.micro_batch_size * shape.dp) != 0) continue;
        if (experts.ep == 1 && k.dispatcher != base.dispatcher) continue;
        // Overlap switches that the layout drops would repeat a layout already tried.
        if (k.tp_comm_overlap != base.tp_comm_overlap && shape.tp == 1) continue;
        if (k.ep_overlap != base.ep_overlap && !ep_overlap_allowed(base, shape, experts, k))
          continue;
        // Megatron refuses per-layer graphs with full recomputation.
        if (k.cuda_graph != base.cuda_graph && k.cuda_graph != CudaGraphImpl::kNone &&
            k.recompute.granularity == RecomputeGranularity::kFull)
          continue;
        const Layout drawn = candidate(base, shape, experts, k);
        if (swapped_twin_of_base(options.stack, base, drawn)) continue;
        ++result.layouts_considered;
        Result<ResolvedLayout> resolved = resolve_layout(w, drawn);
        if (!resolved.ok()) continue;
        ++result.layouts_valid;
        Prediction prediction =
            predict_on_stack(w, resolved.value(), options.stack, options.factors);
        if (!prediction.fits_in_memory) continue;
        ++result.layouts_fitting;
        if (!best.admits(prediction.tokens_per_s_per_gpu)) continue;
        Recipe recipe;  // built now only for a filter; else for the winners, below
        if (options.admit) {
          Result<Recipe> built = apply_layout(baseline, resolved.value().layout);
          if (!built.ok() || !options.admit(built.value())) continue;
          recipe = std::move(built).value();
        }
        best.add(SweepEntry{std::move(recipe), std::move(resolved).value(), std::move(prediction)});
      }
    }
  }
  result.best = best.take();
  if (options.admit) return result;
  for (SweepEntry& entry : result.best) {
    Result<Recipe> recipe = apply_layout(baseline, entry.layout.layout);
    if (!recipe.ok()) return make_error(recipe.error());
    entry.recipe = std::move(recipe).value();
  }
  return result;
}

}  // namespace attune::sim
