// `attune sim calibrate`: the performance model against every published throughput it holds, in
// sample and out of sample.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>

#include "adapters/model/performance_model.h"
#include "adapters/model/published.h"
#include "core/text_file.h"
#include "events/assert.h"
#include "projections/number_format.h"
#include "projections/text_table.h"
#include "tools/attune/cli.h"
#include "tools/attune/prediction_output.h"

namespace attune::cli {
namespace {

constexpr int kCalibrateSchemaVersion = 1;
// Row ids are cut to this width so that a row's line fits kTerminalWidth unwrapped.
constexpr std::size_t kRowIdWidth = 45;

struct CalibrateOptions {
  std::string rows_file;  // empty: the compiled-in rows
  bool json = false;
  bool all = false;     // also list the rows that were skipped
  std::string explain;  // a row's id: show its recipe and predicted breakdown instead
};

nlohmann::json summary_json(const sim::ErrorSummary& s) {
  return {{"rows", s.rows}, {"median_abs_error", s.median_abs}, {"p90_abs_error", s.p90_abs}};
}

nlohmann::json calibration_json(const sim::Calibration& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const sim::CalibrationRow& r : c.rows) {
    nlohmann::json row = {{"id", r.row.id},
                          {"model", r.row.model},
                          {"system", r.row.system},
                          {"release", r.row.release},
                          {"published_tokens_per_s_per_gpu", r.row.tokens_per_s_per_gpu}};
    if (!r.skipped.empty()) {
      row["skipped"] = r.skipped;
    } else {
      row["predicted_tokens_per_s_per_gpu"] = r.predicted;
      row["error_raw"] = r.error_raw;
      row["error_leave_model_out"] =
          r.error_model_out ? nlohmann::json(*r.error_model_out) : nlohmann::json(nullptr);
      row["error_leave_release_out"] =
          r.error_release_out ? nlohmann::json(*r.error_release_out) : nlohmann::json(nullptr);
      row["peak_memory_gib"] = r.peak_memory_gib;
      row["memory_capacity_gib"] = r.memory_capacity_gib;
      row["fits_in_memory"] = r.fits_in_memory;
    }
    rows.push_back(std::move(row));
  }
  nlohmann::json by_model = nlohmann::json::object();
  for (const auto& [model, s] : c.raw_by_model) by_model[model] = summary_json(s);
  nlohmann::json terms = nlohmann::json::array();
  for (const sim::TermAttribution& t : c.terms) {
    terms.push_back({{"term", t.term},
                     {"share_of_step_median", t.share_median},
                     {"alone_multiplier", t.alone_multiplier},
                     {"alone", summary_json(t.alone)},
                     {"together_multiplier", t.together_multiplier}});
  }
  return {{"schema_version", kCalibrateSchemaVersion},
          {"rows", rows},
          {"raw", summary_json(c.raw)},
          {"leave_one_model_out", summary_json(c.model_out)},
          {"leave_one_release_out", summary_json(c.release_out)},
          {"leave_one_model_out_exact_recipes", summary_json(c.model_out_exact)},
          {"leave_one_release_out_exact_recipes", summary_json(c.release_out_exact)},
          {"raw_by_model", by_model},
          {"system_effects", c.system_effects},
          {"system_effects_settled", c.system_effects_settled},
          {"rows_fitting_in_memory", c.rows_fitting_in_memory},
          {"terms", terms},
          {"terms_refitted", summary_json(c.terms_refitted)},
          {"leave_one_model_out_terms_refitted", summary_json(c.model_out_terms_refitted)},
          {"skipped_by_reason", c.skipped_by_reason}};
}

std::string summary_line(const std::string& what, const sim::ErrorSummary& s) {
  return what + ": median " + format_percent(s.median_abs, 1) + ", p90 " +
         format_percent(s.p90_abs, 1) + " over " + std::to_string(s.rows) + " rows\n";
}

// The error attributed to each cost term: what refitting that term alone would leave.
std::string terms_text(const sim::Calibration& c) {
  TextTable table({{"cost term"},
                   {"share of step", Align::kRight},
                   {"alone: x", Align::kRight},
                   {"median", Align::kRight},
                   {"p90", Align::kRight},
                   {"together: x", Align::kRight}});
  for (const sim::TermAttribution& t : c.terms) {
    table.add_row({std::string(t.term), format_percent(t.share_median, 1),
                   format_fixed(t.alone_multiplier, 2), format_percent(t.alone.median_abs, 1),
                   format_percent(t.alone.p90_abs, 1), format_fixed(t.together_multiplier, 2)});
  }
  return "The error by cost term (in sample): each term's median share of the predicted step, the "
         "multiplier that best explains the published rows with that term alone refitted (x) and "
         "the error left, and the multipliers with every term refitted at once.\n" +
         table.render() + "\n" + summary_line("every term refitted, in sample", c.terms_refitted) +
         summary_line("every term fitted on the other models (leave one model out)",
                      c.model_out_terms_refitted);
}

// Each system's published over predicted throughput against the median system's, once the
// models' own errors are taken out: near 1 where the hardware presets agree with each other.
std::string system_effects_text(const sim::Calibration& c) {
  std::string text =
      "system effects (published / predicted against the median system, the models' own errors "
      "taken out by median polish):";
  for (const auto& [system, effect] : c.system_effects) {
    text += " " + system + " " + format_fixed(effect, 3);
  }
  if (!c.system_effects_settled) text += " (a median polish did not settle: these are its last)";
  return text + "\n";
}

// Every published row ran, so the memory model should fit each one: the count, and the rows it
// predicts out of memory with their peak.
std::string memory_text(const sim::Calibration& c) {
  std::size_t priced = 0;
  std::string misses;
  for (const sim::CalibrationRow& r : c.rows) {
    if (!r.skipped.empty()) continue;
    ++priced;
    if (r.fits_in_memory) continue;
    misses += "  out of memory: " + r.row.id + " (" + format_fixed(r.peak_memory_gib, 1) + " of " +
              format_fixed(r.memory_capacity_gib, 1) + " GiB)\n";
  }
  return "memory: " + std::to_string(c.rows_fitting_in_memory) + " of " + std::to_string(priced) +
         " published recipes fit as predicted (every one ran)\n" + misses;
}

void print_text(const sim::Calibration& c, bool all) {
  TextTable table({{"row"},
                   {"published", Align::kRight},
                   {"predicted", Align::kRight},
                   {"raw", Align::kRight},
                   {"model out", Align::kRight},
                   {"release out", Align::kRight}});
  auto signed_or_dash = [](const std::optional<double>& e) {
    return e ? format_signed_percent(*e, 1) : std::string("-");
  };
  for (const sim::CalibrationRow& r : c.rows) {
    if (!r.skipped.empty() && !all) continue;
    table.add_row({cut_to_width(r.row.id, kRowIdWidth), format_fixed(r.row.tokens_per_s_per_gpu, 1),
                   r.skipped.empty() ? format_fixed(r.predicted, 1) : "-",
                   r.skipped.empty() ? format_signed_percent(r.error_raw, 1) : "skipped",
                   signed_or_dash(r.error_model_out), signed_or_dash(r.error_release_out)});
  }
  std::ostringstream out;
  out << table.render() << "\n"
      << summary_line("raw (the model as it stands)", c.raw)
      << summary_line("leave one model out (each system's effect fitted on the other models)",
                      c.model_out)
      << summary_line("leave one release out (fitted on the other releases)", c.release_out)
      << summary_line("  the same, rows with their whole recipe: model out", c.model_out_exact)
      << summary_line("  the same, rows with their whole recipe: release out", c.release_out_exact);
  for (const auto& [model, s] : c.raw_by_model) out << summary_line("  raw, " + model, s);
  out << system_effects_text(c) << memory_text(c);
  out << "\n" << terms_text(c);
  for (const auto& [reason, count] : c.skipped_by_reason) {
    out << "skipped   " << count << " rows: " << reason << "\n";
  }
  std::cout << wrap_words(out.str(), kTerminalWidth, "  ");
}

// One row: its published figure, the recipe the model prices (as Megatron flags and
// environment) and the prediction with its breakdown, for finding where the model errs.
int explain_row(const std::vector<sim::PublishedRow>& rows, const std::string& id) {
  const auto row = std::find_if(rows.begin(), rows.end(),
                                [&](const sim::PublishedRow& r) { return r.id == id; });
  if (row == rows.end()) return fail("--explain " + id + ": no row has that id");
  const std::vector<sim::PublishedRow> one{*row};
  const sim::CalibrationRow priced = sim::calibrate(one).rows.front();
  if (!priced.skipped.empty()) return fail("--explain " + id + ": skipped: " + priced.skipped);
  auto c = sim::published_case(priced.row);
  ATTUNE_ASSERT(c.ok(), "a priced row has a case");
  const sim::Prediction p = sim::predict(c->workload, c->recipe);
  std::cout << wrap_words(priced.row.id + ": " + workload_line(c->workload), kTerminalWidth, "  ")
            << "\n"
            << "published    " << format_fixed(priced.row.tokens_per_s_per_gpu, 1)
            << " tokens/s/GPU; predicted " << format_signed_percent(priced.error_raw, 1)
            << " from it\n"
            << "recipe\n";
  std::istringstream recipe(canonical_text(c->recipe));
  for (std::string line; std::getline(recipe, line);) std::cout << "  " << line << "\n";
  print_prediction(p);
  return kExitOk;
}

int run_calibrate(const CalibrateOptions& options) {
  std::string text(sim::published_rows_text());
  std::string source = "rows.tsv (compiled in)";
  if (!options.rows_file.empty()) {
    auto read = read_text_file(options.rows_file);
    if (!read.ok()) return fail(read.error());
    text = std::move(read).value();
    source = options.rows_file;
  }
  auto rows = sim::parse_published_rows(text, source);
  if (!rows.ok()) return fail(rows.error());
  if (!options.explain.empty()) return explain_row(rows.value(), options.explain);
  const sim::Calibration calibration = sim::calibrate(rows.value());
  if (options.json) {
    write_json_output(calibration_json(calibration), kCalibrateSchemaVersion);
  } else {
    print_text(calibration, options.all);
  }
  return kExitOk;
}

}  // namespace

void add_sim_calibrate_command(CLI::App& sim, int& exit_code) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* calibrate = sim.add_subcommand(
      "calibrate",
      "The model against every published throughput it holds (Megatron-Bridge performance "
      "tables, ModelZoo scripts, DGX Cloud benchmarks, technical reports; each with its recipe): "
      "predicted against published per row, the error raw, leaving one model out and leaving one "
      "release out, and the error attributed to each cost term");
  calibrate->add_option("--rows", options->rows_file,
                        "A rows.tsv of your own (default: the compiled-in rows)");
  calibrate->add_flag("--all", options->all, "Also list the rows the model cannot price, and why");
  calibrate->add_flag("--json", options->json, "Machine-readable output");
  calibrate
      ->add_option("--explain", options->explain,
                   "A row's id: print the recipe the model prices for it and the predicted "
                   "step's breakdown instead of the table")
      ->excludes("--json");
  calibrate->callback([&exit_code, options] { exit_code = run_calibrate(*options); });
}

}  // namespace attune::cli
