// Anchor: a campaign's head as the event store last acknowledged it, written outside RocksDB.
//
// The head also lives in the database, beside the events, so whoever can rewrite the database can
// cut the tail and move the head with it. After every commit the store also writes one small file
// per campaign it appended to, synced after the RocksDB batch: <ledger>/anchors/<campaign>.anchor,
// and a mirror under the keyring's folder, where a writer of the ledger folder cannot reach. The
// anchor carries an HMAC under the ledger key, so it cannot be forged for a shorter chain either.
// A chain that ends before its newest valid anchor lost events; one that goes past it may (a
// crash between the batch and the anchor), since each of its events is keyed too.
//
// One line of text:
//   attune-anchor 1 <campaign> <sequence> <hash hex> <key id or -> <mac hex or ->
// Pure functions apart from the file reads and writes, which replace a file whole.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "events/ledger_key.h"
#include "events/result.h"
#include "events/sha256.h"

namespace attune {

struct Anchor {
  std::string campaign_id;
  std::uint64_t sequence = 0;
  Digest hash{};
  std::string key_id;  // empty: an unkeyed ledger's anchor, without a MAC
  Digest mac{};
  std::string source;  // the file it was read from
};

// The anchor of a head, with its MAC under `key` (none when `key` is null).
Anchor make_anchor(std::string_view campaign_id, std::uint64_t sequence, const Digest& hash,
                   const LedgerKey* key);
// Whether the anchor's MAC is the one `key` gives. REQUIRES: key.id == anchor.key_id.
bool anchor_mac_valid(const Anchor& anchor, const LedgerKey& key);

std::string anchor_text(const Anchor& anchor);
Result<Anchor> parse_anchor(std::string_view text, const std::string& source);

std::string anchor_file_name(std::string_view campaign_id);
// Writes the anchor into `dir` (created if missing), whole; synced when `sync`.
Status write_anchor_file(const std::string& dir, const Anchor& anchor, bool sync);
// The campaign's anchors in each of `dirs` that has one; a file that does not parse is an error.
Result<std::vector<Anchor>> read_anchor_files(std::span<const std::string> dirs,
                                              std::string_view campaign_id);

}  // namespace attune
