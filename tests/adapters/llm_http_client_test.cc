// The LLM tuner's HTTP client against a loopback server: URLs, retries on 429 and 5xx paced by
// the backoff and Retry-After, no retry on other 4xx, and one-line errors.
#include "adapters/tuner/llm/http_client.h"

#include <gtest/gtest.h>

#include "tests/adapters/llm_loopback_server.h"

namespace attune::llm {
namespace {

using testing_support::LoopbackChatServer;
using testing_support::ScriptedResponse;

TEST(LlmHttpClient, ParsesUrls) {
  auto a = parse_url("https://api.anthropic.com");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->https);
  EXPECT_EQ(a->host, "api.anthropic.com");
  EXPECT_EQ(a->port, "443");
  EXPECT_EQ(a->base_path, "");
  auto b = parse_url("http://127.0.0.1:8000/proxy/");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->https);
  EXPECT_EQ(b->port, "8000");
  EXPECT_EQ(b->base_path, "/proxy");
  auto c = parse_url("http://[::1]:9/x");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  for (const char* bad :
       {"ftp://x", "https://", "http://host:0", "http://host:99999", "http://[::1"}) {
    EXPECT_FALSE(parse_url(bad).ok()) << bad;
  }
}

TEST(LlmHttpClient, BackoffDoublesHonoursRetryAfterAndIsCapped) {
  EXPECT_EQ(HttpClient::backoff(100, 0, -1).count(), 100);
  EXPECT_EQ(HttpClient::backoff(100, 3, -1).count(), 800);
  EXPECT_EQ(HttpClient::backoff(100, 0, 2).count(), 2000);
  EXPECT_EQ(HttpClient::backoff(1000, 30, -1).count(), kRetryDelayMsMax);
}

TEST(LlmHttpClient, RetriesA429StormPacedByTheBackoff) {
  LoopbackChatServer server({{429, "slow down", {{"Retry-After", "0"}}},
                             {429, "slow down", {{"Retry-After", "0"}}},
                             {503, "busy", {}},
                             {200, R"({"ok": true})", {}}});
  auto url = parse_url(server.endpoint());
  ASSERT_TRUE(url.ok());
  HttpClient client(url.value(), HttpOptions{2000, 2000, 3, 30});
  auto response = client.post_json("/v1/x", {{"x-test", "1"}}, R"({"a": 1})");
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->body, R"({"ok": true})");
  EXPECT_EQ(response->attempts, 4u);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].target, "/v1/x");
  EXPECT_EQ(requests[0].headers.at("x-test"), "1");
  EXPECT_EQ(requests[0].headers.at("content-type"), "application/json");
  EXPECT_EQ(requests[3].body, R"({"a": 1})");
  for (std::size_t k = 1; k < requests.size(); ++k) {
    const auto gap =
        std::chrono::duration_cast<std::chrono::milliseconds>(requests[k].at - requests[k - 1].at);
    EXPECT_GE(gap.count(), 30 << (k - 1)) << "retry " << k;
  }
}

TEST(LlmHttpClient, RetryAfterIsHonoured) {
  LoopbackChatServer server({{429, "", {{"Retry-After", "1"}}}, {200, "{}", {}}});
  HttpClient client(parse_url(server.endpoint()).value(), HttpOptions{2000, 2000, 1, 1});
  ASSERT_TRUE(client.post_json("/", {}, "{}").ok());
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(std::chrono::duration_cast<std::chrono::milliseconds>(requests[1].at - requests[0].at)
                .count(),
            1000);
}

TEST(LlmHttpClient, GivesUpAfterTheRetriesAndDoesNotRetryOther4xx) {
  LoopbackChatServer server({{500, "boom\nline two", {}}, {500, "boom", {}}, {500, "boom", {}}});
  HttpClient client(parse_url(server.endpoint()).value(), HttpOptions{2000, 2000, 2, 1});
  auto failed = client.post_json("/v1/messages", {}, "{}");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find("HTTP 500"), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find("after 3 attempts"), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find("/v1/messages"), std::string::npos) << failed.error();
  EXPECT_EQ(failed.error().find('\n'), std::string::npos);
  EXPECT_EQ(server.requests().size(), 3u);

  server.push({401, R"({"error": "bad key"})", {}});
  auto refused = client.post_json("/v1/messages", {}, "{}");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("HTTP 401"), std::string::npos);
  EXPECT_EQ(server.requests().size(), 4u);  // no retry
}

TEST(LlmHttpClient, ConnectionRefusedIsAnError) {
  std::string endpoint;
  {
    LoopbackChatServer server;
    endpoint = server.endpoint();
  }
  HttpClient client(parse_url(endpoint).value(), HttpOptions{500, 500, 1, 1});
  auto failed = client.post_json("/", {}, "{}");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find("cannot connect"), std::string::npos) << failed.error();
}

}  // namespace
}  // namespace attune::llm
