// ControlPlane: a running campaign's answers to its external agent, over the control socket.
//
// The operations (one JSON request each, see control_socket.h for the wire):
//   ping                      -> {"ok": true}
//   status                    -> phase, budget, band, leader, every run, refused proposals and
//                                the ledger as text: everything a fresh agent needs
//   propose {changes, parent_run_id, hypothesis, profile}
//                             -> admitted as run N, or refused with the reason and detail; the
//                                same decide() rules as for a built-in tuner
//   profile {run_id}          -> the run's per-stage breakdown (a run proposed with profile)
//   wait {timeout_ms}         -> the next finished run not yet reported by a wait
//   log {run_id, tail_bytes}  -> the end of a run's log, finished or running
//   stop {evidence}           -> records the stop (the campaign then checks and ships)
//   deny {object, rule}       -> records an AccessDenied (the pre-tool hook's refusals)
//   read {tool, input, source_location}
//                             -> records a ToolCalled for a read of the framework source that
//                                the pre-tool hook allowed (the paper's rule 3)
// Anything else is refused and recorded as an AccessDenied: the socket is the agent's only way
// into the campaign, and it cannot append events of its choosing.
//
// handle() is called on the control socket's threads; it hands each request to the scheduler's
// thread (Scheduler::post) and waits for the answer, so the runtime is only ever touched there.
// After close() (the campaign's run() returned) every request is answered with an error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/ports.h"
#include "core/runtime.h"
#include "core/scheduler.h"

namespace attune::agent {

inline constexpr std::int64_t kWaitPollMs = 20;                // how often a wait looks again
inline constexpr std::int64_t kWaitTimeoutMsMax = 86'400'000;  // one day
inline constexpr std::size_t kLogTailBytesMax = 1 << 20;
inline constexpr char kExternalActor[] = "tuner:external";
inline constexpr char kHookActor[] = "agent:hook";

// The tuner of a campaign driven from outside: it never proposes by itself, and the runtime
// waits for the agent's commands instead of stopping the search.
class ExternalTuner final : public Tuner {
 public:
  std::string name() const override { return "external"; }
  TunerAnswer next(const TunerView&) override { return TunerWait{}; }
  bool waits_for_input() const override { return true; }
};

class ControlPlane {
 public:
  // REQUIRES: runtime, scheduler and launcher outlive the control plane.
  ControlPlane(CampaignRuntime& runtime, Scheduler& scheduler, const Launcher& launcher);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Thread-safe. One request line in, one reply line out (never throws).
  std::string handle(const std::string& request_line);
  // Thread-safe. From now on requests are answered with `why`.
  void close(const std::string& why);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace attune::agent
