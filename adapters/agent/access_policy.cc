#include "adapters/agent/access_policy.h"

#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gate/toml_names.h"

namespace attune::agent {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr char kQuestionReason[] =
    "Nobody is watching this campaign, so no question gets an answer: take the default, record "
    "the assumption in your next hypothesis, and go on.";

AccessDecision allow() { return AccessDecision{true, "", "", "", ""}; }

AccessDecision deny(std::string object, std::string rule, std::string reason) {
  return AccessDecision{false, std::move(object), std::move(rule), std::move(reason), ""};
}

// The path as the system would reach it: absolute, symbolic links and .. resolved as far as the
// path exists.
fs::path resolved(const std::string& path, const std::string& cwd) {
  fs::path p(path);
  if (p.is_relative()) p = fs::path(cwd.empty() ? "/" : cwd) / p;
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : canonical;
}

bool under_any(const fs::path& path, const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    std::error_code ec;
    fs::path base = fs::weakly_canonical(fs::path(root), ec);
    if (ec) base = fs::path(root).lexically_normal();
    const std::string b = base.string();
    const std::string p = path.string();
    if (p == b || (p.size() > b.size() && p.compare(0, b.size(), b) == 0 &&
                   (b.back() == '/' || p[b.size()] == '/'))) {
      return true;
    }
  }
  return false;
}

// "relative/path:range" when `target` lies in the framework source; empty otherwise.
std::string source_location(const AccessPolicy& policy, const fs::path& target,
                            const std::string& range) {
  if (policy.framework_source.empty() || !under_any(target, {policy.framework_source})) return "";
  std::error_code ec;
  fs::path root = fs::weakly_canonical(policy.framework_source, ec);
  if (ec) root = fs::path(policy.framework_source).lexically_normal();
  const fs::path relative = target.lexically_relative(root);
  return (relative.empty() || relative == "." ? std::string(".") : relative.string()) + ":" + range;
}

AccessDecision check_read(const AccessPolicy& policy, const std::string& path,
                          const std::string& cwd, const std::string& range = "all") {
  const fs::path target = resolved(path, cwd);
  const bool holds_secret = std::any_of(
      policy.secret_paths.begin(), policy.secret_paths.end(), [&](const std::string& secret) {
        return under_any(resolved(secret, "/"), {target.string()});
      });
  if (under_any(target, policy.secret_paths) || holds_secret) {
    return deny(target.string(), "read of a secret",
                target.string() +
                    " holds the ledger's keys or another secret; it is never "
                    "readable by the agent.");
  }
  if (under_any(target, policy.read_paths) || under_any(target, policy.write_paths) ||
      (!policy.framework_source.empty() && under_any(target, {policy.framework_source}))) {
    AccessDecision decision = allow();
    decision.source_location = source_location(policy, target, range);
    return decision;
  }
  return deny(target.string(), "read outside the allowed paths",
              "You may read only the campaign folder, the framework source and the skill: " +
                  target.string() + " is outside them.");
}

AccessDecision check_write(const AccessPolicy& policy, const std::string& path,
                           const std::string& cwd) {
  const fs::path target = resolved(path, cwd);
  if (under_any(target, policy.protected_paths) || under_any(target, policy.secret_paths)) {
    return deny(target.string(), "write to a protected path",
                target.string() +
                    " is protected (the policy, the hooks, the gate's lists and the ledger are "
                    "outside your reach). Change recipes only through attune propose.");
  }
  if (under_any(target, policy.write_paths)) return allow();
  return deny(target.string(), "write outside the scratch folder",
              "You may write only in your scratch folder; " + target.string() +
                  " is outside it. Change recipes only through attune propose.");
}

