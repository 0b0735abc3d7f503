#include "adapters/script/launch_script.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "adapters/script/call_records.h"
#include "adapters/script/sandbox.h"
#include "adapters/script/stubs.h"
#include "adapters/script/timed_process.h"

namespace attune::script {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSystemPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// A trivial sandbox starts in milliseconds; this only bounds a wedged one.
constexpr double kSandboxProbeSeconds = 10;
// A warning quoting a command line cuts it here.
constexpr std::size_t kWarningCommandLengthMax = 240;
constexpr std::size_t kHostnameLengthMax = 64;
// The most entries of a named working folder shown to a script (a Megatron-LM checkout has ~40).
constexpr std::size_t kWorkingFolderEntriesMax = 1000;

// A fresh temporary folder, removed with everything in it when this goes.
class TempFolder {
 public:
  static Result<TempFolder> make() {
    std::string pattern = (fs::temp_directory_path() / "attune-script-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return make_error("cannot make a temporary folder under " +
                        fs::temp_directory_path().string());
    }
    return TempFolder(pattern);
  }
  TempFolder(TempFolder&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempFolder& operator=(TempFolder&&) = delete;
  ~TempFolder() {
    if (path_.empty()) return;
    std::error_code ec;
    if (fs::remove_all(path_, ec) != static_cast<std::uintmax_t>(-1)) return;
    // A script may have left a folder without write permission: give it back, then retry.
    for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_directory(ec)) {
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
    }
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit TempFolder(fs::path path) : path_(std::move(path)) {}
  fs::path path_;
};

// Where the script and its working folder are, as the script sees them, and the entries of a
// working folder named on this machine, shown to the script read-only: (this machine, inside).
struct Invocation {
  std::string script_inside;
  std::string cwd_inside;
  std::vector<std::pair<std::string, std::string>> cwd_entries;
};

// One run's folders on this machine.
struct RunFolders {
  fs::path stubs, records, scratch, staged, root;  // root: the unsandboxed run's fake /
};

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

bool is_variable_name(const std::string& name) {
  const auto is_word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), is_word);
}

// Letters, digits, dots and dashes, neither first nor last a dot or dash: it goes into the
// sandbox's UTS namespace and into the `hostname` stub.
bool is_hostname(const std::string& name) {
  const auto is_host_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
  };
  return !name.empty() && name.size() <= kHostnameLengthMax &&
         std::all_of(name.begin(), name.end(), is_host_char) &&
         std::isalnum(static_cast<unsigned char>(name.front())) &&
         std::isalnum(static_cast<unsigned char>(name.back()));
}

Status check_environment(const ScriptInput& input) {
  for (const auto& [name, value] : input.env) {
    if (!is_variable_name(name)) {
      return make_error(input.path + ": '" + name + "' is not a variable name");
    }
    if (name == "PATH" || name == "HOME" || name.rfind(kStubVariablePrefix, 0) == 0) {
      return make_error(input.path + ": the script's environment may not set " + name +
                        ": the run sets it");
    }
  }
  if (!is_hostname(input.hostname)) {
    return make_error(input.path + ": '" + input.hostname + "' is not a hostname");
  }
  if (!(input.timeout_seconds > 0) || input.timeout_seconds > kScriptTimeoutSecondsMax) {
    return make_error(input.path + ": the time limit must be within (0, " +
                      seconds_text(kScriptTimeoutSecondsMax) + "] s");
  }
  return Ok{};
}

std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> companions_at_their_paths(
    const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, std::string>> files;
  std::error_code ec;
  for (const std::string& path : paths) {
    files.emplace_back(path, fs::absolute(path, ec).lexically_normal().string());
  }
  return files;
}

