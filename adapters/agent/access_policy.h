// AccessPolicy: what an external agent may read, write and run, deny by default; and the check
// of one proposed tool call against it (the pre-tool hook's decision).
//
// The policy is a TOML file that `attune agent install` writes and the hook reads:
//   [read]    paths = [...]   folders and files the agent may read (the campaign folder, the
//                              framework source, the skill with the lever catalog);
//             framework = PATH the framework checkout: reads there are recorded with their
//                              location, as the paper's rule 3 asks
//   [write]   paths = [...]   its scratch folder; nothing else
//   [protect] paths = [...]   never written, even inside a write path (this policy, the hook
//                              settings, the gate's policy files, the ledger)
//   [run]     attune = PATH    the attune binary; commands = [...] the attune subcommands it may
//                              run; programs = [...] a short allowlist of readers (cat, head,
//                              ...) whose path arguments must be readable
//   [control] socket = PATH    the campaign's control socket, where refusals are recorded
// Every path is absolute. A tool call is allowed only when a rule allows it; anything else —
// another tool, a path outside the lists, a shell feature that could hide a write or an
// environment change — is refused with the rule that refused it.
//
// Tool calls follow the agent's hook input (JSON): {"tool_name": ..., "tool_input": {...},
// "cwd": ...}. Bash commands are split into simple commands on ; && || | and newlines; each must
// be an allowed program without redirections, substitutions, variables or leading NAME=VALUE
// assignments. Pure functions; the file system is read only to resolve symbolic links.
#pragma once

#include <string>
#include <vector>

#include "events/result.h"

namespace attune::agent {

struct AccessPolicy {
  std::vector<std::string> read_paths;
  std::string framework_source;  // also readable; empty: none
  std::vector<std::string> write_paths;
  std::vector<std::string> protected_paths;
  // Neither read nor written: the ledger's keyring and its anchor mirror, other secrets.
  std::vector<std::string> secret_paths;
  std::string attune_path;
  std::vector<std::string> attune_commands;
  std::vector<std::string> programs;
  std::string socket_path;
};

// The subcommands and readers an installed agent gets.
std::vector<std::string> default_attune_commands();
std::vector<std::string> default_reader_programs();

Result<AccessPolicy> parse_access_policy(std::string_view text, const std::string& source);
std::string access_policy_toml(const AccessPolicy& policy);

struct AccessDecision {
  bool allowed = false;
  std::string object;  // what was attempted: a path, a command, a tool
  std::string rule;    // the rule that refused it (empty when allowed)
  std::string reason;  // for the agent: why, and what to do instead
  // An allowed read of the framework source: "relative/path:first-last" ("...:all" for a whole
  // file or a search); empty otherwise.
  std::string source_location;
};

// `hook_input` is the hook's standard input (JSON); malformed input is refused.
AccessDecision check_tool_call(const AccessPolicy& policy, const std::string& hook_input);

// Shell words and operators of a command line, as the check sees them. Exposed for tests.
struct ShellToken {
  enum class Kind { kWord, kSeparator, kForbidden };
  Kind kind = Kind::kWord;
  std::string text;
};
std::vector<ShellToken> shell_tokens(std::string_view command);

}  // namespace attune::agent