bool is_assignment(const std::string& word) {
  const std::size_t eq = word.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(eq), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The options a reader may take. Every other option is refused: some read a file named in their
// argument (wc --files0-from, grep -f) or never end (tail -f).
struct ReaderOptions {
  std::string_view flags;                     // single letters without a value
  std::string_view valued;                    // single letters with a value, not a path
  std::vector<std::string_view> long_flags;   // --name
  std::vector<std::string_view> long_valued;  // --name=VALUE or --name VALUE, not a path
  bool pattern_first = false;                 // the first operand is a pattern (grep)
};

const ReaderOptions* reader_options(const std::string& program) {
  static const std::map<std::string, ReaderOptions> kReaders = {
      {"cat",
       {"AbeEnstTuv",
        "",
        {"--number", "--number-nonblank", "--show-all", "--show-ends", "--show-tabs",
         "--squeeze-blank"},
        {},
        false}},
      {"head", {"qv", "nc", {"--quiet", "--silent", "--verbose"}, {"--lines", "--bytes"}, false}},
      {"tail", {"qv", "nc", {"--quiet", "--silent", "--verbose"}, {"--lines", "--bytes"}, false}},
      {"ls",
       {"aAdFhilLnrRSt1",
        "",
        {"--all", "--almost-all", "--human-readable", "--recursive"},
        {},
        false}},
      {"grep",
       {"cEFGHhiIlLnoqrRsvwxz",
        "ABCem",
        {"--count", "--ignore-case", "--line-number", "--recursive", "--files-with-matches",
         "--invert-match", "--word-regexp", "--fixed-strings", "--extended-regexp",
         "--only-matching", "--with-filename", "--no-filename"},
        {"--max-count", "--context", "--after-context", "--before-context", "--regexp", "--include",
         "--exclude", "--exclude-dir", "--color", "--colour"},
        true}},
      {"wc",
       {"clmwL", "", {"--lines", "--words", "--bytes", "--chars", "--max-line-length"}, {}, false}},
  };
  const auto found = kReaders.find(program);
  return found == kReaders.end() ? nullptr : &found->second;
}

bool listed(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The path operands of a reader's words; an option it may not take is a refusal. With no path,
// ls and a recursive grep read the working folder.
Result<std::vector<std::string>> reader_paths(const std::string& program,
                                              const std::vector<std::string>& words,
                                              const std::string& cwd) {
  const ReaderOptions& options = *reader_options(program);
  std::vector<std::string> paths;
  bool pattern_given = false;
  bool recursive = false;
  bool options_end = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (options_end || word.size() < 2 || word.front() != '-') {
      if (options.pattern_first && !pattern_given) {
        pattern_given = true;
      } else {
        paths.push_back(word);
      }
      continue;
    }
    if (word == "--") {
      options_end = true;
      continue;
    }
    if (word.starts_with("--")) {
      const std::string name = word.substr(0, word.find('='));
      if (listed(options.long_flags, name) && name == word) {
        recursive = recursive || name == "--recursive";
        continue;
      }
      if (listed(options.long_valued, name)) {
        pattern_given = pattern_given || name == "--regexp";
        if (name == word) ++i;  // the value is the next word
        continue;
      }
      return make_error(program + " " + name);
    }
    for (std::size_t c = 1; c < word.size(); ++c) {
      const char letter = word[c];
      if (options.flags.find(letter) != std::string_view::npos) {
        recursive = recursive || letter == 'r' || letter == 'R';
        continue;
      }
      if (options.valued.find(letter) != std::string_view::npos) {
        pattern_given = pattern_given || letter == 'e';
        if (c + 1 == word.size()) ++i;  // the value is the next word, else the rest of this one
        break;
      }
      return make_error(program + " -" + std::string(1, letter));
    }
  }
  if (paths.empty() && (program == "ls" || (program == "grep" && recursive))) {
    paths.push_back(cwd.empty() ? "." : cwd);
  }
  return paths;
}

// attune's own options that name a file it writes; every other word that may name a file is
// checked as a read.
bool is_output_option(std::string_view name) {
  return name == "-o" || name == "--out" || name == "--output" || name == "--out-dir";
}

bool may_name_a_file(const std::string& word, const std::string& cwd) {
  if (word.empty()) return false;
  if (word.find('/') != std::string::npos || word.front() == '.' || word.front() == '~') {
    return true;
  }
  std::error_code ec;
  return fs::exists(fs::path(cwd.empty() ? "/" : cwd) / word, ec);
}

// An allowed attune subcommand, with every file it would read or write checked against the
// policy: `attune ledger export -o FILE` writes FILE, `attune sim predict --recipe FILE` reads it.
AccessDecision check_attune_arguments(const AccessPolicy& policy,
                                      const std::vector<std::string>& words,
                                      const std::string& cwd) {
  for (std::size_t i = 2; i < words.size(); ++i) {
    const std::string& word = words[i];
    const std::size_t eq = word.find('=');
    const std::string name = word.starts_with("-") ? word.substr(0, eq) : "";
    std::string value = word.starts_with("-") && eq != std::string::npos ? word.substr(eq + 1) : "";
    if (is_output_option(name)) {
      if (value.empty() && i + 1 < words.size()) value = words[++i];
      AccessDecision write = check_write(policy, value, cwd);
      if (!write.allowed) return write;
      continue;
    }
    if (!name.empty() && value.empty()) continue;  // a switch, or an option whose value follows
    const std::string& candidate = name.empty() ? word : value;
    if (!may_name_a_file(candidate, cwd)) continue;
    AccessDecision read = check_read(policy, candidate, cwd);
    if (!read.allowed) return read;
  }
  return allow();
}

// One simple command: an attune subcommand, or a reader on readable paths.
AccessDecision check_simple_command(const AccessPolicy& policy,
                                    const std::vector<std::string>& words, const std::string& cwd,
                                    const std::string& line) {
  if (words.empty()) return allow();
  if (is_assignment(words.front())) {
    return deny(line, "environment assignment",
                "Commands may not set environment variables (" + words.front() +
                    "): settings change only through attune propose, where the gate sees them.");
  }
  const std::string& program = words.front();
  if (program == "attune" || (!policy.attune_path.empty() && program == policy.attune_path)) {
    const std::string sub = words.size() > 1 ? words[1] : "";
    if (sub == "--help" || sub == "-h") return allow();
    if (contains(policy.attune_commands, sub)) return check_attune_arguments(policy, words, cwd);
    std::string list;
    for (const std::string& c : policy.attune_commands) list += (list.empty() ? "" : ", ") + c;
    return deny(line, "attune command not allowed",
                "attune " + sub + " is not yours to run; you may run attune " + list + ".");
  }
  if (!contains(policy.programs, program) || reader_options(program) == nullptr) {
    return deny(line, "program not on the allowlist",
                program + " is not on the allowlist; use attune's commands and the readers " +
                    "(cat, head, tail, ls, grep, wc) on allowed paths.");
  }
  auto paths = reader_paths(program, words, cwd);
  if (!paths.ok()) {
    return deny(line, "option not allowed",
                paths.error() +
                    " is not allowed: a reader takes only options that neither name "
                    "a file nor run forever; name the files as plain paths.");
  }
  AccessDecision decision = allow();
  for (const std::string& path : paths.value()) {
    AccessDecision read = check_read(policy, path, cwd);
    if (!read.allowed) return read;
    if (decision.source_location.empty()) decision.source_location = read.source_location;
  }
  return decision;
}

AccessDecision check_bash(const AccessPolicy& policy, const std::string& command,
                          const std::string& cwd) {
  std::vector<std::string> words;
  std::string location;  // the first framework-source read of the command line
  for (const ShellToken& token : shell_tokens(command)) {
    if (token.kind == ShellToken::Kind::kForbidden) {
      return deny(command, "shell feature not allowed",
                  "The command uses " + token.text +
                      ", which could hide a write or an environment change; run one plain "
                      "command at a time.");
    }
    if (token.kind == ShellToken::Kind::kSeparator) {
      AccessDecision decision = check_simple_command(policy, words, cwd, command);
      if (!decision.allowed) return decision;
      if (location.empty()) location = decision.source_location;
      words.clear();
      continue;
    }
    words.push_back(token.text);
  }
  AccessDecision decision = check_simple_command(policy, words, cwd, command);
  if (decision.allowed && decision.source_location.empty()) decision.source_location = location;
  return decision;
}

Result<std::vector<std::string>> string_list(const toml::table& root, const char* table,
                                             const char* key, const std::string& source) {
  std::vector<std::string> out;
  const toml::node* node = root.at_path(std::string(table) + "." + key).node();
  if (node == nullptr) return out;
  const toml::array* array = node->as_array();
  const auto line = std::to_string(node->source().begin.line);
  if (array == nullptr) {
    return make_error(source + ":" + line + ": [" + table + "] " + key +
                      ": expected an array of strings, found " + toml_type_name(*node));
  }
  for (const toml::node& item : *array) {
    const auto* text = item.as_string();
    if (text == nullptr) {
      return make_error(source + ":" + std::to_string(item.source().begin.line) + ": [" + table +
                        "] " + key + ": expected strings, found " + toml_type_name(item));
    }
    if (std::string_view(text->get()).empty() || text->get().front() != '/') {
      if (std::string(key) == "paths" || std::string(key) == "secrets") {
        return make_error(source + ":" + std::to_string(item.source().begin.line) + ": [" + table +
                          "] " + key + ": expected absolute paths, found '" + text->get() + "'");
      }
    }
    out.push_back(text->get());
  }
  return out;
}

std::string toml_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : ", ") + json(items[i]).dump();
  }
  return out + "]";
}

