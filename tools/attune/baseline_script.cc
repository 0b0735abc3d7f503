#include "tools/attune/baseline_script.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "adapters/script/script_recipe.h"
#include "core/text_file.h"
#include "events/sha256.h"

namespace attune::cli {

namespace fs = std::filesystem;

namespace {

// What Slurm gives a batch script, for a script with #SBATCH lines that reads it: the
// campaign's own size (its GPUs over the nodes of [slurm] gpus_per_node). script_env wins.
void add_batch_environment(const CampaignSpec& spec, const std::string& text,
                           std::map<std::string, std::string>& env) {
  if (text.find("#SBATCH") == std::string::npos) return;
  const std::uint32_t per_node = spec.slurm.gpus_per_node > 0 ? spec.slurm.gpus_per_node : 8;
  const std::uint32_t nodes = std::max<std::uint32_t>(1, (spec.gpus + per_node - 1) / per_node);
  const std::string last = std::to_string(nodes);
  const std::string list =
      nodes == 1
          ? "node001"
          : "node[001-" + std::string(3 - std::min<std::size_t>(3, last.size()), '0') + last + "]";
  const std::map<std::string, std::string> batch = {
      {"SLURM_JOB_ID", "4242"},
      {"SLURM_JOB_NAME", spec.name},
      {"SLURM_NNODES", last},
      {"SLURM_JOB_NUM_NODES", last},
      {"SLURM_JOB_NODELIST", list},
      {"SLURM_NODELIST", list},
      {"SLURM_GPUS_ON_NODE", std::to_string(per_node)},
      {"SLURM_NTASKS", std::to_string(nodes * per_node)},
      {"SLURM_NTASKS_PER_NODE", std::to_string(per_node)},
      {"SLURM_NODEID", "0"},
      {"SLURM_PROCID", "0"},
      {"SLURM_LOCALID", "0"}};
  for (const auto& [name, value] : batch) env.emplace(name, value);
}

}  // namespace

Status resolve_baseline_script(CampaignSpec& spec, std::vector<std::string>& warnings) {
  if (spec.script.path.empty()) return Ok{};
  // Read once: its #SBATCH lines, and its hash, so the shipped changes can be applied to it.
  auto text = read_text_file(spec.script.path, std::size_t{1} << 20);
  if (!text.ok()) return make_error(text.error() + " ([baseline] script)");
  script::ScriptInput input;
  input.path = spec.script.path;
  input.args = spec.script.args;
  input.env = spec.script.env;
  input.files = script::companions_at_their_paths(spec.script.files);
  add_batch_environment(spec, text.value(), input.env);
  input.invocation_cwd = spec.script.cwd;
  input.timeout_seconds = spec.script.timeout_seconds;
  input.allow_unsandboxed = spec.script.allow_unsandboxed;
  auto resolved = script::resolve_launch_script(input);
  if (!resolved.ok()) return make_error(resolved.error());
  auto recipe = script::recipe_of_script(resolved.value(), spec.script.path);
  if (!recipe.ok()) return make_error(recipe.error());
  spec.baseline = std::move(recipe->recipe);
  spec.baseline_shape = std::move(recipe->shape);
  spec.baseline_shape.script_path = fs::absolute(spec.script.path).lexically_normal().string();
  spec.baseline_shape.script_hash = to_hex(sha256(text.value()));
  for (std::string& warning : recipe->warnings) warnings.push_back(std::move(warning));
  return Ok{};
}

}  // namespace attune::cli
