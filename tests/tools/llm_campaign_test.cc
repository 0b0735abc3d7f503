// The LLM tuner end to end: `attune campaign run` of the demo campaign with tuner "llm" pointed
// at a scripted loopback chat server, in both dialects. The model reads a flag's source, makes a
// proposal layer 1 refuses, reads the refusal in its tool result, proposes a corrected candidate
// that is admitted, and stops; the ledger keeps every tool call and every charged turn.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/adapters/llm_loopback_server.h"
#include "tests/tools/private_data_home.h"
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_support::LoopbackChatServer;
using testing_support::ScriptedResponse;
using testing_support::tool_call_body;
using testing_support::tool_results_of;

std::string attune() { return std::string(ATTUNE_BIN_DIR) + "/attune"; }

std::vector<json> of_type(const std::vector<json>& events, const std::string& type) {
  std::vector<json> out;
  for (const json& e : events) {
    if (e["type"] == type) out.push_back(e);
  }
  return out;
}

class LlmCampaign : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("attune-llm-campaign-" + std::to_string(::getpid()) + "-" + GetParam());
    fs::remove_all(root_);
    fs::create_directories(root_ / "megatron/training");
    std::ofstream(root_ / "megatron/training/arguments.py")
        << "group.add_argument('--lr', type=float, help='learning rate')\n"
        << "group.add_argument('--overlap-grad-reduce', action='store_true')\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  // The demo campaign with its [tuner] table replaced.
  std::string campaign_file(const std::string& endpoint) {
    std::ifstream in(std::string(ATTUNE_SOURCE_DIR) + "/examples/qwen3-30b-a3b-h100x16.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string toml = text.str();
    const std::string old_tuner = "[tuner]\nname = \"expert\"\n";
    const std::size_t at = toml.find(old_tuner);
    EXPECT_NE(at, std::string::npos);
    toml.replace(at, old_tuner.size(),
                 "[tuner]\nname = \"llm\"\ndialect = \"" + GetParam() + "\"\nendpoint = \"" +
                     endpoint +
                     "\"\nmodel = \"scripted\"\napi_key_env = \"LLM_E2E_KEY\"\n"
                     "input_usd_per_mtok = 3.0\noutput_usd_per_mtok = 15.0\n"
                     "cost_ceiling_usd = 5.0\nretry_base_ms = 1\ntimeout_seconds = 10\n"
                     "framework_source = \"" +
                     (root_ / "megatron").string() + "\"\n");
    const fs::path path = root_ / "campaign.toml";
    std::ofstream(path) << toml;
    return path.string();
  }

  ScriptedResponse call(const std::string& id, const std::string& name, const json& input,
                        std::uint64_t input_tokens) {
    return {200, tool_call_body(GetParam(), id, name, input, input_tokens, 200), {}};
  }

  fs::path root_;
};

