#include "events/event_store.h"

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
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
  if (campaign_id.empty() || campaign_id.size() > 64) return false;
  for (char c : campaign_id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

ChainReport verify_records(std::string_view campaign_id, std::span<const RawRecord> records,
                           std::uint64_t head_sequence, const Digest& head_hash) {
  ChainReport report;
  Digest prev{};
  std::uint64_t expected_sequence = 1;
  for (const RawRecord& record : records) {
    const std::string where = "event " + std::to_string(record.key_sequence);
    if (record.key_sequence != expected_sequence) {
      report.findings.push_back(where + ": expected sequence " + std::to_string(expected_sequence) +
                                " (an event is missing or was inserted)");
    }
    Result<Envelope> decoded = decode_envelope(record.bytes);
    if (!decoded.ok()) {
      report.findings.push_back(where + ": does not decode: " + decoded.error());
      expected_sequence = record.key_sequence + 1;
      prev = Digest{};
      continue;
    }
    const Envelope& envelope = decoded.value();
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
    if (chain_hash(envelope) != envelope.hash) {
      report.findings.push_back(where + ": hash does not match its contents (changed)");
    } else if (encode_envelope(envelope, true) != record.bytes) {
      report.findings.push_back(where + ": stored bytes are not canonical (changed)");
    }
    prev = envelope.hash;
    expected_sequence = record.key_sequence + 1;
    ++report.events_verified;
  }
  const std::uint64_t last = records.empty() ? 0 : records.back().key_sequence;
  if (last != head_sequence) {
    report.findings.push_back("head: the last acknowledged event is " +
                              std::to_string(head_sequence) + " but the stream ends at " +
                              std::to_string(last) + " (events removed or added at the end)");
  } else if (!records.empty() && prev != head_hash) {
    report.findings.push_back("head: the last event's hash differs from the acknowledged head");
  }
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
      std::vector<Envelope>& envelopes = recorded[i];
      envelopes.reserve(pending.events.size());
      for (NewEvent& event : pending.events) {
        Envelope envelope;
        envelope.sequence = head.sequence + 1;
        envelope.campaign_id = pending.campaign_id;
        envelope.recorded_at_unix_ns = event.recorded_at_unix_ns;
        envelope.actor = std::move(event.actor);
        envelope.prev_hash = head.hash;
        envelope.body = std::move(event.body);
        envelope.hash = chain_hash(envelope);
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
    for (std::size_t i : included) group[i].promise.set_value(std::move(recorded[i]));
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
  rocksdb::Status status = impl_->db->Close();
  (void)status;  // nothing is pending: every append was synced before it was acknowledged
}

Result<std::unique_ptr<EventStore>> EventStore::open(const std::string& dir, Options options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (options.read_only && !fs::exists(fs::path(dir) / "CURRENT", ec)) {
    return make_error("no ledger in " + dir + " (no RocksDB database there)");
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->options = options;
  rocksdb::Options db_options;
  db_options.create_if_missing = !options.read_only;
  db_options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  db_options.keep_log_file_num = 2;
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
    return store_error("cannot open ledger " + dir, status);
  }
  impl->db.reset(raw);
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
                      "': expected 1-64 characters of [A-Za-z0-9._-]");
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
  std::vector<std::string> campaigns;
  rocksdb::ReadOptions read_options;
  std::string upper = "h0";  // '0' follows '/'
  rocksdb::Slice upper_slice(upper);
  read_options.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(read_options));
  for (it->Seek("h/"); it->Valid(); it->Next()) {
    campaigns.push_back(it->key().ToString().substr(2));
  }
  if (!it->status().ok()) return store_error("listing campaigns in " + impl_->dir, it->status());
  return campaigns;
}

Result<ChainReport> EventStore::verify_chain(std::string_view campaign_id) const {
  Result<Head> head = impl_->load_head(campaign_id);
  if (!head.ok()) return make_error(head.error());
  Result<std::vector<RawRecord>> records = read_raw(campaign_id);
  if (!records.ok()) return make_error(records.error());
  return verify_records(campaign_id, records.value(), head->sequence, head->hash);
}

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

Status EventStore::delete_raw_for_testing(std::string_view campaign_id,
                                          std::uint64_t key_sequence) {
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  rocksdb::Status status = impl_->db->Delete(write_options, event_key(campaign_id, key_sequence));
  if (!status.ok()) return store_error("deleting a record", status);
  return Ok{};
}

}  // namespace attune
