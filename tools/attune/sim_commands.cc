// `attune sim predict` and `attune sim sweep`: the simulated cluster's performance and memory
// model as a planner. Workload options name the model and hardware (presets or TOML files), the
// GPU count, sequence length, global batch and precision; the recipe comes from a file and/or
// --set FLAG=VALUE (Megatron flag names without dashes; NAME=VALUE in capitals sets an environment
// variable). Flags the recipe does not set take Megatron-LM's defaults.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "adapters/model/stack_profile.h"
#include "adapters/model/sweep.h"
#include "core/text_file.h"
#include "projections/number_format.h"
#include "projections/text_table.h"
#include "tools/attune/cli.h"
#include "tools/attune/prediction_output.h"

namespace attune::cli {
namespace {

using sim::HardwareSpec;
using sim::ModelSpec;
using sim::Precision;
using sim::Workload;

struct SimOptions {
  std::string model;
  std::string gpu;
  int gpus = 0;
  int seq = 0;
  int gbs = 0;
  std::string precision = "bf16";
  std::string recipe_file;
  std::vector<std::string> sets;
  std::string stack = "megatron-bridge";
  bool json = false;
  int top = 10;
  std::vector<int> mbs;
};

void add_workload_options(CLI::App* command, SimOptions& o) {
  command->add_option("--model", o.model, "Model preset name or a model TOML file")->required();
  command->add_option("--gpu", o.gpu, "Hardware preset name or a hardware TOML file")->required();
  command->add_option("--gpus", o.gpus, "Number of GPUs (1 to 1048576)")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  command->add_option("--seq", o.seq, "Sequence length (tokens, 1 to 1048576)")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  command->add_option("--gbs", o.gbs, "Global batch size (sequences, 1 to 16777216)")
      ->required()
      ->check(CLI::Range(1, 1 << 24));
  command->add_option("--precision", o.precision, "bf16 or fp8")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp8"}));
  command->add_option("--recipe", o.recipe_file,
                      "Recipe file (launch-script text), or the name of a recipe preset");
  command->add_option("--set", o.sets,
                      "FLAG=VALUE: set a Megatron flag (no dashes; a bare FLAG turns a switch on) "
                      "or, in capitals, an environment variable");
  command
      ->add_option("--stack", o.stack,
                   "The cluster's software stack: a preset (megatron-bridge, slime) or a stack "
                   "TOML file")
      ->capture_default_str();
  command->add_flag("--json", o.json, "Machine-readable output");
}

bool is_env_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(std::isupper(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_')) {
      return false;
    }
  }
  return true;
}

Result<Workload> load_workload(const SimOptions& o) {
  Workload w;
  Result<ModelSpec> model = sim::load_model(o.model);
  if (!model.ok()) return make_error(model.error());
  Result<HardwareSpec> hardware = sim::load_hardware(o.gpu);
  if (!hardware.ok()) return make_error(hardware.error());
  w.model = std::move(model).value();
  w.hardware = std::move(hardware).value();
  w.gpus = o.gpus;
  w.seq_length = o.seq;
  w.global_batch_size = o.gbs;
  w.precision = sim::parse_precision(o.precision).value_or(Precision::kBf16);
  return w;
}

Result<Recipe> load_recipe(const SimOptions& o) {
  Recipe recipe;
  if (!o.recipe_file.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(o.recipe_file, ec)) {
      Result<std::string> text = read_text_file(o.recipe_file);
      if (!text.ok()) return make_error(text.error());
      Result<Recipe> parsed = parse_recipe(text.value(), o.recipe_file);
      if (!parsed.ok()) return make_error(parsed.error());
      recipe = std::move(parsed).value();
    } else {
      Result<Recipe> preset = sim::load_recipe_preset(o.recipe_file);
      if (!preset.ok()) {
        return make_error(o.recipe_file + ": no such file, and " + preset.error());
      }
      recipe = std::move(preset).value();
    }
  }
  for (const std::string& setting : o.sets) {
    const std::size_t eq = setting.find('=');
    const std::string name = setting.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : setting.substr(eq + 1);
    Status status =
        is_env_name(name) ? set_env(recipe, name, value) : set_flag(recipe, name, value);
    if (!status.ok()) return make_error("--set " + setting + ": " + status.error());
  }
  return recipe;
}

int run_predict(const SimOptions& o) {
  Result<Workload> workload = load_workload(o);
  if (!workload.ok()) return fail(workload.error());
  Result<Recipe> recipe = load_recipe(o);
  if (!recipe.ok()) return fail(recipe.error());
  Result<sim::StackProfile> stack = sim::load_stack(o.stack);
  if (!stack.ok()) return fail(stack.error());
  const sim::Prediction p = sim::predict_on_stack(workload.value(), recipe.value(), stack.value());
  if (!p.valid) {
    std::cerr << "attune: " << p.error << "\n";
    if (o.json) write_json_output(prediction_json(p));
    return kExitNo;
  }
  if (o.json) {
    nlohmann::json out = prediction_json(p);
    out["workload"] = workload_line(workload.value());
    write_json_output(std::move(out));
  } else {
    std::cout << workload_line(workload.value()) << "\n";
    print_prediction(p);
  }
  return kExitOk;
}

