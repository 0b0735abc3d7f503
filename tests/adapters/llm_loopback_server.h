// A scripted chat API on 127.0.0.1 for the LLM tuner's tests: it answers each POST with the next
// scripted response (status, body, headers), records every request it got (target, headers,
// body, arrival time), and answers 400 once the script is spent. One connection at a time, on
// its own thread; stopped and joined by the destructor.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace attune::testing_support {

struct ScriptedResponse {
  unsigned status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct ReceivedRequest {
  std::string target;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  std::chrono::steady_clock::time_point at;

  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

class LoopbackChatServer {
 public:
  explicit LoopbackChatServer(std::deque<ScriptedResponse> script = {})
      : script_(std::move(script)),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}),
        port_(acceptor_.local_endpoint().port()),
        thread_([this] { serve(); }) {}

  ~LoopbackChatServer() {
    stopping_ = true;
    // Unblock the accept with one last connection.
    boost::system::error_code ec;
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    thread_.join();
  }

  std::uint16_t port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void push(ScriptedResponse response) {
    std::lock_guard lock(mutex_);
    script_.push_back(std::move(response));
  }

  std::vector<ReceivedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    namespace http = boost::beast::http;
    while (!stopping_) {
      boost::asio::ip::tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_) continue;
      boost::beast::flat_buffer buffer;
      for (;;) {
        http::request<http::string_body> request;
        http::read(socket, buffer, request, ec);
        if (ec) break;
        ScriptedResponse answer{400, R"({"error":{"message":"the script is spent"}})", {}};
        {
          std::lock_guard lock(mutex_);
          ReceivedRequest received;
          received.target = std::string(request.target());
          for (const auto& field : request) {
            std::string name(field.name_string());
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            received.headers[name] = std::string(field.value());
          }
          received.body = request.body();
          received.at = std::chrono::steady_clock::now();
          requests_.push_back(std::move(received));
          if (!script_.empty()) {
            answer = std::move(script_.front());
            script_.pop_front();
          }
        }
        http::response<http::string_body> response{static_cast<http::status>(answer.status),
                                                   request.version()};
        response.set(http::field::content_type, "application/json");
        for (const auto& [name, value] : answer.headers) response.set(name, value);
        response.body() = answer.body;
        response.keep_alive(false);
        response.prepare_payload();
        http::write(socket, response, ec);
        break;
      }
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  mutable std::mutex mutex_;
  std::deque<ScriptedResponse> script_;
  std::vector<ReceivedRequest> requests_;
  std::atomic<bool> stopping_{false};
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_;
  std::thread thread_;
};

// Scripted bodies in either dialect: "anthropic" or "openai".
inline std::string tool_call_body(const std::string& dialect, const std::string& id,
                                  const std::string& name, const nlohmann::json& input,
                                  std::uint64_t input_tokens = 1000,
                                  std::uint64_t output_tokens = 100) {
  if (dialect == "anthropic") {
    return nlohmann::json{
        {"id", "msg_" + id},
        {"type", "message"},
        {"role", "assistant"},
        {"content",
         {{{"type", "text"}, {"text", "Calling " + name + "."}},
          {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}}}},
        {"stop_reason", "tool_use"},
        {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}}
        .dump();
  }
  return nlohmann::json{
      {"id", "chatcmpl-" + id},
      {"object", "chat.completion"},
      {"choices",
       {{{"index", 0},
         {"message",
          {{"role", "assistant"},
           {"content", nullptr},
           {"tool_calls",
            {{{"id", id},
              {"type", "function"},
              {"function", {{"name", name}, {"arguments", input.dump()}}}}}}}},
         {"finish_reason", "tool_calls"}}}},
      {"usage", {{"prompt_tokens", input_tokens}, {"completion_tokens", output_tokens}}}}
      .dump();
}

inline std::string text_body(const std::string& dialect, const std::string& text) {
  if (dialect == "anthropic") {
    return nlohmann::json{{"content", {{{"type", "text"}, {"text", text}}}},
                          {"stop_reason", "end_turn"},
                          {"usage", {{"input_tokens", 10}, {"output_tokens", 5}}}}
        .dump();
  }
  return nlohmann::json{
      {"choices",
       {{{"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", "stop"}}}},
      {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}}
      .dump();
}

// The tool results a request carried, in either dialect: (tool call id, content, is_error).
struct SentToolResult {
  std::string id;
  std::string content;
  bool is_error = false;
};
inline std::vector<SentToolResult> tool_results_of(const std::string& dialect,
                                                   const nlohmann::json& request) {
  std::vector<SentToolResult> out;
  for (const auto& message : request["messages"]) {
    if (dialect == "openai") {
      if (message["role"] != "tool") continue;
      const std::string content = message["content"].get<std::string>();
      out.push_back(
          {message["tool_call_id"].get<std::string>(), content, content.rfind("error: ", 0) == 0});
      continue;
    }
    if (message["role"] != "user" || !message["content"].is_array()) continue;
    for (const auto& block : message["content"]) {
      if (block["type"] != "tool_result") continue;
      out.push_back({block["tool_use_id"].get<std::string>(), block["content"].get<std::string>(),
                     block.value("is_error", false)});
    }
  }
  return out;
}

}  // namespace attune::testing_support
