#include "events/event_store.h"

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include "events/assert.h"
#include "events/codec.h"

namespace attune {
namespace {

constexpr std::size_t kBlockBytes = 64 * 1024;
constexpr std::size_t kScanReadaheadBytes = 2 * 1024 * 1024;

// Key layout: "e/<campaign>/<sequence, 8 bytes big-endian>" -> event bytes;
// "h/<campaign>" -> head (sequence, 8 bytes big-endian, then the 32-byte hash of that event).
// Campaign ids cannot contain '/', so a campaign's events form one contiguous key range.
std::string event_prefix(std::string_view campaign_id) {
  std::string key = "e/";
  key.append(campaign_id);
  key.push_back('/');
  return key;
}

void append_big_endian(std::string& out, std::uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

std::uint64_t read_big_endian(std::string_view bytes) {
  ATTUNE_ASSERT(bytes.size() >= 8, "a big-endian number has 8 bytes");
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) {
    value = (value << 8) | static_cast<std::uint8_t>(bytes[i]);
  }
  return value;
}

std::string event_key(std::string_view campaign_id, std::uint64_t sequence) {
  std::string key = event_prefix(campaign_id);
  append_big_endian(key, sequence);
  return key;
}

std::string head_key(std::string_view campaign_id) {
  std::string key = "h/";
  key.append(campaign_id);
  return key;
}

// The ledger's own random id, which names its folder in the anchor mirror.
constexpr std::string_view kLedgerIdKey = "m/ledger-id";
constexpr std::size_t kLedgerIdBytes = 16;

struct Head {
  std::uint64_t sequence = 0;
  Digest hash{};
};

std::string encode_head(const Head& head) {
  std::string bytes;
  append_big_endian(bytes, head.sequence);
  bytes.append(reinterpret_cast<const char*>(head.hash.data()), head.hash.size());
  return bytes;
}

Result<Head> decode_head(std::string_view bytes) {
  if (bytes.size() != 8 + 32) {
    return make_error("ledger head record has " + std::to_string(bytes.size()) +
                      " bytes, expected 40");
  }
  Head head;
  head.sequence = read_big_endian(bytes);
  std::copy(bytes.begin() + 8, bytes.end(), head.hash.begin());
  return head;
}

Error store_error(const std::string& what, const rocksdb::Status& status) {
  return make_error(what + ": " + status.ToString());
}

}  // namespace

bool is_valid_campaign_id(std::string_view campaign_id) {
  // Ids become file names (<id>.shipped.sh, anchors, job folders): no '/', and no leading '.',
  // so never "." or "..".
  if (campaign_id.empty() || campaign_id.size() > 64 || campaign_id.front() == '.') return false;
  for (char c : campaign_id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

// `keys`, asking it once per key id: a lookup reads the keyring's files, and a chain names the same
// key in every event.
KeyLookup remembered(const KeyLookup& keys) {
  if (!keys) return keys;
  auto known = std::make_shared<std::map<std::string, std::optional<LedgerKey>>>();
  return [keys, known](const std::string& id) {
    const auto [found, inserted] = known->try_emplace(id);
    if (inserted) found->second = keys(id);
    return found->second;
  };
}

// The hash an event must carry, or why it cannot be checked.
std::optional<Digest> expected_hash(const Envelope& envelope, const KeyLookup& keys,
                                    std::set<std::string>& missing_keys) {
  if (envelope.key_id.empty()) return chain_hash(envelope, nullptr);
  const std::optional<LedgerKey> key = keys ? keys(envelope.key_id) : std::nullopt;
  if (!key) {
    missing_keys.insert(envelope.key_id);
    return std::nullopt;
  }
  return chain_hash(envelope, &*key);
}

// The newest anchor whose MAC holds (or that has none, on an unkeyed ledger), and what is wrong
// with the others.
const Anchor* newest_valid_anchor(const ChainEvidence& evidence, ChainReport& report) {
  const Anchor* newest = nullptr;
  for (const Anchor& anchor : evidence.anchors) {
    if (!anchor.key_id.empty()) {
      const std::optional<LedgerKey> key =
          evidence.keys ? evidence.keys(anchor.key_id) : std::nullopt;
      if (!key) {
        report.unverifiable.push_back(anchor.source + ": anchored with key " + anchor.key_id +
                                      ", which the keyring does not hold");
        continue;
      }
      if (!anchor_mac_valid(anchor, *key)) {
        report.findings.push_back(anchor.source + ": the anchor's MAC does not hold (forged)");
        continue;
      }
    }
    if (newest == nullptr || anchor.sequence > newest->sequence) newest = &anchor;
  }
  return newest;
}

void check_head(std::span<const RawRecord> records, const std::vector<Digest>& hashes,
                const ChainEvidence& evidence, ChainReport& report) {
  const std::uint64_t last = records.empty() ? 0 : records.back().key_sequence;
  if (!evidence.head_damage.empty()) {
    report.findings.push_back("head: " + evidence.head_damage);
  } else if (last != evidence.head_sequence) {
    report.findings.push_back("head: the last acknowledged event is " +
                              std::to_string(evidence.head_sequence) + " but the stream ends at " +
                              std::to_string(last) + " (events removed or added at the end)");
  } else if (!records.empty() && hashes.back() != evidence.head_hash) {
    report.findings.push_back("head: the last event's hash differs from the acknowledged head");
  }
  const Anchor* anchor = newest_valid_anchor(evidence, report);
  if (anchor == nullptr) {
    if (evidence.anchors.empty()) report.unverifiable.push_back("head: no anchor");
    return;
  }
  if (anchor->sequence > last) {
    report.findings.push_back("anchor: " + anchor->source + " holds event " +
                              std::to_string(anchor->sequence) + " but the stream ends at " +
                              std::to_string(last) + " (events removed at the end)");
  } else if (anchor->sequence > 0) {
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (records[i].key_sequence == anchor->sequence && hashes[i] != anchor->hash) {
        report.findings.push_back("anchor: event " + std::to_string(anchor->sequence) +
                                  "'s hash differs from its anchor in " + anchor->source);
      }
    }
  }
}

}  // namespace

ChainReport verify_records(std::string_view campaign_id, std::span<const RawRecord> records,
                           const ChainEvidence& given) {
  ChainEvidence evidence = given;
  evidence.keys = remembered(given.keys);
  ChainReport report;
  Digest prev{};
  std::uint64_t expected_sequence = 1;
  std::vector<Digest> hashes;  // as stored, one per record
  std::set<std::string> missing_keys;
  std::uint64_t unkeyed = 0;
  for (const RawRecord& record : records) {
    const std::string where = "event " + std::to_string(record.key_sequence);
    if (record.key_sequence != expected_sequence) {
      report.findings.push_back(where + ": expected sequence " + std::to_string(expected_sequence) +
                                " (an event is missing or was inserted)");
    }
    expected_sequence = record.key_sequence + 1;
    Result<Envelope> decoded = decode_envelope(record.bytes);
    if (!decoded.ok()) {
      report.findings.push_back(where + ": does not decode: " + decoded.error());
      prev = Digest{};
      hashes.push_back(Digest{});
      continue;
    }
    const Envelope& envelope = decoded.value();
    hashes.push_back(envelope.hash);
    if (envelope.sequence != record.key_sequence) {
      report.findings.push_back(where + ": carries sequence " + std::to_string(envelope.sequence) +
                                " (moved or reordered)");
    }
    if (envelope.campaign_id != campaign_id) {
      report.findings.push_back(where + ": belongs to campaign '" + envelope.campaign_id + "'");
    }
    if (envelope.prev_hash != prev) {
      report.findings.push_back(where + ": does not link to the previous event's hash");
    }
    unkeyed += envelope.key_id.empty() ? 1 : 0;
    const std::optional<Digest> expected = expected_hash(envelope, evidence.keys, missing_keys);
    if (expected && *expected != envelope.hash) {
      report.findings.push_back(where + ": hash does not match its contents (changed)");
    } else if (encode_envelope(envelope, true) != record.bytes) {
      report.findings.push_back(where + ": stored bytes are not canonical (changed)");
    }
    prev = envelope.hash;
    ++report.events_verified;
  }
  for (const std::string& id : missing_keys) {
    report.unverifiable.push_back("events keyed with " + id +
                                  ": the keyring does not hold that key");
  }
  if (unkeyed > 0) {
    report.unverifiable.push_back(std::to_string(unkeyed) +
                                  " events are not keyed: whoever can write the ledger folder "
                                  "could have rewritten them");
  }
  check_head(records, hashes, evidence, report);
  return report;
}

// ---- EventStore::Impl -------------------------------------------------------------------------

struct EventStore::Impl {
  struct PendingAppend {
    std::string campaign_id;
    std::uint64_t expected_version = 0;
    std::vector<NewEvent> events;
    std::promise<Result<std::vector<Envelope>>> promise;
  };

