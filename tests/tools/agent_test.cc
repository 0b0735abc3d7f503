// An external agent driving a live campaign through the control socket, the hooks that fence it
// in, and `attune agent run`, all through build/bin/attune as a user (or an agent) runs it. The
// red-team test tries every way out the issue names; each must be refused and recorded.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/tools/private_data_home.h"
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing_support::run_shell;

std::string attune() { return std::string(ATTUNE_BIN_DIR) + "/attune"; }

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class AgentCampaign : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short: a Unix socket path holds at most about 100 bytes.
    static int counter = 0;
    root_ =
        fs::path("/tmp") / ("aat-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    fs::remove_all(root_);
    fs::create_directories(root_ / "campaign");
    db_ = (root_ / "db").string();
    socket_ = (root_ / "s").string();
  }
  void TearDown() override {
    if (campaign_pid_ > 0) {
      ::kill(campaign_pid_, SIGKILL);
      ::waitpid(campaign_pid_, nullptr, 0);
    }
    fs::remove_all(root_);
  }

  // A copy of the small example campaign, with `extra` appended (e.g. an explicit budget).
  std::string campaign_file(const std::string& extra = "") {
    std::ifstream in(std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string body = text.str();
    if (!extra.empty()) {
      const std::size_t at = body.find("[budget]");
      const std::size_t end = body.find("\n[", at + 1);
      body = body.substr(0, at) + extra + body.substr(end);
    }
    const fs::path path = root_ / "campaign" / "campaign.toml";
    std::ofstream(path) << body;
    return path.string();
  }

  // Starts `attune campaign run --tuner external --listen` in the background and waits until
  // the campaign searches.
  void start_campaign(const std::string& file) {
    campaign_pid_ = ::fork();
    if (campaign_pid_ == 0) {
      const std::string out = (root_ / "campaign.out").string();
      const std::string command = attune() + " campaign run " + file + " --db " + db_ +
                                  " --tuner external --listen unix:" + socket_ + " --json > " +
                                  out + " 2> " + out + ".err";
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 400; ++i) {
      const auto status = live_status();
      if (status.value("phase", std::string()) == "searching") return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "the campaign never started searching";
  }

  // Waits for the campaign process and returns its summary.
  json finish_campaign() {
    int status = 0;
    ::waitpid(campaign_pid_, &status, 0);
    campaign_pid_ = -1;
    std::ifstream in(root_ / "campaign.out");
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text.str();
    return json::parse(text.str(), nullptr, false);
  }

  json live_status() {
    const auto run = run_shell(attune() + " status --socket " + socket_ + " --json");
    if (run.exit_code != 0) return json::object();
    return json::parse(run.out, nullptr, false);
  }

  testing_support::CommandOutcome cli(const std::string& args) {
    return run_shell("ATTUNE_SOCKET=" + socket_ + " " + attune() + " " + args);
  }

  std::vector<json> events() {
    const auto run = run_shell(attune() + " ledger export --db " + db_);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    std::vector<json> out;
    std::istringstream lines(run.out);
    std::string line;
    while (std::getline(lines, line)) out.push_back(json::parse(line));
    return out;
  }

  static std::vector<json> of_type(const std::vector<json>& all, const std::string& type) {
    std::vector<json> out;
    for (const json& e : all) {
      if (e["type"] == type) out.push_back(e);
    }
    return out;
  }

  fs::path root_;
  std::string db_;
  std::string socket_;
  pid_t campaign_pid_ = -1;
};

TEST_F(AgentCampaign, IsDrivenThroughTheControlSocketUnderTheSameRules) {
  start_campaign(campaign_file());
  const json status = live_status();
  EXPECT_EQ(status["runs"].size(), 5u);  // the calibration
  EXPECT_TRUE(status["ledger"].get<std::string>().find("calibration") != std::string::npos);

  auto admitted =
      cli("propose --diff moe-token-dispatcher-type=flex --profile --hypothesis "
          "'ep_a2a exposed: the DeepEP dispatcher moves tokens faster'");
  EXPECT_EQ(admitted.exit_code, 0) << admitted.out << admitted.err;
  EXPECT_NE(admitted.out.find("admitted as run 6"), std::string::npos) << admitted.out;
  auto again = cli("propose --diff moe-token-dispatcher-type=flex --hypothesis 'a: b'");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("refused (duplicate)"), std::string::npos) << again.out;
  auto no_hypothesis = cli("propose --diff moe-token-dispatcher-type=allgather --hypothesis x");
  EXPECT_EQ(no_hypothesis.exit_code, 2);

  // Calibration runs first, then the candidate.
  std::vector<int> reported;
  for (int i = 0; i < 6; ++i) {
    auto waited = cli("wait --timeout 20 --json");
    ASSERT_EQ(waited.exit_code, 0) << waited.err;
    const json reply = json::parse(waited.out);
    ASSERT_FALSE(reply["finished"].is_null()) << waited.out;
    reported.push_back(reply["finished"]["run_id"].get<int>());
  }
  EXPECT_EQ(reported, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  const json none = json::parse(cli("wait --timeout 1 --json").out);
  EXPECT_TRUE(none["finished"].is_null());

  auto profile = cli("profile 6 --json");
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_FALSE(json::parse(profile.out)["stages"].empty());
  EXPECT_EQ(cli("profile 1").exit_code, 2);  // not profiled
  auto log = cli("log 6 --tail 2000");
  EXPECT_EQ(log.exit_code, 0);
  EXPECT_NE(log.out.find("iteration"), std::string::npos);

  // A refusal whose object is cut at its size limit inside a two-byte character: the audit's
  // JSON still parses.
  const auto long_denial = run_shell(
      "python3 -c 'import json,socket; s=socket.socket(socket.AF_UNIX); s.connect(\"" + socket_ +
      "\"); s.sendall((json.dumps({\"op\": \"deny\", \"object\": \"x\" + chr(233) * 3000, "
      "\"rule\": \"test\"}) + chr(10)).encode()); print(s.recv(4096).decode())'");
  EXPECT_NE(long_denial.out.find("\"ok\":true"), std::string::npos)
      << long_denial.out << long_denial.err;

  auto stop = cli("stop --evidence 'the dispatcher was the one lever worth its GPU-hours'");
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  const json summary = finish_campaign();
  EXPECT_EQ(summary["shipped"]["run_id"], 6) << summary.dump();

  const auto all = events();
  int external = 0;
  for (const json& e : of_type(all, "CandidateProposed")) {
    if (e["actor"] == "tuner:external") ++external;
  }
  EXPECT_EQ(external, 2);
  const auto refused = of_type(all, "LaunchRefused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0]["body"]["reason"], "duplicate");
  const auto stops = of_type(all, "StopRecorded");
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0]["actor"], "tuner:external");
  const auto audit = run_shell(attune() + " audit --db " + db_ + " --json");
  EXPECT_EQ(audit.exit_code, 0) << audit.err;
  const json audited = json::parse(audit.out, nullptr, false);
  ASSERT_FALSE(audited.is_discarded()) << audit.out.substr(0, 200) << audit.err;
  ASSERT_EQ(audited["access_denied"].size(), 1u);
  EXPECT_EQ(audited["access_denied"][0]["actor"], "agent:hook");
  // The socket is gone with the campaign.
  EXPECT_EQ(cli("status").exit_code, 2);
}

