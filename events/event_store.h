// EventStore: the append-only ledger. One stream of hash-chained events per campaign, in RocksDB.
//
// Owns the RocksDB instance in one folder. append() is atomic (one WriteBatch per group of
// appends), refuses on a version conflict, and is durable when it returns: a single writer thread
// drains every pending append into one WriteBatch written with a synced WAL (group commit), so
// appends from several threads share one fsync. At most kPendingAppendsMax appends wait for the
// writer; a caller beyond that waits for room. After a write fails, the store refuses every later
// append (as LevelDB does): what is durable is no longer known, and only a reopen, which reads the
// ledger back, can tell. Thread-safe: every public method may be called from any thread.
//
// A database folder is held by one writing process at a time (RocksDB's LOCK file); a second
// writer gets an error naming the folder. Read-only handles may be opened alongside a writer and
// see the ledger as it was when they opened.
//
// Tamper evidence: with a ledger key (Options::key), every event's hash is an HMAC under it, and
// after every commit the store writes each appended campaign's anchor (events/anchor.h) beside the
// database and into the anchor mirror. An event key is never written twice, whatever the head
// says. The write-ahead log is replayed strictly: a damaged record in the middle of the log stops
// the open with an error instead of silently dropping every later event.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "events/anchor.h"
#include "events/event.h"
#include "events/ledger_key.h"
#include "events/result.h"

namespace attune {

// One stored event as raw bytes, keyed by its sequence number (what verification reads).
struct RawRecord {
  std::uint64_t key_sequence = 0;
  std::string bytes;
};

// What verify_chain finds. ok() when nothing is wrong; verified() when, besides, everything could
// be checked: every event keyed with a key the keyring holds, and the head anchored.
struct ChainReport {
  std::uint64_t events_verified = 0;
  std::vector<std::string> findings;      // one line each: which event and what is wrong
  std::vector<std::string> unverifiable;  // what could not be checked, and why
  bool ok() const { return findings.empty(); }
  bool verified() const { return findings.empty() && unverifiable.empty(); }
};

// What a chain is checked against besides its own records.
struct ChainEvidence {
  std::uint64_t head_sequence = 0;  // the head the database holds
  Digest head_hash{};
  std::string head_damage;      // non-empty: the head record does not decode, and why
  std::vector<Anchor> anchors;  // the campaign's anchor files
  KeyLookup keys;               // the keyring; empty: keyed events are unverifiable
};

// Verifies a campaign's records: every record decodes, sequence numbers run 1, 2, ... with no
// gap, each event names the campaign, links to its predecessor's hash, carries the hash of its
// own canonical bytes (an HMAC under the key it names, when the keyring holds it), and re-encodes
// to exactly the stored bytes; the stream ends at the database's head and reaches its newest
// valid anchor with the anchor's hash. Pure.
ChainReport verify_records(std::string_view campaign_id, std::span<const RawRecord> records,
                           const ChainEvidence& evidence);

// Campaign ids are 1-64 characters of [A-Za-z0-9._-], the first not a dot.
bool is_valid_campaign_id(std::string_view campaign_id);

class EventStore {
 public:
  struct Options {
    bool read_only = false;
    bool sync = true;  // fsync the WAL on every commit group; only benchmarks turn this off
    std::size_t appends_per_group_max = 4096;
    // The key new events are chained with; none: plain SHA-256 (tests and benchmarks).
    std::optional<LedgerKey> key;
    // Where anchors are mirrored, out of the ledger folder's reach (a folder per ledger below
    // it); empty: no mirror.
    std::string anchor_mirror_root;
  };
  static constexpr std::size_t kPendingAppendsMax = 4096;
  static constexpr std::uint64_t kToEnd = std::numeric_limits<std::uint64_t>::max();

  // Opens (creating it unless read-only) the ledger in `dir`.
  static Result<std::unique_ptr<EventStore>> open(const std::string& dir, Options options);
  static Result<std::unique_ptr<EventStore>> open(const std::string& dir) {
    return open(dir, Options{});
  }
  ~EventStore();
  EventStore(const EventStore&) = delete;
  EventStore& operator=(const EventStore&) = delete;

  // Appends `events` to the campaign's stream if its current version (the sequence number of its
  // last event, 0 for a new campaign) equals expected_version. Returns the recorded envelopes.
  Result<std::vector<Envelope>> append(std::string_view campaign_id, std::uint64_t expected_version,
                                       std::vector<NewEvent> events);

  // Events with from <= sequence <= to, in order.
  Result<std::vector<Envelope>> read(std::string_view campaign_id, std::uint64_t from = 1,
                                     std::uint64_t to = kToEnd) const;
  // Calls `visit` for each event in order without holding them all; stops at the first error. The
  // visitor may take what it keeps out of the event it is given.
  Status for_each(std::string_view campaign_id, const std::function<void(Envelope&&)>& visit) const;
  Result<std::vector<RawRecord>> read_raw(std::string_view campaign_id) const;

  // The sequence number of the campaign's last event; 0 if it has none.
  Result<std::uint64_t> version(std::string_view campaign_id) const;
  Result<std::vector<std::string>> list_campaigns() const;
  // Verifies the campaign's chain against its head and anchors, with `keys` for keyed events.
  Result<ChainReport> verify_chain(std::string_view campaign_id, const KeyLookup& keys) const;
  // The folders the campaign's anchors are written to and read from.
  std::vector<std::string> anchor_dirs() const;

  // Rewrites a finished campaign's events into one sorted run of files, so that later replays
  // read them in one pass (a campaign's events never change once it has shipped).
  Status compact(std::string_view campaign_id);

  // Replaces one stored record's bytes, bypassing every check. Tamper tests only.
  Status overwrite_raw_for_testing(std::string_view campaign_id, std::uint64_t key_sequence,
                                   std::string_view bytes);
  Status delete_raw_for_testing(std::string_view campaign_id, std::uint64_t key_sequence);
  // Rewrites or removes the head record, bypassing every check. Tamper tests only.
  Status overwrite_head_bytes_for_testing(std::string_view campaign_id, std::string_view bytes);
  Status overwrite_head_for_testing(std::string_view campaign_id, std::uint64_t sequence,
                                    const Digest& hash);
  Status delete_head_for_testing(std::string_view campaign_id);

  struct Impl;

 private:
  explicit EventStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attune
