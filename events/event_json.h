// Renders ledger events for people and other tools: one JSON object or one CSV row per event.
//
// Used by the CLI's `--json` output and by exports. The JSON mirrors event.h: body fields carry the
// C++ member names, enums their to_string() text, digests lowercase hex. The output depends on the
// event alone (object keys sorted, doubles in their shortest round-trip form), so the same ledger
// always renders to the same bytes. All functions are pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "events/event.h"

namespace attune {

// {"sequence", "campaign_id", "recorded_at_unix_ns", "actor", "prev_hash", "hash", "type", "body"}:
// type is body_name(), body an object with one key per member of the body struct. Text fields are
// copied as they are; dump the result with error_handler_t::replace when it may hold bytes that are
// not UTF-8 (log lines, paths), or dump() throws.
nlohmann::json event_to_json(const Envelope& envelope);

// "sequence,campaign_id,recorded_at_unix_ns,actor,type,prev_hash,hash,body", without a line
// terminator.
const char* event_csv_header();

// One CSV row (RFC 4180) in the columns of event_csv_header(), without a line terminator. body is
// the compact JSON of the body, always quoted; other fields are quoted when they hold a comma, a
// quote or a line break. Bytes that are not UTF-8 become U+FFFD in the body.
std::string event_to_csv_row(const Envelope& envelope);

}  // namespace attune
