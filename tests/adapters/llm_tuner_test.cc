// The LLM tuner against a scripted loopback chat server, in both dialects: what it proposes,
// what it records (ToolCalled, LlmCharged, AccessDenied), and how it ends an ask on a malformed
// response, a tool outside the allowed set, a 429 storm, the cost ceiling and the turn limit.
#include "adapters/tuner/llm/llm_tuner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "adapters/tuner/skill.h"
#include "core/control_state.h"
#include "tests/adapters/llm_loopback_server.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_support::LoopbackChatServer;
using testing_support::ScriptedResponse;
using testing_support::text_body;
using testing_support::tool_call_body;
using testing_support::tool_results_of;

const char* const kBaseline =
    "CUDA_DEVICE_MAX_CONNECTIONS=1\npython pretrain_gpt.py --tensor-model-parallel-size 2 "
    "--recompute-granularity selective --overlap-grad-reduce --bf16 --lr 1e-5";

json hypothesis() {
  return {{"bottleneck", "tp_comm 30% of the step"},
          {"mechanism", "fewer tensor-parallel collectives"},
          {"expected_gain_fraction", 0.08}};
}

class LlmTuner : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("attune-llm-tuner-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::create_directories(dir_ / "megatron/training");
    fs::create_directories(dir_ / "outside");
    std::ofstream(dir_ / "megatron/training/arguments.py")
        << "group.add_argument('--overlap-grad-reduce', action='store_true')\n"
        << "assert args.use_distributed_optimizer, 'needs the distributed optimizer'\n";
    std::ofstream(dir_ / "outside/secret.txt") << "secret\n";
    auto baseline = parse_recipe(kBaseline);
    ASSERT_TRUE(baseline.ok());
    baseline_ = baseline.value();
    state_ = initial_control_state();
    state_.view.settings.concurrency = 3;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<attune::LlmTuner> open(const std::string& endpoint,
                                         const std::string& extra = "") {
    CampaignOpened opened;
    opened.tuner = "llm";
    opened.tuner_options = "name = \"llm\"\ndialect = \"" + GetParam() + "\"\nendpoint = \"" +
                           endpoint +
                           "\"\nmodel = \"test-model\"\napi_key_env = \"LLM_TEST_KEY\"\n"
                           "retry_base_ms = 1\ntimeout_seconds = 5\nframework_source = \"" +
                           (dir_ / "megatron").string() + "\"\n" + extra;
    auto tuner = attune::LlmTuner::open(
        opened, builtin_lever_catalog(),
        [](const std::string& path) -> Result<std::string> { return "log of " + path; },
        [](const std::string&) -> std::optional<std::string> { return "sk-test"; });
    EXPECT_TRUE(tuner.ok()) << (tuner.ok() ? "" : tuner.error());
    return tuner.ok() ? std::move(tuner).value() : nullptr;
  }

  TunerAnswer ask(attune::LlmTuner& tuner) { return tuner.next(TunerView{state_, baseline_, 0}); }

  ScriptedResponse call(const std::string& id, const std::string& name, const json& input,
                        std::uint64_t input_tokens = 1000) {
    return {200, tool_call_body(GetParam(), id, name, input, input_tokens, 100), {}};
  }

  template <class T>
  static std::vector<T> of(const std::vector<Body>& events) {
    std::vector<T> out;
    for (const Body& body : events) {
      if (const T* e = std::get_if<T>(&body)) out.push_back(*e);
    }
    return out;
  }

  fs::path dir_;
  Recipe baseline_;
  ControlState state_;
};

