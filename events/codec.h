// The codec: converts an Envelope to and from its wire form (events.capnp) and computes the chain
// hash over it.
//
// This is the only component that sees Cap'n Proto; its header uses std types only. The bytes are
// Cap'n Proto's canonical encoding (capnp::canonicalize): one segment, no segment table, the root
// pointer first. Canonical bytes make the chain hash a function of the event's values alone, so the
// same events give the same hashes on every machine.
//
// All functions are pure and thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "events/event.h"
#include "events/ledger_key.h"
#include "events/result.h"
#include "events/sha256.h"

namespace attune {

// Canonical Cap'n Proto bytes of the envelope; the length is a multiple of 8. With
// include_hash=false the `hash` field is left unset: these are exactly the bytes the chain hash
// covers. REQUIRES: every enum in the envelope holds one of its named values.
std::string encode_envelope(const Envelope& envelope, bool include_hash);

// Decodes bytes produced by encode_envelope(envelope, true); encode_envelope(decoded, true) gives
// the same bytes back. Corrupt input is an Error, never a crash: a length that is not a positive
// multiple of 8, a malformed message, an unknown body or enum value (from a newer schema), a hash
// algorithm other than "sha256", a prev_hash or hash that is not 32 bytes, a charge that is not a
// finite, non-negative number of GPU-hours. Bytes that decode but are not canonical are found by
// verify_records, which re-encodes every event and compares.
Result<Envelope> decode_envelope(std::string_view bytes);

// The value the envelope's `hash` must hold: HMAC-SHA256(key, envelope.prev_hash ||
// encode_envelope(envelope, false)) for a keyed event, SHA-256 of the same bytes for an unkeyed
// one. envelope.hash itself does not enter the digest; the key id does (it is in the bytes).
// REQUIRES: `key` is the key the envelope names, when it names one.
Digest chain_hash(const Envelope& envelope, const LedgerKey* key);

}  // namespace attune
