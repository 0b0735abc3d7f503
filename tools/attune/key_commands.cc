// `attune key show|rotate|export|import`: the ledger keys that chain a ledger's events
// (events/ledger_key.h), kept in the user's keyring outside every ledger folder.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

constexpr std::size_t kKeyImportBytesMax = 4096;

int show_key(bool json) {
  const Keyring keyring = user_keyring();
  auto key = keyring.current(false);
  if (!key.ok()) return fail(key.error());
  if (json) {
    write_json_output({{"schema_version", 1},
                       {"key_id", key->id},
                       {"keyring", keyring.dir()},
                       {"anchor_mirror", anchor_mirror_root()}});
  } else {
    std::cout << "current key " << key->id << " in " << keyring.dir() << "\n"
              << "anchors mirrored under " << anchor_mirror_root() << "\n";
  }
  return kExitOk;
}

int rotate_key() {
  auto key = user_keyring().rotate();
  if (!key.ok()) return fail(key.error());
  std::cout << "new current key " << key->id
            << "; events already chained keep their keys, which stay in the keyring\n";
  return kExitOk;
}

int export_key(const std::string& id) {
  auto text = user_keyring().export_text(id);
  if (!text.ok()) return fail(text.error());
  std::cout << text.value();
  return kExitOk;
}

int import_key(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(file + ": cannot read");
  std::string text(kKeyImportBytesMax + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kKeyImportBytesMax) return fail(file + ": larger than a key file can be");
  auto key = user_keyring().import_text(text, file);
  if (!key.ok()) return fail(key.error());
  std::cout << "imported key " << key->id << "; ledgers chained with it now verify here\n";
  return kExitOk;
}

}  // namespace

void add_key_commands(CLI::App& app, int& exit_code) {
  CLI::App* key = app.add_subcommand(
      "key",
      "The ledger keys: every event's hash is an HMAC under the key it names, kept in "
      "$ATTUNE_KEY_DIR, else $XDG_CONFIG_HOME/attune/keys, else ~/.config/attune/keys (created "
      "by the first campaign). An audit without the key says unverifiable. To verify a ledger "
      "on another machine, export its key there and import it.");
  key->require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  CLI::App* show = key->add_subcommand("show", "The current key's id and where it is kept");
  show->add_flag("--json", *json, "Machine-readable output");
  show->callback([&exit_code, json] { exit_code = show_key(*json); });
  CLI::App* rotate = key->add_subcommand(
      "rotate", "Makes a new key current; the old ones stay, so old events still verify");
  rotate->callback([&exit_code] { exit_code = rotate_key(); });
  auto id = std::make_shared<std::string>();
  CLI::App* exported =
      key->add_subcommand("export", "Prints a key's file, to import on another machine");
  exported->add_option("ID", *id, "The key's id (attune audit names it)")->required();
  exported->callback([&exit_code, id] { exit_code = export_key(*id); });
  auto file = std::make_shared<std::string>();
  CLI::App* imported = key->add_subcommand("import", "Adds an exported key to this keyring");
  imported->add_option("FILE", *file, "A file `attune key export` wrote")->required();
  imported->callback([&exit_code, file] { exit_code = import_key(*file); });
}

}  // namespace attune::cli
