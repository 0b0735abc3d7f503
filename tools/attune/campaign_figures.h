// What the commands that show a finished campaign share: its view folded from the ledger, and the
// model FLOPs per token, GPU peak and GPU-hour price its run rows and economics need.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "events/event.h"
#include "events/event_store.h"
#include "events/result.h"
#include "projections/campaign_view.h"
#include "projections/run_rows.h"

namespace attune::cli {

// A ledger opened read-only, and the campaign in it to show: the one asked for, else its only one.
struct LoadedCampaign {
  std::unique_ptr<EventStore> store;
  std::string campaign_id;
};
Result<LoadedCampaign> load_campaign(const std::string& db,
                                     const std::optional<std::string>& campaign);

// Every event of the campaign folded into its view.
Result<CampaignView> fold_campaign(const EventStore& store, const std::string& campaign_id);

// The paper's MFU FLOPs per token for the campaign's model and sequence length, the dense peak of
// its GPU at its precision, and its [cost] price. A model or GPU that no longer loads (a user's
// file since moved) leaves its figure 0, so MFU is left out rather than guessed.
Efficiency efficiency_of(const CampaignOpened& opened);

}  // namespace attune::cli
