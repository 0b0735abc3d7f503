// The two chat APIs the LLM tuner speaks, as pure functions over JSON: the request for a
// conversation and the reply read from a response body.
//
//  - Anthropic Messages: POST /v1/messages, headers x-api-key and anthropic-version, a top-level
//    system prompt, `tools` with input_schema, tool_use blocks from the model and tool_result
//    blocks back, usage.input_tokens and usage.output_tokens.
//  - OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp): POST /v1/chat/completions,
//    Authorization: Bearer, a system message, `tools` as functions, `tool_calls` whose arguments
//    are JSON text, role "tool" results with tool_call_id, usage.prompt_tokens and
//    usage.completion_tokens.
//
// The conversation is kept dialect-neutral (Message) so the tuner's loop is written once. No I/O;
// thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/tuner/llm/settings.h"
#include "events/result.h"

namespace attune::llm {

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json input_schema;  // a JSON Schema object
};

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments_text;  // as the model sent them (OpenAI: JSON text; Anthropic: dumped)
  nlohmann::json input;        // the parsed arguments; discarded (is_discarded()) when unreadable
};

struct ToolResult {
  std::string tool_call_id;
  std::string content;
  bool is_error = false;
};

// A user message carries tool results (first) and text; an assistant message carries text and
// tool calls.
struct Message {
  enum class Role : std::uint8_t { kUser, kAssistant };
  Role role = Role::kUser;
  std::string text;
  std::vector<ToolResult> tool_results;
  std::vector<ToolCall> tool_calls;
};

struct ChatRequest {
  std::string path;                                          // e.g. "/v1/messages"
  std::vector<std::pair<std::string, std::string>> headers;  // besides Host and Content-Type
  nlohmann::json body;
};

// What one response says: the model's text, its tool calls and the tokens it was charged.
struct Reply {
  std::string text;
  std::vector<ToolCall> tool_calls;
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  std::string stop_reason;
};

inline constexpr std::string_view kAnthropicVersion = "2023-06-01";

// `base_path` is the endpoint's path ("" or e.g. "/proxy"), prefixed to the API's path.
ChatRequest build_chat_request(Dialect dialect, std::string_view base_path,
                               const std::string& model, const std::string& api_key,
                               std::uint32_t max_tokens, const std::string& system_prompt,
                               const std::vector<ToolSpec>& tools,
                               const std::vector<Message>& conversation);

// The token counts where the body carries them, even when the rest is malformed; zero otherwise.
std::pair<std::uint64_t, std::uint64_t> usage_of(Dialect dialect, const nlohmann::json& body);

// Errors are one line naming what is missing or malformed ("no choices[0].message", ...). A
// tool call with unreadable arguments is not an error here: its `input` is discarded, for the
// caller to answer with a tool error.
Result<Reply> parse_chat_reply(Dialect dialect, std::string_view body_text);

// An assistant message that repeats a reply, for the conversation's history.
Message assistant_message(const Reply& reply);

}  // namespace attune::llm
