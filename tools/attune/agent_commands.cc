// The external agent's side of a live campaign: the commands it runs against the control socket
// (propose, profile, wait, log, stop; status lives with the views), the hooks its harness calls
// (hook stop, hook pre-tool), and the installation and supervision of the agent (agent install,
// agent run).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "adapters/agent/access_policy.h"
#include "adapters/agent/control_socket.h"
#include "adapters/tuner/learned_rules.h"
#include "adapters/tuner/lever_catalog.h"
#include "adapters/tuner/skill.h"
#include "core/text_file.h"
#include "events/whole_file.h"
#include "tools/attune/campaign_runner.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A request that is not a wait gets its answer within this.
constexpr std::int64_t kRequestTimeoutMs = 120'000;
// A hook must answer quickly: the agent's harness waits on it.
constexpr std::int64_t kHookRequestTimeoutMs = 10'000;

struct SocketOption {
  std::string path;
  bool json = false;
};

void add_socket_option(CLI::App* command, SocketOption& option) {
  command->add_option("--socket", option.path,
                      "The campaign's control socket (default: $ATTUNE_SOCKET)");
  command->add_flag("--json", option.json, "Print the reply as one JSON object");
}

Result<std::string> socket_of(const SocketOption& option) {
  if (!option.path.empty()) return agent::parse_listen_address(option.path);
  const char* env = std::getenv("ATTUNE_SOCKET");
  if (env != nullptr && *env != '\0') return agent::parse_listen_address(env);
  return make_error("no control socket: give --socket PATH or set ATTUNE_SOCKET");
}

// Sends a request and returns the parsed reply ({"ok": false, ...} replies included).
Result<json> request(const std::string& socket_path, const json& body, std::int64_t timeout_ms) {
  auto reply = agent::control_request(socket_path, body.dump(), timeout_ms);
  if (!reply.ok()) return make_error(reply.error());
  json parsed = json::parse(reply.value(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return make_error(socket_path + ": the reply is not a JSON object");
  }
  return parsed;
}

// Prints the reply (JSON, or `text` of it) and returns the exit code: 2 for an error reply.
int print_reply(const json& reply, bool as_json, const std::function<std::string()>& text) {
  if (!reply.value("ok", false)) {
    if (as_json) write_json_output(reply);
    return fail(reply.value("error", std::string("the campaign refused the request")));
  }
  if (as_json) {
    write_json_output(reply);
  } else {
    std::cout << text();
  }
  return kExitOk;
}

std::string run_line(const json& run) {
  std::string line = "run " + std::to_string(run.value("run_id", 0)) + " (" +
                     run.value("purpose", std::string()) +
                     "): " + run.value("state", std::string());
  if (run.contains("tokens_per_s_per_gpu")) {
    std::ostringstream figure;
    figure.setf(std::ios::fixed);
    figure.precision(1);
    figure << run["tokens_per_s_per_gpu"].get<double>();
    line += ", " + figure.str() + " tokens/s/GPU";
  }
  if (run.contains("verdict")) line += ", " + run["verdict"].get<std::string>();
  if (run.contains("failure")) {
    line += ", " + run["failure"].value("class", std::string()) + ": " +
            run["failure"].value("message", std::string());
  }
  if (run.contains("diff")) line += "\n  " + run["diff"].get<std::string>();
  return line + "\n";
}

// ---- propose ------------------------------------------------------------------------------

struct ProposeOptions {
  SocketOption socket;
  std::vector<std::string> diff;
  std::uint32_t parent = 0;
  std::string hypothesis;
  double expected_gain = 0.0;
  bool profile = false;
};

// One --diff item: FLAG=VALUE, FLAG (a switch on), !FLAG (removed), env:NAME=VALUE, !env:NAME.
Result<json> change_of(const std::string& item) {
  std::string text = item;
  const bool remove = !text.empty() && text.front() == '!';
  if (remove) text = text.substr(1);
  const bool env = text.rfind("env:", 0) == 0;
  if (env) text = text.substr(4);
  while (!env && !text.empty() && text.front() == '-') text = text.substr(1);
  const std::size_t eq = text.find('=');
  const std::string name = text.substr(0, eq);
  if (name.empty()) {
    return make_error("--diff '" + item +
                      "': expected FLAG=VALUE, FLAG, !FLAG, env:NAME=VALUE or !env:NAME");
  }
  json change = {{env ? "env" : "flag", name}};
  if (remove) {
    if (eq != std::string::npos)
      return make_error("--diff '" + item + "': a removal takes no value");
    change["remove"] = true;
  } else if (eq == std::string::npos) {
    if (env) return make_error("--diff '" + item + "': expected env:NAME=VALUE");
    change["value"] = "";
  } else {
    change["value"] = text.substr(eq + 1);
  }
  return change;
}

int run_propose(const ProposeOptions& options) {
  auto socket_path = socket_of(options.socket);
  if (!socket_path.ok()) return fail(socket_path.error());
  const std::size_t colon = options.hypothesis.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= options.hypothesis.size()) {
    return fail(
        "--hypothesis: expected 'BOTTLENECK: MECHANISM' (what limits the leader, and how "
        "the change removes it), found '" +
        options.hypothesis + "'");
  }
  auto trim = [](std::string s) {
    const auto first = s.find_first_not_of(" \t");
    const auto last = s.find_last_not_of(" \t");
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
  };
  json changes = json::array();
  for (const std::string& item : options.diff) {
    auto change = change_of(item);
    if (!change.ok()) return fail(change.error());
    changes.push_back(change.value());
  }
  const json body = {{"op", "propose"},
                     {"changes", changes},
                     {"parent_run_id", options.parent},
                     {"profile", options.profile},
                     {"hypothesis",
                      {{"bottleneck", trim(options.hypothesis.substr(0, colon))},
                       {"mechanism", trim(options.hypothesis.substr(colon + 1))},
                       {"expected_gain_fraction", options.expected_gain}}}};
  auto reply = request(socket_path.value(), body, kRequestTimeoutMs);
  if (!reply.ok()) return fail(reply.error());
  const int code = print_reply(reply.value(), options.socket.json, [&] {
    const json& r = reply.value();
    if (r.value("admitted", false)) {
      return "admitted as run " + std::to_string(r.value("run_id", 0)) + " (proposal " +
             std::to_string(r.value("proposal_id", 0)) + ")\n";
    }
    return "refused (" + r.value("refusal", std::string("search over")) +
           "): " + r.value("detail", std::string()) + "\n";
  });
  if (code != kExitOk) return code;
  return reply->value("admitted", false) ? kExitOk : kExitNo;
}