namespace {

bool is_same_or_under(const std::string& path, const std::string& folder) {
  return path == folder || path.rfind(folder + "/", 0) == 0;
}

// A working folder named on this machine (--cwd, script_cwd) is shown to the script as it would
// see it there: each entry read-only at its path inside, beside what the script writes, which
// stays in the sandbox. An entry that holds a path placed otherwise (the script, a named file)
// is left out, so the placed one is what the script sees; so is one that cannot be read.
Result<std::vector<std::pair<std::string, std::string>>> working_folder_entries(
    const ScriptInput& input, const std::string& cwd_inside,
    const std::vector<std::string>& placed) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::error_code ec;
  if (input.invocation_cwd.empty() || cwd_inside == "/" ||
      !fs::is_directory(input.invocation_cwd, ec)) {
    return entries;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(input.invocation_cwd, ec)) {
    const std::string inside = cwd_inside + "/" + entry.path().filename().string();
    const bool holds_placed = std::any_of(placed.begin(), placed.end(), [&](const auto& path) {
      return is_same_or_under(path, inside);
    });
    std::error_code status;
    if (holds_placed || !fs::exists(entry.path(), status)) continue;  // a dangling link too
    entries.emplace_back(fs::absolute(entry.path(), status).string(), inside);
  }
  if (ec) return make_error(input.path + ": " + input.invocation_cwd + ": " + ec.message());
  if (entries.size() > kWorkingFolderEntriesMax) {
    return make_error(input.path + ": " + input.invocation_cwd + ": over " +
                      std::to_string(kWorkingFolderEntriesMax) +
                      " entries to show the script; name a smaller working folder");
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

// Everything wrong with `input` that shows before the script runs.
Result<Invocation> check_input(const ScriptInput& input) {
  std::error_code ec;
  if (!fs::is_regular_file(input.path, ec)) {
    return make_error(input.path + ": no such launch script");
  }
  if (auto env = check_environment(input); !env.ok()) return make_error(env.error());
  Invocation invocation;
  invocation.script_inside = input.invocation_script_path.empty()
                                 ? fs::absolute(input.path, ec).lexically_normal().string()
                                 : input.invocation_script_path;
  invocation.cwd_inside = input.invocation_cwd.empty()
                              ? fs::path(invocation.script_inside).parent_path().string()
                              : input.invocation_cwd;
  std::vector<std::string> inside_paths = {invocation.script_inside};
  if (invocation.cwd_inside != "/") inside_paths.push_back(invocation.cwd_inside);
  for (const auto& [host, inside] : input.files) {
    if (!fs::exists(host, ec)) return make_error(input.path + ": " + host + ": no such file");
    inside_paths.push_back(inside);
  }
  for (const auto& [inside, content] : input.empty_files_inside) {
    inside_paths.push_back(without_trailing_slashes(inside));
  }
  for (const std::string& inside : inside_paths) {
    if (auto placed = check_inside_path(inside); !placed.ok()) {
      return make_error(input.path + ": cannot place " + placed.error());
    }
  }
  auto entries = working_folder_entries(input, invocation.cwd_inside, inside_paths);
  if (!entries.ok()) return make_error(entries.error());
  invocation.cwd_entries = std::move(entries.value());
  return invocation;
}

Status write_file(const fs::path& path, const std::string& content, bool executable) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return make_error(path.string() + ": cannot write");
  if (executable && ::chmod(path.c_str(), 0755) != 0) {
    return make_error(path.string() + ": cannot make it executable");
  }
  return Ok{};
}

Result<RunFolders> make_run_folders(const TempFolder& temp, const StubSettings& settings) {
  RunFolders folders{temp.path() / "stubs", temp.path() / "records", temp.path() / "scratch",
                     temp.path() / "staged", temp.path() / "root"};
  std::error_code ec;
  for (const fs::path& folder : {folders.stubs, folders.records, folders.scratch, folders.staged}) {
    fs::create_directories(folder, ec);
    if (ec) return make_error(folder.string() + ": cannot create: " + ec.message());
  }
  for (const auto& [name, text] : stub_programs(settings)) {
    if (auto written = write_file(folders.stubs / name, text, true); !written.ok()) {
      return make_error(written.error());
    }
  }
  return folders;
}

bool is_folder_entry(const std::string& inside) { return !inside.empty() && inside.back() == '/'; }
bool is_executable_content(const std::string& content) { return content.rfind("#!", 0) == 0; }

std::vector<std::string> script_environment(const ScriptInput& input, const std::string& stub_dir,
                                            const std::string& home,
                                            const std::string& records_dir) {
  std::vector<std::string> env = {"PATH=" + stub_dir + ":" + std::string(kSystemPath),
                                  "HOME=" + home,
                                  std::string(kStubRecordsVariable) + "=" + records_dir};
  for (const auto& [name, value] : input.env) env.push_back(name + "=" + value);
  return env;
}

std::string inside_run_dir(std::string_view name) {
  return std::string(kSandboxRunDir) + "/" + std::string(name);
}

// The bwrap command for a sandboxed run: the script, its companions and the staged files bound
// where the script expects them.
Result<TimedCommand> sandboxed_command(const ScriptInput& input, const Invocation& invocation,
                                       const RunFolders& folders) {
  auto bwrap = find_bwrap();
  if (!bwrap.ok()) return make_error(input.path + ": no sandbox: " + bwrap.error());
  SandboxPlan plan;
  plan.hostname = input.hostname;
  plan.cwd = invocation.cwd_inside;
  plan.mounts = {{folders.stubs.string(), inside_run_dir("stubs"), false},
                 {folders.records.string(), inside_run_dir("records"), true},
                 {folders.scratch.string(), inside_run_dir("scratch"), true}};
  const fs::path hostname_file = folders.staged / "hostname";
  if (auto written = write_file(hostname_file, input.hostname + "\n", false); !written.ok()) {
    return make_error(written.error());
  }
  plan.mounts.push_back({hostname_file.string(), "/etc/hostname", false});
  for (const auto& [host, inside] : invocation.cwd_entries) {
    plan.mounts.push_back({host, inside, false});
  }
  plan.mounts.push_back({fs::absolute(input.path).string(), invocation.script_inside, false});
  for (const auto& [host, inside] : input.files) {
    plan.mounts.push_back({fs::absolute(host).string(), inside, false});
  }
  std::size_t staged = 0;
  for (const auto& [inside, content] : input.empty_files_inside) {
    if (is_folder_entry(inside)) {
      plan.directories.push_back(without_trailing_slashes(inside));
      continue;
    }
    const fs::path file = folders.staged / ("file-" + std::to_string(staged++));
    if (auto written = write_file(file, content, is_executable_content(content)); !written.ok()) {
      return make_error(written.error());
    }
    plan.mounts.push_back({file.string(), inside, true});
  }
  plan.command = {"/bin/bash", invocation.script_inside};
  plan.command.insert(plan.command.end(), input.args.begin(), input.args.end());
  TimedCommand command;
  command.program = *bwrap;
  command.argv = bwrap_argv(*bwrap, plan);
  command.env = script_environment(input, inside_run_dir("stubs"), std::string(kSandboxHome),
                                   inside_run_dir("records"));
  command.timeout_seconds = input.timeout_seconds;
  return command;
}

// The command for a run on this machine: the script's world built under folders.root.
Result<TimedCommand> unsandboxed_command(const ScriptInput& input, const Invocation& invocation,
                                         const RunFolders& folders) {
  const auto under_root = [&](const std::string& inside) {
    return folders.root / fs::path(inside).relative_path();
  };
  std::error_code ec;
  for (const auto& [host, inside] : input.files) {
    fs::create_directories(under_root(inside).parent_path(), ec);
    fs::copy(host, under_root(inside), fs::copy_options::recursive, ec);
    if (ec) return make_error(input.path + ": cannot copy " + host + ": " + ec.message());
  }
  fs::create_directories(under_root(invocation.script_inside).parent_path(), ec);
  fs::copy_file(input.path, under_root(invocation.script_inside),
                fs::copy_options::overwrite_existing, ec);
  if (ec) return make_error(input.path + ": cannot copy the script: " + ec.message());
  for (const auto& [inside, content] : input.empty_files_inside) {
    if (is_folder_entry(inside)) {
      fs::create_directories(under_root(inside), ec);
    } else if (auto written =
                   write_file(under_root(inside), content, is_executable_content(content));
               !written.ok()) {
      return make_error(written.error());
    }
  }
  const fs::path home = under_root(std::string(kSandboxHome));
  fs::create_directories(home, ec);
  fs::create_directories(under_root(invocation.cwd_inside), ec);
  for (const auto& [host, inside] : invocation.cwd_entries) {
    fs::create_symlink(host, under_root(inside), ec);
    if (ec) return make_error(input.path + ": cannot show " + host + ": " + ec.message());
  }
  TimedCommand command;
  command.program = "/bin/bash";
  command.argv = {"bash", under_root(invocation.script_inside).string()};
  command.argv.insert(command.argv.end(), input.args.begin(), input.args.end());
  command.env =
      script_environment(input, folders.stubs.string(), home.string(), folders.records.string());
  command.cwd = under_root(invocation.cwd_inside).string();
  command.timeout_seconds = input.timeout_seconds;
  return command;
}

std::string abbreviated(std::string line) {
  if (line.size() > kWarningCommandLengthMax) {
    line = line.substr(0, kWarningCommandLengthMax) + "...";
  }
  return line;
}

// What the answer cannot vouch for; `last_printed` is the script's last line of output.
std::vector<std::string> run_warnings(const std::vector<CallRecord>& calls, std::size_t training,
                                      int exit_status, const std::string& last_printed) {
  std::vector<std::string> warnings;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (i == training || calls[i].kind != "python") continue;
    warnings.push_back(
        "a helper python call printed nothing here, so a value taken from its "
        "output is empty: " +
        abbreviated(command_line(calls[i])));
  }
  if (calls.size() >= static_cast<std::size_t>(kStubCallsMax)) {
    warnings.push_back("the script made over " + std::to_string(kStubCallsMax) +
                       " calls of python and launchers; later ones were not recorded");
  }
  if (exit_status != 0) {
    warnings.push_back("bash exited " + std::to_string(exit_status) +
                       " after the training program's call: " + last_printed);
  }
  if (warnings.size() > kWarningsMax) {
    const std::size_t more = warnings.size() - (kWarningsMax - 1);
    warnings.resize(kWarningsMax - 1);
    warnings.push_back("... and " + std::to_string(more) + " more warnings");
  }
  return warnings;
}

