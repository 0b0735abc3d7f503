#include "projections/campaign_view.h"

#include <utility>

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

namespace {

// Every projection but the ledger table, in dependency order.
void evolve_all_but_ledger(CampaignView& view, const Envelope& event) {
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
  evolve(view.audit, event);
}

}  // namespace

void evolve(CampaignView& view, const Envelope& event) {
  evolve_all_but_ledger(view, event);
  evolve(view.ledger, event, view.leader);
}

void evolve(CampaignView& view, Envelope&& event) {
  evolve_all_but_ledger(view, event);
  evolve(view.ledger, std::move(event), view.leader);  // last: it takes what it keeps
}

CampaignView fold(std::span<const Envelope> events) {
  CampaignView view = initial_view();
  for (const Envelope& event : events) evolve(view, event);
  return view;
}

}  // namespace attune
