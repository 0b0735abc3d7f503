#include "tools/attune/campaign_check.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "adapters/launcher/slurm/sbatch_script.h"
#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "adapters/model/stack_profile.h"
#include "adapters/tuner/lever_catalog.h"
#include "events/arg_catalog.h"
#include "gate/config_check.h"
#include "gate/policy.h"
#include "projections/number_format.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;

// A flag the workload also states must agree with it: the campaign would measure something else.
void check_stated_sizes(const CampaignSpec& spec, PreflightReport& report) {
  const auto check = [&](const char* flag, std::uint32_t expected, const char* key) {
    const auto found = spec.baseline.flags.find(flag);
    if (found == spec.baseline.flags.end()) return;
    if (found->second != std::to_string(expected)) {
      report.problems.push_back(std::string("the baseline's ") + flag + " " + found->second +
                                " differs from [workload] " + key + " = " +
                                std::to_string(expected));
    }
  };
  check("--seq-length", spec.seq_length, "seq_length");
  check("--global-batch-size", spec.global_batch, "global_batch");
  const bool fp8 = spec.baseline.flags.contains("--fp8-format");
  if (spec.precision == "fp8" && !fp8) {
    report.problems.push_back(
        "[workload] precision = \"fp8\" but the baseline sets no --fp8-format");
  } else if (spec.precision == "bf16" && fp8) {
    report.problems.push_back(
        "[workload] precision = \"bf16\" but the baseline sets --fp8-format " +
        spec.baseline.flags.at("--fp8-format"));
  }
  if (spec.baseline.flags.contains("--fp16") && spec.precision != "fp16") {
    report.problems.push_back("the baseline trains in --fp16; attune models bf16 and fp8 only");
  }
}

// nan, inf and their spellings read as floats; no training setting takes them.
void check_finite(const CampaignSpec& spec, PreflightReport& report) {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  for (const auto& [flag, value] : spec.baseline.flags) {
    const ArgInfo* info = catalog.find(flag);
    if (info == nullptr || info->value_kind != ArgValueKind::kFloat || value.empty()) continue;
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    if (!std::isfinite(number)) {
      report.problems.push_back("the baseline's " + flag + " is " + value +
                                ", not a finite number");
    }
  }
}

// The performance and memory model's verdict on the baseline; returns the expected GPU-hours of
// one calibration launch (0 when unknown).
double check_model(const CampaignSpec& spec, PreflightReport& report) {
  const auto precision = sim::parse_precision(spec.precision);
  auto workload = sim::load_workload(
      spec.model, spec.hardware, static_cast<int>(spec.gpus), static_cast<int>(spec.seq_length),
      static_cast<int>(spec.global_batch), precision.value_or(sim::Precision::kBf16));
  if (!workload.ok()) {
    report.problems.push_back(workload.error());
    return 0;
  }
  auto stack = sim::load_stack(spec.stack);
  if (!stack.ok()) {
    report.problems.push_back(stack.error() + " ([cluster] stack)");
    return 0;
  }
  const sim::Prediction p = sim::predict_on_stack(workload.value(), spec.baseline, stack.value());
  if (!p.valid) {
    report.problems.push_back("the baseline cannot run on " + std::to_string(spec.gpus) +
                              " GPUs: " + p.error);
    return 0;
  }
  report.notes.push_back("layout    " + p.layout);
  report.notes.push_back("predicted " + format_fixed(p.tokens_per_s_per_gpu, 1) +
                         " tokens/s/GPU, MFU " + format_percent(p.mfu, 1));
  const std::string memory =
      format_fixed(p.peak_memory_gib, 1) + " of " + format_fixed(p.memory_capacity_gib, 1) + " GiB";
  if (!p.fits_in_memory) {
    const std::string line = "the baseline is predicted to run out of memory: peak " + memory;
    // On a real cluster the model's estimate is advice; in the simulated world it is the fact.
    if (spec.launcher == "sim") {
      report.problems.push_back(line);
    } else {
      report.notes.push_back("warning   " + line);
    }
  } else {
    report.notes.push_back("memory    peak " + memory + " predicted");
  }
  const double seconds_per_step =
      spec.launcher == "sim" ? p.step_time_s : spec.expected_seconds_per_step;
  return seconds_per_step * spec.steps_per_run * spec.gpus / 3600.0;
}

void check_budget(const CampaignSpec& spec, double launch_gpu_hours, PreflightReport& report) {
  const double calibration = launch_gpu_hours * spec.calibration_runs;
  report.notes.push_back("calibrate " + std::to_string(spec.calibration_runs) + " runs, about " +
                         format_fixed(calibration, 1) + " GPU-hours");
  if (spec.budget_auto || launch_gpu_hours <= 0) return;
  if (calibration > spec.budget_gpu_hours) {
    report.problems.push_back("the calibration alone needs about " + format_fixed(calibration, 1) +
                              " GPU-hours, more than the budget's " +
                              format_fixed(spec.budget_gpu_hours, 1));
  }
}