TEST_P(LlmTuner, ReadsTheSourceThenProposesAndRecordsEveryCallAndTurn) {
  LoopbackChatServer server(
      {call("c1", "read_framework_source",
            {{"path", "training/arguments.py"}, {"first_line", 1}, {"last_line", 2}}),
       call("c2", "propose_candidate",
            {{"changes", {{{"flag", "--tensor-model-parallel-size"}, {"value", "1"}}}},
             {"parent_run_id", 0},
             {"hypothesis", hypothesis()},
             {"profile", true}})});
  auto tuner = open(server.endpoint(), "input_usd_per_mtok = 3\noutput_usd_per_mtok = 15\n");
  ASSERT_TRUE(tuner);
  std::vector<std::string> progress;
  tuner->set_progress([&progress](const std::string& line) { progress.push_back(line); });
  TunerAnswer answer = ask(*tuner);
  ASSERT_EQ(progress.size(), 2u);  // one line per turn
  EXPECT_EQ(progress[0].rfind("llm turn 1 (", 0), 0u) << progress[0];
  EXPECT_NE(progress[1].find("LLM total $"), std::string::npos) << progress[1];
  auto* proposal = std::get_if<TunerProposal>(&answer);
  ASSERT_NE(proposal, nullptr);
  EXPECT_EQ(proposal->recipe.flags.at("--tensor-model-parallel-size"), "1");
  EXPECT_EQ(proposal->recipe.flags.at("--lr"), baseline_.flags.at("--lr"));
  EXPECT_EQ(proposal->parent_run_id, 0u);
  EXPECT_TRUE(proposal->profile);
  EXPECT_EQ(proposal->hypothesis.mechanism, "fewer tensor-parallel collectives");

  const std::vector<Body> events = tuner->take_events();
  const auto calls = of<ToolCalled>(events);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tool, "read_framework_source");
  EXPECT_EQ(calls[0].source_location, "training/arguments.py:1-2");
  EXPECT_TRUE(calls[0].allowed);
  EXPECT_EQ(calls[0].turn, 1u);
  EXPECT_EQ(calls[1].tool, "propose_candidate");
  EXPECT_EQ(calls[1].turn, 2u);
  const auto charges = of<LlmCharged>(events);
  ASSERT_EQ(charges.size(), 2u);
  EXPECT_EQ(charges[0].model, "test-model");
  EXPECT_EQ(charges[0].input_tokens, 1000u);
  EXPECT_EQ(charges[0].output_tokens, 100u);
  EXPECT_DOUBLE_EQ(charges[0].cost_usd, (1000 * 3.0 + 100 * 15.0) / 1e6);
  EXPECT_TRUE(tuner->take_events().empty());

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  if (GetParam() == "anthropic") {
    EXPECT_EQ(requests[0].target, "/v1/messages");
    EXPECT_EQ(requests[0].headers.at("x-api-key"), "sk-test");
    EXPECT_EQ(requests[0].json()["system"].get<std::string>().substr(0, 3), "---");
  } else {
    EXPECT_EQ(requests[0].target, "/v1/chat/completions");
    EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer sk-test");
    EXPECT_EQ(requests[0].json()["messages"][0]["role"], "system");
  }
  EXPECT_NE(requests[0].body.find("# Campaign state"), std::string::npos);
  const auto results = tool_results_of(GetParam(), requests[1].json());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "c1");
  EXPECT_NE(results[0].content.find("use_distributed_optimizer"), std::string::npos);
}

TEST_P(LlmTuner, TheProposalsOutcomeIsItsToolResult) {
  LoopbackChatServer server(
      {call("p1", "propose_candidate",
            {{"changes", {{{"flag", "--lr"}, {"value", "2e-5"}}}},
             {"parent_run_id", 0},
             {"hypothesis", hypothesis()}}),
       call("s1", "record_stop", {{"evidence", "nothing left"}, {"levers_tested", {"lr"}}})});
  auto tuner = open(server.endpoint());
  ASSERT_TRUE(tuner);
  ASSERT_TRUE(std::holds_alternative<TunerProposal>(ask(*tuner)));
  state_.view.ledger.refused.push_back(
      {1, 1, RefusalReason::kLayer1, "--lr is numeric under policy default", "--lr 1e-5→2e-5"});
  TunerAnswer answer = ask(*tuner);
  auto* stop = std::get_if<TunerStop>(&answer);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->evidence, "nothing left");
  EXPECT_EQ(stop->levers_tested, std::vector<std::string>{"lr"});
  const auto results = tool_results_of(GetParam(), server.requests().at(1).json());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "p1");
  EXPECT_NE(results[0].content.find("refused (layer1): --lr is numeric"), std::string::npos)
      << results[0].content;
}

TEST_P(LlmTuner, AMalformedResponseIsRecordedAndCostsATurn) {
  const std::string bad_arguments =
      GetParam() == "openai"
          ? json{{"choices",
                  {{{"message",
                     {{"tool_calls",
                       {{{"id", "b1"},
                         {"type", "function"},
                         {"function",
                          {{"name", "record_stop"}, {"arguments", "{evidence"}}}}}}}}}}},
                 {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 1}}}}
                .dump()
          : json{{"content",
                  {{{"type", "tool_use"},
                    {"id", "b1"},
                    {"name", "record_stop"},
                    {"input", "evidence"}}}},
                 {"usage", {{"input_tokens", 10}, {"output_tokens", 1}}}}
                .dump();
  LoopbackChatServer server({{200, "<html>upstream hiccup</html>", {}},
                             {200, bad_arguments, {}},
                             call("s1", "record_stop", {{"evidence", "converged"}})});
  auto tuner = open(server.endpoint());
  ASSERT_TRUE(tuner);
  TunerAnswer answer = ask(*tuner);
  ASSERT_TRUE(std::holds_alternative<TunerStop>(answer));
  EXPECT_EQ(std::get<TunerStop>(answer).evidence, "converged");
  const auto events = tuner->take_events();
  const auto calls = of<ToolCalled>(events);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].tool, "(malformed response)");
  EXPECT_FALSE(calls[0].allowed);
  EXPECT_NE(calls[0].result.find("not a JSON object"), std::string::npos);
  EXPECT_EQ(calls[1].tool, "record_stop");
  EXPECT_FALSE(calls[1].allowed);
  EXPECT_TRUE(calls[2].allowed);
  EXPECT_EQ(of<LlmCharged>(events).size(), 3u);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_NE(requests[1].body.find("could not be read"), std::string::npos);
  const auto results = tool_results_of(GetParam(), requests[2].json());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "b1");
  EXPECT_TRUE(results[0].is_error);
}

