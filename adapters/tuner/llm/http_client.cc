#include "adapters/tuner/llm/http_client.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>
#include <thread>
#include <type_traits>

namespace attune::llm {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

namespace {

constexpr std::size_t kErrorBodyExcerptBytesMax = 300;
constexpr int kRetryAfterSecondsMax = 600;

// One attempt's outcome: a status and body, or an I/O error.
struct Attempt {
  unsigned status = 0;
  std::string body;
  int retry_after_seconds = -1;
  std::string io_error;  // non-empty: no answer
};

int parse_retry_after(std::string_view text) {
  int seconds = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 0) return -1;
  return std::min(seconds, kRetryAfterSecondsMax);
}

std::string one_line(std::string_view text, std::size_t max_bytes) {
  std::string out(text.substr(0, max_bytes));
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

// The steps of one attempt over a plain or TLS stream, as a chain of asynchronous operations
// whose deadlines come from the stream's timer.
template <class Stream>
class Exchange {
 public:
  Exchange(Stream& stream, tcp::resolver& resolver, const Url& url, const HttpOptions& options,
           http::request<http::string_body>& request, Attempt& out)
      : stream_(stream),
        resolver_(resolver),
        url_(url),
        options_(options),
        request_(request),
        out_(out) {
    parser_.body_limit(kResponseBytesMax);
  }

  void start() {
    resolver_.async_resolve(url_.host, url_.port,
                            [this](beast::error_code ec, tcp::resolver::results_type results) {
                              if (ec) return fail("cannot resolve " + url_.host, ec);
                              connect(results);
                            });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void connect(const tcp::resolver::results_type& results) {
    lowest().expires_after(std::chrono::milliseconds(options_.connect_timeout_ms));
    lowest().async_connect(results, [this](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return fail("cannot connect", ec);
      handshake();
    });
  }

  void handshake() {
    if constexpr (kTls) {
      lowest().expires_after(std::chrono::milliseconds(options_.io_timeout_ms));
      stream_.async_handshake(ssl::stream_base::client, [this](beast::error_code ec) {
        if (ec) return fail("TLS handshake failed", ec);
        write();
      });
    } else {
      write();
    }
  }

  void write() {
    lowest().expires_after(std::chrono::milliseconds(options_.io_timeout_ms));
    http::async_write(stream_, request_, [this](beast::error_code ec, std::size_t) {
      if (ec) return fail("cannot send the request", ec);
      read();
    });
  }

  void read() {
    lowest().expires_after(std::chrono::milliseconds(options_.io_timeout_ms));
    http::async_read(stream_, buffer_, parser_, [this](beast::error_code ec, std::size_t) {
      if (ec) return fail("no answer", ec);
      const auto& response = parser_.get();
      out_.status = response.result_int();
      out_.body = response.body();
      const auto retry_after = response.find(http::field::retry_after);
      if (retry_after != response.end()) {
        out_.retry_after_seconds = parse_retry_after(
            std::string_view(retry_after->value().data(), retry_after->value().size()));
      }
      beast::error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  void fail(const std::string& what, beast::error_code ec) {
    if (!out_.io_error.empty()) return;
    out_.io_error =
        what + ": " + (ec == beast::error::timeout ? std::string("timed out") : ec.message());
  }

  Stream& stream_;
  tcp::resolver& resolver_;
  const Url& url_;
  const HttpOptions& options_;
  http::request<http::string_body>& request_;
  Attempt& out_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
};

// Runs the exchange to its end; a resolver that hangs is bounded by the overall deadline.
template <class Stream>
void run_exchange(asio::io_context& ioc, Stream& stream, tcp::resolver& resolver, const Url& url,
                  const HttpOptions& options, http::request<http::string_body>& request,
                  Attempt& out) {
  Exchange<Stream> exchange(stream, resolver, url, options, request, out);
  exchange.start();
  const auto deadline = std::chrono::milliseconds(options.connect_timeout_ms) +
                        3 * std::chrono::milliseconds(options.io_timeout_ms);
  ioc.run_for(deadline);
  if (!ioc.stopped()) {
    resolver.cancel();
    beast::get_lowest_layer(stream).cancel();
    ioc.restart();
    ioc.run();
    if (out.io_error.empty() && out.status == 0) out.io_error = "timed out";
  }
}

}  // namespace

struct HttpClient::Tls {
  ssl::context context{ssl::context::tls_client};
};

Result<Url> parse_url(std::string_view text) {
  Url url;
  std::string_view rest;
  if (text.rfind("https://", 0) == 0) {
    url.https = true;
    rest = text.substr(8);
  } else if (text.rfind("http://", 0) == 0) {
    rest = text.substr(7);
  } else {
    return make_error("URL '" + std::string(text) + "': expected http:// or https://");
  }
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) url.base_path = std::string(rest.substr(slash));
  while (!url.base_path.empty() && url.base_path.back() == '/') url.base_path.pop_back();
  if (authority.empty()) return make_error("URL '" + std::string(text) + "': no host");
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return make_error("URL '" + std::string(text) + "': unclosed '[' in the host");
    }
    url.host = std::string(authority.substr(1, close - 1));
    authority = authority.substr(close + 1);
    if (!authority.empty() && authority.front() != ':') {
      return make_error("URL '" + std::string(text) + "': expected ':' after the host");
    }
  } else {
    const std::size_t colon = authority.find(':');
    url.host = std::string(authority.substr(0, colon));
    authority = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
  }
  if (!authority.empty()) url.port = std::string(authority.substr(1));
  if (url.port.empty()) url.port = url.https ? "443" : "80";
  int port = 0;
  const auto [end, ec] = std::from_chars(url.port.data(), url.port.data() + url.port.size(), port);
  if (url.host.empty() || ec != std::errc() || end != url.port.data() + url.port.size() ||
      port <= 0 || port > 65535) {
    return make_error("URL '" + std::string(text) + "': expected host[:port] with a port 1-65535");
  }
  return url;
}

HttpClient::HttpClient(Url url, HttpOptions options, Sleeper sleep)
    : url_(std::move(url)), options_(options), sleep_(std::move(sleep)) {
  if (!sleep_) sleep_ = [](std::chrono::milliseconds ms) { std::this_thread::sleep_for(ms); };
  if (url_.https) {
    tls_ = std::make_unique<Tls>();
    tls_->context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                              ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                              ssl::context::no_tlsv1_1);
    tls_->context.set_default_verify_paths();
    tls_->context.set_verify_mode(ssl::verify_peer);
  }
}

HttpClient::~HttpClient() = default;

std::chrono::milliseconds HttpClient::backoff(std::uint32_t retry_base_ms, std::uint32_t k,
                                              int retry_after_seconds) {
  std::uint64_t delay_ms = retry_base_ms;
  for (std::uint32_t i = 0; i < k && delay_ms < kRetryDelayMsMax; ++i) delay_ms *= 2;
  if (retry_after_seconds >= 0) {
    delay_ms =
        std::max<std::uint64_t>(delay_ms, static_cast<std::uint64_t>(retry_after_seconds) * 1000);
  }
  return std::chrono::milliseconds(std::min<std::uint64_t>(delay_ms, kRetryDelayMsMax));
}

Result<HttpResponse> HttpClient::post_json(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& headers,
    const std::string& body) {
  const std::string target = url_.base_path + path;
  const std::string where = std::string("POST ") + (url_.https ? "https://" : "http://") +
                            url_.host + ":" + url_.port + target;
  std::string last_problem;
  for (std::uint32_t attempt = 0; attempt <= options_.retries; ++attempt) {
    http::request<http::string_body> request{http::verb::post, target, 11};
    request.set(http::field::host, url_.host);
    request.set(http::field::user_agent, "attune-llm-tuner");
    request.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = body;
    request.prepare_payload();

    Attempt out;
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    if (tls_) {
      beast::ssl_stream<beast::tcp_stream> stream(ioc, tls_->context);
      // SNI, and the certificate must name the host.
      if (!SSL_set_tlsext_host_name(stream.native_handle(), url_.host.c_str())) {
        return make_error(where + ": cannot set the TLS server name");
      }
      stream.set_verify_mode(ssl::verify_peer);
      stream.set_verify_callback(ssl::host_name_verification(url_.host));
      run_exchange(ioc, stream, resolver, url_, options_, request, out);
    } else {
      beast::tcp_stream stream(ioc);
      run_exchange(ioc, stream, resolver, url_, options_, request, out);
    }

    if (out.io_error.empty() && out.status >= 200 && out.status < 300) {
      return HttpResponse{out.status, std::move(out.body), attempt + 1};
    }
    const bool retryable = !out.io_error.empty() || out.status == 429 || out.status >= 500;
    last_problem = !out.io_error.empty() ? out.io_error
                                         : "HTTP " + std::to_string(out.status) + ": " +
                                               one_line(out.body, kErrorBodyExcerptBytesMax);
    if (!retryable) return make_error(where + ": " + last_problem);
    if (attempt < options_.retries) {
      sleep_(backoff(options_.retry_base_ms, attempt, out.retry_after_seconds));
    }
  }
  return make_error(where + ": " + last_problem + " (after " +
                    std::to_string(options_.retries + 1) + " attempts)");
}

}  // namespace attune::llm
