// Named presets of the simulator, compiled into the binary from adapters/model/data: models
// (llama3.1-8b, ..., gpt-oss-120b), hardware (a100-80g, h100, h200, b200, b300, gb200, gb300) and
// baseline recipes (e.g. glm-4.5-b200x128). A model or hardware argument that names a TOML file
// loads that file instead, through the same parser, so a user's model gets the same treatment as a
// preset.
//
// Loading is pure apart from reading a user's file; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/hardware_spec.h"
#include "adapters/model/model_spec.h"
#include "adapters/model/workload.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune::sim {

std::vector<std::string> model_preset_names();
std::vector<std::string> hardware_preset_names();
std::vector<std::string> recipe_preset_names();

// A preset name, or a path to a TOML file (anything ending in ".toml" or holding a '/').
Result<ModelSpec> load_model(std::string_view name_or_path);
Result<HardwareSpec> load_hardware(std::string_view name_or_path);

// A baseline recipe preset by name (data/recipes/NAME.sh), parsed.
Result<Recipe> load_recipe_preset(std::string_view name);
// Its text as written, comments included.
Result<std::string> recipe_preset_text(std::string_view name);

// The workload from preset names or TOML paths (presets.h), checked for positive sizes.
Result<Workload> load_workload(std::string_view model, std::string_view gpu, int gpus,
                               int seq_length, int global_batch_size, Precision precision);

}  // namespace attune::sim
