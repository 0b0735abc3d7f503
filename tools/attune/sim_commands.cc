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
#include "tools/attune/cli.h"

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

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

nlohmann::json phase_json(const sim::PhaseTimes& t) {
  return {{"gemm_s", t.gemm_s},
          {"attention_s", t.attention_s},
          {"elementwise_s", t.elementwise_s},
          {"tp_comm_s", t.tp_comm_s},
          {"cp_comm_s", t.cp_comm_s},
          {"ep_a2a_s", t.ep_a2a_s},
          {"tp_comm_hidden_s", t.tp_comm_hidden_s},
          {"cp_comm_hidden_s", t.cp_comm_hidden_s},
          {"ep_a2a_hidden_s", t.ep_a2a_hidden_s},
          {"host_s", t.host_s},
          {"total_s", t.total_s()}};
}

nlohmann::json breakdown_json(const sim::Breakdown& b) {
  return {{"compute_s", b.compute_s},     {"gemm_s", b.gemm_s},
          {"attention_s", b.attention_s}, {"elementwise_s", b.elementwise_s},
          {"tp_comm_s", b.tp_comm_s},     {"cp_comm_s", b.cp_comm_s},
          {"ep_a2a_s", b.ep_a2a_s},       {"pp_p2p_s", b.pp_p2p_s},
          {"dp_comm_s", b.dp_comm_s},     {"bubble_s", b.bubble_s},
          {"recompute_s", b.recompute_s}, {"optimizer_s", b.optimizer_s},
          {"host_s", b.host_s},           {"loop_s", b.loop_s}};
}