TEST_F(AgentCampaign, RedTeamAttemptsAreRefusedAndRecorded) {
  // A budget that fits the calibration, the reserve and about three candidates.
  start_campaign(campaign_file("[budget]\ngpu_hours = 32\nreserve_checks = 3\n"));
  const fs::path agent_dir = root_ / "agent";
  const fs::path framework = root_ / "megatron";
  fs::create_directories(framework / "megatron" / "core");
  std::ofstream(framework / "megatron" / "core" / "moe.py") << "def dispatch():\n    pass\n";
  const std::string policies = std::string(ATTUNE_SOURCE_DIR) + "/gate/policies";
  auto installed = run_shell(
      attune() + " agent install " + agent_dir.string() + " --socket unix:" + socket_ + " --read " +
      (root_ / "campaign").string() + " --framework-source " + framework.string() + " --protect " +
      db_ + " --protect " + policies + " --attune " + attune());
  ASSERT_EQ(installed.exit_code, 0) << installed.err;
  const std::string policy = (agent_dir / ".attune" / "agent-policy.toml").string();

  // The hook's verdict on one tool call: true when denied.
  auto denied = [&](const json& call) {
    json input = call;
    input["hook_event_name"] = "PreToolUse";
    if (!input.contains("cwd")) input["cwd"] = (agent_dir / "scratch").string();
    const auto run = run_shell("echo " + quoted(input.dump()) + " | " + attune() +
                               " hook pre-tool --policy " + policy);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const json out = json::parse(run.out, nullptr, false);
    EXPECT_FALSE(out.is_discarded()) << run.out;
    return out["hookSpecificOutput"]["permissionDecision"] == "deny";
  };
  auto bash = [](const std::string& command) {
    return json{{"tool_name", "Bash"}, {"tool_input", {{"command", command}}}};
  };
  auto file_tool = [](const std::string& tool, const std::string& path) {
    return json{{"tool_name", tool}, {"tool_input", {{"file_path", path}, {"content", "x"}}}};
  };

  // What the agent needs still works.
  EXPECT_FALSE(denied(bash(attune() + " status")));
  EXPECT_FALSE(
      denied(bash("attune propose --diff moe-token-dispatcher-type=flex --hypothesis 'a: b'")));
  EXPECT_FALSE(denied({{"tool_name", "Read"},
                       {"tool_input",
                        {{"file_path", (framework / "megatron" / "core" / "moe.py").string()},
                         {"offset", 1},
                         {"limit", 2}}}}));
  EXPECT_FALSE(
      denied(bash("grep -n dispatch " + (framework / "megatron" / "core" / "moe.py").string())));
  EXPECT_FALSE(denied(file_tool("Write", (agent_dir / "scratch" / "notes.md").string())));

  fs::create_symlink("/etc/passwd", agent_dir / "scratch" / "innocent");
  const std::vector<std::pair<std::string, json>> hook_attempts = {
      {"edit the agent policy", file_tool("Edit", policy)},
      {"overwrite the hook settings",
       file_tool("Write", (agent_dir / ".claude" / "settings.json").string())},
      {"edit a gate policy list", file_tool("Edit", policies + "/default.toml")},
      {"write into the ledger", file_tool("Write", db_ + "/000001.log")},
      {"forge the ledger with a shell redirect",
       bash("cat notes.md > " + db_ + "/MANIFEST-000001")},
      {"delete the ledger", bash("rm -rf " + db_)},
      {"read outside the allow-list", file_tool("Read", "/etc/shadow")},
      {"read outside through the shell", bash("cat /etc/passwd")},
      {"read outside through ..", bash("cat ../../../etc/passwd")},
      {"read outside through a symlink",
       file_tool("Read", (agent_dir / "scratch" / "innocent").string())},
      {"set a numeric setting through the environment",
       bash("NVTE_FP8_DPA_BWD=1 attune propose --diff moe-token-dispatcher-type=flex --hypothesis "
            "'a: b'")},
      {"export an environment variable", bash("export NCCL_ALGO=Tree; attune status")},
      {"hide a command in a substitution", bash("attune status $(rm -rf " + db_ + ")")},
      {"chain a forbidden program", bash("attune status && python3 -c 'print(1)'")},
      {"run the campaign itself", bash("attune campaign run x.toml")},
      {"rewrite the hooks through attune",
       bash("attune agent install /tmp/x --socket unix:/tmp/y")},
      {"fetch from the network",
       json{{"tool_name", "WebFetch"}, {"tool_input", {{"url", "http://x"}}}}},
      {"ask the user",
       json{{"tool_name", "AskUserQuestion"}, {"tool_input", {{"question", "lr?"}}}}},
  };
  int refused = 0;
  for (const auto& [what, call] : hook_attempts) {
    const bool was_denied = denied(call);
    EXPECT_TRUE(was_denied) << what;
    refused += was_denied ? 1 : 0;
  }

  // Through the control socket: the same rules as for a built-in tuner.
  auto propose = [&](const std::string& diff) {
    return cli("propose " + diff + " --hypothesis 'red team: it should be refused'");
  };
  const auto first = propose("--diff moe-token-dispatcher-type=flex");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const std::vector<std::pair<std::string, std::string>> socket_attempts = {
      {"relaunch an identical recipe", "--diff moe-token-dispatcher-type=flex"},
      {"a numeric environment variable", "--diff env:NVTE_FP8_DPA_BWD=1"},
      {"an alias spelling of a numeric flag", "--diff disable-fp8-wgrad"},
      {"a numeric flag", "--diff lr=0.001"},
      {"two levers at once",
       "--diff moe-token-dispatcher-type=allgather --diff recompute-granularity=full"},
  };
  for (const auto& [what, diff] : socket_attempts) {
    const auto run = propose(diff);
    EXPECT_EQ(run.exit_code, 1) << what << ": " << run.out << run.err;
    refused += run.exit_code == 1 ? 1 : 0;
  }
  // A forged event: the socket takes operations, never events. (Before the parallel proposals,
  // which may spend the budget and end the campaign.)
  const auto forged = run_shell(
      "echo " + quoted(R"({"op":"append","event":{"type":"RecipeShipped","body":{"run_id":6}}})") +
      " | python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(\"" + socket_ +
      "\"); s.sendall(sys.stdin.buffer.read()); print(s.recv(4096).decode())'");
  EXPECT_NE(forged.out.find("unknown operation 'append'"), std::string::npos)
      << forged.out << forged.err;
  refused += forged.out.find("\"ok\":false") != std::string::npos ? 1 : 0;
  // Parallel proposals past the budget: twelve at once.
  std::string parallel;
  const std::vector<std::string> levers = {
      "moe-token-dispatcher-type=allgather", "recompute-granularity=full",
      "tensor-model-parallel-size=1",        "expert-model-parallel-size=4",
      "expert-model-parallel-size=16",       "tensor-model-parallel-size=4",
      "pipeline-model-parallel-size=2",      "tp-comm-overlap",
      "overlap-param-gather=false",          "moe-permute-fusion",
      "cross-entropy-loss-fusion=false",     "!recompute-granularity"};
  // Built by appending: GCC 12 warns falsely at -O3 (-Wrestrict) on "p" + std::to_string(i).
  const auto reply_file = [this](std::size_t i) {
    std::string name(1, 'p');
    name += std::to_string(i);
    return root_ / name;
  };
  for (std::size_t i = 0; i < levers.size(); ++i) {
    parallel += "(ATTUNE_SOCKET=";
    parallel += socket_ + " " + attune() + " propose --diff '" + levers[i] +
                "' --hypothesis 'red team: parallel' --json > " + reply_file(i).string() +
                " 2>&1) & ";
  }
  run_shell(parallel + "wait");
  // Each reply: admitted, refused (recorded), or the search already over. Once the budget is
  // spent the campaign stops, checks and ships, so a late proposal may find the control plane
  // closed or the socket gone.
  int parallel_admitted = 0;
  int parallel_refused = 0;
  std::size_t parallel_unrecorded = 0;  // proposals that never reached decide()
  for (std::size_t i = 0; i < levers.size(); ++i) {
    std::ifstream in(reply_file(i));
    std::stringstream text;
    text << in.rdbuf();
    const json reply = json::parse(text.str(), nullptr, false);
    if (!reply.is_object()) {
      EXPECT_TRUE(text.str().find("no campaign listens on") != std::string::npos ||
                  text.str().find("the campaign has finished") != std::string::npos)
          << text.str();
      ++parallel_refused;
      ++parallel_unrecorded;
      continue;
    }
    (reply.value("admitted", false) ? parallel_admitted : parallel_refused) += 1;
    parallel_unrecorded += reply.value("proposal_id", 0) == 0 ? 1 : 0;
  }
  EXPECT_GE(parallel_refused, 1);
  refused += parallel_refused > 0 ? 1 : 0;

  cli("stop --evidence 'red team over'");
  const json summary = finish_campaign();
  ASSERT_TRUE(summary.contains("gpu_hours")) << summary.dump();
  EXPECT_LE(summary["gpu_hours"]["tuner"].get<double>(),
            summary["gpu_hours"]["budget"].get<double>() + 1e-9);

  const auto all = events();
  const std::size_t attempts = hook_attempts.size() + socket_attempts.size() + 2;
  EXPECT_EQ(refused, static_cast<int>(attempts));
  // Every hook refusal and the forged operation are AccessDenied events; every refused
  // proposal is a LaunchRefused.
  EXPECT_EQ(of_type(all, "AccessDenied").size(), hook_attempts.size() + 1);
  EXPECT_EQ(
      of_type(all, "LaunchRefused").size(),
      socket_attempts.size() + static_cast<std::size_t>(parallel_refused) - parallel_unrecorded);
  // The framework source reads the hook allowed are recorded with their locations (rule 3).
  const auto reads = of_type(all, "ToolCalled");
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0]["body"]["source_location"], "megatron/core/moe.py:1-2");
  EXPECT_EQ(reads[1]["body"]["source_location"], "megatron/core/moe.py:all");
  EXPECT_EQ(reads[0]["actor"], "agent:hook");
  const auto audit = run_shell(attune() + " audit --db " + db_);
  EXPECT_NE(audit.out.find("access denied (" + std::to_string(hook_attempts.size() + 1) + ")"),
            std::string::npos)
      << audit.out;
  std::cout << "red team: " << refused << " of " << attempts << " attempts refused and recorded\n";
}

