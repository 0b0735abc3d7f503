// HttpClient: JSON POSTs to one HTTP(S) endpoint, with timeouts and retries.
//
// https:// verifies the server's certificate against the system's trust store and its host name;
// http:// is for loopback servers (tests, a local vLLM or llama.cpp). Each attempt opens its own
// connection, bounded by the connect timeout and then the read/write timeout. A 429, a 5xx or an
// I/O failure is retried up to `retries` times after a backoff of retry_base_ms x 2^k, at least
// the server's Retry-After, at most kRetryDelayMsMax. Errors are one line naming the URL and what
// went wrong. The Boost.Beast and OpenSSL details stay in the .cc. Blocking; one call at a time
// (REQUIRES: external synchronization).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "events/result.h"

namespace attune::llm {

struct Url {
  bool https = false;
  std::string host;
  std::string port;       // "443", "80" or as given
  std::string base_path;  // "" or "/prefix", without a trailing slash
};

// "https://host[:port][/path]" or "http://...". Errors name the URL.
Result<Url> parse_url(std::string_view text);

struct HttpOptions {
  std::uint32_t connect_timeout_ms = 10'000;
  std::uint32_t io_timeout_ms = 120'000;
  std::uint32_t retries = 5;
  std::uint32_t retry_base_ms = 1000;
};

inline constexpr std::uint32_t kRetryDelayMsMax = 120'000;
inline constexpr std::size_t kResponseBytesMax = 16 * 1024 * 1024;

struct HttpResponse {
  unsigned status = 0;
  std::string body;
  std::uint32_t attempts = 0;  // 1 + the retries it took
};

using Sleeper = std::function<void(std::chrono::milliseconds)>;

class HttpClient {
 public:
  // `sleep` waits between attempts; the default sleeps the calling thread.
  HttpClient(Url url, HttpOptions options, Sleeper sleep = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // POSTs `body` as application/json to base_path + `path`. Ok only for a 2xx answer; any other
  // status after the retries is an error carrying the status and an excerpt of the body.
  Result<HttpResponse> post_json(const std::string& path,
                                 const std::vector<std::pair<std::string, std::string>>& headers,
                                 const std::string& body);

  // The backoff before retry k (0-based) given the server's Retry-After in seconds (-1: none).
  static std::chrono::milliseconds backoff(std::uint32_t retry_base_ms, std::uint32_t k,
                                           int retry_after_seconds);

 private:
  struct Tls;  // the OpenSSL context, made once
  Url url_;
  HttpOptions options_;
  Sleeper sleep_;
  std::unique_ptr<Tls> tls_;  // null for http://
};

}  // namespace attune::llm