// ---- profile, wait, log, stop, status -------------------------------------------------------

int run_simple(const SocketOption& socket, json body, std::int64_t timeout_ms,
               const std::function<std::string(const json&)>& text) {
  auto socket_path = socket_of(socket);
  if (!socket_path.ok()) return fail(socket_path.error());
  auto reply = request(socket_path.value(), body, timeout_ms);
  if (!reply.ok()) return fail(reply.error());
  return print_reply(reply.value(), socket.json, [&] { return text(reply.value()); });
}

std::string profile_text(const json& r) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << "run " << r.value("run_id", 0) << ": slowest stage " << r.value("slowest_stage", 0)
      << ", largest cost " << r.value("largest_cost", std::string()) << "\n";
  for (const json& stage : r["stages"]) {
    out << "  stage " << stage.value("stage", 0) << ": step " << stage.value("step_ms", 0.0)
        << " ms, compute " << stage.value("compute_ms", 0.0) << " ms";
    for (const auto& [kind, ms] : stage["exposed_comm_ms"].items()) {
      out << ", " << kind << " " << ms.get<double>() << " ms";
    }
    out << ", host-bound " << stage.value("host_bound_ms", 0.0) << " ms, idle "
        << stage.value("idle_ms", 0.0) << " ms\n";
  }
  return out.str();
}

std::string wait_text(const json& r) {
  if (!r["finished"].is_null()) return run_line(r["finished"]);
  if (r.value("search_over", false)) {
    return "no finished run left to report; the campaign is " + r.value("phase", std::string()) +
           "\n";
  }
  if (r.value("timed_out", false)) {
    return "no run finished in time; " + std::to_string(r.value("runs_in_flight", 0)) +
           " in flight\n";
  }
  return "no run in flight and none left to report\n";
}

