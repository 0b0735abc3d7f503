// Run rows and the campaign's economics: what `attune runs`, `attune report`, the leaderboard and
// the campaign summary show of each run and of the whole tuning.
//
// Owns two derivations from a CampaignView, both pure:
// - one RunRow per admitted run: its purpose, its parent, what it changed against that parent
//   (not against the baseline), its failure class, tokens/s/GPU, model TFLOP/s/GPU and MFU, the
//   GPU-hours charged, its verdict and gain;
// - the Economics of the campaign: the tuning's own GPU-hours and dollars, the baseline's and the
//   shipped recipe's MFU and dollars per million tokens, and the payback time, in hours of
//   training on the shipped recipe at the campaign's GPU count, that repays the tuning.
// The model's FLOPs per token and the GPU's peak come in as Efficiency (the performance model
// knows them; this folder does not), so the same view and efficiency always give the same rows.
// MFU is the paper's (Appendix D): FLOPs per token x tokens/s/GPU / dense peak.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "events/event.h"
#include "projections/campaign_view.h"

namespace attune {

// What one token costs the model, the GPU's dense peak at the campaign's precision, and the price
// of a GPU-hour. A zero means unknown: the figures that need it are left out, never guessed.
struct Efficiency {
  double model_flops_per_token = 0.0;
  double peak_tflops_per_gpu = 0.0;
  double usd_per_gpu_hour = 0.0;

  friend bool operator==(const Efficiency&, const Efficiency&) = default;
};

struct RunRow {
  RunId run_id = 0;
  RunPurpose purpose = RunPurpose::kSearch;
  std::optional<RunId> parent;  // 0 = the baseline; none for calibration runs
  std::string change;           // against the parent; "baseline", "retry of run N", ...
  std::string change_from_baseline;
  std::optional<FailureClass> failure_class;
  FailureCause failure_cause = FailureCause::kUnknown;  // what the failure's evidence names
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> tflops_per_gpu;  // model FLOPs (the MFU numerator), not Megatron's count
  std::optional<double> mfu;
  double gpu_hours = 0.0;
  std::optional<Verdict> verdict;
  std::optional<double> gain_fraction;  // judged runs only
  bool profiled = false;
  bool shipped = false;

  friend bool operator==(const RunRow&, const RunRow&) = default;
};

std::vector<RunRow> run_rows(const CampaignView& view, const Efficiency& efficiency);

// A failed run's class and, when its failure names one, its cause: "crash (transport-start)",
// "oom (out-of-memory)", "crash"; "-" for a run that did not fail.
std::string failure_text(const RunRow& row);

// What a run changed against its parent: a search run's settings against its parent run's (or the
// baseline's), "baseline" for calibration, "retry of run N on other nodes", "gate check of ...".
std::string change_against_parent(const LedgerRow& row, const std::map<RunId, LedgerRow>& rows);

// The changes from one diff (against the baseline) to another, as "flag before→after; ...";
// "no change" when they set the same values.
std::string change_between(std::span<const SettingChange> parent_diff,
                           std::span<const SettingChange> child_diff);

// "--pipeline-model-parallel-size 8→16; --recompute-granularity (none)→full" shortened for a
// narrow column: no leading dashes, Megatron's parallel degrees as tp, pp, ep, etp, cp, vpp.
std::string short_change(const std::string& change);

struct Economics {
  std::uint32_t gpu_count = 0;
  double tuning_gpu_hours = 0.0;  // every charge: tuner, checks and infrastructure
  std::optional<double> tuning_usd;
  double baseline_tokens_per_s_per_gpu = 0.0;  // the calibration mean
  double shipped_tokens_per_s_per_gpu = 0.0;   // the shipped recipe's (the baseline's if none)
  bool shipped_is_baseline = true;
  std::optional<double> baseline_mfu;
  std::optional<double> shipped_mfu;
  std::optional<double> baseline_usd_per_million_tokens;
  std::optional<double> shipped_usd_per_million_tokens;
  // Hours of training on the shipped recipe, on gpu_count GPUs, whose GPU-hours saved against the
  // baseline (for the same tokens) equal the tuning's GPU-hours. None when nothing faster shipped.
  std::optional<double> payback_hours;

  friend bool operator==(const Economics&, const Economics&) = default;
};

Economics economics_of(const CampaignView& view, const Efficiency& efficiency);

// Dollars per million tokens at a throughput and a price; none when either is not positive.
std::optional<double> usd_per_million_tokens(double tokens_per_s_per_gpu, double usd_per_gpu_hour);

// The run table as text, one line per run. Within `width` columns the change column is cut with
// "…" (a width of 0 prints every column whole); `wrap` instead continues a long change on the
// next lines. Ends with a newline.
std::string render_runs_text(std::span<const RunRow> rows, std::size_t width, bool wrap);
// RFC 4180 CSV with a header row; numbers unrounded, an absent figure empty.
std::string render_runs_csv(std::span<const RunRow> rows);
nlohmann::json runs_to_json(std::span<const RunRow> rows);
nlohmann::json to_json(const Economics& economics);

// The economics as summary lines ("mfu ...", "cost ...", "payback ..."), each ending with a
// newline; lines whose figures are unknown are left out.
std::string render_economics_text(const Economics& economics);

}  // namespace attune
