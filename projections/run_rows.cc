#include "projections/run_rows.h"

#include <algorithm>
#include <array>
#include <map>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "events/assert.h"
#include "projections/number_format.h"
#include "projections/text_table.h"

namespace attune {
namespace {

using Key = std::pair<ChangeKind, std::string>;
struct Side {
  bool present = false;
  std::string value;
  friend bool operator==(const Side&, const Side&) = default;
};

// Every setting a diff names, with its value on the diff's side, and the baseline's value.
void collect(std::span<const SettingChange> diff, std::map<Key, Side>& after,
             std::map<Key, Side>& baseline, std::map<Key, ObjectiveClass>& classes) {
  for (const SettingChange& change : diff) {
    const Key key{change.kind, change.name};
    after[key] = {change.after_present, change.after};
    baseline[key] = {change.before_present, change.before};
    classes[key] = change.objective_class;
  }
}

std::string change_of(const LedgerRow& row, const std::map<RunId, LedgerRow>& rows) {
  switch (row.purpose) {
    case RunPurpose::kCalibration:
      return "baseline";
    case RunPurpose::kRetry:
      return "retry of run " + std::to_string(row.retry_of_run_id) + " on other nodes";
    case RunPurpose::kCheck:
      return row.diff.empty() ? "gate check of the baseline"
                              : "gate check of run " + std::to_string(row.check_of_run_id);
    case RunPurpose::kSearch:
      break;
  }
  if (row.parent_run_id == 0) return diff_summary_of(row.diff);
  const auto parent = rows.find(row.parent_run_id);
  if (parent == rows.end()) return diff_summary_of(row.diff);
  return change_between(parent->second.diff, row.diff);
}

std::optional<RunId> row_parent(const LedgerRow& row) {
  switch (row.purpose) {
    case RunPurpose::kCalibration:
      return std::nullopt;
    case RunPurpose::kRetry:
      return row.retry_of_run_id;
    case RunPurpose::kCheck:
      return row.check_of_run_id;
    case RunPurpose::kSearch:
      break;
  }
  return row.parent_run_id;
}

std::optional<double> mfu_of(double tokens_per_s_per_gpu, const Efficiency& efficiency) {
  if (efficiency.model_flops_per_token <= 0 || efficiency.peak_tflops_per_gpu <= 0 ||
      tokens_per_s_per_gpu <= 0) {
    return std::nullopt;
  }
  return efficiency.model_flops_per_token * tokens_per_s_per_gpu /
         (efficiency.peak_tflops_per_gpu * 1e12);
}

}  // namespace

std::string change_against_parent(const LedgerRow& row, const std::map<RunId, LedgerRow>& rows) {
  return change_of(row, rows);
}

std::string change_between(std::span<const SettingChange> parent_diff,
                           std::span<const SettingChange> child_diff) {
  std::map<Key, Side> parent_after, child_after, baseline;
  std::map<Key, ObjectiveClass> classes;
  collect(parent_diff, parent_after, baseline, classes);
  collect(child_diff, child_after, baseline, classes);
  std::vector<SettingChange> changes;
  auto add = [&](const Key& key) {
    const auto in_parent = parent_after.find(key);
    const auto in_child = child_after.find(key);
    const Side from = in_parent != parent_after.end() ? in_parent->second : baseline[key];
    const Side to = in_child != child_after.end() ? in_child->second : baseline[key];
    if (from == to) return;
    changes.push_back(SettingChange{key.first, key.second, from.present, from.value, to.present,
                                    to.value, classes[key]});
  };
  for (const SettingChange& change : child_diff) add({change.kind, change.name});
  for (const SettingChange& change : parent_diff) {
    if (!child_after.contains({change.kind, change.name})) add({change.kind, change.name});
  }
  return changes.empty() ? "no change" : diff_summary_of(changes);
}

std::string failure_text(const RunRow& row) {
  return row.failure_class ? failure_text(*row.failure_class, row.failure_cause) : "-";
}

std::string short_change(const std::string& change) {
  // Megatron's parallel degrees first (they name a layout move), then the rest in diff order.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 16> kShort{{
      {"--tensor-model-parallel-size ", "tp "},
      {"--pipeline-model-parallel-size ", "pp "},
      {"--expert-model-parallel-size ", "ep "},
      {"--expert-tensor-parallel-size ", "etp "},
      {"--context-parallel-size ", "cp "},
      {"--num-virtual-stages-per-pipeline-rank ", "vpp "},
      {"--num-layers-per-virtual-pipeline-stage ", "vpp-layers "},
      {"--micro-batch-size ", "mbs "},
      {"--sequence-parallel ", "sp "},
      {"--decoder-first-pipeline-num-layers ", "pp-first "},
      {"--decoder-last-pipeline-num-layers ", "pp-last "},
      {"--recompute-granularity ", "recompute "},
      {"--recompute-num-layers ", "recompute-layers "},
      {"--moe-token-dispatcher-type ", "dispatcher "},
      {"--cuda-graph-impl ", "cuda-graph "},
      {"--", ""},
  }};
  constexpr std::size_t kDegrees = 9;  // the first entries of kShort
  std::vector<std::string> first, rest;
  std::size_t start = 0;
  while (start <= change.size()) {
    std::size_t end = change.find("; ", start);
    if (end == std::string::npos) end = change.size();
    std::string part = change.substr(start, end - start);
    bool degree = false;
    for (std::size_t k = 0; k < kShort.size(); ++k) {
      const auto& [long_name, short_name] = kShort[k];
      if (part.compare(0, long_name.size(), long_name) == 0) {
        part = std::string(short_name) + part.substr(long_name.size());
        degree = k < kDegrees;
        break;
      }
    }
    (degree ? first : rest).push_back(std::move(part));
    start = end + 2;
  }
  std::string out;
  for (const auto* parts : {&first, &rest}) {
    for (const std::string& part : *parts) out += (out.empty() ? "" : "; ") + part;
  }
  return out;
}

