// AgentSupervisor: keeps an external agent running for as long as its campaign searches.
//
// `attune agent run` starts the agent command (through /bin/sh -c, in its own process group,
// with ATTUNE_SOCKET naming the control socket and its output appended to a log file) and
// restarts it whenever it exits while the campaign still runs: after a crash a fresh agent
// rebuilds its picture from `attune status`. After restarts_max restarts the supervisor records
// a stop (the agent cannot go on) and the campaign checks and ships as usual. stop() ends the
// agent's process group and joins the supervising thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace attune::cli {

inline constexpr std::int64_t kAgentRestartDelayMs = 500;
inline constexpr std::int64_t kAgentTermGraceMs = 5000;

struct AgentSupervisorOptions {
  std::string command;      // shell command line
  std::string socket_path;  // exported as ATTUNE_SOCKET
  std::string log_path;     // the agent's stdout and stderr, appended
  std::uint32_t restarts_max = 5;
  std::function<void(const std::string&)> progress;  // thread-safe; may be empty
  // Whether the campaign still needs its agent (it calibrates or searches); an agent that exits
  // when it is no longer needed is not restarted. Thread-safe; empty: always needed.
  std::function<bool()> agent_needed;
  // Called (on the supervising thread) when the restarts are used up.
  std::function<void(const std::string& evidence)> give_up;
};

class AgentSupervisor {
 public:
  explicit AgentSupervisor(AgentSupervisorOptions options);
  ~AgentSupervisor();  // stop()s
  AgentSupervisor(const AgentSupervisor&) = delete;
  AgentSupervisor& operator=(const AgentSupervisor&) = delete;

  void start();
  void stop();
  std::uint32_t starts() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace attune::cli
