// Command-line tests run campaigns that read and append the per-user learned-rules catalog
// ($XDG_DATA_HOME/attune/learned_rules.jsonl) and key their ledgers with the per-user keyring
// ($XDG_CONFIG_HOME/attune/keys). Each test process gets data and config folders of its own,
// removed at exit, so tests neither see nor change the user's files or each other's.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace attune::testing_support {

inline const std::filesystem::path& private_data_home() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("attune-test-data-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    ::setenv("XDG_DATA_HOME", path.c_str(), 1);
    std::filesystem::create_directories(path / "config");
    ::setenv("XDG_CONFIG_HOME", (path / "config").c_str(), 1);
    ::unsetenv("ATTUNE_KEY_DIR");
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                      ("attune-test-data-" + std::to_string(::getpid())),
                                  ec);
    });
    return path;
  }();
  return dir;
}

// Set before main, so every child process inherits it.
inline const bool kPrivateDataHomeSet = !private_data_home().empty();

}  // namespace attune::testing_support
