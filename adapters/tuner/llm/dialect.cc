#include "adapters/tuner/llm/dialect.h"

namespace attune::llm {
namespace {

using nlohmann::json;

constexpr std::size_t kErrorExcerptBytesMax = 200;

std::string excerpt(std::string_view text) {
  std::string out(text.substr(0, kErrorExcerptBytesMax));
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > kErrorExcerptBytesMax) out += "...";
  return out;
}

std::uint64_t count_at(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) return 0;
  return it->get<std::uint64_t>();
}

std::string string_at(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The API's own error message, when the body is an error object.
std::string api_error(const json& body) {
  if (!body.is_object() || !body.contains("error")) return {};
  const json& error = body["error"];
  if (error.is_string()) return error.get<std::string>();
  std::string message = string_at(error, "message");
  return message.empty() ? error.dump() : message;
}

json anthropic_messages(const std::vector<Message>& conversation) {
  json messages = json::array();
  for (const Message& m : conversation) {
    json content = json::array();
    if (m.role == Message::Role::kUser) {
      for (const ToolResult& r : m.tool_results) {
        json block = {
            {"type", "tool_result"}, {"tool_use_id", r.tool_call_id}, {"content", r.content}};
        if (r.is_error) block["is_error"] = true;
        content.push_back(std::move(block));
      }
      if (!m.text.empty()) content.push_back({{"type", "text"}, {"text", m.text}});
    } else {
      if (!m.text.empty()) content.push_back({{"type", "text"}, {"text", m.text}});
      for (const ToolCall& call : m.tool_calls) {
        content.push_back({{"type", "tool_use"},
                           {"id", call.id},
                           {"name", call.name},
                           {"input", call.input.is_object() ? call.input : json::object()}});
      }
    }
    const char* role = m.role == Message::Role::kUser ? "user" : "assistant";
    // The API wants the roles to alternate: consecutive messages of one role are merged.
    if (!messages.empty() && messages.back()["role"] == role) {
      for (json& block : content) messages.back()["content"].push_back(std::move(block));
    } else {
      messages.push_back({{"role", role}, {"content", std::move(content)}});
    }
  }
  return messages;
}

json openai_messages(const std::string& system_prompt, const std::vector<Message>& conversation) {
  json messages = json::array();
  messages.push_back({{"role", "system"}, {"content", system_prompt}});
  for (const Message& m : conversation) {
    if (m.role == Message::Role::kUser) {
      for (const ToolResult& r : m.tool_results) {
        messages.push_back({{"role", "tool"},
                            {"tool_call_id", r.tool_call_id},
                            {"content", r.is_error ? "error: " + r.content : r.content}});
      }
      if (!m.text.empty()) messages.push_back({{"role", "user"}, {"content", m.text}});
      continue;
    }
    json message = {{"role", "assistant"}};
    message["content"] = m.text.empty() ? json(nullptr) : json(m.text);
    if (!m.tool_calls.empty()) {
      json calls = json::array();
      for (const ToolCall& call : m.tool_calls) {
        calls.push_back({{"id", call.id},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments_text}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

Result<Reply> parse_anthropic(const json& body) {
  Reply reply;
  const auto it = body.find("content");
  if (it == body.end() || !it->is_array()) return make_error("the response has no content array");
  for (const json& block : *it) {
    const std::string type = string_at(block, "type");
    if (type == "text") {
      reply.text += string_at(block, "text");
    } else if (type == "tool_use") {
      ToolCall call;
      call.id = string_at(block, "id");
      call.name = string_at(block, "name");
      if (call.id.empty() || call.name.empty()) {
        return make_error("a tool_use block has no id or no name");
      }
      const auto input = block.find("input");
      if (input != block.end() && input->is_object()) {
        call.input = *input;
        call.arguments_text = input->dump();
      } else {
        call.input = json(json::value_t::discarded);
        call.arguments_text = input == block.end() ? "" : input->dump();
      }
      reply.tool_calls.push_back(std::move(call));
    }
  }
  reply.stop_reason = string_at(body, "stop_reason");
  return reply;
}

Result<Reply> parse_openai(const json& body) {
  Reply reply;
  const auto choices = body.find("choices");
  if (choices == body.end() || !choices->is_array() || choices->empty()) {
    return make_error("the response has no choices");
  }
  const json& choice = (*choices)[0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object()) {
    return make_error("the response has no choices[0].message");
  }
  const json& message = choice["message"];
  reply.text = string_at(message, "content");
  reply.stop_reason = string_at(choice, "finish_reason");
  const auto calls = message.find("tool_calls");
  if (calls != message.end() && !calls->is_null()) {
    if (!calls->is_array()) return make_error("tool_calls is not an array");
    for (const json& c : *calls) {
      ToolCall call;
      call.id = string_at(c, "id");
      const json function = c.is_object() && c.contains("function") ? c["function"] : json();
      call.name = string_at(function, "name");
      if (call.id.empty() || call.name.empty()) {
        return make_error("a tool call has no id or no function name");
      }
      const auto arguments = function.find("arguments");
      if (arguments != function.end() && arguments->is_string()) {
        call.arguments_text = arguments->get<std::string>();
        call.input = json::parse(call.arguments_text, nullptr, false);
      } else if (arguments != function.end() && arguments->is_object()) {
        // Some local servers send the arguments as an object rather than JSON text.
        call.input = *arguments;
        call.arguments_text = arguments->dump();
      } else {
        call.input = json(json::value_t::discarded);
      }
      if (!call.input.is_discarded() && !call.input.is_object()) {
        call.input = json(json::value_t::discarded);
      }
      reply.tool_calls.push_back(std::move(call));
    }
  }
  return reply;
}

}  // namespace

ChatRequest build_chat_request(Dialect dialect, std::string_view base_path,
                               const std::string& model, const std::string& api_key,
                               std::uint32_t max_tokens, const std::string& system_prompt,
                               const std::vector<ToolSpec>& tools,
                               const std::vector<Message>& conversation) {
  ChatRequest request;
  std::string base(base_path);
  while (!base.empty() && base.back() == '/') base.pop_back();
  json tool_list = json::array();
  if (dialect == Dialect::kAnthropic) {
    request.path = base + "/v1/messages";
    if (!api_key.empty()) request.headers.emplace_back("x-api-key", api_key);
    request.headers.emplace_back("anthropic-version", std::string(kAnthropicVersion));
    for (const ToolSpec& tool : tools) {
      tool_list.push_back({{"name", tool.name},
                           {"description", tool.description},
                           {"input_schema", tool.input_schema}});
    }
    request.body = {{"model", model},
                    {"max_tokens", max_tokens},
                    {"system", system_prompt},
                    {"tools", std::move(tool_list)},
                    {"messages", anthropic_messages(conversation)}};
    return request;
  }
  request.path = base + "/v1/chat/completions";
  if (!api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key);
  for (const ToolSpec& tool : tools) {
    tool_list.push_back({{"type", "function"},
                         {"function",
                          {{"name", tool.name},
                           {"description", tool.description},
                           {"parameters", tool.input_schema}}}});
  }
  request.body = {{"model", model},
                  {"max_tokens", max_tokens},
                  {"tools", std::move(tool_list)},
                  {"tool_choice", "auto"},
                  {"messages", openai_messages(system_prompt, conversation)}};
  return request;
}

std::pair<std::uint64_t, std::uint64_t> usage_of(Dialect dialect, const json& body) {
  if (!body.is_object() || !body.contains("usage")) return {0, 0};
  const json& usage = body["usage"];
  if (dialect == Dialect::kAnthropic) {
    return {count_at(usage, "input_tokens") + count_at(usage, "cache_creation_input_tokens") +
                count_at(usage, "cache_read_input_tokens"),
            count_at(usage, "output_tokens")};
  }
  return {count_at(usage, "prompt_tokens"), count_at(usage, "completion_tokens")};
}

Result<Reply> parse_chat_reply(Dialect dialect, std::string_view body_text) {
  const json body = json::parse(body_text, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return make_error("the response is not a JSON object: " + excerpt(body_text));
  }
  if (const std::string error = api_error(body); !error.empty()) {
    return make_error("the API answered an error: " + excerpt(error));
  }
  auto reply = dialect == Dialect::kAnthropic ? parse_anthropic(body) : parse_openai(body);
  if (!reply.ok()) return reply;
  std::tie(reply->input_tokens, reply->output_tokens) = usage_of(dialect, body);
  if (reply->text.empty() && reply->tool_calls.empty()) {
    return make_error("the response has neither text nor a tool call");
  }
  return reply;
}

Message assistant_message(const Reply& reply) {
  Message m;
  m.role = Message::Role::kAssistant;
  m.text = reply.text;
  m.tool_calls = reply.tool_calls;
  return m;
}

}  // namespace attune::llm
