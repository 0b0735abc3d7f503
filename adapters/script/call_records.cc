#include "adapters/script/call_records.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "events/recipe.h"

namespace attune::script {
namespace {

namespace fs = std::filesystem;

// The fields before ARGV: KIND LAUNCHER CWD COMMAND_AT ARGC.
constexpr std::size_t kRecordHeadFields = 5;
// A call's argv beyond this is not a launch script's doing.
constexpr std::size_t kRecordArgsMax = 1'000'000;

std::optional<std::size_t> parse_count(const std::string& text) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::vector<std::string> nul_fields(const std::string& bytes) {
  std::vector<std::string> fields;
  std::size_t from = 0;
  for (std::size_t nul = bytes.find('\0'); nul != std::string::npos; nul = bytes.find('\0', from)) {
    fields.push_back(bytes.substr(from, nul - from));
    from = nul + 1;
  }
  return fields;  // what follows the last NUL was cut short, and is left out
}

std::optional<CallRecord> parse_record(const std::string& id, const std::string& bytes) {
  const std::vector<std::string> fields = nul_fields(bytes);
  if (fields.size() < kRecordHeadFields) return std::nullopt;
  const auto command_at = parse_count(fields[3]);
  const auto argc = parse_count(fields[4]);
  if (!command_at || !argc || *argc > kRecordArgsMax || *argc == 0 ||
      fields.size() < kRecordHeadFields + *argc) {
    return std::nullopt;
  }
  CallRecord call{id, fields[0], fields[1], fields[2], *command_at, {}, {}};
  const auto argv_begin = fields.begin() + kRecordHeadFields;
  call.argv.assign(argv_begin, argv_begin + static_cast<std::ptrdiff_t>(*argc));
  for (auto it = argv_begin + static_cast<std::ptrdiff_t>(*argc); it != fields.end(); ++it) {
    const std::size_t equals = it->find('=');
    if (equals != std::string::npos && equals > 0) {
      call.env.emplace(it->substr(0, equals), it->substr(equals + 1));
    }
  }
  return call;
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_long_flag(const std::string& word) {
  return word.size() > 2 && word[0] == '-' && word[1] == '-';
}

// How many --flag arguments follow the program.
std::size_t flag_count(const CallRecord& call) {
  const std::size_t program_at = std::min(call.command_at, call.argv.size());
  return static_cast<std::size_t>(std::count_if(
      call.argv.begin() + static_cast<std::ptrdiff_t>(program_at), call.argv.end(), is_long_flag));
}

bool not_the_scripts(const std::string& name) {
  for (const char* variable : kNotTheScriptsVariables) {
    if (name == variable) return true;
  }
  for (const char* prefix : kNotTheScriptsPrefixes) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& words, std::size_t end) {
  std::string line;
  for (std::size_t i = 0; i < end && i < words.size(); ++i) {
    if (i > 0) line += ' ';
    line += shell_quote_argument(words[i]);
  }
  return line;
}

}  // namespace

Result<std::vector<CallRecord>> read_call_records(const std::string& records_dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(records_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("call-", 0) == 0) ids.push_back(name);
  }
  if (ec) return make_error(records_dir + ": cannot list the stubs' records: " + ec.message());
  std::sort(ids.begin(), ids.end());  // zero-padded: call order
  std::vector<CallRecord> calls;
  for (const std::string& id : ids) {
    std::ifstream in(fs::path(records_dir) / id, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (auto call = parse_record(id, bytes.str())) calls.push_back(std::move(*call));
  }
  return calls;
}

std::string python_program(const CallRecord& call) {
  if (call.kind != "python" || call.command_at == 0 || call.command_at >= call.argv.size()) {
    return "";
  }
  return call.argv[call.command_at];
}

std::optional<std::size_t> training_call(const std::vector<CallRecord>& calls) {
  std::optional<std::size_t> best;
  std::tuple<bool, std::size_t> best_score{false, 0};
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (!ends_with(python_program(calls[i]), ".py")) continue;
    const std::tuple<bool, std::size_t> score{!calls[i].launcher_id.empty(), flag_count(calls[i])};
    if (!best || score >= best_score) {  // ties go to the later call
      best = i;
      best_score = score;
    }
  }
  return best;
}

std::map<std::string, std::string> script_set_env(
    const CallRecord& call, const std::map<std::string, std::string>& given_env) {
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : call.env) {
    if (not_the_scripts(name)) continue;
    const auto given = given_env.find(name);
    if (given != given_env.end() && given->second == value) continue;
    env.emplace(name, value);
  }
  return env;
}

std::string launcher_line(const std::vector<CallRecord>& calls, const CallRecord& call) {
  if (call.launcher_id.empty()) return "";
  const auto launcher = std::find_if(calls.begin(), calls.end(), [&](const CallRecord& c) {
    return c.id == call.launcher_id && c.kind == "launcher";
  });
  if (launcher == calls.end()) return "";
  // A launcher that runs a command before the program (mpirun ... python PROGRAM, mpirun ...
  // bash entry.sh PROGRAM) shows that command too.
  const std::string program = python_program(call);
  const std::vector<std::string>& words = launcher->argv;
  const std::size_t own = std::min(launcher->command_at, words.size());
  const auto at = std::find(words.begin() + static_cast<std::ptrdiff_t>(own), words.end(), program);
  return joined(words, at == words.end() ? own : static_cast<std::size_t>(at - words.begin()));
}

std::string command_line(const CallRecord& call) { return joined(call.argv, call.argv.size()); }

}  // namespace attune::script
