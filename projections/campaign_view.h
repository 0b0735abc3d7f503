// CampaignView: every projection of one campaign's event stream, folded together.
//
// Owns the combination of the pure projections — baseline and band, leader, budget, stop status,
// ledger table, audit — with the campaign's settings (the first CampaignOpened) and identity.
// `evolve` applies one event in place; `fold` applies a whole stream to initial_view(). Folding
// event by event equals folding all at once, and the same events always give an equal view (no
// clock, no files, no threads). Within one event the projections evolve in dependency order:
// the band first, then the leader (which judges against it), then the ledger (which shows the
// leader's verdicts). A value type; REQUIRES external synchronization to share.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "events/event.h"
#include "projections/audit.h"
#include "projections/baseline_band.h"
#include "projections/budget.h"
#include "projections/leader.h"
#include "projections/ledger_table.h"
#include "projections/stop.h"

namespace attune {

struct CampaignView {
  std::string campaign_id;  // the first event's
  bool opened = false;
  CampaignOpened settings;  // the first CampaignOpened; defaults until then
  std::uint64_t event_count = 0;
  std::uint64_t last_sequence = 0;

  BaselineBand baseline_band;
  Leader leader;
  Budget budget;
  StopStatus stop;
  LedgerTable ledger;
  Audit audit;

  friend bool operator==(const CampaignView&, const CampaignView&) = default;
};

CampaignView initial_view();

// Applies one event to the view, in place.
void evolve(CampaignView& view, const Envelope& event);
// The same, moving what it keeps out of `event` (a replay's events are not read again); `event`
// is left valid but unspecified.
void evolve(CampaignView& view, Envelope&& event);

// initial_view(), then evolve with every event in order.
CampaignView fold(std::span<const Envelope> events);

}  // namespace attune
