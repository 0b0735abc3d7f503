// The deny-by-default access policy of external agents: the shell lexer, the policy file, and
// the verdict on tool calls (the pre-tool hook's decision).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "adapters/agent/access_policy.h"
#include "adapters/agent/control_socket.h"

namespace attune::agent {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class AccessPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("attune-policy-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "campaign");
    fs::create_directories(root_ / "scratch");
    fs::create_directories(root_ / "ledger");
    policy_.read_paths = {(root_ / "campaign").string()};
    policy_.write_paths = {(root_ / "scratch").string()};
    policy_.protected_paths = {(root_ / "ledger").string(),
                               (root_ / "scratch" / "policy.toml").string()};
    policy_.attune_path = "/opt/attune/bin/attune";
    policy_.attune_commands = default_attune_commands();
    policy_.programs = default_reader_programs();
    policy_.socket_path = "/tmp/s";
  }
  void TearDown() override { fs::remove_all(root_); }

  AccessDecision call(const std::string& tool, const json& input) const {
    return check_tool_call(
        policy_,
        json{{"tool_name", tool}, {"tool_input", input}, {"cwd", (root_ / "scratch").string()}}
            .dump());
  }
  AccessDecision bash(const std::string& command) const {
    return call("Bash", {{"command", command}});
  }

  fs::path root_;
  AccessPolicy policy_;
};

TEST(ShellTokens, SplitsWordsAndSeparatorsAndFlagsWhatItCannotCheck) {
  const auto tokens = shell_tokens("attune propose --diff 'a b' \"c\\\"d\" && ls x|wc; cat y");
  std::vector<std::string> words;
  int separators = 0;
  for (const ShellToken& t : tokens) {
    EXPECT_NE(t.kind, ShellToken::Kind::kForbidden) << t.text;
    if (t.kind == ShellToken::Kind::kWord) words.push_back(t.text);
    separators += t.kind == ShellToken::Kind::kSeparator ? 1 : 0;
  }
  EXPECT_EQ(words, (std::vector<std::string>{"attune", "propose", "--diff", "a b", "c\"d", "ls",
                                             "x", "wc", "cat", "y"}));
  EXPECT_EQ(separators, 3);
  for (const char* bad : {"a > b", "a < b", "a $(b)", "a `b`", "a \"$HOME\"", "a &", "(a)", "cat *",
                          "cat ~/x", "echo 'open"}) {
    bool forbidden = false;
    for (const ShellToken& t : shell_tokens(bad)) {
      forbidden = forbidden || t.kind == ShellToken::Kind::kForbidden;
    }
    EXPECT_TRUE(forbidden) << bad;
  }
}

TEST_F(AccessPolicyTest, AllowsWhatTheAgentNeedsAndNothingElse) {
  std::ofstream(root_ / "campaign" / "notes.md") << "x";
  EXPECT_TRUE(bash("attune status --json").allowed);
  EXPECT_TRUE(bash("/opt/attune/bin/attune wait --timeout 5").allowed);
  EXPECT_TRUE(bash("cat " + (root_ / "campaign" / "notes.md").string() + " | wc -l").allowed);
  EXPECT_TRUE(call("Read", {{"file_path", (root_ / "campaign" / "notes.md").string()}}).allowed);
  EXPECT_TRUE(call("Write", {{"file_path", "plan.md"}}).allowed);  // relative to the scratch cwd
  EXPECT_TRUE(call("TodoWrite", json::object()).allowed);

  const AccessDecision fake_attune = bash("./attune status");
  EXPECT_FALSE(fake_attune.allowed);
  EXPECT_EQ(fake_attune.rule, "program not on the allowlist");
  EXPECT_EQ(bash("attune campaign resume --db x --campaign y").rule, "attune command not allowed");
  EXPECT_EQ(bash("A=1 attune status").rule, "environment assignment");
  EXPECT_EQ(bash("grep -r x /etc").rule, "read outside the allowed paths");
  EXPECT_EQ(call("Write", {{"file_path", "policy.toml"}}).rule, "write to a protected path");
  EXPECT_EQ(call("Edit", {{"file_path", (root_ / "ledger" / "CURRENT").string()}}).rule,
            "write to a protected path");
  EXPECT_EQ(call("Write", {{"file_path", (root_ / "campaign" / "x").string()}}).rule,
            "write outside the scratch folder");
  EXPECT_EQ(call("WebSearch", {{"query", "x"}}).rule, "tool not allowed");
  EXPECT_FALSE(call("AskUserQuestion", {{"question", "?"}}).allowed);
  EXPECT_NE(call("AskUserQuestion", {}).reason.find("record the assumption"), std::string::npos);
  EXPECT_FALSE(check_tool_call(policy_, "not json").allowed);
}

TEST_F(AccessPolicyTest, ResolvesDotDotAndSymbolicLinksBeforeJudging) {
  fs::create_symlink("/etc", root_ / "campaign" / "etc");
  EXPECT_FALSE(
      call("Read", {{"file_path", (root_ / "campaign" / "etc" / "passwd").string()}}).allowed);
  EXPECT_FALSE(
      call("Read", {{"file_path", (root_ / "campaign" / ".." / "ledger").string()}}).allowed);
  // A sibling that shares the prefix is not inside.
  fs::create_directories(root_ / "campaign2");
  EXPECT_FALSE(call("Read", {{"file_path", (root_ / "campaign2" / "x").string()}}).allowed);
}