TEST_P(LlmTuner, ToolsOutsideTheAllowedSetAndPathsOutsideTheSourceAreDenied) {
  LoopbackChatServer server(
      {call("x1", "bash", {{"command", "cat /etc/passwd"}}),
       call("x2", "read_framework_source",
            {{"path", "../outside/secret.txt"}, {"first_line", 1}, {"last_line", 1}}),
       call("x3", "search_framework_source", {{"pattern", "secret"}, {"path_prefix", "/etc"}}),
       call("s1", "record_stop", {{"evidence", "done"}})});
  auto tuner = open(server.endpoint());
  ASSERT_TRUE(tuner);
  ASSERT_TRUE(std::holds_alternative<TunerStop>(ask(*tuner)));
  const auto events = tuner->take_events();
  const auto denied = of<AccessDenied>(events);
  ASSERT_EQ(denied.size(), 3u);
  EXPECT_EQ(denied[0].object, "bash");
  EXPECT_EQ(denied[0].rule, "tool outside the allowed set");
  EXPECT_EQ(denied[1].object, "../outside/secret.txt");
  EXPECT_EQ(denied[1].rule, "outside the framework source");
  EXPECT_EQ(denied[2].object, "/etc");
  const auto calls = of<ToolCalled>(events);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_FALSE(calls[0].allowed);
  EXPECT_FALSE(calls[1].allowed);
  EXPECT_EQ(calls[1].result.find("secret\n"), std::string::npos);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  const auto results = tool_results_of(GetParam(), requests[1].json());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "x1");
  EXPECT_TRUE(results[0].is_error);
  EXPECT_NE(results[0].content.find("not one of the tools"), std::string::npos);
}

TEST_P(LlmTuner, ATooManyRequestsStormIsRetriedThenAnswered) {
  LoopbackChatServer server({{429, R"({"error":{"message":"rate"}})", {{"Retry-After", "0"}}},
                             {429, R"({"error":{"message":"rate"}})", {{"Retry-After", "0"}}},
                             {429, R"({"error":{"message":"rate"}})", {{"Retry-After", "0"}}},
                             call("s1", "record_stop", {{"evidence", "done"}})});
  auto tuner = open(server.endpoint(), "retries = 3\n");
  ASSERT_TRUE(tuner);
  ASSERT_TRUE(std::holds_alternative<TunerStop>(ask(*tuner)));
  EXPECT_EQ(server.requests().size(), 4u);
  EXPECT_EQ(of<LlmCharged>(tuner->take_events()).size(), 1u);  // one turn, however many tries
}

