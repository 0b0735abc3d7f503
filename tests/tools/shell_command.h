// Running a command line as a user would, for the command-line tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace attune::testing_support {

struct CommandOutcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `command` with /bin/sh; stdout and stderr are captured separately.
inline CommandOutcome run_shell(const std::string& command) {
  static int calls = 0;
  const std::filesystem::path err_file =
      std::filesystem::temp_directory_path() /
      ("attune-test-err-" + std::to_string(::getpid()) + "-" + std::to_string(++calls));
  CommandOutcome outcome;
  FILE* pipe = ::popen(("(" + command + ") 2>" + err_file.string()).c_str(), "r");
  if (pipe == nullptr) return outcome;
  std::array<char, 8192> buffer{};
  std::size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    outcome.out.append(buffer.data(), read);
  }
  const int status = ::pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  std::stringstream text;
  text << err.rdbuf();
  outcome.err = text.str();
  std::error_code ec;
  std::filesystem::remove(err_file, ec);
  return outcome;
}

}  // namespace attune::testing_support
