// Running a whole campaign in process, for commands that run many (attune compare).
#pragma once

#include <string>

#include "core/campaign_file.h"
#include "core/control_state.h"
#include "events/result.h"

namespace attune::cli {

// Runs the campaign `spec` describes (overrides already applied) into a new ledger in `db`,
// without progress output, and returns its final state.
Result<ControlState> run_campaign_quietly(const CampaignSpec& spec, const std::string& db);

}  // namespace attune::cli
