// LedgerKey and Keyring: the secret that keys a ledger's hash chain, kept outside the ledger.
//
// Every event's hash is HMAC-SHA256(key, previous hash || its canonical bytes), and the event
// names the key by its id. Whoever can write a ledger folder but not read the key cannot re-chain
// a changed event or forge the head's anchor; an audit without the key can only say that the
// chain is unverifiable, never that it is consistent.
//
// A keyring is a private folder (mode 0700): one file per key, <id>.key (mode 0600, the secret in
// hex), and `current`, the id that new events are chained with. Rotating adds a key and makes it
// current; the old ones stay, so old events still verify. A ledger moved to another machine
// verifies there once its keys are imported (`attune key export ID` on the first machine,
// `attune key import FILE` on the second). The default keyring is $ATTUNE_KEY_DIR, else
// $XDG_CONFIG_HOME/attune/keys, else ~/.config/attune/keys.
//
// Not thread-safe; the files are read and written as a whole, each write replacing its file.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "events/result.h"

namespace attune {

struct LedgerKey {
  std::string id;  // 16 hex digits, from the secret: SHA-256("attune-ledger-key" || secret)
  std::array<std::uint8_t, 32> secret{};
};

// The id a secret is known by.
std::string key_id_of(const std::array<std::uint8_t, 32>& secret);

// Finds a key by id; nullopt when the keyring does not hold it.
using KeyLookup = std::function<std::optional<LedgerKey>(const std::string& id)>;

class Keyring {
 public:
  static std::string default_dir();
  explicit Keyring(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // The current key; with `create`, a new random one when the keyring has none (the folder is
  // created with mode 0700).
  Result<LedgerKey> current(bool create) const;
  Result<std::optional<LedgerKey>> find(const std::string& id) const;
  // A lookup over this keyring: a key that cannot be read counts as absent.
  KeyLookup lookup() const;
  // A new random key, made current.
  Result<LedgerKey> rotate() const;
  // A key's file text (to move it to another machine), and adding such a text.
  Result<std::string> export_text(const std::string& id) const;
  Result<LedgerKey> import_text(std::string_view text, const std::string& source) const;

 private:
  Result<LedgerKey> add(const LedgerKey& key, bool make_current) const;
  std::string dir_;
};

}  // namespace attune
