#include "adapters/model/published.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <set>

#include "adapters/model/flops.h"
#include "adapters/model/performance_model.h"
#include "adapters/model/preset_files.h"
#include "adapters/model/presets.h"
#include "events/assert.h"
#include "events/split.h"

namespace attune::sim {
namespace {

constexpr std::string_view kRowsPath = "published/rows.tsv";
// Median polish sweeps until no effect moves by more than this, or at most this many times.
constexpr double kPolishSettled = 1e-12;
constexpr int kPolishSweepsMax = 1000;

// The row's columns by header name; numbers parsed where the model needs them.
class Columns {
 public:
  Columns(const std::vector<std::string_view>& header, const std::vector<std::string_view>& cells,
          std::string where)
      : header_(header), cells_(cells), where_(std::move(where)) {}

  std::string text(std::string_view name) const {
    const auto at = std::find(header_.begin(), header_.end(), name);
    if (at == header_.end() || static_cast<std::size_t>(at - header_.begin()) >= cells_.size()) {
      missing_ = std::string(name);
      return "";
    }
    return std::string(cells_[static_cast<std::size_t>(at - header_.begin())]);
  }
  // An integer; `fallback` for "-" (unknown) and for a cell like "0(tp=1)".
  int integer(std::string_view name, int fallback) const {
    const std::string cell = text(name);
    int value = fallback;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (error != std::errc() || end == cell.data()) return fallback;
    return value;
  }
  // A finite number, the whole cell; 0 for "-" (not published).
  double number(std::string_view name) const {
    const std::string cell = text(name);
    if (cell == "-") return 0;
    double value = 0;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (error != std::errc() || end != cell.data() + cell.size() || !std::isfinite(value)) {
      bad_ = std::string(name) + " '" + cell + "'";
      return 0;
    }
    return value;
  }
  std::optional<std::string> problem() const {
    if (cells_.size() != header_.size()) {
      return where_ + ": expected " + std::to_string(header_.size()) +
             " tab-separated cells as in the header, found " + std::to_string(cells_.size());
    }
    if (!missing_.empty()) return where_ + ": no column '" + missing_ + "' in the header";
    if (!bad_.empty()) return where_ + ": expected a number in " + bad_;
    return std::nullopt;
  }

