// attune-sim-job: a process that behaves like a Megatron-LM training job of the given recipe on
// the given nodes of the simulated world. It writes the log a real job writes (and, with
// --trace-dir, one Kineto trace per pipeline stage), then exits 0 on success and 1 on failure;
// a job that hangs stops writing and sleeps until it is killed.
//
// Virtual time (the default) writes the whole log at once. --realtime paces the job: each piece
// of the log is appended when it is due, --step-ms apart per step (start-up takes one step), or
// at the simulated times multiplied by --time-scale.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "adapters/model/presets.h"
#include "adapters/world/loss_model.h"
#include "adapters/world/sim_job.h"
#include "adapters/world/world.h"
#include "events/recipe.h"

namespace {

using attune::sim::LogPiece;

constexpr int kExitUsage = 2;

int fail(const std::string& reason) {
  std::cerr << "attune-sim-job: " << reason << "\n";
  return kExitUsage;
}

std::int64_t now_unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> split_nodes(const std::string& text) {
  std::vector<std::string> nodes;
  std::stringstream in(text);
  std::string node;
  while (std::getline(in, node, ',')) {
    if (!node.empty()) nodes.push_back(node);
  }
  return nodes;
}

[[noreturn]] void hang_forever() {
  for (;;) pause();
}

// Seconds after the start at which a real-time job appends `piece`.
double real_due_s(const LogPiece& piece, double step_ms, double time_scale,
                  std::uint32_t steps_completed) {
  if (step_ms <= 0) return piece.at_s * time_scale;
  const double step_s = step_ms / 1000.0;
  switch (piece.kind) {
    case LogPiece::Kind::kArguments:
      return 0.0;
    case LogPiece::Kind::kTrainingStart:
      return step_s;
    case LogPiece::Kind::kStep:
      return (1.0 + piece.step) * step_s;
    case LogPiece::Kind::kCompletion:
    case LogPiece::Kind::kFailure:
      return (1.5 + steps_completed) * step_s;
  }
  return 0.0;
}

// A recipe file: Megatron-LM flags and environment, as a launch script gives them.
attune::Result<attune::Recipe> read_recipe(const std::string& path) {
  std::ifstream file(path);
  if (!file) return attune::make_error(path + ": cannot open the recipe");
  std::stringstream text;
  text << file.rdbuf();
  return attune::parse_recipe(text.str(), path);
}

// The command line.
struct Options {
  std::string model, gpu, recipe_path, precision_text = "bf16", log_path, trace_dir, nodes_text;
  std::string baseline_path;
  std::string fault_text = "none", stack_name = "megatron-bridge";
  int gpus = 0, seq = 0, gbs = 0;
  std::uint32_t steps = 14;
  std::uint64_t reality_seed = 0, run_seed = 0;
  bool realtime = false;
  double step_ms = 0, time_scale = 1.0;
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("--model", o.model, "model preset or TOML file")->required();
  app.add_option("--gpu", o.gpu, "hardware preset or TOML file")->required();
  app.add_option("--gpus", o.gpus, "GPU count")->required();
  app.add_option("--seq", o.seq, "sequence length")->required();
  app.add_option("--gbs", o.gbs, "global batch size (sequences)")->required();
  app.add_option("--recipe", o.recipe_path, "the recipe: Megatron-LM flags and environment")
      ->required();
  app.add_option("--precision", o.precision_text, "bf16 or fp8")
      ->check(CLI::IsMember({"bf16", "fp8"}));
  app.add_option("--steps", o.steps, "training steps")->check(CLI::PositiveNumber);
  app.add_option("--log", o.log_path, "the log file to write")->required();
  app.add_option("--trace-dir", o.trace_dir, "profile: write Kineto traces here");
  app.add_option("--nodes", o.nodes_text, "the allocation, comma-separated node names");
  app.add_option("--reality-seed", o.reality_seed, "the simulated world (0: the default one)");
  app.add_option("--baseline", o.baseline_path,
                 "the campaign's baseline recipe: the world keeps it fitting in memory, as a "
                 "campaign's world does");
  app.add_option("--stack", o.stack_name,
                 "the cluster's software stack: megatron-bridge (default), slime, or a TOML file");
  app.add_option("--run-seed", o.run_seed, "this run's seed");
  app.add_option("--fault", o.fault_text,
                 "inject a fault: aux-loss-coeff, grad-scale, drop-microbatch");
  app.add_flag("--realtime", o.realtime, "pace the job in real time");
  app.add_option("--step-ms", o.step_ms, "with --realtime: milliseconds per step")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--time-scale", o.time_scale,
                 "with --realtime and no --step-ms: real seconds per simulated second")
      ->check(CLI::PositiveNumber);
}