  std::string dir;
  Options options;
  std::unique_ptr<rocksdb::DB> db;
  std::string ledger_id;  // empty for a read-only ledger written before ids

  // Writer state. `queue`, `stopping` and `failure` are guarded by `mutex`; `heads` is touched
  // only by the writer thread.
  std::mutex mutex;
  std::condition_variable queue_changed;  // the writer waits for work, appenders for room
  std::deque<PendingAppend> queue;
  bool stopping = false;
  std::optional<Error> failure;  // the first failed write: every later append is refused
  std::unordered_map<std::string, Head> heads;
  std::thread writer;

  // Calls visit(sequence, bytes) for the campaign's events with sequence >= from, in order,
  // until visit returns false.
  Status scan(std::string_view campaign_id, std::uint64_t from,
              const std::function<bool(std::uint64_t, std::string_view)>& visit) const {
    const std::string prefix = event_prefix(campaign_id);
    std::string upper = prefix;
    upper.back() = static_cast<char>('/' + 1);
    rocksdb::Slice upper_slice(upper);
    rocksdb::ReadOptions read_options;
    read_options.iterate_upper_bound = &upper_slice;
    // A scan reads a stream once, front to back: read ahead, and keep its blocks out of the
    // cache, where they would only evict the heads and recent events.
    read_options.fill_cache = false;
    read_options.readahead_size = kScanReadaheadBytes;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read_options));
    for (it->Seek(event_key(campaign_id, from)); it->Valid(); it->Next()) {
      if (it->key().size() != prefix.size() + 8) continue;
      const std::uint64_t sequence =
          read_big_endian(std::string_view(it->key().data() + prefix.size(), 8));
      if (!visit(sequence, std::string_view(it->value().data(), it->value().size()))) break;
    }
    if (!it->status().ok()) return store_error("reading ledger " + dir, it->status());
    return Ok{};
  }

  Error decode_failure(std::string_view campaign_id, std::uint64_t sequence,
                       const std::string& why) const {
    return make_error("ledger " + dir + ", campaign " + std::string(campaign_id) + ", event " +
                      std::to_string(sequence) + " does not decode: " + why);
  }

  // The ledger's id, created with the ledger (a writable open of one without it adds it).
  Status load_ledger_id() {
    std::string value;
    rocksdb::Status status = db->Get(rocksdb::ReadOptions(), std::string(kLedgerIdKey), &value);
    if (status.ok()) {
      ledger_id = value;
      return Ok{};
    }
    if (!status.IsNotFound()) return store_error("reading the ledger's id in " + dir, status);
    if (options.read_only) return Ok{};
    std::array<std::uint8_t, kLedgerIdBytes> bytes{};
    std::random_device random;
    for (std::uint8_t& byte : bytes) byte = static_cast<std::uint8_t>(random());
    ledger_id = to_hex(bytes);
    rocksdb::WriteOptions write_options;
    write_options.sync = options.sync;
    status = db->Put(write_options, std::string(kLedgerIdKey), ledger_id);
    if (!status.ok()) return store_error("recording the ledger's id in " + dir, status);
    return Ok{};
  }

  Result<Head> load_head(std::string_view campaign_id) const {
    std::string value;
    rocksdb::Status status = db->Get(rocksdb::ReadOptions(), head_key(campaign_id), &value);
    if (status.IsNotFound()) return Head{};
    if (!status.ok())
      return store_error("reading the head of campaign " + std::string(campaign_id), status);
    return decode_head(value);
  }

  void writer_loop() {
    for (;;) {
      std::vector<PendingAppend> group;
      {
        std::unique_lock lock(mutex);
        queue_changed.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping and drained
        while (!queue.empty() && group.size() < options.appends_per_group_max) {
          group.push_back(std::move(queue.front()));
          queue.pop_front();
        }
      }
      queue_changed.notify_all();  // room for appenders that wait
      commit_group(group);
    }
  }

  // Validates and encodes every append of the group against the heads as they will be after the
  // earlier appends of the same group, then writes the whole group with one synced WriteBatch.
  void commit_group(std::vector<PendingAppend>& group) {
    {
      std::lock_guard lock(mutex);
      if (failure) {
        for (PendingAppend& pending : group) pending.promise.set_value(*failure);
        return;
      }
    }
    rocksdb::WriteBatch batch;
    std::unordered_map<std::string, Head> tentative;
    std::vector<std::size_t> included;
    std::vector<std::vector<Envelope>> recorded(group.size());
    for (std::size_t i = 0; i < group.size(); ++i) {
      PendingAppend& pending = group[i];
      auto found = tentative.find(pending.campaign_id);
      if (found == tentative.end()) {
        Result<Head> head = current_head(pending.campaign_id);
        if (!head.ok()) {
          pending.promise.set_value(make_error(head.error()));
          continue;
        }
        found = tentative.emplace(pending.campaign_id, head.value()).first;
      }
      Head& head = found->second;
      if (head.sequence != pending.expected_version) {
        pending.promise.set_value(make_error("version conflict on campaign " + pending.campaign_id +
                                             ": expected version " +
                                             std::to_string(pending.expected_version) +
                                             ", ledger is at " + std::to_string(head.sequence)));
        continue;
      }
      if (auto taken = first_taken_key(pending.campaign_id, head.sequence, pending.events.size())) {
        pending.promise.set_value(make_error(*taken));
        continue;
      }
      std::vector<Envelope>& envelopes = recorded[i];
      envelopes.reserve(pending.events.size());
      const LedgerKey* key = options.key ? &*options.key : nullptr;
      for (NewEvent& event : pending.events) {
        Envelope envelope;
        envelope.sequence = head.sequence + 1;
        envelope.campaign_id = pending.campaign_id;
        envelope.recorded_at_unix_ns = event.recorded_at_unix_ns;
        envelope.actor = std::move(event.actor);
        envelope.key_id = key != nullptr ? key->id : "";
        envelope.prev_hash = head.hash;
        envelope.body = std::move(event.body);
        envelope.hash = chain_hash(envelope, key);
        std::string bytes = encode_envelope(envelope, true);
        // Pair assertion: what is written must read back as the same event.
        Result<Envelope> check = decode_envelope(bytes);
        ATTUNE_ASSERT(check.ok() && check.value() == envelope,
                      "an encoded event decodes to the event that was encoded");
        batch.Put(event_key(envelope.campaign_id, envelope.sequence), bytes);
        head.sequence = envelope.sequence;
        head.hash = envelope.hash;
        envelopes.push_back(std::move(envelope));
      }
      if (!envelopes.empty()) {
        batch.Put(head_key(pending.campaign_id), encode_head(head));
      }
      included.push_back(i);
    }
    if (included.empty()) return;

    rocksdb::WriteOptions write_options;
    write_options.sync = options.sync;
    rocksdb::Status status = db->Write(write_options, &batch);
    if (!status.ok()) {
      // Whether any of the batch reached the disk is unknown: the store refuses every later
      // write rather than build on a head it cannot trust.
      Error error = store_error("appending to the ledger in " + dir, status);
      {
        std::lock_guard lock(mutex);
        if (!failure) failure = error;
      }
      for (std::size_t i : included) group[i].promise.set_value(error);
      return;
    }
    for (auto& [campaign_id, head] : tentative) {
      auto& known = heads[campaign_id];
      ATTUNE_ASSERT(head.sequence >= known.sequence, "a campaign's head only moves forward");
      known = head;
    }
    // The events are durable; their anchors follow. An anchor that cannot be written stops
    // later appends, as a failed write does, but this one stands.
    for (auto& [campaign_id, head] : tentative) {
      if (head.sequence == 0) continue;
      Status anchored = write_anchors(campaign_id, head);
      if (!anchored.ok()) {
        std::lock_guard lock(mutex);
        if (!failure) failure = make_error(anchored.error());
      }
    }
    for (std::size_t i : included) group[i].promise.set_value(std::move(recorded[i]));
  }

  // An error when any of the `count` event keys after `sequence` already holds an event: the head
  // was removed or moved back, and writing would overwrite what the ledger recorded.
  std::optional<std::string> first_taken_key(const std::string& campaign_id, std::uint64_t sequence,
                                             std::size_t count) {
    for (std::uint64_t s = sequence + 1; s <= sequence + count; ++s) {
      std::string value;
      const rocksdb::Status status =
          db->Get(rocksdb::ReadOptions(), event_key(campaign_id, s), &value);
      if (status.IsNotFound()) continue;
      return "campaign " + campaign_id + " already holds an event " + std::to_string(s) +
             " past its head (" + std::to_string(sequence) +
             "): the head was removed or moved back; the ledger refuses to overwrite an event";
    }
    return std::nullopt;
  }

  std::vector<std::string> anchor_dirs() const {
    std::vector<std::string> dirs = {(std::filesystem::path(dir) / "anchors").string()};
    if (!options.anchor_mirror_root.empty() && !ledger_id.empty()) {
      dirs.push_back((std::filesystem::path(options.anchor_mirror_root) / ledger_id).string());
    }
    return dirs;
  }

  Status write_anchors(const std::string& campaign_id, const Head& head) {
    const Anchor anchor =
        make_anchor(campaign_id, head.sequence, head.hash, options.key ? &*options.key : nullptr);
    for (const std::string& anchor_dir : anchor_dirs()) {
      Status written = write_anchor_file(anchor_dir, anchor, options.sync);
      if (!written.ok()) return written;
    }
    return Ok{};
  }

  Result<Head> current_head(const std::string& campaign_id) {
    auto cached = heads.find(campaign_id);
    if (cached != heads.end()) return cached->second;
    Result<Head> head = load_head(campaign_id);
    if (head.ok()) heads[campaign_id] = head.value();
    return head;
  }
};

