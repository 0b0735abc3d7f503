// Rendering of a CampaignView: JSON for machines, aligned text for people.
//
// Owns the output formats of `attune status`, `attune replay` and `attune audit`: JSON with stable
// snake_case keys that carry their unit (tokens_per_s_per_gpu, gpu_hours, band_fraction), and
// compact text. Output is byte-deterministic: the same view always gives the same bytes (object
// keys sorted, doubles in text at fixed precision, no locale). Strings in the JSON are valid UTF-8
// (invalid bytes from the ledger are replaced by U+FFFD), so dump() never throws on them.
// Pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "projections/campaign_view.h"

namespace attune {

nlohmann::json to_json(const CampaignView& view);
nlohmann::json to_json(const CampaignOpened& settings);
nlohmann::json to_json(const BaselineBand& band);
nlohmann::json to_json(const Leader& leader);
nlohmann::json to_json(const Budget& budget);
nlohmann::json to_json(const StopStatus& stop);
nlohmann::json to_json(const LedgerTable& ledger);
nlohmann::json to_json(const Audit& audit);

// A compact summary, one line per topic: campaign, workload, baseline and band, leader, budget
// accounts, state, counts of runs. Ends with a newline.
std::string render_status_text(const CampaignView& view);

// The ledger table, one aligned row per admitted run, then the refused proposals. Ends with a
// newline.
std::string render_ledger_text(const CampaignView& view);

// The audit: a headline, one line per finding, then the charges, refused launches and access
// denials as aligned tables. Ends with a newline.
std::string render_audit_text(const CampaignView& view);

}  // namespace attune
