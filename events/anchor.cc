#include "events/anchor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "events/assert.h"
#include "events/whole_file.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "attune-anchor";
constexpr std::string_view kVersion = "1";
constexpr std::size_t kAnchorFileBytesMax = 1024;

std::string mac_input(std::string_view campaign_id, std::uint64_t sequence, const Digest& hash) {
  std::string text(kMagic);
  text.push_back('\0');
  text.append(campaign_id);
  text.push_back('\0');
  text.append(std::to_string(sequence));
  text.push_back('\0');
  text.append(to_hex(hash));
  return text;
}

Digest mac_of(std::string_view campaign_id, std::uint64_t sequence, const Digest& hash,
              const LedgerKey& key) {
  const std::string input = mac_input(campaign_id, sequence, hash);
  const std::span<const std::uint8_t> parts[] = {
      {reinterpret_cast<const std::uint8_t*>(input.data()), input.size()}};
  return hmac_sha256(key.secret, parts);
}

bool digest_of_hex(std::string_view hex, Digest& out) {
  if (hex.size() != 2 * out.size()) return false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    unsigned value = 0;
    const auto [end, error] =
        std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, value, 16);
    if (error != std::errc() || end != hex.data() + 2 * i + 2) return false;
    out[i] = static_cast<std::uint8_t>(value);
  }
  return true;
}

}  // namespace

Anchor make_anchor(std::string_view campaign_id, std::uint64_t sequence, const Digest& hash,
                   const LedgerKey* key) {
  Anchor anchor;
  anchor.campaign_id = std::string(campaign_id);
  anchor.sequence = sequence;
  anchor.hash = hash;
  if (key != nullptr) {
    anchor.key_id = key->id;
    anchor.mac = mac_of(campaign_id, sequence, hash, *key);
  }
  return anchor;
}

bool anchor_mac_valid(const Anchor& anchor, const LedgerKey& key) {
  ATTUNE_ASSERT(key.id == anchor.key_id, "an anchor is checked with the key it names");
  return mac_of(anchor.campaign_id, anchor.sequence, anchor.hash, key) == anchor.mac;
}

std::string anchor_text(const Anchor& anchor) {
  std::string text(kMagic);
  text += " ";
  text += kVersion;
  text += " " + anchor.campaign_id + " " + std::to_string(anchor.sequence) + " " +
          to_hex(anchor.hash) + " " + (anchor.key_id.empty() ? "-" : anchor.key_id) + " " +
          (anchor.key_id.empty() ? "-" : to_hex(anchor.mac)) + "\n";
  return text;
}

Result<Anchor> parse_anchor(std::string_view text, const std::string& source) {
  std::istringstream in{std::string(text)};
  std::string magic, version, campaign, sequence, hash, key_id, mac;
  in >> magic >> version >> campaign >> sequence >> hash >> key_id >> mac;
  std::string rest;
  if (magic != kMagic || version != kVersion || mac.empty() || (in >> rest)) {
    return make_error(source + ":1: expected 'attune-anchor 1 CAMPAIGN SEQUENCE HASH KEY MAC'");
  }
  Anchor anchor;
  anchor.source = source;
  anchor.campaign_id = campaign;
  const auto [end, error] =
      std::from_chars(sequence.data(), sequence.data() + sequence.size(), anchor.sequence);
  if (error != std::errc() || end != sequence.data() + sequence.size()) {
    return make_error(source + ":1: the sequence '" + sequence + "' is not a number");
  }
  if (!digest_of_hex(hash, anchor.hash)) {
    return make_error(source + ":1: the hash is not 64 hex digits");
  }
  if (key_id != "-") {
    anchor.key_id = key_id;
    if (!digest_of_hex(mac, anchor.mac)) {
      return make_error(source + ":1: the MAC is not 64 hex digits");
    }
  }
  return anchor;
}

std::string anchor_file_name(std::string_view campaign_id) {
  return std::string(campaign_id) + ".anchor";
}

Status write_anchor_file(const std::string& dir, const Anchor& anchor, bool sync) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(dir + ": cannot create the anchor folder: " + ec.message());
  const fs::path path = fs::path(dir) / anchor_file_name(anchor.campaign_id);
  Status written = write_whole_file(path.string(), anchor_text(anchor), 0644, sync);
  if (!written.ok()) return make_error(written.error() + " (the anchor)");
  return Ok{};
}

Result<std::vector<Anchor>> read_anchor_files(std::span<const std::string> dirs,
                                              std::string_view campaign_id) {
  std::vector<Anchor> anchors;
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    const fs::path path = fs::path(dir) / anchor_file_name(campaign_id);
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    if (fs::file_size(path, ec) > kAnchorFileBytesMax) {
      return make_error(path.string() + ": larger than an anchor can be");
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto anchor = parse_anchor(text.str(), path.string());
    if (!anchor.ok()) return make_error(anchor.error());
    if (anchor->campaign_id != campaign_id) {
      return make_error(path.string() + ": anchors campaign '" + anchor->campaign_id + "'");
    }
    anchors.push_back(std::move(anchor).value());
  }
  return anchors;
}

}  // namespace attune