// ---- hooks ----------------------------------------------------------------------------------

std::string read_stdin() {
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// The stop hook: blocks the agent from ending its turn while the campaign still searches and no
// stop with evidence is recorded.
int run_hook_stop(const SocketOption& socket) {
  (void)read_stdin();
  auto socket_path = socket_of(socket);
  if (!socket_path.ok()) return kExitOk;  // no campaign to keep going
  auto reply = request(socket_path.value(), {{"op", "status"}}, kHookRequestTimeoutMs);
  if (!reply.ok() || !reply->value("ok", false)) return kExitOk;  // the campaign has finished
  const json& status = reply.value();
  const std::string phase = status.value("phase", std::string());
  if (status.value("search_over", false) || status.value("stop_recorded", false) ||
      (phase != "searching" && phase != "calibrating")) {
    return kExitOk;
  }
  std::ostringstream remaining;
  remaining.setf(std::ios::fixed);
  remaining.precision(1);
  remaining << status["budget"].value("remaining_gpu_hours", 0.0);
  const std::string reason =
      "The campaign is still " + phase + " with " + remaining.str() +
      " GPU-hours left and no stop recorded. Keep going: run `attune status`, then propose the "
      "next candidate from the last diagnosis (attune propose), or wait for runs in flight "
      "(attune wait). End only with `attune stop --evidence ...` when no lever left is worth its "
      "GPU-hours.";
  std::cout << json{{"decision", "block"}, {"reason", reason}}.dump() << "\n";
  return kExitOk;
}

// The pre-tool hook: checks the proposed tool call against the deny-by-default policy, records
// every refusal in the ledger, and answers in the hook protocol.
int run_hook_pre_tool(const std::string& policy_path) {
  const std::string input = read_stdin();
  auto answer = [](const std::string& decision, const std::string& reason) {
    json out = {{"hookSpecificOutput",
                 {{"hookEventName", "PreToolUse"}, {"permissionDecision", decision}}}};
    if (!reason.empty()) out["hookSpecificOutput"]["permissionDecisionReason"] = reason;
    std::cout << out.dump() << "\n";
    return kExitOk;
  };
  auto text = read_text_file(policy_path);
  if (!text.ok()) return answer("deny", "the access policy cannot be read: " + text.error());
  auto policy = agent::parse_access_policy(text.value(), policy_path);
  if (!policy.ok()) return answer("deny", "the access policy is invalid: " + policy.error());
  const agent::AccessDecision decision = agent::check_tool_call(policy.value(), input);
  if (decision.allowed) {
    if (!decision.source_location.empty()) {
      // A read of the framework source: the ledger keeps where the agent read (rule 3).
      const json call = json::parse(input, nullptr, false);
      (void)request(policy->socket_path,
                    {{"op", "read"},
                     {"tool", call.value("tool_name", std::string())},
                     {"input", call.value("tool_input", json::object()).dump()},
                     {"source_location", decision.source_location}},
                    kHookRequestTimeoutMs);
    }
    return answer("allow", "");
  }
  auto recorded = request(policy->socket_path,
                          {{"op", "deny"}, {"object", decision.object}, {"rule", decision.rule}},
                          kHookRequestTimeoutMs);
  const bool kept = recorded.ok() && recorded->value("ok", false);
  return answer("deny", decision.reason + (kept ? " (refusal recorded in the ledger)" : ""));
}

// ---- agent install --------------------------------------------------------------------------

struct InstallOptions {
  std::string dir;
  std::string socket;
  std::vector<std::string> read;
  std::string framework_source;
  std::vector<std::string> protect;
  std::string attune_path;
  std::string learned_rules;
  bool force = false;
};

constexpr char kAgentCommandsMarkdown[] = R"(
## Driving the campaign (external agent)

The campaign runs under `attune campaign run ... --tuner external --listen unix:PATH`; these
commands reach it through `$ATTUNE_SOCKET`. Each prints text, or JSON with `--json`.

- `attune status` — phase, budget, band, leader, every run and refusal, and the ledger table.
  Start here, and again after any restart: the campaign, not your memory, is the record.
- `attune propose --diff FLAG=VALUE [--diff ...] [--parent RUN] --hypothesis 'BOTTLENECK:
  MECHANISM' [--expected-gain F] [--profile]` — one lever (or one coupled set of parallel
  degrees) against the parent run. `--diff FLAG` turns a switch on, `--diff '!FLAG'` removes a
  flag, `--diff env:NAME=VALUE` sets an environment variable. Exit 0: admitted; 1: refused, with
  the reason (read it and correct the proposal).
- `attune wait [--timeout SECONDS]` — the next finished run.
- `attune profile RUN` — a profiled run's per-stage breakdown.
- `attune log RUN [--tail BYTES]` — the end of a run's log.
- `attune stop --evidence '...'` — end the search when no lever left is worth its GPU-hours.

Read a flag's implementation in the framework source before you first use it. Questions to the
user get no answer: take the default and say so in the hypothesis. Tool calls outside the policy
are refused and recorded.
)";

