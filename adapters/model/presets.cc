#include "adapters/model/presets.h"

#include <fstream>
#include <sstream>

#include "adapters/model/preset_files.h"
#include "adapters/model/stack_profile.h"

namespace attune::sim {
namespace {

std::vector<std::string> names_in(std::string_view folder, std::string_view extension) {
  std::vector<std::string> names;
  for (const PresetFile& file : preset_files()) {
    if (!file.path.starts_with(folder) || !file.path.ends_with(extension)) continue;
    std::string_view name = file.path.substr(folder.size());
    names.emplace_back(name.substr(0, name.size() - extension.size()));
  }
  return names;
}

const PresetFile* find_file(std::string_view folder, std::string_view name,
                            std::string_view extension) {
  for (const PresetFile& file : preset_files()) {
    if (file.path.size() == folder.size() + name.size() + extension.size() &&
        file.path.starts_with(folder) && file.path.ends_with(extension) &&
        file.path.substr(folder.size(), name.size()) == name) {
      return &file;
    }
  }
  return nullptr;
}

bool is_path(std::string_view argument) {
  return argument.ends_with(".toml") || argument.find('/') != std::string_view::npos;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

Result<std::string> read_file(std::string_view path) {
  std::ifstream in{std::string(path), std::ios::binary};
  if (!in) return make_error(std::string(path) + ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Loads `name_or_path` with `parse`, from a user's file or from the embedded presets.
template <typename Spec, typename Parse>
Result<Spec> load(std::string_view name_or_path, std::string_view kind, std::string_view folder,
                  Parse parse) {
  if (is_path(name_or_path)) {
    Result<std::string> text = read_file(name_or_path);
    if (!text.ok()) return make_error(text.error());
    return parse(text.value(), name_or_path);
  }
  const PresetFile* file = find_file(folder, name_or_path, ".toml");
  if (!file) {
    return make_error("unknown " + std::string(kind) + " '" + std::string(name_or_path) +
                      "' (presets: " + joined(names_in(folder, ".toml")) +
                      "; or give a path to a TOML file)");
  }
  return parse(file->text, file->path);
}

}  // namespace

std::vector<std::string> model_preset_names() { return names_in("models/", ".toml"); }
std::vector<std::string> hardware_preset_names() { return names_in("hardware/", ".toml"); }
std::vector<std::string> recipe_preset_names() { return names_in("recipes/", ".sh"); }
std::vector<std::string> stack_preset_names() { return names_in("stacks/", ".toml"); }

Result<ModelSpec> load_model(std::string_view name_or_path) {
  return load<ModelSpec>(name_or_path, "model", "models/", parse_model_toml);
}

Result<HardwareSpec> load_hardware(std::string_view name_or_path) {
  return load<HardwareSpec>(name_or_path, "hardware", "hardware/", parse_hardware_toml);
}

Result<StackProfile> load_stack(std::string_view name_or_path) {
  constexpr std::string_view kDefaultStack = "megatron-bridge";
  return load<StackProfile>(name_or_path.empty() ? kDefaultStack : name_or_path, "stack", "stacks/",
                            parse_stack_toml);
}

Result<std::string> recipe_preset_text(std::string_view name) {
  const PresetFile* file = find_file("recipes/", name, ".sh");
  if (!file) {
    return make_error("unknown recipe preset '" + std::string(name) +
                      "' (presets: " + joined(recipe_preset_names()) + ")");
  }
  return std::string(file->text);
}

Result<Recipe> load_recipe_preset(std::string_view name) {
  Result<std::string> text = recipe_preset_text(name);
  if (!text.ok()) return make_error(text.error());
  return parse_recipe(text.value(), "recipes/" + std::string(name) + ".sh");
}

Result<Workload> load_workload(std::string_view model, std::string_view gpu, int gpus,
                               int seq_length, int global_batch_size, Precision precision) {
  Result<ModelSpec> model_spec = load_model(model);
  if (!model_spec.ok()) return make_error(model_spec.error());
  Result<HardwareSpec> hardware = load_hardware(gpu);
  if (!hardware.ok()) return make_error(hardware.error());
  if (gpus <= 0) return make_error("--gpus must be positive, found " + std::to_string(gpus));
  if (seq_length <= 0)
    return make_error("--seq must be positive, found " + std::to_string(seq_length));
  if (global_batch_size <= 0) {
    return make_error("--gbs must be positive, found " + std::to_string(global_batch_size));
  }
  Workload workload;
  workload.model = std::move(model_spec).value();
  workload.hardware = std::move(hardware).value();
  workload.gpus = gpus;
  workload.seq_length = seq_length;
  workload.global_batch_size = global_batch_size;
  workload.precision = precision;
  return workload;
}

}  // namespace attune::sim