void check_slurm(const CampaignSpec& spec, PreflightReport& report) {
  for (const char* command : {"sbatch", "squeue", "scancel"}) {
    const std::string path = spec.slurm.bin_dir.empty()
                                 ? std::string()
                                 : (fs::path(spec.slurm.bin_dir) / command).string();
    bool found = !path.empty() && ::access(path.c_str(), X_OK) == 0;
    if (path.empty()) {
      const char* env_path = std::getenv("PATH");
      std::string dirs = env_path == nullptr ? "" : env_path;
      std::size_t start = 0;
      while (!found && start <= dirs.size()) {
        const std::size_t end = std::min(dirs.find(':', start), dirs.size());
        const fs::path candidate = fs::path(dirs.substr(start, end - start)) / command;
        found = ::access(candidate.c_str(), X_OK) == 0;
        start = end + 1;
      }
    }
    if (!found) {
      report.problems.push_back(
          std::string("Slurm's ") + command + " is not found" +
          (spec.slurm.bin_dir.empty() ? " on PATH" : " in " + spec.slurm.bin_dir));
    }
  }
  if (spec.job_template.find("{recipe_args}") == std::string::npos &&
      spec.job_template.find("{recipe_file}") == std::string::npos) {
    report.problems.push_back(spec.slurm.template_path +
                              ": the template names neither {recipe_args} nor {recipe_file}, so "
                              "no run would receive its recipe");
  }
  const std::uint32_t per_node = spec.slurm.gpus_per_node > 0 ? spec.slurm.gpus_per_node : 8;
  SbatchValues values{spec.name + "-preflight",
                      spec.name + "-run1",
                      1,
                      spec.steps_per_run,
                      (spec.gpus + per_node - 1) / per_node,
                      spec.gpus,
                      per_node,
                      "/dev/null",
                      "/dev/null",
                      spec.baseline};
  report.batch_script = render_sbatch_script(spec.job_template, values);
}

// What the gate's policy says before the search: the baseline's own settings (frozen values, known
// defects) and the catalog's levers it refuses, so the user sees them before any GPU-hour.
void check_policy(const CampaignSpec& spec, PreflightReport& report) {
  auto policy = spec.policy_bytes.empty() ? Result<Policy>(default_policy())
                                          : parse_policy(spec.policy_bytes, spec.policy_path);
  if (!policy.ok()) {
    report.problems.push_back(policy.error());
    return;
  }
  const ConfigCheckResult own = check_config(policy.value(), spec.baseline, spec.baseline);
  for (const ConfigRefusal& refusal : own.refusals) {
    report.notes.push_back("warning   the baseline itself: " + refusal.message);
  }
  std::vector<std::string> refused;
  const LeverCatalog& catalog = builtin_lever_catalog();
  for (const CatalogLever& lever : catalog.levers) {
    for (const std::string& flag : lever.flags) {
      const ArgInfo* info = ArgCatalog::megatron().find(flag);
      const ClassOverride* override = policy->find_class_override(flag);
      const ObjectiveClass objective =
          override != nullptr
              ? override->objective_class
              : (info != nullptr ? info->objective_class : ObjectiveClass::kNumeric);
      if (objective == ObjectiveClass::kNumeric ||
          policy->find_frozen(ChangeKind::kFlag, flag) != nullptr) {
        refused.push_back(lever.name);
        break;
      }
    }
  }
  std::string names;
  for (std::size_t i = 0; i < refused.size() && i < 4; ++i) names += (i ? ", " : "") + refused[i];
  if (refused.size() > 4) names += ", ...";
  report.notes.push_back("gate      policy " + policy->name + " refuses " +
                         std::to_string(refused.size()) + " of " +
                         std::to_string(catalog.levers.size()) + " catalog levers" +
                         (refused.empty() ? "" : ": " + names));
}

}  // namespace

PreflightReport preflight(const CampaignSpec& spec) {
  PreflightReport report;
  report.notes.push_back("campaign  " + spec.name + ": " + spec.model + " on " +
                         std::to_string(spec.gpus) + " x " + spec.hardware + ", launcher " +
                         spec.launcher);
  check_stated_sizes(spec, report);
  check_finite(spec, report);
  const double launch_gpu_hours = check_model(spec, report);
  check_budget(spec, launch_gpu_hours, report);
  check_policy(spec, report);
  if (spec.launcher == "slurm") check_slurm(spec, report);
  return report;
}

}  // namespace attune::cli