EventStore::EventStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EventStore::~EventStore() {
  if (!impl_->options.read_only) {
    {
      std::lock_guard lock(impl_->mutex);
      impl_->stopping = true;
    }
    impl_->queue_changed.notify_all();
    impl_->writer.join();
  }
  if (impl_->failure) {
    // After a failed write RocksDB's own close may stop on its assertions; what is durable is
    // on disk, and the next open recovers it. The process lets the handle go unclosed.
    (void)impl_->db.release();
    return;
  }
  rocksdb::Status status = impl_->db->Close();
  (void)status;  // nothing is pending: every append was synced before it was acknowledged
}

Result<std::unique_ptr<EventStore>> EventStore::open(const std::string& dir, Options options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool has_current = fs::exists(fs::path(dir) / "CURRENT", ec);
  if (ec) {
    // The folder exists but cannot be searched (mode 000, another user's): say so, rather than
    // that no ledger is there.
    return make_error("cannot read the ledger folder " + dir + ": " + ec.message());
  }
  if (options.read_only && !has_current) {
    return make_error("no ledger in " + dir + " (no RocksDB database there)");
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->options = options;
  rocksdb::Options db_options;
  db_options.create_if_missing = !options.read_only;
  db_options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  db_options.keep_log_file_num = 2;
  // A damaged record in the middle of the write-ahead log stops the open: the default recovery
  // would end the log there and silently drop every later event. Only a record cut short by a
  // crash at the very end of the log is tolerated (it was never acknowledged).
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  db_options.paranoid_checks = true;
  // Streams are read whole, in key order: large blocks mean fewer block reads per scan, and
  // mapped files no copy from the page cache.
  db_options.allow_mmap_reads = true;
  rocksdb::BlockBasedTableOptions table_options;
  table_options.block_size = kBlockBytes;
  db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table_options));
  // LZ4 decompresses faster than Snappy, RocksDB's default; a build without it keeps Snappy.
  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  if (std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) != supported.end()) {
    db_options.compression = rocksdb::kLZ4Compression;
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status status = options.read_only ? rocksdb::DB::OpenForReadOnly(db_options, dir, &raw)
                                             : rocksdb::DB::Open(db_options, dir, &raw);
  if (!status.ok()) {
    const std::string text = status.ToString();
    if (text.find("lock") != std::string::npos || text.find("LOCK") != std::string::npos) {
      return make_error("ledger " + dir + " is held by another process (" + text + ")");
    }
    if (status.IsCorruption()) {
      return make_error("ledger " + dir + " is damaged (" + text +
                        "); nothing was read past the damage and nothing was changed: restore "
                        "the folder from a copy (its anchors/ say how far the ledger went)");
    }
    return store_error("cannot open ledger " + dir, status);
  }
  impl->db.reset(raw);
  Status identified = impl->load_ledger_id();
  if (!identified.ok()) return make_error(identified.error());
  if (!options.read_only) {
    Impl* self = impl.get();
    impl->writer = std::thread([self] { self->writer_loop(); });
  }
  return std::unique_ptr<EventStore>(new EventStore(std::move(impl)));
}