std::vector<RunRow> run_rows(const CampaignView& view, const Efficiency& efficiency) {
  std::vector<RunRow> rows;
  rows.reserve(view.ledger.rows.size());
  const std::optional<RunId> shipped_run = view.stop.shipped && !view.stop.shipped->is_baseline
                                               ? std::optional<RunId>(view.stop.shipped->run_id)
                                               : std::nullopt;
  for (const auto& [id, ledger_row] : view.ledger.rows) {
    RunRow row;
    row.run_id = id;
    row.purpose = ledger_row.purpose;
    row.parent = row_parent(ledger_row);
    row.change = change_against_parent(ledger_row, view.ledger.rows);
    row.change_from_baseline = ledger_row.diff_summary;
    row.failure_class = ledger_row.failure_class;
    row.failure_cause = ledger_row.failure_cause;
    row.tokens_per_s_per_gpu = ledger_row.tokens_per_s_per_gpu;
    if (row.tokens_per_s_per_gpu && efficiency.model_flops_per_token > 0) {
      row.tflops_per_gpu = efficiency.model_flops_per_token * *row.tokens_per_s_per_gpu / 1e12;
      row.mfu = mfu_of(*row.tokens_per_s_per_gpu, efficiency);
    }
    row.gpu_hours = ledger_row.gpu_hours_charged;
    row.verdict = ledger_row.verdict;
    if (row.verdict == Verdict::kNewLeader || row.verdict == Verdict::kNotBetter) {
      row.gain_fraction = ledger_row.gain_fraction;
    }
    row.profiled = ledger_row.profile;
    row.shipped = shipped_run == id;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::optional<double> usd_per_million_tokens(double tokens_per_s_per_gpu, double usd_per_gpu_hour) {
  if (!(tokens_per_s_per_gpu > 0) || !(usd_per_gpu_hour > 0)) return std::nullopt;
  return usd_per_gpu_hour / (tokens_per_s_per_gpu * 3600.0) * 1e6;
}

Economics economics_of(const CampaignView& view, const Efficiency& efficiency) {
  Economics out;
  out.gpu_count = view.settings.gpu_count;
  out.tuning_gpu_hours = view.budget.charged_gpu_hours;
  if (efficiency.usd_per_gpu_hour > 0) {
    out.tuning_usd = out.tuning_gpu_hours * efficiency.usd_per_gpu_hour;
  }
  out.baseline_tokens_per_s_per_gpu = view.baseline_band.mean_tokens_per_s_per_gpu;
  out.shipped_tokens_per_s_per_gpu = out.baseline_tokens_per_s_per_gpu;
  if (view.stop.shipped && !view.stop.shipped->is_baseline) {
    out.shipped_is_baseline = false;
    out.shipped_tokens_per_s_per_gpu = view.stop.shipped->tokens_per_sec_per_gpu;
  }
  out.baseline_mfu = mfu_of(out.baseline_tokens_per_s_per_gpu, efficiency);
  out.shipped_mfu = mfu_of(out.shipped_tokens_per_s_per_gpu, efficiency);
  out.baseline_usd_per_million_tokens =
      usd_per_million_tokens(out.baseline_tokens_per_s_per_gpu, efficiency.usd_per_gpu_hour);
  out.shipped_usd_per_million_tokens =
      usd_per_million_tokens(out.shipped_tokens_per_s_per_gpu, efficiency.usd_per_gpu_hour);
  // T hours on the shipped recipe process N x T x s tokens; the baseline needs N x T x s / b
  // GPU-hours for them, so T x N x (s / b - 1) GPU-hours are saved.
  const double base = out.baseline_tokens_per_s_per_gpu;
  const double shipped = out.shipped_tokens_per_s_per_gpu;
  if (!out.shipped_is_baseline && base > 0 && shipped > base && out.gpu_count > 0) {
    out.payback_hours = out.tuning_gpu_hours / (out.gpu_count * (shipped / base - 1.0));
  }
  return out;
}

}  // namespace attune
