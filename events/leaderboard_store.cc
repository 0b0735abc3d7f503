#include "events/leaderboard_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <filesystem>

#include <nlohmann/json.hpp>

namespace attune {
namespace {

constexpr std::string_view kEntryPrefix = "entry/";
constexpr int kEntrySchemaVersion = 1;

// A figure that may be unknown: null reads as 0.
double figure(const nlohmann::json& j, const char* key) {
  const nlohmann::json& value = j.at(key);
  return value.is_null() ? 0.0 : value.get<double>();
}

LeaderboardEntry entry_from_json(const nlohmann::json& j) {
  LeaderboardEntry e;
  e.model = j.at("model").get<std::string>();
  e.hardware = j.at("hardware").get<std::string>();
  e.gpu_count = j.at("gpu_count").get<std::uint32_t>();
  e.seq_length = j.at("seq_length").get<std::uint32_t>();
  e.global_batch = j.at("global_batch").get<std::uint32_t>();
  e.precision = j.at("precision").get<std::string>();
  e.data = j.at("data").get<std::string>();
  e.launcher = j.at("launcher").get<std::string>();
  e.framework = j.at("framework").get<std::string>();
  e.tokens_per_s_per_gpu = j.at("tokens_per_s_per_gpu").get<double>();
  e.baseline_tokens_per_s_per_gpu = j.at("baseline_tokens_per_s_per_gpu").get<double>();
  e.gain_fraction = j.at("gain_fraction").get<double>();
  e.mfu = figure(j, "mfu");
  e.usd_per_million_tokens = figure(j, "usd_per_million_tokens");
  e.usd_per_gpu_hour = figure(j, "usd_per_gpu_hour");
  e.campaign_id = j.at("campaign_id").get<std::string>();
  e.ledger_head_hash = j.at("ledger_head_hash").get<std::string>();
  e.ledger_path = j.at("ledger_path").get<std::string>();
  e.gate_verdicts = j.at("gate_verdicts").get<std::vector<std::string>>();
  e.recipe = j.at("recipe").get<std::string>();
  e.recipe_hash = j.at("recipe_hash").get<std::string>();
  e.added_at_unix_ns = j.at("added_at_unix_ns").get<std::int64_t>();
  return e;
}

}  // namespace

nlohmann::json leaderboard_entry_json(const LeaderboardEntry& e) {
  auto known = [](double value) { return value > 0 ? nlohmann::json(value) : nlohmann::json(); };
  return {{"model", e.model},
          {"hardware", e.hardware},
          {"gpu_count", e.gpu_count},
          {"seq_length", e.seq_length},
          {"global_batch", e.global_batch},
          {"precision", e.precision},
          {"data", e.data},
          {"launcher", e.launcher},
          {"framework", e.framework},
          {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
          {"baseline_tokens_per_s_per_gpu", e.baseline_tokens_per_s_per_gpu},
          {"gain_fraction", e.gain_fraction},
          {"mfu", known(e.mfu)},
          {"usd_per_million_tokens", known(e.usd_per_million_tokens)},
          {"usd_per_gpu_hour", known(e.usd_per_gpu_hour)},
          {"campaign_id", e.campaign_id},
          {"ledger_head_hash", e.ledger_head_hash},
          {"ledger_path", e.ledger_path},
          {"gate_verdicts", e.gate_verdicts},
          {"recipe", e.recipe},
          {"recipe_hash", e.recipe_hash},
          {"added_at_unix_ns", e.added_at_unix_ns}};
}

struct LeaderboardStore::Impl {
  std::string dir;
  std::unique_ptr<rocksdb::DB> db;
};

LeaderboardStore::LeaderboardStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LeaderboardStore::~LeaderboardStore() = default;

Result<std::unique_ptr<LeaderboardStore>> LeaderboardStore::open(const std::string& dir,
                                                                 bool read_only) {
  std::error_code ec;
  if (read_only && !std::filesystem::exists(std::filesystem::path(dir) / "CURRENT", ec)) {
    return make_error("no leaderboard in " + dir + " (attune leaderboard add creates it)");
  }
  if (!read_only) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return make_error("cannot create the leaderboard folder " + dir + ": " + ec.message());
  }
  rocksdb::Options options;
  options.create_if_missing = !read_only;
  options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  options.keep_log_file_num = 2;
  options.paranoid_checks = true;
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status status = read_only ? rocksdb::DB::OpenForReadOnly(options, dir, &raw)
                                           : rocksdb::DB::Open(options, dir, &raw);
  if (!status.ok())
    return make_error("cannot open the leaderboard " + dir + ": " + status.ToString());
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->db.reset(raw);
  return std::unique_ptr<LeaderboardStore>(new LeaderboardStore(std::move(impl)));
}

Status LeaderboardStore::put(const LeaderboardEntry& entry) {
  rocksdb::WriteOptions options;
  options.sync = true;
  // One entry per campaign and ledger state: the same campaign file run into another ledger is
  // another entry; adding an unchanged ledger again replaces its own.
  const std::string key =
      std::string(kEntryPrefix) + entry.campaign_id + "/" + entry.ledger_head_hash;
  nlohmann::json stored = leaderboard_entry_json(entry);
  stored["schema_version"] = kEntrySchemaVersion;
  const rocksdb::Status status = impl_->db->Put(options, key, stored.dump());
  if (!status.ok()) {
    return make_error("cannot write to the leaderboard " + impl_->dir + ": " + status.ToString());
  }
  return Ok{};
}

Result<std::vector<LeaderboardEntry>> LeaderboardStore::all() const {
  std::vector<LeaderboardEntry> entries;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(rocksdb::Slice(kEntryPrefix.data(), kEntryPrefix.size()));
       it->Valid() &&
       it->key().starts_with(rocksdb::Slice(kEntryPrefix.data(), kEntryPrefix.size()));
       it->Next()) {
    try {
      entries.push_back(entry_from_json(nlohmann::json::parse(it->value().ToString())));
    } catch (const nlohmann::json::exception& e) {
      return make_error("the leaderboard " + impl_->dir + ": entry '" + it->key().ToString() +
                        "' does not decode (" + e.what() + ")");
    }
  }
  if (!it->status().ok()) {
    return make_error("cannot read the leaderboard " + impl_->dir + ": " + it->status().ToString());
  }
  return entries;
}

}  // namespace attune
