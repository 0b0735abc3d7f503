#include "projections/stop.h"

namespace attune {

const char* to_string(CampaignState value) {
  switch (value) {
    case CampaignState::kRunning:
      return "running";
    case CampaignState::kStopped:
      return "stopped";
    case CampaignState::kShipped:
      return "shipped";
  }
  return "?";
}

StopStatus initial_stop_status() { return StopStatus{}; }

void evolve(StopStatus& state, const Envelope& event) {
  if (const auto* stop = std::get_if<StopRecorded>(&event.body); stop && !state.stop) {
    state.stop = *stop;
    state.stop_sequence = event.sequence;
  } else if (const auto* shipped = std::get_if<RecipeShipped>(&event.body);
             shipped && !state.shipped) {
    state.shipped = *shipped;
    state.shipped_sequence = event.sequence;
  }
  if (state.shipped) {
    state.state = CampaignState::kShipped;
  } else if (state.stop) {
    state.state = CampaignState::kStopped;
  }
}

}  // namespace attune
