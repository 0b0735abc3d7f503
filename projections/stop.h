// StopStatus: whether the campaign is still searching, has stopped, or has shipped a recipe.
//
// Owns the campaign's end state: running until a StopRecorded (reason, evidence, the leader,
// levers tested, last diagnosis), then stopped until a RecipeShipped (the run shipped, whether it
// is the baseline, its gain). The first stop and the first shipment count; later ones are ignored
// here (the audit lists every event). A pure value type.
#pragma once

#include <cstdint>
#include <optional>

#include "events/event.h"

namespace attune {

enum class CampaignState : std::uint8_t { kRunning, kStopped, kShipped };

const char* to_string(CampaignState value);  // "running", "stopped", "shipped"

struct StopStatus {
  CampaignState state = CampaignState::kRunning;
  std::optional<StopRecorded> stop;
  std::uint64_t stop_sequence = 0;  // 0 while running
  std::optional<RecipeShipped> shipped;
  std::uint64_t shipped_sequence = 0;  // 0 until shipped

  friend bool operator==(const StopStatus&, const StopStatus&) = default;
};

StopStatus initial_stop_status();

void evolve(StopStatus& state, const Envelope& event);

}  // namespace attune
