// The bridge from [baseline] script to a campaign's baseline recipe.
#pragma once

#include <string>
#include <vector>

#include "core/campaign_file.h"

namespace attune::cli {

// Runs [baseline] script in its sandbox (adapters/script) and fills spec.baseline and
// spec.baseline_shape; warnings go to `warnings`. No-op for a baseline given as a recipe.
Status resolve_baseline_script(CampaignSpec& spec, std::vector<std::string>& warnings);

}  // namespace attune::cli
