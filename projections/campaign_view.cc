#include "projections/campaign_view.h"

namespace attune {

CampaignView initial_view() {
  CampaignView view;
  view.baseline_band = initial_baseline_band();
  view.leader = initial_leader();
  view.budget = initial_budget();
  view.stop = initial_stop_status();
  view.ledger = initial_ledger_table();
  view.audit = initial_audit();
  return view;
}

void evolve(CampaignView& view, const Envelope& event) {
  if (view.event_count == 0) view.campaign_id = event.campaign_id;
  if (const auto* opened = std::get_if<CampaignOpened>(&event.body); opened && !view.opened) {
    view.opened = true;
    view.settings = *opened;
  }
  ++view.event_count;
  view.last_sequence = event.sequence;

  evolve(view.baseline_band, event);
  evolve(view.leader, event, view.baseline_band);
  evolve(view.budget, event);
  evolve(view.stop, event);
  evolve(view.ledger, event, view.leader);
  evolve(view.audit, event);
}

CampaignView fold(std::span<const Envelope> events) {
  CampaignView view = initial_view();
  for (const Envelope& event : events) evolve(view, event);
  return view;
}

}  // namespace attune