Status write_file(const fs::path& path, const std::string& text, fs::perms perms) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  return write_whole_file(path.string(), text, static_cast<mode_t>(perms), true);
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  return (ec ? fs::path(path) : absolute).lexically_normal().string();
}

// An existing settings file that is not one attune wrote is kept: refused without --force, and
// copied to a free settings.json.bak[.N] name with it.
Status keep_existing_settings(const fs::path& settings, bool force) {
  std::error_code ec;
  if (!fs::exists(settings, ec)) return Ok{};
  auto text = read_text_file(settings.string());
  if (text.ok() && text.value().find(" hook pre-tool --policy ") != std::string::npos) return Ok{};
  if (!force) {
    return make_error(settings.string() +
                      ": exists and was not written by attune agent install; rerun with --force to "
                      "replace it (a backup is kept beside it)");
  }
  fs::path backup = settings.string() + ".bak";
  for (int n = 1; fs::exists(backup, ec); ++n) {
    backup = settings.string() + ".bak." + std::to_string(n);
  }
  fs::copy_file(settings, backup, ec);
  if (ec) return make_error(backup.string() + ": cannot keep a backup: " + ec.message());
  std::cout << "backup    " << backup.string() << " (the settings that were there)\n";
  return Ok{};
}

// The access policy the agent runs under: it reads its skill, the framework source and the
// paths given, writes its scratch directory only, and never touches attune's files or keys.
agent::AccessPolicy install_policy(const InstallOptions& options, const fs::path& dir,
                                   const fs::path& skill, const fs::path& scratch,
                                   const std::string& socket) {
  agent::AccessPolicy policy;
  policy.read_paths.push_back(skill.parent_path().string());
  if (!options.framework_source.empty()) {
    policy.framework_source = absolute_path(options.framework_source);
  }
  for (const std::string& path : options.read) policy.read_paths.push_back(absolute_path(path));
  policy.write_paths.push_back(scratch.string());
  policy.protected_paths = {(dir / ".attune").string(), (dir / ".claude").string()};
  for (const std::string& path : options.protect) {
    policy.protected_paths.push_back(absolute_path(path));
  }
  policy.secret_paths = {absolute_path(Keyring::default_dir())};
  policy.attune_path = options.attune_path.empty() ? "attune" : absolute_path(options.attune_path);
  policy.attune_commands = agent::default_attune_commands();
  policy.programs = agent::default_reader_programs();
  policy.socket_path = socket;
  return policy;
}

// Claude Code's hooks: every tool call is checked against the policy file first (denied by
// default), and the agent's stop asks the campaign over the socket whether it may stop yet.
json agent_hooks(const agent::AccessPolicy& policy, const fs::path& policy_file) {
  const std::string attune = policy.attune_path;
  return {{"hooks",
           {{"PreToolUse",
             json::array({{{"matcher", "*"},
                           {"hooks", json::array({{{"type", "command"},
                                                   {"command", attune + " hook pre-tool --policy " +
                                                                   policy_file.string()}}})}}})},
            {"Stop",
             json::array({{{"hooks", json::array({{{"type", "command"},
                                                   {"command", attune + " hook stop --socket " +
                                                                   policy.socket_path}}})}}})}}},
          {"env", {{"ATTUNE_SOCKET", policy.socket_path}}}};
}

