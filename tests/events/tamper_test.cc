// The ledger against someone who can write its folder but not read its key: every forgery the
// red team tried is found, and without the key an audit says unverifiable, never consistent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "events/anchor.h"
#include "events/codec.h"
#include "events/event_store.h"
#include "events/ledger_key.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

constexpr int kEvents = 12;

std::vector<NewEvent> measurements(int count, int first_run = 1) {
  std::vector<NewEvent> events;
  for (int i = 0; i < count; ++i) {
    RunMeasured body;
    body.run_id = static_cast<RunId>(first_run + i);
    body.tokens_per_sec_per_gpu = 1000.0 + i;
    body.loss_curve = {10.0, 9.5, 9.0};
    events.push_back(NewEvent{1'700'000'000'000'000'000 + i, "launcher:sim", body});
  }
  return events;
}

class Tamper : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    root_ = fs::temp_directory_path() /
            ("attune-tamper-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(root_);
    keyring_ = std::make_unique<Keyring>((root_ / "keys").string());
    key_ = keyring_->current(true).value();
    auto store = open_store();
    ASSERT_TRUE(store.ok()) << store.error();
    ASSERT_TRUE((*store)->append("c1", 0, measurements(kEvents)).ok());
  }
  void TearDown() override { fs::remove_all(root_); }

  Result<std::unique_ptr<EventStore>> open_store(bool keyed = true) const {
    EventStore::Options options;
    if (keyed) options.key = key_;
    options.anchor_mirror_root = (root_ / "mirror").string();
    return EventStore::open(db(), options);
  }
  std::string db() const { return (root_ / "ledger").string(); }

  ChainReport verify(const KeyLookup& keys) const {
    auto store = open_store();
    EXPECT_TRUE(store.ok()) << store.error();
    auto report = (*store)->verify_chain("c1", keys);
    EXPECT_TRUE(report.ok()) << report.error();
    return report.value();
  }
  ChainReport verify_with_key() const { return verify(keyring_->lookup()); }

  fs::path root_;
  std::unique_ptr<Keyring> keyring_;
  LedgerKey key_;
};

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_F(Tamper, AnUntouchedLedgerVerifiesWithItsKeyAndIsUnverifiableWithout) {
  const ChainReport with_key = verify_with_key();
  EXPECT_TRUE(with_key.verified())
      << (with_key.findings.empty() ? with_key.unverifiable.front() : with_key.findings.front());
  EXPECT_EQ(with_key.events_verified, static_cast<std::uint64_t>(kEvents));
  const ChainReport without = verify(KeyLookup());
  EXPECT_TRUE(without.ok());
  EXPECT_FALSE(without.verified());
  EXPECT_TRUE(mentions(without.unverifiable, key_.id)) << without.unverifiable.front();
}

TEST_F(Tamper, VerifyingAsksTheKeyringOncePerKey) {
  int asked = 0;
  const KeyLookup lookup = keyring_->lookup();
  const ChainReport report = verify([&asked, &lookup](const std::string& id) {
    ++asked;
    return lookup(id);
  });
  EXPECT_TRUE(report.verified());
  EXPECT_EQ(asked, 1) << "one key signs all " << kEvents << " events and the anchors";
}

TEST_F(Tamper, AMeasurementChangedAndReChainedWithoutTheKeyIsFound) {
  auto store = open_store();
  auto records = (*store)->read_raw("c1").value();
  // The forger re-chains everything from event 5 with attune's own codec, as an unkeyed chain.
  Digest prev = decode_envelope(records[3].bytes).value().hash;
  for (std::size_t i = 4; i < records.size(); ++i) {
    Envelope envelope = decode_envelope(records[i].bytes).value();
    if (i == 4) std::get<RunMeasured>(envelope.body).tokens_per_sec_per_gpu *= 2;
    envelope.key_id.clear();
    envelope.prev_hash = prev;
    envelope.hash = chain_hash(envelope, nullptr);
    prev = envelope.hash;
    ASSERT_TRUE((*store)
                    ->overwrite_raw_for_testing("c1", records[i].key_sequence,
                                                encode_envelope(envelope, true))
                    .ok());
  }
  ASSERT_TRUE((*store)->overwrite_head_for_testing("c1", kEvents, prev).ok());
  store->reset();
  const ChainReport report = verify_with_key();
  EXPECT_FALSE(report.verified());
  EXPECT_TRUE(mentions(report.findings, "anchor")) << "the keyed anchor holds the old head";
  EXPECT_TRUE(mentions(report.unverifiable, "not keyed"));
  // Even re-chained with a key of the forger's own, the events name a key the keyring lacks.
  const ChainReport without = verify(KeyLookup());
  EXPECT_FALSE(without.verified());
}

TEST_F(Tamper, ACutTailWithARewrittenHeadIsFoundByTheAnchor) {
  auto store = open_store();
  auto records = (*store)->read_raw("c1").value();
  const Envelope kept = decode_envelope(records[7].bytes).value();
  for (std::uint64_t s = 9; s <= kEvents; ++s) {
    ASSERT_TRUE((*store)->delete_raw_for_testing("c1", s).ok());
  }
  ASSERT_TRUE((*store)->overwrite_head_for_testing("c1", 8, kept.hash).ok());
  store->reset();
  const ChainReport report = verify_with_key();
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(mentions(report.findings, "holds event 12 but the stream ends at 8"))
      << report.findings.front();
}