 private:
  const std::vector<std::string_view>& header_;
  const std::vector<std::string_view>& cells_;
  std::string where_;
  mutable std::string missing_;
  mutable std::string bad_;
};

PublishedRow row_of(const Columns& c) {
  PublishedRow r;
  r.id = c.text("id");
  r.source = c.text("source");
  r.release = c.text("release");
  r.model = c.text("model");
  r.system = c.text("system");
  r.gpus = c.integer("gpus", 0);
  r.precision = c.text("precision");
  r.gbs = c.integer("gbs", 0);
  r.mbs = c.integer("mbs", 1);
  r.seq = c.integer("seq", 0);
  r.tp = c.integer("tp", 1);
  r.pp = c.integer("pp", 1);
  r.cp = c.integer("cp", 1);
  r.vp = c.integer("vp", 1);
  r.ep = c.integer("ep", 1);
  r.etp = c.integer("etp", 1);
  r.fsdp = c.integer("fsdp", 0) > 0;
  r.tokens_per_s_per_gpu = c.number("tokens_per_s_per_gpu");
  r.tflops_per_gpu = c.number("tflops_per_gpu");
  r.cuda_graph_impl = c.text("cuda_graph_impl");
  r.cuda_graph_scope = c.text("cuda_graph_scope");
  r.dispatcher = c.text("dispatcher");
  r.a2a_overlap = c.integer("a2a_overlap", 0) > 0;
  r.recompute = c.text("recompute");
  r.pipeline_layout = c.text("pipeline_layout");
  r.tp_comm_overlap = c.integer("tp_comm_overlap", 0) > 0;
  r.force_balance = c.integer("force_balance", -1);
  // Unknown ("-"), the layout still says how many MTP layers it places.
  r.mtp_layers = c.integer("mtp_layers", -1);
  r.other_flags = c.text("other_flags");
  r.env = c.text("env");
  r.task = c.text("task");
  if (r.mtp_layers < 0) {
    r.mtp_layers =
        static_cast<int>(std::count(r.pipeline_layout.begin(), r.pipeline_layout.end(), 'm'));
  }
  r.recipe_status = c.text("recipe_status");
  return r;
}

// attune's preset for a row's model, or empty: the preset of that name, or for a Llama 3 row the
// Llama 3.1 preset of its size (the same architecture). A new preset prices its rows without an
// entry here.
std::string model_preset(const std::string& model) {
  static const std::map<std::string, std::string> kAliases = {{"llama3-8b", "llama3.1-8b"},
                                                              {"llama3-70b", "llama3.1-70b"}};
  static const std::vector<std::string> kPresets = model_preset_names();
  if (const auto alias = kAliases.find(model); alias != kAliases.end()) return alias->second;
  return std::find(kPresets.begin(), kPresets.end(), model) != kPresets.end() ? model : "";
}

// The FP8 recipe flag of a row's precision; nullopt for a precision the model does not price.
std::optional<std::string> precision_flags(const std::string& precision) {
  if (precision == "bf16") return "";
  if (precision == "fp8-cs") return " --fp8-format hybrid --fp8-recipe tensorwise";
  if (precision == "fp8-mx") return " --fp8-format hybrid --fp8-recipe mxfp8";
  if (precision == "fp8-bs" || precision == "fp8-blockwise") {
    return " --fp8-format hybrid --fp8-recipe blockwise";
  }
  if (precision == "fp8") return " --fp8-format hybrid";
  return std::nullopt;
}

std::string dispatcher_flags(const PublishedRow& r) {
  if (r.ep <= 1 && r.dispatcher == "-") return "";
  std::string flags = " --moe-grouped-gemm --moe-permute-fusion";
  if (r.dispatcher == "hybridep" || r.dispatcher == "deepep") {
    flags += " --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend " + r.dispatcher;
  } else {
    flags += " --moe-token-dispatcher-type alltoall";
  }
  if (r.a2a_overlap) flags += " --overlap-moe-expert-parallel-comm";
  if (r.force_balance == 1) flags += " --moe-router-force-load-balancing";
  return flags;
}

std::string graph_flags(const PublishedRow& r) {
  if (r.cuda_graph_impl == "full_iteration" || r.cuda_graph_scope == "full_iteration") {
    // The whole step as one graph; Megatron wants the NaN check off with it.
    return " --cuda-graph-impl full_iteration --no-check-for-nan-in-loss-and-grad";
  }
  if (r.cuda_graph_impl == "transformer_engine" || r.cuda_graph_impl == "local") {
    std::string modules;
    for (std::string_view m : split_fields(r.cuda_graph_scope, ',')) {
      if (m == "attn" || m == "mlp" || m == "moe" || m == "moe_router" || m == "moe_preprocess") {
        modules += " " + std::string(m);
      }
    }
    return " --cuda-graph-impl " + r.cuda_graph_impl +
           (modules.empty() ? "" : " --cuda-graph-modules" + modules);
  }
  return "";
}

std::string recompute_flags(const std::string& recompute) {
  const std::vector<std::string_view> parts = split_fields(recompute, ':');
  if (parts[0] == "selective") {
    // An empty module list recomputes nothing (Megatron's default list would be core_attn).
    if (parts.size() > 1 && parts[1] == "(empty-list)") return "";
    std::string modules;
    if (parts.size() > 1 && parts[1] != "-") {
      for (std::string_view m : split_fields(parts[1], ',')) modules += " " + std::string(m);
    }
    return " --recompute-granularity selective" +
           (modules.empty() ? "" : " --recompute-modules" + modules);
  }
  if (parts[0] == "full") {
    std::string flags = " --recompute-granularity full";
    if (parts.size() > 2 && parts[1] != "-" && parts[2] != "-") {
      flags += " --recompute-method " + std::string(parts[1]) + " --recompute-num-layers " +
               std::string(parts[2]);
    }
    return flags;
  }
  return "";
}

// The value of KEY in the row's other settings ("KEY=VALUE;..."), or empty.
std::string other_setting(const PublishedRow& r, std::string_view key) {
  for (std::string_view part : split_fields(r.other_flags, ';')) {
    if (part.size() > key.size() && part.starts_with(key) && part[key.size()] == '=') {
      return std::string(part.substr(key.size() + 1));
    }
  }
  return "";
}

// The settings of the source's other column the model reads: the uneven pipeline split, the
// shared-expert overlap, bf16 gradient reduction, the fused cross entropy (on unless it says
// False), activation offload, Transformer Engine's op fuser (the fused grouped MLP runs only
// through it) and the experts' gate interleaving (which that MLP needs).
std::string other_flags(const PublishedRow& r) {
  std::string flags;
  if (other_setting(r, "account_for_embedding_in_pipeline_split") == "True") {
    flags += " --account-for-embedding-in-pipeline-split";
  }
  if (other_setting(r, "account_for_loss_in_pipeline_split") == "True") {
    flags += " --account-for-loss-in-pipeline-split";
  }
  if (other_setting(r, "moe_shared_expert_overlap") == "True") {
    flags += " --moe-shared-expert-overlap";
  }
  if (other_setting(r, "ddp.grad_reduce_in_fp32") == "False") flags += " --grad-reduce-in-bf16";
  if (other_setting(r, "use_transformer_engine_op_fuser") == "True") {
    flags += " --use-transformer-engine-op-fuser";
  }
  const std::string interleave = other_setting(r, "moe_mlp_glu_interleave_size");
  if (!interleave.empty() && interleave != "None") {
    flags += " --moe-mlp-glu-interleave-size " + interleave;
  }
  if (other_setting(r, "cross_entropy_loss_fusion") != "False") {
    flags += " --cross-entropy-loss-fusion";
  }
  const std::string budget = other_setting(r, "moe_expert_rank_capacity_factor");
  if (!budget.empty() && budget != "None" && r.dispatcher == "hybridep") {
    flags += " --moe-expert-rank-capacity-factor " + budget;
  }
  if (other_setting(r, "cpu_offloading") == "True") {
    const std::string layers = other_setting(r, "cpu_offloading_num_layers");
    if (!layers.empty()) flags += " --cpu-offloading-num-layers " + layers;
  }
  return flags;
}

// The data-parallel settings the source states, each on unless it says False.
std::string data_parallel_flags(const PublishedRow& r) {
  std::string flags;
  if (other_setting(r, "ddp.use_distributed_optimizer") != "False") {
    flags += " --use-distributed-optimizer";
  }
  if (other_setting(r, "ddp.overlap_grad_reduce") != "False") flags += " --overlap-grad-reduce";
  if (other_setting(r, "ddp.overlap_param_gather") != "False") flags += " --overlap-param-gather";
  return flags;
}

// The row's environment as far as the model reads it: CUDA_DEVICE_MAX_CONNECTIONS as the row
// sets it (1 where it says nothing, as Megatron's own scripts do; unset for Megatron-FSDP), and
// Transformer Engine's fused grouped MLP where the row turns it on.
std::string model_env(const PublishedRow& r) {
  std::string connections = r.fsdp ? "" : "CUDA_DEVICE_MAX_CONNECTIONS=1 ";
  std::string fused;
  for (std::string_view part : split_fields(r.env, ';')) {
    if (part.starts_with("CUDA_DEVICE_MAX_CONNECTIONS=")) connections = std::string(part) + " ";
    if (part == "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1") fused = std::string(part) + " ";
  }
  return fused + connections;
}

std::string recipe_text(const PublishedRow& r, const std::string& precision) {
  std::string text = model_env(r) + "python pretrain_gpt.py";
  text += " --tensor-model-parallel-size " + std::to_string(r.tp) +
          " --pipeline-model-parallel-size " + std::to_string(r.pp) + " --context-parallel-size " +
          std::to_string(r.cp);
  if (r.ep > 1) text += " --expert-model-parallel-size " + std::to_string(r.ep);
  if (r.ep > 1) text += " --expert-tensor-parallel-size " + std::to_string(r.etp);
  if (r.vp > 1 && r.pipeline_layout == "-") {
    text += " --num-virtual-stages-per-pipeline-rank " + std::to_string(r.vp);
  }
  if (r.pipeline_layout != "-" && !r.pipeline_layout.empty()) {
    text += " --pipeline-model-parallel-layout " + r.pipeline_layout;
  }
  if (r.tp > 1 && other_setting(r, "sequence_parallel") != "False") text += " --sequence-parallel";
  if (r.tp_comm_overlap && r.tp > 1) text += " --tp-comm-overlap";
  text += " --micro-batch-size " + std::to_string(r.mbs) + " --global-batch-size " +
          std::to_string(r.gbs) + " --seq-length " + std::to_string(r.seq) + " --bf16" + precision;
  text += r.fsdp ? " --use-megatron-fsdp" : data_parallel_flags(r);
  if (r.mtp_layers > 0) text += " --mtp-num-layers " + std::to_string(r.mtp_layers);
  return text + dispatcher_flags(r) + graph_flags(r) + recompute_flags(r.recompute) +
         other_flags(r);
}

double median_of(std::vector<double> values) {
  ATTUNE_ASSERT(!values.empty(), "a median of something");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

MedianPolish median_polish(const std::map<std::pair<std::string, std::string>, double>& cells) {
  MedianPolish out;
  auto& row_effect = out.row_effects;
  auto& column_effect = out.column_effects;
  for (const auto& [key, value] : cells) {
    row_effect[key.first] = 0;
    column_effect[key.second] = 0;
  }
  if (cells.empty()) return out;
  // The median residual of each row (`rows` true) or column, moved into its effect; returns the
  // largest move.
  auto sweep = [&](bool rows) {
    auto& effects = rows ? row_effect : column_effect;
    const auto& across = rows ? column_effect : row_effect;
    double largest = 0;
    for (auto& [key, effect] : effects) {
      std::vector<double> residuals;
      for (const auto& [other, other_effect] : across) {
        const auto cell = cells.find(rows ? std::pair(key, other) : std::pair(other, key));
        if (cell != cells.end()) residuals.push_back(cell->second - effect - other_effect);
      }
      const double move = median_of(std::move(residuals));
      effect += move;
      largest = std::max(largest, std::fabs(move));
    }
    return largest;
  };
  // Tukey's median polish: sweep the rows, then the columns, until nothing moves (a table can
  // also cycle: kPolishSweepsMax bounds it). The columns' median moves into every row, so the
  // rows carry the level.
  while (out.sweeps < kPolishSweepsMax) {
    ++out.sweeps;
    const double moved = std::max(sweep(true), sweep(false));
    std::vector<double> columns;
    for (const auto& [column, effect] : column_effect) columns.push_back(effect);
    const double level = median_of(std::move(columns));
    for (auto& [column, effect] : column_effect) effect -= level;
    for (auto& [row, effect] : row_effect) effect += level;
    if (moved < kPolishSettled) {
      out.settled = true;
      break;
    }
  }
  return out;
}

namespace {

// Each system's log ratio of published to predicted against the median system's, with each
// model's own error taken out: the median log ratio of every (model, system) cell of the rows
// where `keep` holds, split by median polish into a model effect (which carries the level) and a
// system effect. A model whose rows all err the same way moves no system's effect, as a mean over
// rows would; and no held-out figure is scaled by the level of the other models' errors.
MedianPolish system_log_effects(const std::vector<CalibrationRow>& rows,
                                const std::function<bool(const CalibrationRow&)>& keep) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> logs;
  for (const CalibrationRow& r : rows) {
    if (!r.skipped.empty() || !keep(r)) continue;
    logs[{r.row.model, r.row.system}].push_back(std::log(r.row.tokens_per_s_per_gpu / r.predicted));
  }
  std::map<std::pair<std::string, std::string>, double> cells;
  for (auto& [key, values] : logs) cells[key] = median_of(std::move(values));
  return median_polish(cells);
}

// Each predicted row's error after the scale fitted on the rows of other groups.
// Returns whether every polish settled.
bool held_out(std::vector<CalibrationRow>& rows,
              const std::function<std::string(const PublishedRow&)>& group,
              std::optional<double> CalibrationRow::*error) {
  bool settled = true;
  std::set<std::string> groups;
  for (const CalibrationRow& r : rows) {
    if (r.skipped.empty() && group(r.row) != "-") groups.insert(group(r.row));
  }
  for (const std::string& g : groups) {
    const MedianPolish fit =
        system_log_effects(rows, [&](const CalibrationRow& r) { return group(r.row) != g; });
    settled = settled && fit.settled;
    for (CalibrationRow& r : rows) {
      if (!r.skipped.empty() || group(r.row) != g) continue;
      const auto scale = fit.column_effects.find(r.row.system);
      if (scale == fit.column_effects.end()) continue;  // nothing to fit this system on
      r.*error = r.predicted * std::exp(scale->second) / r.row.tokens_per_s_per_gpu - 1.0;
    }
  }
  return settled;
}

// A row the source gives in Megatron's TFLOP/s/GPU, in tokens/s/GPU by Megatron's own FLOPs
// per token for its model, sequence, TP and MTP depth (the conversion the paper's Appendix D
// makes); rows given in tokens/s/GPU, or without a preset, as they are.
PublishedRow with_tokens(PublishedRow row) {
  if (row.tokens_per_s_per_gpu > 0 || row.tflops_per_gpu <= 0 || row.seq <= 0) return row;
  auto model = load_model(model_preset(row.model));
  if (!model.ok()) return row;
  const double per_token =
      megatron_flops_per_step(model.value(), row.seq, 1, row.tp, row.mtp_layers) / row.seq;
  row.tokens_per_s_per_gpu = row.tflops_per_gpu * 1e12 / per_token;
  return row;
}

// Each term's share and refitted multipliers, and the error with every term refitted, in sample
// and fitted on the other models' rows.
void attribute_to_terms(Calibration& out) {
  std::vector<TermRow> rows;
  std::vector<std::vector<double>> shares(kTermCount);
  for (const CalibrationRow& r : out.rows) {
    if (!r.skipped.empty()) continue;
    rows.push_back(r.terms);
    double step_s = 0;
    for (double t : r.terms.predicted_s) step_s += t;
    for (std::size_t k = 0; k < kTermCount; ++k) {
      shares[k].push_back(step_s > 0 ? r.terms.predicted_s[k] / step_s : 0.0);
    }
  }
  if (rows.empty()) return;
  std::array<bool, kTermCount> all;
  all.fill(true);
  const TermSeconds together = fit_term_multipliers(rows, all, kTermRidgePerRow);
  std::vector<double> errors;
  for (const TermRow& row : rows) errors.push_back(error_with(row, together));
  out.terms_refitted = summarize(errors);
  for (std::size_t k = 0; k < kTermCount; ++k) {
    std::array<bool, kTermCount> one{};
    one[k] = true;
    const TermSeconds alone = fit_term_multipliers(rows, one, kTermRidgePerRow);
    std::vector<double> alone_errors;
    for (const TermRow& row : rows) alone_errors.push_back(error_with(row, alone));
    std::vector<double> share = shares[k];
    std::sort(share.begin(), share.end());
    out.terms.push_back(TermAttribution{term_names()[k], share[share.size() / 2], alone[k],
                                        summarize(alone_errors), together[k]});
  }
  std::set<std::string> models;
  for (const CalibrationRow& r : out.rows) {
    if (r.skipped.empty()) models.insert(r.row.model);
  }
  std::vector<double> held_out_errors;
  for (const std::string& model : models) {
    std::vector<TermRow> others;
    for (const CalibrationRow& r : out.rows) {
      if (r.skipped.empty() && r.row.model != model) others.push_back(r.terms);
    }
    if (others.empty()) continue;
    const TermSeconds fitted = fit_term_multipliers(others, all, kTermRidgePerRow);
    for (const CalibrationRow& r : out.rows) {
      if (r.skipped.empty() && r.row.model == model) {
        held_out_errors.push_back(error_with(r.terms, fitted));
      }
    }
  }
  out.model_out_terms_refitted = summarize(held_out_errors);
}

}  // namespace

std::string_view published_rows_text() {
  for (const PresetFile& file : preset_files()) {
    if (file.path == kRowsPath) return file.text;
  }
  return {};
}

Result<std::vector<PublishedRow>> parse_published_rows(std::string_view text,
                                                       std::string_view source_name) {
  std::vector<std::string_view> lines = split_fields(text, '\n');
  for (std::string_view& line : lines) {
    if (line.ends_with('\r')) line.remove_suffix(1);  // a file saved with CRLF line ends
  }
  if (lines.empty() || lines[0].find("tokens_per_s_per_gpu") == std::string_view::npos) {
    return make_error(
        std::string(source_name) +
        ":1: expected rows.tsv's header (id, source, ..., tokens_per_s_per_gpu, ...)");
  }
  const std::vector<std::string_view> header = split_fields(lines[0], '\t');
  std::vector<PublishedRow> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const std::vector<std::string_view> cells = split_fields(lines[i], '\t');
    const Columns columns(header, cells, std::string(source_name) + ":" + std::to_string(i + 1));
    PublishedRow row = row_of(columns);
    if (auto problem = columns.problem()) return make_error(*problem);
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<PublishedCase> published_case(const PublishedRow& row) {
  if (row.task != "pretrain") return make_error("not pre-training (" + row.task + ")");
  const std::string preset = model_preset(row.model);
  if (preset.empty()) return make_error("no model preset");
  if (const auto parts = split_fields(row.recompute, ':');
      parts[0] == "full" && (parts.size() < 3 || parts[1] == "-" || parts[2] == "-")) {
    return make_error("incomplete recipe: full recompute without its method");
  }
  auto hardware = load_hardware(row.system);
  if (!hardware.ok()) return make_error("no hardware preset");
  const auto precision = precision_flags(row.precision);
  if (!precision) return make_error("precision " + row.precision + " is not modelled");
  if (row.gpus <= 0 || row.gbs <= 0 || row.seq <= 0 || row.tokens_per_s_per_gpu <= 0) {
    return make_error("incomplete row (no tokens/s/GPU, no layout or no batch)");
  }
  PublishedCase out;
  out.workload.model = load_model(preset).value();
  out.workload.hardware = std::move(hardware).value();
  out.workload.gpus = row.gpus;
  out.workload.seq_length = row.seq;
  out.workload.global_batch_size = row.gbs;
  out.workload.precision = row.precision == "bf16" ? Precision::kBf16 : Precision::kFp8;
  auto recipe = parse_recipe(recipe_text(row, *precision), row.id);
  if (!recipe.ok()) return make_error("recipe: " + recipe.error());
  out.recipe = std::move(recipe).value();
  return out;
}

ErrorSummary summarize(const std::vector<double>& errors) {
  ErrorSummary s;
  s.rows = errors.size();
  if (errors.empty()) return s;
  std::vector<double> abs;
  for (double e : errors) abs.push_back(std::fabs(e));
  std::sort(abs.begin(), abs.end());
  s.median_abs = median_of(abs);
  const std::size_t rank =
      static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(abs.size())));
  s.p90_abs = abs[std::max<std::size_t>(rank, 1) - 1];
  return s;
}

Calibration calibrate(const std::vector<PublishedRow>& rows) {
  Calibration out;
  for (const PublishedRow& row : rows) {
    CalibrationRow r;
    r.row = with_tokens(row);
    auto c = published_case(r.row);
    if (!c.ok()) {
      r.skipped = c.error();
    } else {
      const Prediction p = predict(c->workload, c->recipe);
      if (!p.valid) {
        r.skipped = "Megatron refuses the recipe as attune reads it: " + p.error;
      } else if (!(p.tokens_per_s_per_gpu > 0)) {
        r.skipped = "the model predicts no throughput";
      } else {
        r.predicted = p.tokens_per_s_per_gpu;
        r.error_raw = r.predicted / r.row.tokens_per_s_per_gpu - 1.0;
        r.terms.predicted_s = term_seconds(p.breakdown);
        r.terms.measured_step_s = p.step_time_s * r.predicted / r.row.tokens_per_s_per_gpu;
        r.peak_memory_gib = p.peak_memory_gib;
        r.memory_capacity_gib = p.memory_capacity_gib;
        r.fits_in_memory = p.fits_in_memory;
        if (p.fits_in_memory) ++out.rows_fitting_in_memory;
      }
    }
    if (!r.skipped.empty()) ++out.skipped_by_reason[r.skipped.substr(0, r.skipped.find(':'))];
    out.rows.push_back(std::move(r));
  }
  const MedianPolish all = system_log_effects(out.rows, [](const CalibrationRow&) { return true; });
  for (const auto& [system, scale] : all.column_effects) {
    out.system_effects[system] = std::exp(scale);
  }
  const bool model_out_settled = held_out(
      out.rows, [](const PublishedRow& r) { return r.model; }, &CalibrationRow::error_model_out);
  const bool release_out_settled = held_out(
      out.rows, [](const PublishedRow& r) { return r.release; },
      &CalibrationRow::error_release_out);
  out.system_effects_settled = all.settled && model_out_settled && release_out_settled;
  std::vector<double> raw, model_out, release_out, model_exact, release_exact;
  std::map<std::string, std::vector<double>> by_model;
  for (const CalibrationRow& r : out.rows) {
    if (!r.skipped.empty()) continue;
    const bool exact = r.row.recipe_status == "exact";
    raw.push_back(r.error_raw);
    by_model[r.row.model].push_back(r.error_raw);
    if (r.error_model_out) model_out.push_back(*r.error_model_out);
    if (r.error_release_out) release_out.push_back(*r.error_release_out);
    if (r.error_model_out && exact) model_exact.push_back(*r.error_model_out);
    if (r.error_release_out && exact) release_exact.push_back(*r.error_release_out);
  }
  out.raw = summarize(raw);
  out.model_out = summarize(model_out);
  out.release_out = summarize(release_out);
  out.model_out_exact = summarize(model_exact);
  out.release_out_exact = summarize(release_exact);
  for (const auto& [model, errors] : by_model) out.raw_by_model[model] = summarize(errors);
  attribute_to_terms(out);
  return out;
}

}  // namespace attune::sim