int run_agent_install(const InstallOptions& options) {
  auto socket_path = agent::parse_listen_address(options.socket);
  if (!socket_path.ok()) return fail(socket_path.error());
  std::error_code ec;
  if (!options.framework_source.empty() && !fs::is_directory(options.framework_source, ec)) {
    return fail("--framework-source " + options.framework_source + ": no such directory");
  }
  std::string learned;
  if (!options.learned_rules.empty()) {
    auto text = read_text_file(options.learned_rules);
    if (!text.ok()) return fail(text.error());
    auto parsed = parse_learned_rules(text.value(), options.learned_rules);
    if (!parsed.ok()) return fail(parsed.error());
    learned = text.value();
  }
  const fs::path dir = absolute_path(options.dir);
  const fs::path skill = dir / ".claude" / "skills" / "attune-tuning" / "SKILL.md";
  const fs::path settings = dir / ".claude" / "settings.json";
  const fs::path policy_file = dir / ".attune" / "agent-policy.toml";
  const fs::path scratch = dir / "scratch";
  if (Status kept = keep_existing_settings(settings, options.force); !kept.ok()) {
    return fail(kept.error());
  }

  const agent::AccessPolicy policy =
      install_policy(options, dir, skill, scratch, absolute_path(socket_path.value()));
  const json hooks = agent_hooks(policy, policy_file);

  const fs::perms read_only =
      fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
  const fs::perms read_write = read_only | fs::perms::owner_write;
  fs::create_directories(scratch, ec);
  for (const auto& [path, text] : std::vector<std::pair<fs::path, std::string>>{
           {skill, render_skill(builtin_lever_catalog(), learned) + kAgentCommandsMarkdown},
           {policy_file, agent::access_policy_toml(policy)},
           {settings, hooks.dump(2) + "\n"}}) {
    Status written = write_file(path, text, path == skill ? read_write : read_only);
    if (!written.ok()) return fail(written.error());
  }
  std::cout << "skill     " << skill.string() << "\n"
            << "hooks     " << settings.string() << " (pre-tool: deny by default; stop: until "
            << "the budget is spent or a stop is recorded)\n"
            << "policy    " << policy_file.string() << " (read-only; the agent cannot write it)\n"
            << "scratch   " << scratch.string() << "\n"
            << "socket    " << policy.socket_path << "\n";
  return kExitOk;
}

// `attune propose`: a candidate from an external tuner.
void add_propose_command(CLI::App& app, int& exit_code) {
  auto propose = std::make_shared<ProposeOptions>();
  CLI::App* propose_command = app.add_subcommand(
      "propose",
      "Propose a candidate to a live campaign with an external tuner: one lever against a parent "
      "run, with a hypothesis (exit 0 admitted, 1 refused)");
  add_socket_option(propose_command, propose->socket);
  propose_command
      ->add_option("--diff", propose->diff,
                   "A change: FLAG=VALUE, FLAG (switch on), !FLAG (removed), env:NAME=VALUE, "
                   "!env:NAME; repeat for a coupled set")
      ->required();
  propose_command
      ->add_option("--parent", propose->parent,
                   "The run whose recipe the candidate changes (0: the baseline)")
      ->capture_default_str();
  propose_command
      ->add_option("--hypothesis", propose->hypothesis,
                   "'BOTTLENECK: MECHANISM': what limits the parent, and how the change removes "
                   "it")
      ->required();
  propose_command->add_option("--expected-gain", propose->expected_gain,
                              "The gain you expect, as a fraction (0.05 = 5 %)");
  propose_command->add_flag("--profile", propose->profile, "Profile the candidate's run");
  propose_command->callback([&exit_code, propose] { exit_code = run_propose(*propose); });
}