TEST_F(AgentCampaign, StopHookBlocksUntilAStopIsRecorded) {
  start_campaign(campaign_file());
  const auto blocked =
      run_shell("echo '{\"hook_event_name\":\"Stop\",\"stop_hook_active\":true}' | " + attune() +
                " hook stop --socket " + socket_);
  EXPECT_EQ(blocked.exit_code, 0);
  const json decision = json::parse(blocked.out, nullptr, false);
  ASSERT_FALSE(decision.is_discarded()) << blocked.out;
  EXPECT_EQ(decision["decision"], "block");
  EXPECT_NE(decision["reason"].get<std::string>().find("GPU-hours left"), std::string::npos);
  EXPECT_EQ(cli("stop --evidence 'nothing to gain'").exit_code, 0);
  finish_campaign();
  const auto allowed = run_shell("echo '{}' | " + attune() + " hook stop --socket " + socket_);
  EXPECT_EQ(allowed.exit_code, 0);
  EXPECT_EQ(allowed.out, "");
}

TEST_F(AgentCampaign, AgentRunRestartsACrashedAgentThatRebuildsItsPictureFromStatus) {
  const fs::path script = root_ / "agent.sh";
  const std::string marker = (root_ / "crashed-once").string();
  std::ofstream(script) << "echo agent started\n"
                        << "until " << attune()
                        << " status --json | grep -q '\"searching\": true'; do sleep 0.05; done\n"
                        << "if [ ! -e " << marker << " ]; then\n"
                        << "  touch " << marker << "\n"
                        << "  " << attune()
                        << " propose --diff moe-token-dispatcher-type=flex --hypothesis 'ep_a2a: "
                           "DeepEP'\n"
                        << "  exit 3\n"
                        << "fi\n"
                        << attune() << " status --json > " << (root_ / "status.json").string()
                        << "\n"
                        << "while " << attune()
                        << " wait --timeout 5 | grep -q '^run '; do :; done\n"
                        << attune()
                        << " stop --evidence 'restarted agent: the dispatcher was it'\n";
  const auto run = run_shell(attune() + " agent run " + campaign_file() + " --db " + db_ +
                             " --listen unix:" + socket_ + " --agent 'sh " + script.string() +
                             "' --max-restarts 2 --json");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const json summary = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << run.out;
  EXPECT_EQ(summary["shipped"]["run_id"], 6);
  // The restarted agent saw the first one's run in the status it started from.
  std::ifstream status_file(root_ / "status.json");
  const json status = json::parse(status_file, nullptr, false);
  ASSERT_FALSE(status.is_discarded());
  EXPECT_EQ(status["runs"].size(), 6u);
  std::ifstream log(fs::path(db_) / (summary["campaign_id"].get<std::string>() + ".agent.log"));
  std::stringstream text;
  text << log.rdbuf();
  std::size_t starts = 0;
  for (std::size_t at = 0; (at = text.str().find("agent started", at)) != std::string::npos; ++at) {
    ++starts;
  }
  EXPECT_EQ(starts, 2u) << text.str();
  const auto stops = of_type(events(), "StopRecorded");
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0]["body"]["evidence"], "restarted agent: the dispatcher was it");
}