Result<std::vector<Envelope>> EventStore::append(std::string_view campaign_id,
                                                 std::uint64_t expected_version,
                                                 std::vector<NewEvent> events) {
  if (impl_->options.read_only) return make_error("ledger " + impl_->dir + " is open read-only");
  if (!is_valid_campaign_id(campaign_id)) {
    return make_error("invalid campaign id '" + std::string(campaign_id) +
                      "': expected 1-64 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  for (const NewEvent& event : events) {
    if (event.actor.empty()) return make_error("an event has no actor");
  }
  Impl::PendingAppend pending;
  auto future = pending.promise.get_future();
  pending.campaign_id = std::string(campaign_id);
  pending.expected_version = expected_version;
  pending.events = std::move(events);
  {
    std::unique_lock lock(impl_->mutex);
    impl_->queue_changed.wait(
        lock, [&] { return impl_->failure || impl_->queue.size() < kPendingAppendsMax; });
    if (impl_->failure) {
      return make_error(impl_->failure->message +
                        "; the ledger refuses further writes until it is reopened");
    }
    impl_->queue.push_back(std::move(pending));
  }
  impl_->queue_changed.notify_all();
  return future.get();
}

Status EventStore::for_each(std::string_view campaign_id,
                            const std::function<void(Envelope&&)>& visit) const {
  std::optional<Error> failure;
  Status scanned = impl_->scan(campaign_id, 1, [&](std::uint64_t sequence, std::string_view bytes) {
    Result<Envelope> envelope = decode_envelope(bytes);
    if (!envelope.ok()) {
      failure = impl_->decode_failure(campaign_id, sequence, envelope.error());
      return false;
    }
    visit(std::move(envelope).value());
    return true;
  });
  if (failure) return *failure;
  return scanned;
}

Result<std::vector<Envelope>> EventStore::read(std::string_view campaign_id, std::uint64_t from,
                                               std::uint64_t to) const {
  std::vector<Envelope> envelopes;
  std::optional<Error> failure;
  Status scanned =
      impl_->scan(campaign_id, from, [&](std::uint64_t sequence, std::string_view bytes) {
        if (sequence > to) return false;
        Result<Envelope> envelope = decode_envelope(bytes);
        if (!envelope.ok()) {
          failure = impl_->decode_failure(campaign_id, sequence, envelope.error());
          return false;
        }
        envelopes.push_back(std::move(envelope).value());
        return true;
      });
  if (failure) return *failure;
  if (!scanned.ok()) return make_error(scanned.error());
  return envelopes;
}

Result<std::vector<RawRecord>> EventStore::read_raw(std::string_view campaign_id) const {
  std::vector<RawRecord> records;
  Status scanned = impl_->scan(campaign_id, 0, [&](std::uint64_t sequence, std::string_view bytes) {
    records.push_back(RawRecord{sequence, std::string(bytes)});
    return true;
  });
  if (!scanned.ok()) return make_error(scanned.error());
  return records;
}

Result<std::uint64_t> EventStore::version(std::string_view campaign_id) const {
  Result<Head> head = impl_->load_head(campaign_id);
  if (!head.ok()) return make_error(head.error());
  return head->sequence;
}

Result<std::vector<std::string>> EventStore::list_campaigns() const {
  // Every campaign with a head, and every campaign with events: a head that was removed does
  // not hide the events behind it.
  std::set<std::string> campaigns;
  {
    rocksdb::ReadOptions read_options;
    std::string upper = "h0";  // '0' follows '/'
    rocksdb::Slice upper_slice(upper);
    read_options.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(read_options));
    for (it->Seek("h/"); it->Valid(); it->Next()) campaigns.insert(it->key().ToString().substr(2));
    if (!it->status().ok()) return store_error("listing campaigns in " + impl_->dir, it->status());
  }
  rocksdb::ReadOptions read_options;
  std::string upper = "e0";
  rocksdb::Slice upper_slice(upper);
  read_options.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(read_options));
  // One seek per campaign: past a campaign's events is the key after "e/<campaign>/".
  for (it->Seek("e/"); it->Valid();) {
    const std::string key = it->key().ToString();
    const std::size_t slash = key.find('/', 2);
    if (slash == std::string::npos) break;
    const std::string campaign = key.substr(2, slash - 2);
    campaigns.insert(campaign);
    std::string next = event_prefix(campaign);
    next.back() = static_cast<char>('/' + 1);
    it->Seek(next);
  }
  if (!it->status().ok()) return store_error("listing campaigns in " + impl_->dir, it->status());
  return std::vector<std::string>(campaigns.begin(), campaigns.end());
}

