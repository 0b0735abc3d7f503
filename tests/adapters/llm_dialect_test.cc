// The two chat dialects as pure JSON: requests carry the conversation, the tools and the key in
// each API's own shape, and replies are read into tool calls and token counts, with malformed
// bodies as one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "adapters/tuner/llm/dialect.h"
#include "adapters/tuner/llm/tools.h"

namespace attune::llm {
namespace {

using nlohmann::json;

std::vector<Message> a_conversation() {
  Message user;
  user.text = "state";
  Message assistant;
  assistant.role = Message::Role::kAssistant;
  assistant.text = "reading";
  assistant.tool_calls.push_back(
      {"call_1", "read_framework_source", R"({"path":"a.py"})", json{{"path", "a.py"}}});
  Message results;
  results.tool_results.push_back({"call_1", "1| x = 1", false});
  results.tool_results.push_back({"call_2", "no such tool", true});
  Message more;
  more.text = "note";
  return {user, assistant, results, more};
}

TEST(LlmDialect, AnthropicRequestCarriesKeyToolsAndToolResults) {
  const ChatRequest r = build_chat_request(Dialect::kAnthropic, "/proxy/", "claude-x", "sk-1", 512,
                                           "skill", tuner_tool_specs(true), a_conversation());
  EXPECT_EQ(r.path, "/proxy/v1/messages");
  EXPECT_NE(std::find(r.headers.begin(), r.headers.end(),
                      std::pair<std::string, std::string>{"x-api-key", "sk-1"}),
            r.headers.end());
  EXPECT_NE(std::find(r.headers.begin(), r.headers.end(),
                      std::pair<std::string, std::string>{"anthropic-version", "2023-06-01"}),
            r.headers.end());
  EXPECT_EQ(r.body["system"], "skill");
  EXPECT_EQ(r.body["max_tokens"], 512);
  ASSERT_EQ(r.body["tools"].size(), 7u);
  EXPECT_EQ(r.body["tools"][0]["name"], "propose_candidate");
  EXPECT_EQ(r.body["tools"][0]["input_schema"]["type"], "object");
  const json& messages = r.body["messages"];
  // The two user messages in a row are merged: the roles alternate.
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[1]["role"], "assistant");
  EXPECT_EQ(messages[1]["content"][1]["type"], "tool_use");
  EXPECT_EQ(messages[1]["content"][1]["input"]["path"], "a.py");
  EXPECT_EQ(messages[2]["role"], "user");
  EXPECT_EQ(messages[2]["content"][0]["type"], "tool_result");
  EXPECT_EQ(messages[2]["content"][0]["tool_use_id"], "call_1");
  EXPECT_FALSE(messages[2]["content"][0].contains("is_error"));
  EXPECT_EQ(messages[2]["content"][1]["is_error"], true);
  EXPECT_EQ(messages[2]["content"][2]["text"], "note");
}

TEST(LlmDialect, OpenAiRequestCarriesBearerFunctionsAndToolMessages) {
  const ChatRequest r = build_chat_request(Dialect::kOpenAi, "", "qwen", "sk-2", 256, "skill",
                                           tuner_tool_specs(false), a_conversation());
  EXPECT_EQ(r.path, "/v1/chat/completions");
  EXPECT_NE(std::find(r.headers.begin(), r.headers.end(),
                      std::pair<std::string, std::string>{"Authorization", "Bearer sk-2"}),
            r.headers.end());
  ASSERT_EQ(r.body["tools"].size(), 5u);  // no source tools without a checkout
  EXPECT_EQ(r.body["tools"][0]["type"], "function");
  EXPECT_EQ(r.body["tools"][0]["function"]["name"], "propose_candidate");
  EXPECT_TRUE(r.body["tools"][0]["function"]["parameters"].is_object());
  const json& m = r.body["messages"];
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], R"({"path":"a.py"})");
  EXPECT_EQ(m[3]["role"], "tool");
  EXPECT_EQ(m[3]["tool_call_id"], "call_1");
  EXPECT_EQ(m[4]["content"], "error: no such tool");
  EXPECT_EQ(m[5]["role"], "user");
}

TEST(LlmDialect, NoKeyNoAuthHeader) {
  const ChatRequest r =
      build_chat_request(Dialect::kOpenAi, "", "m", "", 1, "s", {}, a_conversation());
  for (const auto& [name, value] : r.headers) EXPECT_NE(name, "Authorization");
}