TEST_F(AgentCampaign, AnAgentThatKeepsCrashingEndsTheSearchAndTheCampaignShips) {
  const auto run =
      run_shell(attune() + " agent run " + campaign_file() + " --db " + db_ +
                " --listen unix:" + socket_ + " --agent 'exit 7' --max-restarts 1 --json");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const json summary = json::parse(run.out, nullptr, false);
  EXPECT_TRUE(summary["shipped"]["is_baseline"].get<bool>());
  const auto stops = of_type(events(), "StopRecorded");
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_NE(stops[0]["body"]["evidence"].get<std::string>().find("exited with status 7"),
            std::string::npos);
}

TEST_F(AgentCampaign, BadInvocationsChangeNothing) {
  const std::string file = campaign_file();
  auto no_socket =
      run_shell(attune() + " campaign run " + file + " --db " + db_ + " --tuner external");
  EXPECT_EQ(no_socket.exit_code, 2);
  EXPECT_NE(no_socket.err.find("--listen unix:PATH"), std::string::npos) << no_socket.err;
  auto listen_without_external =
      run_shell(attune() + " campaign run " + file + " --db " + db_ + " --listen unix:" + socket_);
  EXPECT_EQ(listen_without_external.exit_code, 2);
  EXPECT_FALSE(fs::exists(db_));
  auto bad_diff = run_shell("ATTUNE_SOCKET=" + socket_ + " " + attune() +
                            " propose --diff '!env:' --hypothesis 'a: b'");
  EXPECT_EQ(bad_diff.exit_code, 2);
  EXPECT_NE(bad_diff.err.find("--diff '!env:': expected"), std::string::npos) << bad_diff.err;
  auto nobody = run_shell(attune() + " wait --socket " + socket_);
  EXPECT_EQ(nobody.exit_code, 2);
  EXPECT_NE(nobody.err.find("no campaign listens on"), std::string::npos) << nobody.err;
}

}  // namespace
}  // namespace attune