TEST_P(LlmTuner, AnEndpointThatKeepsFailingEndsTheSearchWithTheError) {
  LoopbackChatServer server({{503, "down", {}}, {503, "down", {}}, {503, "down", {}}});
  auto tuner = open(server.endpoint(), "retries = 2\n");
  ASSERT_TRUE(tuner);
  std::vector<std::string> progress;
  tuner->set_progress([&progress](const std::string& line) { progress.push_back(line); });
  TunerAnswer answer = ask(*tuner);
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_NE(progress[0].find("HTTP 503"), std::string::npos) << progress[0];
  ASSERT_TRUE(std::holds_alternative<TunerStop>(answer));
  const std::string& evidence = std::get<TunerStop>(answer).evidence;
  EXPECT_NE(evidence.find("the LLM endpoint failed"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("HTTP 503"), std::string::npos) << evidence;
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_P(LlmTuner, StopsAtTheCostCeilingBeforeAnotherTurn) {
  const json read = {{"path", "training/arguments.py"}, {"first_line", 1}, {"last_line", 1}};
  // 1000 input tokens at $1000/Mtok: $1.00 a turn, output free.
  LoopbackChatServer server({call("r1", "read_framework_source", read),
                             call("r2", "read_framework_source", read),
                             call("r3", "read_framework_source", read)});
  auto tuner = open(server.endpoint(),
                    "cost_ceiling_usd = 1.5\ninput_usd_per_mtok = 1000\noutput_usd_per_mtok = 0\n");
  ASSERT_TRUE(tuner);
  TunerAnswer answer = ask(*tuner);
  ASSERT_TRUE(std::holds_alternative<TunerStop>(answer));
  EXPECT_EQ(std::get<TunerStop>(answer).evidence, "LLM cost ceiling reached: $2.0000 of $1.5000");
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(of<LlmCharged>(tuner->take_events()).size(), 2u);

  // A resumed campaign counts what the ledger already charged: no request at all.
  auto resumed = open(server.endpoint(), "cost_ceiling_usd = 1.5\n");
  state_.view.budget.llm_cost_usd = 1.6;
  ASSERT_TRUE(std::holds_alternative<TunerStop>(ask(*resumed)));
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_P(LlmTuner, TurnsWithoutAProposalEndTheSearch) {
  LoopbackChatServer server({{200, text_body(GetParam(), "Let me think."), {}},
                             {200, text_body(GetParam(), "Still thinking."), {}}});
  auto tuner = open(server.endpoint(), "turns_per_candidate = 2\n");
  ASSERT_TRUE(tuner);
  TunerAnswer answer = ask(*tuner);
  ASSERT_TRUE(std::holds_alternative<TunerStop>(answer));
  EXPECT_NE(std::get<TunerStop>(answer).evidence.find("no proposal and no stop in 2 turns"),
            std::string::npos);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[1].body.find("Call a tool"), std::string::npos);
}

TEST_P(LlmTuner, BadProposalsAreToolErrorsNotProposals) {
  LoopbackChatServer server(
      {call("b1", "propose_candidate",
            {{"changes", {{{"flag", "--tensor-model-parallel-size"}, {"value", "two"}}}},
             {"parent_run_id", 0},
             {"hypothesis", hypothesis()}}),
       call("b2", "propose_candidate",
            {{"changes", {{{"flag", "--tensor-model-parallel-size"}, {"value", "1"}}}},
             {"parent_run_id", 42},
             {"hypothesis", hypothesis()}}),
       call("w1", "wait_for_runs", json::object()), call("g1", "get_run_log", {{"run_id", 9}}),
       call("s1", "record_stop", {{"evidence", "gave up"}})});
  auto tuner = open(server.endpoint());
  ASSERT_TRUE(tuner);
  ASSERT_TRUE(std::holds_alternative<TunerStop>(ask(*tuner)));
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 5u);
  const auto results = tool_results_of(GetParam(), requests[4].json());
  ASSERT_EQ(results.size(), 4u);
  EXPECT_NE(results[0].content.find("cannot apply the changes"), std::string::npos);
  EXPECT_NE(results[1].content.find("no run 42"), std::string::npos);
  EXPECT_NE(results[2].content.find("no run is in flight"), std::string::npos);
  EXPECT_NE(results[3].content.find("no run 9"), std::string::npos);
  for (const auto& r : results) EXPECT_TRUE(r.is_error) << r.content;
}

TEST_P(LlmTuner, TheKeyIsNeverRecorded) {
  LoopbackChatServer server({call("s1", "record_stop", {{"evidence", "done"}})});
  auto tuner = open(server.endpoint());
  ASSERT_TRUE(tuner);
  ask(*tuner);
  for (const Body& body : tuner->take_events()) {
    if (const auto* c = std::get_if<ToolCalled>(&body)) {
      EXPECT_EQ(c->input.find("sk-test"), std::string::npos);
      EXPECT_EQ(c->result.find("sk-test"), std::string::npos);
    }
  }
  EXPECT_EQ(tuner->system_prompt().find("sk-test"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(LlmDialects, LlmTuner, ::testing::Values("anthropic", "openai"),
                         [](const auto& info) { return info.param; });

TEST(LlmSkill, RendersAStandaloneSkillWithTheCatalogAndLearnedRules) {
  const std::string skill = render_skill(
      builtin_lever_catalog(),
      R"({"lever": "moe-dispatcher", "when": "ep_a2a", "effect": "helped", "rule": "Try the flex dispatcher when the all-to-all dominates."})"
      "\n");
  ASSERT_EQ(skill.rfind("---\nname: ", 0), 0u);
  EXPECT_NE(skill.find("\ndescription: "), std::string::npos);
  EXPECT_NE(skill.find("## The six search rules"), std::string::npos);
  EXPECT_NE(skill.find("## Lever catalog"), std::string::npos);
  for (const CatalogLever& lever : builtin_lever_catalog().levers) {
    EXPECT_NE(skill.find("**" + lever.name + "**"), std::string::npos) << lever.name;
  }
  EXPECT_NE(skill.find("Try the flex dispatcher"), std::string::npos);
  EXPECT_NE(render_skill(builtin_lever_catalog(), "").find("None yet."), std::string::npos);
}

}  // namespace
}  // namespace attune