// The live campaign's views and its stop: `attune profile`, `wait`, `log` and `stop`.
void add_live_commands(CLI::App& app, int& exit_code) {
  auto profile_socket = std::make_shared<SocketOption>();
  auto profile_run = std::make_shared<std::uint32_t>(0);
  CLI::App* profile =
      app.add_subcommand("profile", "Show a profiled run's per-stage breakdown (live campaign)");
  add_socket_option(profile, *profile_socket);
  profile->add_option("RUN", *profile_run, "Run id")->required();
  profile->callback([&exit_code, profile_socket, profile_run] {
    exit_code = run_simple(*profile_socket, {{"op", "profile"}, {"run_id", *profile_run}},
                           kRequestTimeoutMs, profile_text);
  });

  auto wait_socket = std::make_shared<SocketOption>();
  auto wait_seconds = std::make_shared<double>(600.0);
  CLI::App* wait =
      app.add_subcommand("wait", "Wait for the next finished run of a live campaign and show it");
  add_socket_option(wait, *wait_socket);
  wait->add_option("--timeout", *wait_seconds, "Seconds to wait at most")->capture_default_str();
  wait->callback([&exit_code, wait_socket, wait_seconds] {
    const auto timeout_ms = static_cast<std::int64_t>(std::max(0.0, *wait_seconds) * 1000.0);
    exit_code = run_simple(*wait_socket, {{"op", "wait"}, {"timeout_ms", timeout_ms}},
                           timeout_ms + kRequestTimeoutMs, wait_text);
  });

  auto log_socket = std::make_shared<SocketOption>();
  auto log_run = std::make_shared<std::uint32_t>(0);
  auto log_tail = std::make_shared<std::uint64_t>(64 * 1024);
  CLI::App* log = app.add_subcommand("log", "Show the end of a run's log (live campaign)");
  add_socket_option(log, *log_socket);
  log->add_option("RUN", *log_run, "Run id")->required();
  log->add_option("--tail", *log_tail, "Bytes from the end")->capture_default_str();
  log->callback([&exit_code, log_socket, log_run, log_tail] {
    exit_code =
        run_simple(*log_socket, {{"op", "log"}, {"run_id", *log_run}, {"tail_bytes", *log_tail}},
                   kRequestTimeoutMs, [](const json& r) { return r.value("log", std::string()); });
  });

  auto stop_socket = std::make_shared<SocketOption>();
  auto evidence = std::make_shared<std::string>();
  auto diagnosis = std::make_shared<std::string>();
  CLI::App* stop = app.add_subcommand(
      "stop", "End a live campaign's search with evidence; it then checks and ships");
  add_socket_option(stop, *stop_socket);
  stop->add_option("--evidence", *evidence, "Why no lever left is worth its GPU-hours")->required();
  stop->add_option("--diagnosis", *diagnosis, "The last diagnosis of the leader");
  stop->callback([&exit_code, stop_socket, evidence, diagnosis] {
    exit_code = run_simple(
        *stop_socket, {{"op", "stop"}, {"evidence", *evidence}, {"last_diagnosis", *diagnosis}},
        kRequestTimeoutMs, [](const json& r) {
          return "stop recorded; the campaign is " + r.value("phase", std::string()) + "\n";
        });
  });
}

// `attune hook stop` and `attune hook pre-tool`, for an agent's harness.
void add_hook_commands(CLI::App& app, int& exit_code) {
  CLI::App* hook = app.add_subcommand(
      "hook", "Hooks for an agent's harness (JSON on stdin, the decision as JSON on stdout)");
  hook->require_subcommand(1);
  auto hook_socket = std::make_shared<SocketOption>();
  CLI::App* hook_stop = hook->add_subcommand(
      "stop",
      "Stop hook: block the agent from ending its turn until the budget is spent or a stop is "
      "recorded");
  hook_stop->add_option("--socket", hook_socket->path,
                        "The campaign's control socket (default: $ATTUNE_SOCKET)");
  hook_stop->callback([&exit_code, hook_socket] { exit_code = run_hook_stop(*hook_socket); });
  auto policy_path = std::make_shared<std::string>();
  CLI::App* pre_tool = hook->add_subcommand(
      "pre-tool",
      "Pre-tool hook: check a proposed tool call against the deny-by-default policy; refusals "
      "are recorded as AccessDenied");
  pre_tool->add_option("--policy", *policy_path, "The agent policy (TOML)")->required();
  pre_tool->callback([&exit_code, policy_path] { exit_code = run_hook_pre_tool(*policy_path); });
}