// The sweep as text: the baseline, then the best layouts, each in lines of at most kTerminalWidth.
void print_sweep(const Workload& workload, const sim::SweepResult& result) {
  std::cout << workload_line(workload) << "\n";
  std::cout << result.layouts_considered << " layouts considered, " << result.layouts_valid
            << " valid, " << result.layouts_fitting << " fit in memory\n";
  const sim::Prediction& base = result.baseline;
  const std::string indent(4, ' ');
  if (base.valid) {
    std::cout << wrap_words("baseline: " + format_fixed(base.tokens_per_s_per_gpu, 1) +
                                " tokens/s/GPU, " + base.layout +
                                (base.fits_in_memory ? "" : " (OUT OF MEMORY)"),
                            kTerminalWidth, indent)
              << "\n";
  } else {
    std::cout << "baseline: invalid: " << base.error << "\n";
  }
  int rank = 1;
  for (const sim::SweepEntry& entry : result.best) {
    const sim::Prediction& p = entry.prediction;
    std::string line = "#" + std::to_string(rank++) + "  " +
                       format_fixed(p.tokens_per_s_per_gpu, 1) + " tokens/s/GPU";
    if (base.valid && base.fits_in_memory) {
      line += " (" +
              format_signed_percent(p.tokens_per_s_per_gpu / base.tokens_per_s_per_gpu - 1, 1) +
              ")";
    }
    line += ", MFU " + format_fixed(100 * p.mfu, 1) + "%, peak " +
            format_fixed(p.peak_memory_gib, 1) + " GiB, " + p.layout;
    std::cout << wrap_words(line, kTerminalWidth, indent) << "\n";
  }
}

int run_sweep(const SimOptions& o) {
  Result<Workload> workload = load_workload(o);
  if (!workload.ok()) return fail(workload.error());
  Result<Recipe> recipe = load_recipe(o);
  if (!recipe.ok()) return fail(recipe.error());
  Result<sim::StackProfile> stack = sim::load_stack(o.stack);
  if (!stack.ok()) return fail(stack.error());
  sim::SweepOptions options;
  options.top_k = o.top;
  options.micro_batch_sizes = o.mbs;
  options.stack = stack.value();
  options.factors = stack->factors;
  Result<sim::SweepResult> result = sim::sweep(workload.value(), recipe.value(), options);
  if (!result.ok()) return fail(result.error());
  const sim::Prediction& base = result->baseline;
  if (o.json) {
    nlohmann::json out;
    out["workload"] = workload_line(workload.value());
    out["baseline"] = prediction_json(base);
    out["layouts_considered"] = result->layouts_considered;
    out["layouts_valid"] = result->layouts_valid;
    out["layouts_fitting"] = result->layouts_fitting;
    nlohmann::json best = nlohmann::json::array();
    for (const sim::SweepEntry& entry : result->best) {
      nlohmann::json e = prediction_json(entry.prediction);
      e["recipe"] = canonical_text(entry.recipe);
      e["flags_changed"] = nlohmann::json::array();
      for (const SettingChange& change : diff_recipes(recipe.value(), entry.recipe)) {
        e["flags_changed"].push_back(change.name);
      }
      best.push_back(std::move(e));
    }
    out["best"] = std::move(best);
    write_json_output(std::move(out));
    return kExitOk;
  }
  print_sweep(workload.value(), result.value());
  return kExitOk;
}

}  // namespace

void add_sim_commands(CLI::App& app, int& exit_code) {
  CLI::App* sim = app.add_subcommand(
      "sim", "The simulated cluster's performance and memory model, as a planner");
  sim->require_subcommand(1);

  auto predict_options = std::make_shared<SimOptions>();
  CLI::App* predict = sim->add_subcommand(
      "predict", "Step time, throughput, MFU, per-stage memory and breakdown of one recipe");
  add_workload_options(predict, *predict_options);
  predict->callback([&exit_code, predict_options] { exit_code = run_predict(*predict_options); });

  auto sweep_options = std::make_shared<SimOptions>();
  CLI::App* sweep = sim->add_subcommand(
      "sweep", "Enumerate the valid layouts around a recipe and print the fastest that fit");
  add_workload_options(sweep, *sweep_options);
  sweep->add_option("--top", sweep_options->top, "How many layouts to print")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  sweep
      ->add_option("--mbs", sweep_options->mbs,
                   "Microbatch sizes to try (default: the recipe's only)")
      ->delimiter(',');
  sweep->callback([&exit_code, sweep_options] { exit_code = run_sweep(*sweep_options); });
  add_sim_calibrate_command(*sim, exit_code);
}

}  // namespace attune::cli
