// Published throughputs and the performance model's error on them, in and out of sample.
//
// data/published/rows.tsv (compiled in) holds published Megatron training measurements, each
// with the recipe that produced it (see its SOURCES.md). published_case() turns a row into the
// workload and the Megatron-LM recipe the model predicts; a row whose model or system has no
// preset, or whose precision the model does not price (NVFP4), is skipped with the reason.
//
// calibrate() predicts every row it can and reports the error three ways:
//  - raw: the model as it stands;
//  - leave one model out: a scale per system, fitted (the mean log ratio of published to
//    predicted) on the rows of every other model, applied to the held-out model's rows;
//  - leave one release out: the same with the releases (rows without a release, from outside
//    Megatron-Bridge's tables, are not held out by release);
// and attributes it to the model's cost terms (the multiplier per term that best explains the
// rows), in sample and, all terms together, leaving one model out.
// A held-out row's figure never enters the scale applied to it, and a row whose system has no
// training rows gets no out-of-sample error. Only pre-training rows are priced. Pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/model/term_fit.h"
#include "adapters/model/workload.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune::sim {

struct PublishedRow {
  std::string id;
  std::string source;
  std::string release;
  std::string model;
  std::string system;
  int gpus = 0;
  std::string precision;  // bf16, fp8-cs, fp8-mx, fp8-bs, nvfp4
  int gbs = 0;
  int mbs = 0;
  int seq = 0;
  int tp = 1, pp = 1, cp = 1, vp = 1, ep = 1, etp = 1;
  bool fsdp = false;
  double tokens_per_s_per_gpu = 0;  // 0 where the source gives only TFLOP/s
  double tflops_per_gpu = 0;        // Megatron's count, as the source prints it; 0 = none
  std::string cuda_graph_impl;
  std::string cuda_graph_scope;
  std::string dispatcher;
  bool a2a_overlap = false;
  std::string recompute;  // none, selective:m1,m2, full:method:layers
  std::string pipeline_layout;
  bool tp_comm_overlap = false;
  // moe_router_force_load_balancing: 1 forced (the recipe carries the flag), 0 routing that
  // follows the data, -1 not stated.
  int force_balance = -1;
  int mtp_layers = 0;
  std::string other_flags;    // the source's other settings, KEY=VALUE;...
  std::string env;            // the source's environment, NAME=VALUE;...
  std::string task;           // pretrain, sft, lora
  std::string recipe_status;  // exact or partial
};

// The compiled-in rows.tsv.
std::string_view published_rows_text();

// Rows from tab-separated text with rows.tsv's header; an error names the line and the column.
Result<std::vector<PublishedRow>> parse_published_rows(std::string_view text,
                                                       std::string_view source_name);

struct PublishedCase {
  Workload workload;
  Recipe recipe;
};

// The workload and recipe of a row, or why the model cannot price it.
Result<PublishedCase> published_case(const PublishedRow& row);

struct CalibrationRow {
  PublishedRow row;     // a row given in TFLOP/s gets tokens/s/GPU by Megatron's FLOPs per token
  std::string skipped;  // why the row was not predicted; empty when it was
  double predicted = 0;
  double error_raw = 0;                     // predicted / published - 1
  std::optional<double> error_model_out;    // leave one model out
  std::optional<double> error_release_out;  // leave one release out
  TermRow terms;  // the predicted step's seconds per cost term, and the published step time
  double peak_memory_gib = 0;  // the predicted peak of the fullest pipeline stage
  double memory_capacity_gib = 0;
  bool fits_in_memory = false;  // every published row ran, so each should fit
};

struct ErrorSummary {
  std::size_t rows = 0;
  double median_abs = 0;
  double p90_abs = 0;
};

// How much of the error one cost term carries: its share of the predicted step and the
// multiplier that best explains the published rows, refitted alone and with every term at once
// (term_fit.h). In sample: a diagnosis of the physics.
struct TermAttribution {
  std::string_view term;
  double share_median = 0;  // of the predicted step, over the priced rows
  double alone_multiplier = 1.0;
  ErrorSummary alone;  // the rows' error with this term alone refitted
  double together_multiplier = 1.0;
};

struct Calibration {
  std::vector<CalibrationRow> rows;
  ErrorSummary raw;
  ErrorSummary model_out;
  ErrorSummary release_out;
  // The same over the rows whose recipe the source states whole (recipe_status exact).
  ErrorSummary model_out_exact;
  ErrorSummary release_out_exact;
  std::map<std::string, ErrorSummary> raw_by_model;
  // Per system, published over predicted throughput against the median system's: the system
  // effect of a median polish of the rows' log ratios by model and system (a model's own error
  // taken out). The held-out figures scale each row by its system's effect fitted without the
  // row's group.
  std::map<std::string, double> system_effects;
  bool system_effects_settled = false;     // every median polish, in and out of sample, settled
  std::size_t rows_fitting_in_memory = 0;  // priced rows the memory model says fit (each one ran)
  std::map<std::string, std::size_t> skipped_by_reason;
  std::vector<TermAttribution> terms;
  ErrorSummary terms_refitted;            // every term refitted, in sample
  ErrorSummary model_out_terms_refitted;  // every term fitted on the other models' rows
};

Calibration calibrate(const std::vector<PublishedRow>& rows);

// Tukey's median polish of a two-way table keyed (row, column), cells possibly missing: a cell is
// about its row's effect plus its column's, and each row's and each column's residuals have a
// median of zero once the polish settles. The column effects are centred on the median column
// (the mean of the middle two for an even count); the row effects carry the level.
struct MedianPolish {
  std::map<std::string, double> row_effects;
  std::map<std::string, double> column_effects;
  int sweeps = 0;        // row-and-column sweeps run
  bool settled = false;  // the last sweep moved no effect by more than a rounding error
};
MedianPolish median_polish(const std::map<std::pair<std::string, std::string>, double>& cells);

// Median and 90th percentile (nearest rank) of |e|; zeros for none.
ErrorSummary summarize(const std::vector<double>& errors);

}  // namespace attune::sim
