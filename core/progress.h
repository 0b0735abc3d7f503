// Progress lines: what a campaign's events say to the person watching it. Pure.
//
// One line per finished run (its purpose, change, hypothesis, measurement or failure, verdict and
// the budget left) and per decision that matters (the band, a refusal, the stop, a gate verdict),
// made from the state after the event was folded. The runtime hands them to its progress output.
#pragma once

#include <string>
#include <vector>

#include "core/control_state.h"
#include "events/event.h"

namespace attune {

std::vector<std::string> progress_lines(const ControlState& state, const Envelope& event);

}  // namespace attune
