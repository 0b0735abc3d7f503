// The simulator's data files compiled into the binary: model presets (models/NAME.toml),
// hardware presets (hardware/NAME.toml), stack profiles (stacks/NAME.toml), baseline recipes
// (recipes/NAME.sh) and the published throughputs (published/rows.tsv), as their bytes.
//
// The table is generated at build time from adapters/model/data by embed_data.cmake. It is
// immutable; any thread may read it.
#pragma once

#include <span>
#include <string_view>

namespace attune::sim {

struct PresetFile {
  std::string_view path;  // relative to adapters/model/data, e.g. "models/glm-4.5.toml"
  std::string_view text;
};

// Every embedded file, sorted by path.
std::span<const PresetFile> preset_files();

}  // namespace attune::sim