// The sandbox shows the script alone: when what it printed says a file is missing, how to show it
// one.
std::string missing_file_hint(const TimedOutcome& outcome) {
  constexpr std::string_view kMissing[] = {"No such file or directory", "not found", "not present",
                                           "does not exist"};
  const bool missing =
      std::any_of(std::begin(kMissing), std::end(kMissing), [&](std::string_view words) {
        return outcome.stderr_tail.find(words) != std::string::npos ||
               outcome.stdout_tail.find(words) != std::string::npos;
      });
  return missing ? " (the script sees only its own file and those named: --file FILE, or --cwd "
                   "FOLDER to show it a folder of this machine; in a campaign file, [baseline] "
                   "script_files and script_cwd)"
                 : "";
}

// What the run left: the training program, or why there is none.
Result<ResolvedScript> read_outcome(const ScriptInput& input, const TimedOutcome& outcome,
                                    const RunFolders& folders) {
  // Many scripts print their complaint on stdout before `exit 1`.
  std::string last = last_line(outcome.stderr_tail);
  if (last.empty()) last = last_line(outcome.stdout_tail);
  if (outcome.timed_out) {
    return make_error(input.path + ": still running after " + seconds_text(input.timeout_seconds) +
                      " s (killed); the last line it printed: " + (last.empty() ? "(none)" : last));
  }
  auto calls = read_call_records(folders.records.string());
  if (!calls.ok()) return make_error(calls.error());
  const auto training = training_call(*calls);
  if (!training) {
    if (last.rfind("bwrap:", 0) == 0) {
      return make_error(input.path + ": the sandbox could not be set up: " + last);
    }
    return make_error(input.path + ": bash exited " + std::to_string(outcome.exit_status) +
                      " before reaching a training program: " +
                      (last.empty() ? "(no message)" : last) + missing_file_hint(outcome));
  }
  const CallRecord& call = (*calls)[*training];
  ResolvedScript resolved;
  resolved.program_path = python_program(call);
  resolved.program = fs::path(resolved.program_path).filename().string();
  resolved.args.assign(call.argv.begin() + static_cast<std::ptrdiff_t>(call.command_at) + 1,
                       call.argv.end());
  resolved.env = script_set_env(call, input.env);
  resolved.launcher = launcher_line(*calls, call);
  resolved.warnings = run_warnings(*calls, *training, outcome.exit_status, last);
  resolved.script_exit_status = outcome.exit_status;
  return resolved;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// An unsandboxed run saw its world under `root`: the answer names the paths the script expects.
void map_back(ResolvedScript& resolved, const fs::path& root) {
  const std::string prefix = root.string();
  replace_all(resolved.program_path, prefix, "");
  for (std::string& arg : resolved.args) replace_all(arg, prefix, "");
  for (auto& [name, value] : resolved.env) replace_all(value, prefix, "");
  replace_all(resolved.launcher, prefix, "");
  for (std::string& warning : resolved.warnings) replace_all(warning, prefix, "");
  resolved.warnings.insert(resolved.warnings.begin(),
                           "ran without a sandbox, on this machine (the caller's consent): "
                           "$HOSTNAME and /etc are this machine's, and the network was reachable");
}

}  // namespace

