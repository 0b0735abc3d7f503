// The preflight: what can be known about a campaign before it spends anything. `attune campaign
// check FILE` prints it; `campaign run` runs it before it touches the ledger and refuses a
// campaign with a problem.
#pragma once

#include <string>
#include <vector>

#include "core/campaign_file.h"

namespace attune::cli {

struct PreflightReport {
  std::vector<std::string> problems;  // each one line; any problem refuses the campaign
  std::vector<std::string> notes;     // the one-screen summary of what was checked
  std::string batch_script;           // Slurm: the baseline's first batch script, not submitted
};

// Checks the workload against the baseline (sizes, precision, parallel degrees, layers), values
// that are not finite, the memory prediction against the hardware, the calibration's expected
// cost against the budget, and the launcher's readiness (Slurm's commands and template).
PreflightReport preflight(const CampaignSpec& spec);

}  // namespace attune::cli
