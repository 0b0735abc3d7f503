// Running a whole campaign in process, for commands that run many (attune compare).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/campaign_file.h"
#include "core/control_state.h"
#include "events/result.h"

namespace attune::cli {

// How a campaign with an external tuner is driven: its control socket, and for `attune agent
// run` the agent command to keep running.
struct AgentOptions {
  std::string listen;   // "unix:PATH"; required when the tuner is external
  std::string command;  // the agent to start and restart; empty: the agent runs elsewhere
  std::uint32_t restarts_max = 5;
};

// `attune campaign run` (and `attune agent run`, with tuner "external" and a command): returns
// the exit code.
int run_campaign_file(const std::string& campaign_file, const std::string& db,
                      const std::optional<std::string>& tuner, const AgentOptions& agent,
                      bool json);

// Runs the campaign `spec` describes (overrides already applied) into a new ledger in `db`,
// without progress output, and returns its final state.
Result<ControlState> run_campaign_quietly(const CampaignSpec& spec, const std::string& db);

}  // namespace attune::cli