// A double-quoted span from the quote at `open`: its text goes into `word` (a backslash takes the
// next character literally), and each `$` or backtick inside is refused as an expansion. Returns
// the index of the closing quote, or npos when the quote is not closed.
std::size_t read_double_quoted(std::string_view command, std::size_t open, std::string& word,
                               std::vector<ShellToken>& tokens) {
  std::size_t j = open + 1;
  for (; j < command.size() && command[j] != '"'; ++j) {
    if (command[j] == '$' || command[j] == '`') {
      tokens.push_back(
          {ShellToken::Kind::kForbidden, std::string("expansion (") + command[j] + ")"});
    } else if (command[j] == '\\' && j + 1 < command.size()) {
      word.push_back(command[++j]);
    } else {
      word.push_back(command[j]);
    }
  }
  return j < command.size() ? j : std::string_view::npos;
}

// Why an unquoted character the shell would interpret (other than separators and comments) is
// refused: a lone `&`, redirections, expansions, subshells and groups, globs, a leading tilde.
// Empty where the character is taken literally.
std::string refused_character(char c, bool in_word) {
  if (c == '&') return "a background job (&)";
  if (c == '>' || c == '<') return std::string("a redirection (") + c + ")";
  if (c == '$' || c == '`') return std::string("expansion (") + c + ")";
  if (c == '(' || c == ')' || c == '{' || c == '}') {
    return std::string("a subshell or group (") + c + ")";
  }
  if (c == '*' || c == '?' || c == '[') return std::string("a glob (") + c + ")";
  if (c == '~' && !in_word) return "tilde expansion (~)";
  return "";
}

}  // namespace