nlohmann::json prediction_json(const sim::Prediction& p) {
  nlohmann::json out = {{"valid", p.valid}, {"megatron_rules_commit", sim::kMegatronRulesCommit}};
  if (!p.valid) {
    out["error"] = p.error;
    return out;
  }
  out["layout"] = p.layout;
  out["data_parallel_size"] = p.dp;
  out["expert_data_parallel_size"] = p.edp;
  out["virtual_stages"] = p.vp;
  out["microbatches"] = p.microbatches;
  out["step_time_s"] = p.step_time_s;
  out["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
  out["mfu"] = p.mfu;
  out["megatron_tflops_per_gpu"] = p.megatron_tflops_per_gpu;
  out["fits_in_memory"] = p.fits_in_memory;
  out["peak_memory_gib"] = p.peak_memory_gib;
  out["memory_capacity_gib"] = p.memory_capacity_gib;
  out["peak_memory_gib_by_stage"] = p.peak_memory_gib_by_stage;
  out["breakdown"] = breakdown_json(p.breakdown);
  out["critical_stage"] = p.critical_stage;
  nlohmann::json stages = nlohmann::json::array();
  for (const sim::StageTiming& s : p.stages) {
    const sim::StageMemory& m = s.memory;
    stages.push_back({{"pipeline_rank", s.pipeline_rank},
                      {"decoder_layers", s.decoder_layers},
                      {"mtp_layers", s.mtp_layers},
                      {"embedding", s.embedding},
                      {"loss", s.loss},
                      {"forward", phase_json(s.forward)},
                      {"backward", phase_json(s.backward)},
                      {"recompute", phase_json(s.recompute)},
                      {"pp_p2p_s", s.pp_p2p_s},
                      {"microbatch_s", s.microbatch_s},
                      {"dp_comm_s", s.dp_comm_s},
                      {"dp_comm_hidden_s", s.dp_comm_hidden_s},
                      {"optimizer_s", s.optimizer_s},
                      {"memory_gib",
                       {{"weights", m.weights_gib},
                        {"gradients", m.gradients_gib},
                        {"optimizer", m.optimizer_gib},
                        {"activations", m.activations_gib},
                        {"transient", m.transient_gib},
                        {"reserved", m.reserved_gib},
                        {"peak", m.peak_gib}}}});
  }
  out["stages"] = stages;
  return out;
}

std::string workload_line(const Workload& w) {
  return w.model.name + " on " + std::to_string(w.gpus) + " x " + w.hardware.name + ", seq " +
         std::to_string(w.seq_length) + ", global batch " + std::to_string(w.global_batch_size) +
         ", " + std::string(sim::precision_name(w.precision));
}

void print_prediction(const sim::Prediction& p) {
  const sim::Breakdown& b = p.breakdown;
  std::cout << "layout       " << p.layout << " (" << p.microbatches << " microbatches)\n";
  std::cout << "step time    " << fixed(p.step_time_s, 3) << " s\n";
  std::cout << "throughput   " << fixed(p.tokens_per_s_per_gpu, 1) << " tokens/s/GPU, MFU "
            << fixed(100 * p.mfu, 1) << "%, Megatron " << fixed(p.megatron_tflops_per_gpu, 1)
            << " TFLOP/s/GPU\n";
  std::cout << "memory       peak " << fixed(p.peak_memory_gib, 1) << " GiB of "
            << fixed(p.memory_capacity_gib, 1)
            << " GiB: " << (p.fits_in_memory ? "fits" : "OUT OF MEMORY") << "\n";
  for (const sim::StageTiming& s : p.stages) {
    const sim::StageMemory& m = s.memory;
    std::cout << "  stage " << s.pipeline_rank << ": " << fixed(m.peak_gib, 1) << " GiB (weights "
              << fixed(m.weights_gib, 1) << ", gradients " << fixed(m.gradients_gib, 1)
              << ", optimizer " << fixed(m.optimizer_gib, 1) << ", activations "
              << fixed(m.activations_gib, 1) << ", transient " << fixed(m.transient_gib, 1) << "), "
              << s.decoder_layers << " layers"
              << (s.mtp_layers ? " + " + std::to_string(s.mtp_layers) + " MTP" : "")
              << (s.embedding ? " +embedding" : "") << (s.loss ? " +loss" : "") << ", "
              << fixed(1000 * s.microbatch_s, 2) << " ms/microbatch\n";
  }
  auto line = [&](const char* name, double seconds) {
    std::cout << "  " << name << std::string(14 - std::string(name).size(), ' ')
              << fixed(seconds, 3) << " s  " << fixed(100 * seconds / p.step_time_s, 1) << "%\n";
  };
  std::cout << "breakdown    (critical stage " << p.critical_stage << ", seconds per step)\n";
  line("compute", b.compute_s);
  line(" gemm", b.gemm_s);
  line(" attention", b.attention_s);
  line(" elementwise", b.elementwise_s);
  line("tp comm", b.tp_comm_s);
  line("cp comm", b.cp_comm_s);
  line("ep all-to-all", b.ep_a2a_s);
  line("pp send/recv", b.pp_p2p_s);
  line("dp comm", b.dp_comm_s);
  line("bubble", b.bubble_s);
  line("recompute", b.recompute_s);
  line("optimizer", b.optimizer_s);
  line("host", b.host_s);
  if (b.loop_s > 0) line("stack's loop", b.loop_s);
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
  std::cout << workload_line(workload.value()) << "\n";
  std::cout << result->layouts_considered << " layouts considered, " << result->layouts_valid
            << " valid, " << result->layouts_fitting << " fit in memory\n";
  if (base.valid) {
    std::cout << "baseline: " << fixed(base.tokens_per_s_per_gpu, 1) << " tokens/s/GPU, "
              << base.layout << (base.fits_in_memory ? "" : " (OUT OF MEMORY)") << "\n";
  } else {
    std::cout << "baseline: invalid: " << base.error << "\n";
  }
  int rank = 1;
  for (const sim::SweepEntry& entry : result->best) {
    const sim::Prediction& p = entry.prediction;
    std::cout << "#" << rank++ << "  " << fixed(p.tokens_per_s_per_gpu, 1) << " tokens/s/GPU";
    if (base.valid && base.fits_in_memory) {
      const double gain = p.tokens_per_s_per_gpu / base.tokens_per_s_per_gpu - 1;
      std::cout << " (" << (gain >= 0 ? "+" : "") << fixed(100 * gain, 1) << "%)";
    }
    std::cout << ", MFU " << fixed(100 * p.mfu, 1) << "%, peak " << fixed(p.peak_memory_gib, 1)
              << " GiB, " << p.layout << "\n";
  }
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