TEST(LlmDialect, ParsesAnthropicToolUseAndUsage) {
  const auto reply = parse_chat_reply(Dialect::kAnthropic, R"({
    "content": [{"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "tu_1", "name": "get_run_log", "input": {"run_id": 3}}],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 1200, "output_tokens": 34, "cache_read_input_tokens": 100}})");
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply->text, "hi");
  ASSERT_EQ(reply->tool_calls.size(), 1u);
  EXPECT_EQ(reply->tool_calls[0].id, "tu_1");
  EXPECT_EQ(reply->tool_calls[0].input["run_id"], 3);
  EXPECT_EQ(reply->input_tokens, 1300u);
  EXPECT_EQ(reply->output_tokens, 34u);
  EXPECT_EQ(reply->stop_reason, "tool_use");
}

TEST(LlmDialect, ParsesOpenAiToolCallsWithJsonTextArguments) {
  const auto reply = parse_chat_reply(Dialect::kOpenAi, R"({
    "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "record_stop", "arguments": "{\"evidence\": \"done\"}"}},
      {"id": "c2", "type": "function", "function": {"name": "record_stop", "arguments": "{not json"}}]},
      "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 50, "completion_tokens": 7}})");
  ASSERT_TRUE(reply.ok()) << reply.error();
  ASSERT_EQ(reply->tool_calls.size(), 2u);
  EXPECT_EQ(reply->tool_calls[0].input["evidence"], "done");
  // Unreadable arguments are the caller's to answer, not a failed reply.
  EXPECT_TRUE(reply->tool_calls[1].input.is_discarded());
  EXPECT_EQ(reply->tool_calls[1].arguments_text, "{not json");
  EXPECT_EQ(reply->input_tokens, 50u);
  EXPECT_EQ(reply->output_tokens, 7u);
}

TEST(LlmDialect, MalformedRepliesAreOneLineErrors) {
  for (Dialect d : {Dialect::kAnthropic, Dialect::kOpenAi}) {
    const auto not_json = parse_chat_reply(d, "<html>\nbad gateway</html>");
    ASSERT_FALSE(not_json.ok());
    EXPECT_NE(not_json.error().find("not a JSON object"), std::string::npos);
    EXPECT_EQ(not_json.error().find('\n'), std::string::npos);
    const auto error = parse_chat_reply(d, R"({"error": {"message": "overloaded"}})");
    ASSERT_FALSE(error.ok());
    EXPECT_NE(error.error().find("overloaded"), std::string::npos);
    EXPECT_FALSE(parse_chat_reply(d, "{}").ok());
  }
  EXPECT_FALSE(parse_chat_reply(Dialect::kAnthropic, R"({"content": []})").ok());
  EXPECT_FALSE(
      parse_chat_reply(Dialect::kOpenAi, R"({"choices": [{"message": {"content": ""}}]})").ok());
  EXPECT_FALSE(
      parse_chat_reply(Dialect::kAnthropic, R"({"content": [{"type": "tool_use", "input": {}}]})")
          .ok());
  // Usage is still read from a body whose content is malformed, so the turn is charged.
  const auto usage = usage_of(Dialect::kOpenAi, json::parse(R"({"usage": {"prompt_tokens": 9,
      "completion_tokens": 2}, "choices": []})"));
  EXPECT_EQ(usage.first, 9u);
  EXPECT_EQ(usage.second, 2u);
}

TEST(LlmDialect, ProposalArgumentsApplyToTheParentRecipe) {
  auto parent = parse_recipe(
      "NCCL_NVLS_ENABLE=0 python train.py --tensor-model-parallel-size 2 "
      "--recompute-granularity selective --bf16");
  ASSERT_TRUE(parent.ok());
  auto args = parse_proposal_args(json::parse(R"({
      "changes": [{"flag": "tensor-model-parallel-size", "value": 1},
                  {"flag": "--recompute-granularity", "value": null},
                  {"env": "NCCL_NVLS_ENABLE", "value": null},
                  {"env": "CUDA_DEVICE_MAX_CONNECTIONS", "value": "1"}],
      "parent_run_id": 0, "profile": true,
      "hypothesis": {"bottleneck": "tp_comm", "mechanism": "fewer collectives",
                     "expected_gain_fraction": 0.1}})"));
  ASSERT_TRUE(args.ok()) << args.error();
  EXPECT_TRUE(args->profile);
  EXPECT_DOUBLE_EQ(args->hypothesis.expected_gain_fraction, 0.1);
  auto recipe = apply_changes(parent.value(), args->changes);
  ASSERT_TRUE(recipe.ok()) << recipe.error();
  EXPECT_EQ(recipe->flags.at("--tensor-model-parallel-size"), "1");
  EXPECT_FALSE(recipe->flags.contains("--recompute-granularity"));
  EXPECT_FALSE(recipe->env.contains("NCCL_NVLS_ENABLE"));
  EXPECT_EQ(recipe->env.at("CUDA_DEVICE_MAX_CONNECTIONS"), "1");

  EXPECT_FALSE(
      apply_changes(parent.value(), {{false, "--tensor-model-parallel-size", "two"}}).ok());
  EXPECT_FALSE(
      apply_changes(parent.value(), {{false, "--overlap-grad-reduce", std::nullopt}}).ok());
  for (const char* bad : {R"({"changes": [], "parent_run_id": 0, "hypothesis": {}})",
                          R"({"changes": [{"flag": "--x", "env": "Y", "value": "1"}],
                              "parent_run_id": 0})",
                          R"({"changes": [{"env": "bad name", "value": "1"}], "parent_run_id": 0})",
                          R"({"changes": [{"flag": "--x", "value": "1"}], "parent_run_id": -1,
                              "hypothesis": {"bottleneck": "b", "mechanism": "m",
                                             "expected_gain_fraction": 0.1}})",
                          R"({"changes": [{"flag": "--x", "value": "1"}], "parent_run_id": 0,
                              "hypothesis": {"bottleneck": "b", "mechanism": "m"}})"}) {
    EXPECT_FALSE(parse_proposal_args(json::parse(bad)).ok()) << bad;
  }
}

}  // namespace
}  // namespace attune::llm