std::vector<std::string> default_attune_commands() {
  return {"propose", "profile", "wait", "status", "log", "stop", "audit", "ledger", "sim", "trace"};
}

std::vector<std::string> default_reader_programs() {
  return {"cat", "head", "tail", "ls", "grep", "wc"};
}

std::vector<ShellToken> shell_tokens(std::string_view command) {
  std::vector<ShellToken> tokens;
  std::string word;
  bool in_word = false;
  auto end_word = [&] {
    if (in_word) tokens.push_back({ShellToken::Kind::kWord, word});
    word.clear();
    in_word = false;
  };
  auto forbidden = [&](std::string what) {
    tokens.push_back({ShellToken::Kind::kForbidden, std::move(what)});
  };
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    const char next = i + 1 < command.size() ? command[i + 1] : '\0';
    if (c == '\'') {
      const std::size_t close = command.find('\'', i + 1);
      if (close == std::string_view::npos) return forbidden("an unterminated quote"), tokens;
      word.append(command.substr(i + 1, close - i - 1));
      in_word = true;
      i = close;
    } else if (c == '"') {
      in_word = true;
      const std::size_t close = read_double_quoted(command, i, word, tokens);
      if (close == std::string_view::npos) return forbidden("an unterminated quote"), tokens;
      i = close;
    } else if (c == '\\') {
      if (next == '\n') {
        ++i;  // a line continuation
      } else if (next != '\0') {
        word.push_back(next);
        in_word = true;
        ++i;
      }
    } else if (c == ' ' || c == '\t') {
      end_word();
    } else if (c == '\n' || c == ';') {
      end_word();
      tokens.push_back({ShellToken::Kind::kSeparator, std::string(1, c)});
    } else if ((c == '&' && next == '&') || (c == '|' && next == '|')) {
      end_word();
      tokens.push_back({ShellToken::Kind::kSeparator, std::string(2, c)});
      ++i;
    } else if (c == '|') {
      end_word();
      tokens.push_back({ShellToken::Kind::kSeparator, "|"});
    } else if (std::string why = refused_character(c, in_word); !why.empty()) {
      forbidden(std::move(why));
    } else if (c == '#' && !in_word) {
      const std::size_t eol = command.find('\n', i);
      i = eol == std::string_view::npos ? command.size() : eol - 1;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  end_word();
  return tokens;
}

Result<AccessPolicy> parse_access_policy(std::string_view text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return make_error(source + ":" + std::to_string(e.source().begin.line) + ": " +
                      std::string(e.description()));
  }
  for (const auto& [key, node] : root) {
    const std::string name(key.str());
    if (name != "read" && name != "write" && name != "protect" && name != "run" &&
        name != "control") {
      return make_error(source + ":" + std::to_string(node.source().begin.line) +
                        ": unknown table [" + name +
                        "]; expected read, write, protect, run or control");
    }
  }
  AccessPolicy policy;
  auto read = string_list(root, "read", "paths", source);
  auto write = string_list(root, "write", "paths", source);
  auto protect = string_list(root, "protect", "paths", source);
  auto secrets = string_list(root, "protect", "secrets", source);
  auto commands = string_list(root, "run", "commands", source);
  auto programs = string_list(root, "run", "programs", source);
  for (auto* list : {&read, &write, &protect, &secrets, &commands, &programs}) {
    if (!list->ok()) return make_error(list->error());
  }
  policy.read_paths = std::move(read).value();
  policy.write_paths = std::move(write).value();
  policy.protected_paths = std::move(protect).value();
  policy.secret_paths = std::move(secrets).value();
  policy.attune_commands = std::move(commands).value();
  policy.programs = std::move(programs).value();
  policy.attune_path = root.at_path("run.attune").value_or(std::string());
  policy.framework_source = root.at_path("read.framework").value_or(std::string());
  policy.socket_path = root.at_path("control.socket").value_or(std::string());
  if (policy.socket_path.empty()) {
    return make_error(source + ": [control] socket: expected the campaign's control socket path");
  }
  return policy;
}