// `attune agent install`.
void add_agent_install_command(CLI::App& agent, int& exit_code) {
  auto install = std::make_shared<InstallOptions>();
  CLI::App* install_command = agent.add_subcommand(
      "install",
      "Write the skill, the deny-by-default policy and the hook settings for a "
      "Claude-Code-style agent working in DIR");
  install_command->add_option("DIR", install->dir, "The agent's working folder")->required();
  install_command
      ->add_option("--socket", install->socket, "The campaign's control socket (unix:PATH)")
      ->required();
  install_command->add_option("--read", install->read,
                              "A folder or file the agent may read (the campaign folder); repeat");
  install_command->add_option("--framework-source", install->framework_source,
                              "The framework checkout the agent reads flags' implementations in");
  install_command->add_option("--protect", install->protect,
                              "A path the agent may never write (the ledger, the gate's policy "
                              "files); repeat");
  install_command->add_option("--attune", install->attune_path,
                              "The attune binary the hooks and the agent run (default: attune "
                              "on PATH)");
  install_command->add_option("--learned-rules", install->learned_rules,
                              "A learned-rules catalog (JSON lines) to include in the skill");
  install_command->add_flag("--force", install->force,
                            "Replace a .claude/settings.json that attune did not write (it is kept "
                            "as settings.json.bak)");
  install_command->callback([&exit_code, install] { exit_code = run_agent_install(*install); });
}

// `attune agent run`.
void add_agent_run_command(CLI::App& agent, int& exit_code) {
  struct RunAgent {
    std::string campaign_file;
    std::string db = "attune-ledger";
    AgentOptions agent;
    bool json = false;
  };
  auto run = std::make_shared<RunAgent>();
  CLI::App* run_command = agent.add_subcommand(
      "run",
      "Run a campaign whose tuner is an external agent: serve the control socket, start the "
      "agent command and restart it after a crash until the campaign ships");
  run_command->add_option("CAMPAIGN.toml", run->campaign_file, "The campaign file")->required();
  run_command->add_option("--db", run->db, "Ledger folder")->capture_default_str();
  run_command->add_option("--listen", run->agent.listen, "unix:PATH: the control socket")
      ->required();
  run_command
      ->add_option("--agent", run->agent.command,
                   "The agent command (run with /bin/sh -c; ATTUNE_SOCKET is set; its "
                   "output goes to <db>/<campaign>.agent.log)")
      ->required();
  run_command
      ->add_option("--max-restarts", run->agent.restarts_max,
                   "Restarts after which the search is stopped")
      ->capture_default_str();
  run_command->add_flag("--json", run->json, "Print the final summary as one JSON object");
  run_command->callback([&exit_code, run] {
    exit_code = run_campaign_file(run->campaign_file, run->db, std::string("external"), run->agent,
                                  run->json);
  });
}

}  // namespace

void add_agent_commands(CLI::App& app, int& exit_code) {
  add_propose_command(app, exit_code);
  add_live_commands(app, exit_code);
  add_hook_commands(app, exit_code);
  CLI::App* agent = app.add_subcommand("agent", "Install and run an external coding agent");
  agent->require_subcommand(1);
  add_agent_install_command(*agent, exit_code);
  add_agent_run_command(*agent, exit_code);
}

int live_status(const std::string& socket, bool as_json) {
  SocketOption option{socket, as_json};
  return run_simple(option, {{"op", "status"}}, kRequestTimeoutMs, [](const json& r) {
    std::ostringstream out;
    out.setf(std::ios::fixed);
    out.precision(1);
    out << "campaign " << r.value("campaign_id", std::string()) << ": "
        << r.value("phase", std::string()) << ", " << r.value("runs_in_flight", 0)
        << " runs in flight (concurrency " << r.value("concurrency", 0) << ")\n"
        << "leader   run " << r["leader"].value("run_id", 0) << ", "
        << r["leader"].value("tokens_per_s_per_gpu", 0.0) << " tokens/s/GPU, "
        << r["leader"].value("gain_fraction", 0.0) * 100.0 << " % over the baseline\n"
        << "budget   " << r["budget"].value("remaining_gpu_hours", 0.0) << " GPU-hours left of "
        << r["budget"].value("budget_gpu_hours", 0.0) << "\n\n"
        << r.value("ledger", std::string());
    return out.str();
  });
}

}  // namespace attune::cli