bool sandbox_available(std::string* why_not) {
  auto bwrap = find_bwrap();
  if (!bwrap.ok()) {
    if (why_not != nullptr) *why_not = bwrap.error();
    return false;
  }
  SandboxPlan plan;
  plan.hostname = "attune-probe";
  plan.cwd = "/";
  plan.command = {"/bin/true"};
  TimedCommand probe{*bwrap,
                     bwrap_argv(*bwrap, plan),
                     {"PATH=" + std::string(kSystemPath)},
                     "",
                     kSandboxProbeSeconds};
  auto outcome = run_timed(probe);
  if (outcome.ok() && !outcome->timed_out && outcome->exit_status == 0) return true;
  if (why_not != nullptr) {
    *why_not = "bwrap cannot make a sandbox here: " +
               (outcome.ok() ? last_line(outcome->stderr_tail) : outcome.error());
  }
  return false;
}

Result<ResolvedScript> resolve_launch_script(const ScriptInput& input) {
  // Bad input is refused as such, whether or not a sandbox can be made here.
  if (auto invocation = check_input(input); !invocation.ok()) {
    return make_error(invocation.error());
  }
  std::string why_not;
  if (sandbox_available(&why_not)) return resolve_launch_script_with(input, Isolation::kSandbox);
  if (input.allow_unsandboxed) return resolve_launch_script_with(input, Isolation::kUnsandboxed);
  return make_error(input.path + ": no sandbox can be made here (" + why_not +
                    "); running the script on this machine needs the user's consent");
}