std::string access_policy_toml(const AccessPolicy& policy) {
  std::ostringstream out;
  out << "# What the agent may read, write and run; everything else is refused and recorded.\n"
      << "# Written by attune agent install; the agent cannot change it (it is protected).\n\n"
      << "[read]\npaths = " << toml_list(policy.read_paths)
      << (policy.framework_source.empty() ? std::string()
                                          : "\nframework = " + json(policy.framework_source).dump())
      << "\n\n"
      << "[write]\npaths = " << toml_list(policy.write_paths) << "\n\n"
      << "[protect]\npaths = " << toml_list(policy.protected_paths)
      << "\nsecrets = " << toml_list(policy.secret_paths) << "\n\n"
      << "[run]\nattune = " << json(policy.attune_path).dump()
      << "\ncommands = " << toml_list(policy.attune_commands)
      << "\nprograms = " << toml_list(policy.programs) << "\n\n"
      << "[control]\nsocket = " << json(policy.socket_path).dump() << "\n";
  return out.str();
}

AccessDecision check_tool_call(const AccessPolicy& policy, const std::string& hook_input) {
  const json input = json::parse(hook_input, nullptr, false);
  if (input.is_discarded() || !input.is_object() || !input.contains("tool_name") ||
      !input["tool_name"].is_string()) {
    return deny("hook input", "malformed tool call",
                "The hook could not read the proposed tool call, so it is refused.");
  }
  const std::string tool = input["tool_name"].get<std::string>();
  const json args = input.value("tool_input", json::object());
  const std::string cwd = input.value("cwd", std::string());
  auto text_arg = [&](const char* key) {
    const auto it = args.find(key);
    return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (tool == "Read" || tool == "NotebookRead") {
    const std::string path = text_arg(tool == "Read" ? "file_path" : "notebook_path");
    if (path.empty()) return deny(tool, "malformed tool call", "The call names no file.");
    std::string range = "all";
    const auto offset = args.find("offset");
    const auto limit = args.find("limit");
    if (offset != args.end() && offset->is_number_unsigned()) {
      const auto first = std::max<std::uint64_t>(1, offset->get<std::uint64_t>());
      range = std::to_string(first) + "-";
      range +=
          limit != args.end() && limit->is_number_unsigned()
              ? std::to_string(first + std::max<std::uint64_t>(1, limit->get<std::uint64_t>()) - 1)
              : std::string("end");
    } else if (limit != args.end() && limit->is_number_unsigned()) {
      range = "1-" + std::to_string(std::max<std::uint64_t>(1, limit->get<std::uint64_t>()));
    }
    return check_read(policy, path, cwd, range);
  }
  if (tool == "Glob" || tool == "Grep" || tool == "LS") {
    const std::string path = text_arg("path");
    return check_read(policy, path.empty() ? cwd : path, cwd);
  }
  if (tool == "Write" || tool == "Edit" || tool == "MultiEdit" || tool == "NotebookEdit") {
    const std::string path = text_arg(tool == "NotebookEdit" ? "notebook_path" : "file_path");
    if (path.empty()) return deny(tool, "malformed tool call", "The call names no file.");
    return check_write(policy, path, cwd);
  }
  if (tool == "Bash") {
    const std::string command = text_arg("command");
    if (command.empty()) return deny(tool, "malformed tool call", "The call has no command.");
    return check_bash(policy, command, cwd);
  }
  if (tool == "TodoWrite") return allow();
  if (tool == "AskUserQuestion" || tool == "AskUser") {
    return deny(tool, "no questions: take the default and record the assumption", kQuestionReason);
  }
  return deny(tool, "tool not allowed",
              "The " + tool +
                  " tool is not allowed here; use the attune commands (propose, profile, wait, "
                  "status, log, stop) and read files in the allowed folders.");
}

}  // namespace attune::agent
