#include "adapters/agent/control_socket.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <istream>
#include <list>
#include <mutex>
#include <thread>

namespace attune::agent {
namespace {

namespace asio = boost::asio;
using Protocol = asio::local::stream_protocol;

// A connection that sends nothing for this long is dropped: a stuck client holds no thread.
constexpr std::int64_t kServerReadTimeoutMs = 10'000;

void set_timeouts(int fd, std::int64_t timeout_ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout_ms % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Reads one line (without its newline), at most kRequestBytesMax.
Result<std::string> read_line(Protocol::socket& socket) {
  asio::streambuf buffer(kRequestBytesMax + 1);
  boost::system::error_code ec;
  const std::size_t n = asio::read_until(socket, buffer, '\n', ec);
  if (ec && n == 0) {
    if (ec == asio::error::not_found) {
      return make_error("a line longer than " + std::to_string(kRequestBytesMax) + " bytes");
    }
    return make_error(ec == asio::error::eof ? "the connection closed before a reply"
                      : ec == asio::error::would_block || ec == asio::error::try_again
                          ? "no reply in time"
                          : ec.message());
  }
  std::istream in(&buffer);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

Result<std::string> parse_listen_address(const std::string& address) {
  std::string path = address;
  if (path.rfind("unix:", 0) == 0) {
    path = path.substr(5);
  } else if (path.find(':') != std::string::npos && path.front() != '/' && path.front() != '.') {
    return make_error("listen address '" + address + "': expected unix:PATH");
  }
  if (path.empty()) return make_error("listen address '" + address + "': expected unix:PATH");
  // sockaddr_un holds 108 bytes with the terminating zero.
  if (path.size() > 100) {
    return make_error("socket path '" + path + "' is longer than 100 bytes; use a shorter one");
  }
  return path;
}

struct ControlServer::Impl {
  std::string path;
  Handler handler;
  asio::io_context io;
  std::unique_ptr<Protocol::acceptor> acceptor;
  std::thread accept_thread;
  struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex mutex;  // guards connections
  std::list<Connection> connections;
  std::atomic<std::size_t> open_connections{0};
  std::atomic<bool> stopping{false};
  bool started = false;

  void serve(Protocol::socket socket) {
    set_timeouts(socket.native_handle(), kServerReadTimeoutMs);
    Result<std::string> request = read_line(socket);
    if (request.ok()) {
      // The handler may take long (a wait); the reply write has no timeout of its own beyond
      // the socket's.
      const std::string reply = handler(request.value()) + "\n";
      boost::system::error_code ec;
      asio::write(socket, asio::buffer(reply), ec);
    }
    boost::system::error_code ec;
    socket.shutdown(Protocol::socket::shutdown_both, ec);
    socket.close(ec);
    --open_connections;
  }

  void accept_next() {
    acceptor->async_accept([this](const boost::system::error_code& ec, Protocol::socket socket) {
      if (ec || stopping) return;
      if (open_connections >= kConnectionsMax) {
        const std::string busy = R"({"ok":false,"error":"the control socket is busy"})"
                                 "\n";
        boost::system::error_code ignored;
        asio::write(socket, asio::buffer(busy), ignored);
      } else {
        ++open_connections;
        std::lock_guard lock(mutex);
        // Threads of served connections are joined here, so that they do not pile up.
        for (auto it = connections.begin(); it != connections.end();) {
          if (*it->done) {
            it->thread.join();
            it = connections.erase(it);
          } else {
            ++it;
          }
        }
        auto done = std::make_shared<std::atomic<bool>>(false);
        auto s = std::make_shared<Protocol::socket>(std::move(socket));
        connections.push_back(Connection{std::thread([this, s, done] {
                                           serve(std::move(*s));
                                           *done = true;
                                         }),
                                         done});
      }
      accept_next();
    });
  }
};

ControlServer::ControlServer(std::string socket_path, Handler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = std::move(socket_path);
  impl_->handler = std::move(handler);
}

ControlServer::~ControlServer() { stop(); }

const std::string& ControlServer::socket_path() const { return impl_->path; }

Status check_listen_path(const std::string& path) {
  std::error_code ec;
  const auto existing = std::filesystem::symlink_status(path, ec);
  if (ec || existing.type() == std::filesystem::file_type::not_found ||
      existing.type() == std::filesystem::file_type::socket) {
    return Ok{};
  }
  return make_error("cannot listen on " + path +
                    ": something that is not a socket is there; choose another path");
}

Status ControlServer::start() {
  Impl& impl = *impl_;
  if (Status free = check_listen_path(impl.path); !free.ok()) return free;
  std::error_code fs_ec;
  if (std::filesystem::is_socket(std::filesystem::symlink_status(impl.path, fs_ec))) {
    // Only a stale socket (a crashed campaign's) is replaced; a live one is another campaign's.
    if (control_request(impl.path, R"({"op":"ping"})", 1000).ok()) {
      return make_error("a campaign already listens on " + impl.path);
    }
    std::filesystem::remove(impl.path, fs_ec);
  }
  try {
    impl.acceptor = std::make_unique<Protocol::acceptor>(impl.io, Protocol::endpoint(impl.path));
  } catch (const boost::system::system_error& e) {
    return make_error("cannot listen on " + impl.path + ": " + e.code().message());
  }
  std::filesystem::permissions(
      impl.path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, fs_ec);
  impl.accept_next();
  impl.accept_thread = std::thread([&impl] { impl.io.run(); });
  impl.started = true;
  return Ok{};
}

void ControlServer::stop() {
  Impl& impl = *impl_;
  if (!impl.started) return;
  impl.started = false;
  impl.stopping = true;
  asio::post(impl.io, [&impl] {
    boost::system::error_code ec;
    impl.acceptor->close(ec);
  });
  impl.accept_thread.join();
  std::list<Impl::Connection> connections;
  {
    std::lock_guard lock(impl.mutex);
    connections.swap(impl.connections);
  }
  for (Impl::Connection& connection : connections) connection.thread.join();
  std::error_code ec;
  if (std::filesystem::symlink_status(impl.path, ec).type() == std::filesystem::file_type::socket) {
    std::filesystem::remove(impl.path, ec);
  }
}

Result<std::string> control_request(const std::string& socket_path, const std::string& request,
                                    std::int64_t timeout_ms) {
  asio::io_context io;
  Protocol::socket socket(io);
  boost::system::error_code ec;
  socket.connect(Protocol::endpoint(socket_path), ec);
  if (ec) {
    return make_error("no campaign listens on " + socket_path + " (" + ec.message() + ")");
  }
  set_timeouts(socket.native_handle(), timeout_ms);
  const std::string line = request + "\n";
  asio::write(socket, asio::buffer(line), ec);
  if (ec) return make_error("cannot send to " + socket_path + ": " + ec.message());
  Result<std::string> reply = read_line(socket);
  if (!reply.ok()) return make_error(socket_path + ": " + reply.error());
  return reply;
}

}  // namespace attune::agent