Result<ChainReport> EventStore::verify_chain(std::string_view campaign_id,
                                             const KeyLookup& keys) const {
  ChainEvidence evidence;
  Result<Head> head = impl_->load_head(campaign_id);
  if (head.ok()) {
    evidence.head_sequence = head->sequence;
    evidence.head_hash = head->hash;
  } else {
    evidence.head_damage = head.error();
  }
  const std::vector<std::string> dirs = impl_->anchor_dirs();
  auto anchors = read_anchor_files(dirs, campaign_id);
  if (!anchors.ok()) return make_error(anchors.error());
  evidence.anchors = std::move(anchors).value();
  evidence.keys = keys;
  Result<std::vector<RawRecord>> records = read_raw(campaign_id);
  if (!records.ok()) return make_error(records.error());
  return verify_records(campaign_id, records.value(), evidence);
}

std::vector<std::string> EventStore::anchor_dirs() const { return impl_->anchor_dirs(); }

Status EventStore::compact(std::string_view campaign_id) {
  const std::string begin = event_key(campaign_id, 0);
  std::string end = event_prefix(campaign_id);
  end.back() = static_cast<char>('/' + 1);
  const rocksdb::Slice begin_slice(begin);
  const rocksdb::Slice end_slice(end);
  rocksdb::Status status =
      impl_->db->CompactRange(rocksdb::CompactRangeOptions(), &begin_slice, &end_slice);
  if (!status.ok()) return store_error("compacting campaign " + std::string(campaign_id), status);
  return Ok{};
}

