// The control socket: a live campaign's control plane as a server on a Unix-domain socket, and the
// client the `attune propose/profile/wait/status/log/stop` commands and the agent hooks use.
//
// The wire: one JSON object per line each way, request then reply, on one connection per
// request. A request names its operation ("op"); a reply says {"ok": true, ...} or {"ok": false,
// "error": "..."}. The requests and their replies are ControlPlane's (control_plane.h); this
// file only carries lines.
//
// ControlServer owns its thread and its socket file: start() binds (replacing a stale socket
// file left by a crashed campaign, refusing one a live server holds), accepts on its own thread
// and serves each connection on a thread of its own, at most kConnectionsMax at once; the
// handler is called on those threads and must be thread-safe. stop() closes the socket, removes
// the file and joins every thread. Nothing here includes Boost.Asio.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "events/result.h"

namespace attune::agent {

inline constexpr std::size_t kRequestBytesMax = 1 << 20;  // one request line
inline constexpr std::size_t kConnectionsMax = 32;

// A listen address: "unix:PATH" (or a bare path). Errors name what was expected.
Result<std::string> parse_listen_address(const std::string& address);
// Whether a control socket may be made at `path`: nothing there, or a socket (a stale one is
// replaced when the server starts, a live one refused then). Anything else is the user's, and
// refused before anything is touched.
Status check_listen_path(const std::string& path);

class ControlServer {
 public:
  using Handler = std::function<std::string(const std::string& request_line)>;
  ControlServer(std::string socket_path, Handler handler);
  ~ControlServer();  // stop()s
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  Status start();
  void stop();
  const std::string& socket_path() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Sends one request line and returns the reply line; an error when nothing listens at the path
// or no reply comes within `timeout_ms`.
Result<std::string> control_request(const std::string& socket_path, const std::string& request,
                                    std::int64_t timeout_ms);

}  // namespace attune::agent