TEST_P(LlmCampaign, ARefusedProposalIsCorrectedAdmittedAndRecorded) {
  const json hypothesis = {{"bottleneck", "dp_comm"},
                           {"mechanism", "another token dispatcher"},
                           {"expected_gain_fraction", 0.04}};
  LoopbackChatServer server(
      {call("t1", "read_framework_source",
            {{"path", "training/arguments.py"}, {"first_line", 1}, {"last_line", 2}}, 20000),
       call("t2", "propose_candidate",
            {{"changes", {{{"flag", "--lr"}, {"value", "2e-5"}}}},
             {"parent_run_id", 0},
             {"hypothesis", hypothesis}},
            21000),
       call("t3", "propose_candidate",
            {{"changes", {{{"flag", "--moe-token-dispatcher-type"}, {"value", "allgather"}}}},
             {"parent_run_id", 0},
             {"hypothesis", hypothesis}},
            22000),
       call("t4", "record_stop",
            {{"evidence", "scripted model: one candidate is enough"},
             {"levers_tested", {"--moe-token-dispatcher-type"}}},
            23000)});
  const std::string db = (root_ / "db").string();
  const auto run =
      testing_support::run_shell("LLM_E2E_KEY=sk-e2e-secret " + attune() + " campaign run " +
                                 campaign_file(server.endpoint()) + " --db " + db + " --json");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const json summary = json::parse(run.out, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << run.out;
  EXPECT_TRUE(summary.contains("shipped")) << summary.dump();

  const auto exported = testing_support::run_shell(attune() + " ledger export --db " + db);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(exported.out.find("sk-e2e-secret"), std::string::npos);  // the key never lands
  std::vector<json> events;
  std::istringstream lines(exported.out);
  for (std::string line; std::getline(lines, line);) events.push_back(json::parse(line));

  std::vector<json> search;
  for (const json& e : of_type(events, "CandidateProposed")) {
    if (e["body"]["purpose"] == "search") search.push_back(e);
  }
  ASSERT_EQ(search.size(), 2u);
  for (const json& e : search) EXPECT_EQ(e["actor"], "tuner:llm");
  const auto refused = of_type(events, "LaunchRefused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0]["body"]["reason"], "layer1");
  const std::string detail = refused[0]["body"]["detail"].get<std::string>();
  EXPECT_NE(detail.find("--lr"), std::string::npos) << detail;
  std::uint32_t admitted_search = 0;
  for (const json& e : of_type(events, "LaunchAdmitted")) {
    if (e["body"]["proposal_id"] == search[1]["body"]["proposal_id"]) ++admitted_search;
  }
  EXPECT_EQ(admitted_search, 1u);

  const auto calls = of_type(events, "ToolCalled");
  ASSERT_EQ(calls.size(), 4u);
  for (const json& e : calls) EXPECT_EQ(e["actor"], "tuner:llm");
  EXPECT_EQ(calls[0]["body"]["tool"], "read_framework_source");
  EXPECT_EQ(calls[0]["body"]["source_location"], "training/arguments.py:1-2");
  EXPECT_EQ(calls[3]["body"]["tool"], "record_stop");
  const auto charges = of_type(events, "LlmCharged");
  ASSERT_EQ(charges.size(), 4u);
  double cost_usd = 0;
  for (const json& e : charges) {
    EXPECT_EQ(e["actor"], "tuner:llm");
    cost_usd += e["body"]["cost_usd"].get<double>();
  }
  const double expected_usd = ((20000 + 21000 + 22000 + 23000) * 3.0 + 4 * 200 * 15.0) / 1e6;
  EXPECT_NEAR(cost_usd, expected_usd, 1e-9);
  const auto stops = of_type(events, "StopRecorded");
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0]["body"]["evidence"], "scripted model: one candidate is enough");

  // The LLM account beside the GPU-hours.
  const auto status = testing_support::run_shell(attune() + " status --db " + db + " --json");
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const json views = json::parse(status.out);
  const json& budget =
      views.contains("campaigns") ? views["campaigns"][0]["budget"] : views["budget"];
  EXPECT_EQ(budget["llm_turns"], 4);
  EXPECT_EQ(budget["llm_input_tokens"], 86000);
  EXPECT_NEAR(budget["llm_cost_usd"].get<double>(), expected_usd, 1e-9);
  EXPECT_EQ(summary["llm"]["turns"], 4);
  EXPECT_NEAR(summary["llm"]["cost_usd"].get<double>(), expected_usd, 1e-9);
  const auto audit = testing_support::run_shell(attune() + " audit --db " + db + " --json");
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  EXPECT_EQ(json::parse(audit.out)["llm_charges"].size(), 4u);

  // What the model was told: the refusal with its detail, then the admission.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  for (const auto& r : requests) EXPECT_EQ(r.json()["model"], "scripted");
  const auto third = tool_results_of(GetParam(), requests[2].json());
  ASSERT_FALSE(third.empty());
  EXPECT_EQ(third.back().id, "t2");
  EXPECT_NE(third.back().content.find("refused (layer1)"), std::string::npos)
      << third.back().content;
  EXPECT_NE(third.back().content.find(detail), std::string::npos) << third.back().content;
  const auto fourth = tool_results_of(GetParam(), requests[3].json());
  ASSERT_FALSE(fourth.empty());
  EXPECT_EQ(fourth.back().id, "t3");
  EXPECT_NE(fourth.back().content.find("admitted as run"), std::string::npos)
      << fourth.back().content;
}

TEST_P(LlmCampaign, BadSettingsFailBeforeTheLedgerIsTouched) {
  LoopbackChatServer server;
  std::string file = campaign_file(server.endpoint());
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::string toml = text.str();
  toml.insert(toml.find("model = \"scripted\"\n"), "temperature = 0.7\n");
  std::ofstream(file) << toml;
  const std::string db = (root_ / "db").string();
  const auto run = testing_support::run_shell(attune() + " campaign run " + file + " --db " + db);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("temperature: unknown key"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(db));  // no ledger, and no launcher folder under it
  EXPECT_TRUE(server.requests().empty());
}

// The example campaign file is complete up to the key: without it the campaign stops at once,
// naming the variable, and leaves nothing behind.
TEST(LlmExample, NeedsOnlyTheKey) {
  const fs::path db =
      fs::temp_directory_path() / ("attune-llm-example-" + std::to_string(::getpid()));
  fs::remove_all(db);
  const auto run = testing_support::run_shell(
      "env -u ANTHROPIC_API_KEY " + attune() + " campaign run " + ATTUNE_SOURCE_DIR +
      "/examples/qwen3-30b-a3b-llm.toml --db " + db.string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("ANTHROPIC_API_KEY is not set"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(db));
}

INSTANTIATE_TEST_SUITE_P(LlmDialects, LlmCampaign, ::testing::Values("anthropic", "openai"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace attune