TEST_F(Tamper, AnAnchorRolledBackInTheLedgerFolderIsCaughtByItsMirror) {
  const std::string folder = (fs::path(db()) / "anchors").string();
  const std::string anchor_path = (fs::path(folder) / anchor_file_name("c1")).string();
  std::ifstream in(anchor_path);
  const std::string old_anchor((std::istreambuf_iterator<char>(in)), {});
  {
    auto store = open_store();
    ASSERT_TRUE((*store)->append("c1", kEvents, measurements(3, 100)).ok());
    // The forger cuts the three new events, restores the saved anchor and rewrites the head.
    auto records = (*store)->read_raw("c1").value();
    for (std::uint64_t s = kEvents + 1; s <= kEvents + 3; ++s) {
      ASSERT_TRUE((*store)->delete_raw_for_testing("c1", s).ok());
    }
    const Envelope last = decode_envelope(records[kEvents - 1].bytes).value();
    ASSERT_TRUE((*store)->overwrite_head_for_testing("c1", kEvents, last.hash).ok());
  }
  std::ofstream(anchor_path, std::ios::trunc) << old_anchor;
  const ChainReport report = verify_with_key();
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(mentions(report.findings, "holds event 15 but the stream ends at 12"));
}

TEST_F(Tamper, AForgedOrMissingAnchorIsNeverConsistent) {
  const fs::path folder = fs::path(db()) / "anchors";
  Anchor forged = make_anchor("c1", 3, Digest{}, nullptr);
  forged.key_id = key_.id;  // claims the key, with a MAC it cannot compute
  for (const std::string& dir : open_store().value()->anchor_dirs()) {
    ASSERT_TRUE(write_anchor_file(dir, forged, false).ok());
  }
  EXPECT_TRUE(mentions(verify_with_key().findings, "MAC does not hold"));
  for (const std::string& dir : open_store().value()->anchor_dirs()) {
    fs::remove(fs::path(dir) / anchor_file_name("c1"));
  }
  const ChainReport report = verify_with_key();
  EXPECT_FALSE(report.verified());
  EXPECT_TRUE(mentions(report.unverifiable, "no anchor"));
}

TEST_F(Tamper, ARemovedHeadHidesNothingAndNoEventIsOverwritten) {
  {
    auto store = open_store();
    ASSERT_TRUE((*store)->delete_head_for_testing("c1").ok());
  }
  auto store = open_store();
  EXPECT_EQ((*store)->list_campaigns().value(), std::vector<std::string>{"c1"});
  EXPECT_EQ((*store)->version("c1").value(), 0u);
  auto rewrite = (*store)->append("c1", 0, measurements(3, 500));
  ASSERT_FALSE(rewrite.ok());
  EXPECT_NE(rewrite.error().find("refuses to overwrite an event"), std::string::npos)
      << rewrite.error();
  auto report = (*store)->verify_chain("c1", keyring_->lookup());
  EXPECT_FALSE(report->ok());
  EXPECT_EQ(report->events_verified, static_cast<std::uint64_t>(kEvents));
}

TEST_F(Tamper, AFlippedByteInTheMiddleOfTheWriteAheadLogStopsTheOpen) {
  {
    // Two more commit groups, so that the first one's record is not the log's tail.
    auto store = open_store();
    ASSERT_TRUE(store.ok()) << store.error();
    for (int group = 0; group < 2; ++group) {
      const int head = kEvents + group * 4;
      ASSERT_TRUE((*store)
                      ->append("c1", static_cast<std::uint64_t>(head), measurements(4, 100 + head))
                      .ok());
    }
  }
  std::string log;
  for (const auto& entry : fs::directory_iterator(db())) {
    if (entry.path().extension() == ".log" && fs::file_size(entry.path()) > 0) {
      log = entry.path().string();
    }
  }
  ASSERT_FALSE(log.empty()) << "the events are still in the write-ahead log";
  {
    std::fstream file(log, std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(fs::file_size(log) / 4);  // the first group
    file.seekg(middle);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x40);
    file.seekp(middle);
    file.write(&byte, 1);
  }
  auto store = open_store();
  ASSERT_FALSE(store.ok()) << "RocksDB's default recovery would stop at the damaged record and "
                              "lose the later groups";
  EXPECT_NE(store.error().find("is damaged"), std::string::npos) << store.error();
}

TEST(Keyring, KeysArePrivateAndTravelByExportAndImport) {
  const fs::path root =
      fs::temp_directory_path() / ("attune-keyring-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const Keyring first((root / "a").string());
  const LedgerKey key = first.current(true).value();
  EXPECT_EQ(key.id, key_id_of(key.secret));
  EXPECT_EQ(fs::status(root / "a").permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(root / "a" / (key.id + ".key")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  const Keyring second((root / "b").string());
  EXPECT_FALSE(second.find(key.id).value().has_value());
  ASSERT_TRUE(second.import_text(first.export_text(key.id).value(), "exported").ok());
  EXPECT_EQ(second.find(key.id).value()->secret, key.secret);
  // Rotation keeps the old key for old events.
  const LedgerKey rotated = first.rotate().value();
  EXPECT_NE(rotated.id, key.id);
  EXPECT_EQ(first.current(false)->id, rotated.id);
  EXPECT_TRUE(first.find(key.id).value().has_value());
  // A key others can read is refused.
  fs::permissions(root / "a" / (key.id + ".key"), fs::perms::group_read, fs::perm_options::add);
  EXPECT_FALSE(first.find(key.id).ok());
  // A tampered export is refused.
  std::string text = first.export_text(rotated.id).value();
  text[text.size() - 3] = text[text.size() - 3] == 'a' ? 'b' : 'a';
  EXPECT_FALSE(second.import_text(text, "edited").ok());
  fs::remove_all(root);
}

}  // namespace
}  // namespace attune
