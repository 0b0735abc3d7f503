// What the LLM tuner tells its model about the campaign at each ask: the ledger table, the
// leader and the band, the budget (GPU-hours and the LLM's own cost), the runs in flight, the
// last diagnosis and the outcome of the model's last proposal. Pure functions of the state.
#pragma once

#include <string>

#include "core/control_state.h"
#include "events/recipe.h"

namespace attune::llm {

// The campaign's state as Markdown, ending with a newline.
std::string render_campaign_state(const ControlState& state, const Recipe& baseline);

// "admitted as run 7" or "refused (layer-1): <detail>"; "not recorded" when the control plane
// never saw it (the search stopped first).
std::string proposal_outcome(const ControlState& state, ProposalId proposal_id);

// A profile's per-stage breakdown, one line per stage.
std::string render_profile(const ProfileAnalyzed& profile);

// The latest profile analysis (the highest run id that has one); empty when none.
std::string last_diagnosis(const ControlState& state);

}  // namespace attune::llm
