#include "events/ledger_key.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "events/assert.h"
#include "events/sha256.h"
#include "events/whole_file.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kKeyDomain = "attune-ledger-key";
constexpr std::size_t kKeyIdHexDigits = 16;
constexpr std::size_t kKeyFileBytesMax = 4096;

bool is_hex(std::string_view text) {
  return text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::optional<std::array<std::uint8_t, 32>> secret_of_hex(std::string_view hex) {
  std::array<std::uint8_t, 32> secret{};
  if (hex.size() != 2 * secret.size() || !is_hex(hex)) return std::nullopt;
  for (std::size_t i = 0; i < secret.size(); ++i) {
    secret[i] =
        static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(2 * i, 2)), nullptr, 16));
  }
  return secret;
}

std::string key_file_text(const LedgerKey& key) {
  return "# attune ledger key: it keys the hash chain of every ledger event that names it.\n"
         "# Keep it private (mode 0600); an audit without it cannot verify those events.\n"
         "id = " +
         key.id + "\nsecret = " + to_hex(key.secret) + "\n";
}

Result<LedgerKey> parse_key_text(std::string_view text, const std::string& source) {
  std::string id;
  std::string secret_hex;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line.front() == '#') continue;
    const std::size_t eq = line.find(" = ");
    const std::string name = eq == std::string::npos ? "" : line.substr(0, eq);
    if (name != "id" && name != "secret") {
      return make_error(source + ":" + std::to_string(number) +
                        ": expected 'id = HEX' or 'secret = HEX'");
    }
    (name == "id" ? id : secret_hex) = line.substr(eq + 3);
  }
  const auto secret = secret_of_hex(secret_hex);
  if (!secret) return make_error(source + ": expected 'secret = ' and 64 hex digits");
  LedgerKey key{key_id_of(*secret), *secret};
  if (id != key.id) {
    return make_error(source + ": the id '" + id + "' is not the secret's (" + key.id + ")");
  }
  return key;
}

Result<std::string> read_small_file(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return make_error(path.string() + ": cannot read");
  if (static_cast<std::size_t>(info.st_size) > kKeyFileBytesMax) {
    return make_error(path.string() + ": larger than a key file can be");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return make_error(path.string() + ": cannot read");
  return text.str();
}

Status ensure_private_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(dir + ": cannot create the keyring: " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) {
    return make_error(dir + ": cannot make the keyring private: " + std::strerror(errno));
  }
  return Ok{};
}

}  // namespace

std::string key_id_of(const std::array<std::uint8_t, 32>& secret) {
  const std::span<const std::uint8_t> parts[] = {
      {reinterpret_cast<const std::uint8_t*>(kKeyDomain.data()), kKeyDomain.size()}, secret};
  return to_hex(sha256(parts)).substr(0, kKeyIdHexDigits);
}

std::string Keyring::default_dir() {
  const auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? std::string(value) : std::string();
  };
  if (const std::string dir = env("ATTUNE_KEY_DIR"); !dir.empty()) return dir;
  if (const std::string config = env("XDG_CONFIG_HOME"); !config.empty()) {
    return (fs::path(config) / "attune" / "keys").string();
  }
  if (const std::string home = env("HOME"); !home.empty()) {
    return (fs::path(home) / ".config" / "attune" / "keys").string();
  }
  return "";
}

Result<std::optional<LedgerKey>> Keyring::find(const std::string& id) const {
  if (dir_.empty() || id.size() != kKeyIdHexDigits || !is_hex(id)) {
    return std::optional<LedgerKey>();
  }
  const fs::path path = fs::path(dir_) / (id + ".key");
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<LedgerKey>();
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && (info.st_mode & 0077) != 0) {
    return make_error(path.string() + ": a ledger key must be private; make it so with chmod 600 " +
                      path.string());
  }
  auto text = read_small_file(path);
  if (!text.ok()) return make_error(text.error());
  auto key = parse_key_text(text.value(), path.string());
  if (!key.ok()) return make_error(key.error());
  if (key->id != id) return make_error(path.string() + ": holds key " + key->id + ", not " + id);
  return std::optional<LedgerKey>(std::move(key).value());
}

KeyLookup Keyring::lookup() const {
  return [keyring = *this](const std::string& id) -> std::optional<LedgerKey> {
    auto found = keyring.find(id);
    return found.ok() ? found.value() : std::nullopt;
  };
}

Result<LedgerKey> Keyring::current(bool create) const {
  if (dir_.empty()) return make_error("no keyring: set ATTUNE_KEY_DIR, XDG_CONFIG_HOME or HOME");
  const fs::path pointer = fs::path(dir_) / "current";
  std::error_code ec;
  if (!fs::exists(pointer, ec)) {
    if (!create) return make_error(dir_ + ": the keyring holds no current key");
    return rotate();
  }
  auto id = read_small_file(pointer);
  if (!id.ok()) return make_error(id.error());
  std::string text = id.value();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  auto key = find(text);
  if (!key.ok()) return make_error(key.error());
  if (!key.value()) {
    return make_error(pointer.string() + ": names key '" + text + "', which is not in the keyring");
  }
  return *key.value();
}

Result<LedgerKey> Keyring::rotate() const {
  LedgerKey key;
  ATTUNE_ASSERT(RAND_bytes(key.secret.data(), static_cast<int>(key.secret.size())) == 1,
                "OpenSSL's random generator is seeded");
  key.id = key_id_of(key.secret);
  return add(key, true);
}

Result<std::string> Keyring::export_text(const std::string& id) const {
  auto key = find(id);
  if (!key.ok()) return make_error(key.error());
  if (!key.value()) return make_error(dir_ + ": holds no key " + id);
  return key_file_text(*key.value());
}

Result<LedgerKey> Keyring::import_text(std::string_view text, const std::string& source) const {
  auto key = parse_key_text(text, source);
  if (!key.ok()) return make_error(key.error());
  return add(key.value(), false);
}

Result<LedgerKey> Keyring::add(const LedgerKey& key, bool make_current) const {
  if (dir_.empty()) return make_error("no keyring: set ATTUNE_KEY_DIR, XDG_CONFIG_HOME or HOME");
  Status dir = ensure_private_dir(dir_);
  if (!dir.ok()) return make_error(dir.error());
  Status written = write_whole_file((fs::path(dir_) / (key.id + ".key")).string(),
                                    key_file_text(key), 0600, true);
  if (!written.ok()) return make_error(written.error());
  if (make_current) {
    Status pointer =
        write_whole_file((fs::path(dir_) / "current").string(), key.id + "\n", 0600, true);
    if (!pointer.ok()) return make_error(pointer.error());
  }
  return key;
}

}  // namespace attune