TEST_F(AccessPolicyTest, PolicyFileRoundTripsAndBadFilesNameTheLine) {
  const std::string text = access_policy_toml(policy_);
  auto parsed = parse_access_policy(text, "policy.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->read_paths, policy_.read_paths);
  EXPECT_EQ(parsed->protected_paths, policy_.protected_paths);
  EXPECT_EQ(parsed->attune_commands, policy_.attune_commands);
  EXPECT_EQ(parsed->socket_path, policy_.socket_path);
  auto relative =
      parse_access_policy("[read]\npaths = [\"campaign\"]\n[control]\nsocket = \"/s\"\n", "p.toml");
  ASSERT_FALSE(relative.ok());
  EXPECT_EQ(relative.error(), "p.toml:2: [read] paths: expected absolute paths, found 'campaign'");
  auto unknown = parse_access_policy("[network]\nallow = true\n", "p.toml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("p.toml:1: unknown table [network]"), std::string::npos);
  EXPECT_FALSE(parse_access_policy("[read]\npaths = []\n", "p.toml").ok());  // no socket
}

TEST(ListenAddress, TakesUnixPathsOnly) {
  EXPECT_EQ(parse_listen_address("unix:/tmp/a").value(), "/tmp/a");
  EXPECT_EQ(parse_listen_address("/tmp/b").value(), "/tmp/b");
  EXPECT_FALSE(parse_listen_address("tcp:127.0.0.1:80").ok());
  EXPECT_FALSE(parse_listen_address("unix:").ok());
  EXPECT_FALSE(parse_listen_address("unix:/" + std::string(200, 'x')).ok());
}

TEST(ControlSocket, CarriesOneLineEachWayAndRefusesASecondServer) {
  const std::string path =
      (fs::temp_directory_path() / ("attune-sock-" + std::to_string(::getpid()))).string();
  ControlServer server(path, [](const std::string& line) { return "echo:" + line; });
  ASSERT_TRUE(server.start().ok());
  EXPECT_EQ(control_request(path, R"({"op":"x"})", 2000).value(), R"(echo:{"op":"x"})");
  ControlServer second(path, [](const std::string&) { return std::string(); });
  auto refused = second.start();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("already listens"), std::string::npos);
  server.stop();
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(control_request(path, "{}", 500).ok());
}

}  // namespace
}  // namespace attune::agent

namespace attune::agent {
namespace {

// The red team's bypasses of the pre-tool policy, each refused.
TEST_F(AccessPolicyTest, OptionsThatReadAFileOrNeverEndAreRefused) {
  const std::string secret = (root_ / "ledger" / "secret").string();
  EXPECT_FALSE(bash("wc --files0-from=" + secret).allowed) << "prints the file in its error";
  EXPECT_FALSE(bash("wc --files0-from " + secret).allowed);
  EXPECT_FALSE(bash("grep -f " + secret + " " + (root_ / "campaign").string()).allowed);
  EXPECT_FALSE(bash("tail -f " + (root_ / "campaign" / "x").string()).allowed);
  EXPECT_TRUE(bash("grep -n x " + (root_ / "campaign").string()).allowed);
}

TEST_F(AccessPolicyTest, ACommandWithoutAPathIsJudgedOnTheWorkingFolder) {
  // grep -r with no path searches the working folder: allowed in scratch, refused elsewhere.
  EXPECT_TRUE(bash("grep -r secret").allowed);
  const AccessDecision elsewhere =
      check_tool_call(policy_, json{{"tool_name", "Bash"},
                                    {"tool_input", {{"command", "grep -r secret"}}},
                                    {"cwd", (root_ / "ledger").string()}}
                                   .dump());
  EXPECT_FALSE(elsewhere.allowed);
}

TEST_F(AccessPolicyTest, AttunesOwnArgumentsAreCheckedAgainstThePolicy) {
  const std::string settings = (root_ / "ledger" / "settings.json").string();
  EXPECT_FALSE(bash("attune ledger export --db /x --campaign c -o " + settings).allowed)
      << "a write into a protected folder through attune";
  EXPECT_FALSE(bash("attune ledger export --db /x --campaign c --out=/etc/passwd").allowed);
  EXPECT_TRUE(bash("attune status --json").allowed);
}

TEST_F(AccessPolicyTest, SecretsAreNeitherReadNorWrittenNorSearched) {
  fs::create_directories(root_ / "campaign" / "keys");
  std::ofstream(root_ / "campaign" / "keys" / "k.key") << "00";
  policy_.secret_paths = {(root_ / "campaign" / "keys").string()};
  const std::string key = (root_ / "campaign" / "keys" / "k.key").string();
  EXPECT_FALSE(call("Read", {{"file_path", key}}).allowed) << "inside a readable folder";
  EXPECT_FALSE(bash("cat " + key).allowed);
  EXPECT_FALSE(bash("grep -r x " + (root_ / "campaign").string()).allowed)
      << "a search over a folder that holds a secret";
  EXPECT_FALSE(call("Write", {{"file_path", key}}).allowed);
  auto parsed = parse_access_policy(access_policy_toml(policy_), "policy.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->secret_paths, policy_.secret_paths);
}

TEST(ControlSocket, NeverRemovesAFileThatIsNotAStaleSocket) {
  const fs::path path =
      fs::temp_directory_path() / ("attune-notsock-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << "name = \"my campaign\"\n";
  ControlServer server(path.string(), [](const std::string&) { return std::string(); });
  const Status started = server.start();
  EXPECT_FALSE(started.ok()) << "--listen on the campaign file must be refused";
  ASSERT_TRUE(fs::exists(path));
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "name = \"my campaign\"");
  fs::remove(path);
}

}  // namespace
}  // namespace attune::agent