Status EventStore::overwrite_raw_for_testing(std::string_view campaign_id,
                                             std::uint64_t key_sequence, std::string_view bytes) {
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  rocksdb::Status status = impl_->db->Put(write_options, event_key(campaign_id, key_sequence),
                                          rocksdb::Slice(bytes.data(), bytes.size()));
  if (!status.ok()) return store_error("overwriting a record", status);
  return Ok{};
}

Status EventStore::overwrite_head_bytes_for_testing(std::string_view campaign_id,
                                                    std::string_view bytes) {
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  rocksdb::Status status = impl_->db->Put(write_options, head_key(campaign_id),
                                          rocksdb::Slice(bytes.data(), bytes.size()));
  if (!status.ok()) return store_error("overwriting a head", status);
  return Ok{};
}

Status EventStore::overwrite_head_for_testing(std::string_view campaign_id, std::uint64_t sequence,
                                              const Digest& hash) {
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  rocksdb::Status status =
      impl_->db->Put(write_options, head_key(campaign_id), encode_head(Head{sequence, hash}));
  if (!status.ok()) return store_error("overwriting a head", status);
  return Ok{};
}

Status EventStore::delete_head_for_testing(std::string_view campaign_id) {
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  rocksdb::Status status = impl_->db->Delete(write_options, head_key(campaign_id));
  if (!status.ok()) return store_error("deleting a head", status);
  return Ok{};
}

Status EventStore::delete_raw_for_testing(std::string_view campaign_id,
                                          std::uint64_t key_sequence) {
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  rocksdb::Status status = impl_->db->Delete(write_options, event_key(campaign_id, key_sequence));
  if (!status.ok()) return store_error("deleting a record", status);
  return Ok{};
}

}  // namespace attune