Result<ResolvedScript> resolve_launch_script_with(const ScriptInput& input, Isolation isolation) {
  auto invocation = check_input(input);
  if (!invocation.ok()) return make_error(invocation.error());
  auto temp = TempFolder::make();
  if (!temp.ok()) return make_error(temp.error());
  const bool sandboxed = isolation == Isolation::kSandbox;
  const fs::path base = temp->path();
  const StubSettings settings =
      sandboxed ? StubSettings{inside_run_dir("stubs"), inside_run_dir("records"),
                               inside_run_dir("scratch"), input.hostname}
                : StubSettings{(base / "stubs").string(), (base / "records").string(),
                               (base / "scratch").string(), input.hostname};
  auto folders = make_run_folders(*temp, settings);
  if (!folders.ok()) return make_error(folders.error());
  auto command = sandboxed ? sandboxed_command(input, *invocation, *folders)
                           : unsandboxed_command(input, *invocation, *folders);
  if (!command.ok()) return make_error(command.error());
  auto outcome = run_timed(*command);
  if (!outcome.ok()) return make_error(input.path + ": " + outcome.error());
  auto resolved = read_outcome(input, *outcome, *folders);
  if (!resolved.ok()) return resolved;
  resolved->sandboxed = sandboxed;
  if (!sandboxed) map_back(*resolved, folders->root);
  return resolved;
}

std::string resolved_script_json(const ResolvedScript& resolved) {
  nlohmann::ordered_json json;
  json["schema_version"] = 1;
  json["program"] = resolved.program;
  json["program_path"] = resolved.program_path;
  json["args"] = resolved.args;
  json["env"] = resolved.env;
  json["launcher"] = resolved.launcher;
  json["warnings"] = resolved.warnings;
  json["sandboxed"] = resolved.sandboxed;
  json["script_exit_status"] = resolved.script_exit_status;
  return json.dump(2);
}

}  // namespace attune::script