// The world the job runs in: the workload, the stack, the reality seed and the baseline.
attune::Result<attune::sim::WorldConfig> world_config(const Options& o) {
  attune::Result<attune::sim::StackProfile> stack = attune::sim::load_stack(o.stack_name);
  if (!stack.ok()) return attune::make_error(stack.error());
  attune::sim::WorldConfig config;
  config.reality_seed = o.reality_seed;
  config.stack = std::move(stack).value();
  if (!o.baseline_path.empty()) {
    attune::Result<attune::Recipe> baseline = read_recipe(o.baseline_path);
    if (!baseline.ok()) return attune::make_error(baseline.error());
    config.baseline = std::move(baseline).value();
  }
  return config;
}

// Writes the job's log, piece by piece (paced in real time with --realtime), and its traces
// before the last step's line. Returns an exit code where writing failed.
std::optional<int> write_log(attune::sim::SimJob& job, const Options& o) {
  std::ofstream log(o.log_path, std::ios::binary | std::ios::trunc);
  if (!log) return fail(o.log_path + ": cannot write the log");
  const std::int64_t start_ns = o.realtime ? now_unix_ns() : attune::sim::kVirtualStartUnixNs;
  const auto started = std::chrono::steady_clock::now();
  const auto steps_completed = static_cast<std::uint32_t>(job.run().step_times_s.size());
  for (std::size_t i = 0; i < job.pieces().size(); ++i) {
    const LogPiece& piece = job.pieces()[i];
    std::int64_t stamp_ns = start_ns + static_cast<std::int64_t>(piece.at_s * 1e9);
    if (o.realtime) {
      const auto due = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(real_due_s(
                                         piece, o.step_ms, o.time_scale, steps_completed)));
      std::this_thread::sleep_until(due);
      stamp_ns = now_unix_ns();
    }
    const bool last_step = piece.kind == LogPiece::Kind::kStep && piece.step == steps_completed;
    if (last_step && job.writes_traces()) {
      attune::Result<std::vector<std::string>> traces = job.write_traces(o.trace_dir, start_ns);
      if (!traces.ok()) return fail(traces.error());
    }
    log << job.render(i, stamp_ns);
    log.flush();
    if (!log) return fail(o.log_path + ": cannot write the log");
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "A simulated Megatron-LM training job: writes a real Megatron log (and Kineto "
      "traces) for a recipe on the simulated cluster."};
  Options o;
  add_options(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help
    return fail(error.what());
  }

  const std::optional<attune::sim::Precision> precision =
      attune::sim::parse_precision(o.precision_text);
  const std::optional<attune::sim::Fault> fault = attune::sim::parse_fault(o.fault_text);
  if (!fault) return fail("unknown --fault '" + o.fault_text + "'");
  attune::Result<attune::sim::Workload> workload =
      attune::sim::load_workload(o.model, o.gpu, o.gpus, o.seq, o.gbs, precision.value());
  if (!workload.ok()) return fail(workload.error());
  attune::Result<attune::Recipe> recipe = read_recipe(o.recipe_path);
  if (!recipe.ok()) return fail(recipe.error());
  attune::Result<attune::sim::WorldConfig> config = world_config(o);
  if (!config.ok()) return fail(config.error());

  const attune::sim::World world(std::move(workload).value(), std::move(config).value());
  attune::sim::SimJobRun spec;
  spec.steps = o.steps;
  spec.run_seed = o.run_seed;
  spec.nodes = split_nodes(o.nodes_text);
  spec.profile = !o.trace_dir.empty();
  spec.fault = *fault;
  attune::sim::SimJob job(world, *recipe, spec);
  if (std::optional<int> failed = write_log(job, o)) return *failed;
  const std::optional<int> exit_code = job.exit_code();
  if (!exit_code) hang_forever();
  return *exit_code;
}
