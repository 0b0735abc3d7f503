// Failure classification: oom, hang, crash or infra, from a log's failure signs together with the
// launcher's view of the job.
//
// Pure. The first rule that holds decides, and the Failure names what decided it:
//   1. oom    an out-of-memory sign in the log, or the final state OUT_OF_MEMORY;
//   2. infra  the final state NODE_FAIL or BOOT_FAIL (the launcher's fact about a node);
//   3. crash  a program error that names its own cause (AssertionError, ValueError, a Megatron
//             NaN check, an illegal memory access): other ranks' NCCL errors and timeouts are
//             then its echoes, so it outranks them;
//   4. infra  an infrastructure sign (NCCL network/system error, node failure, ECC error), or the
//             final state PREEMPTED, or CANCELLED while the log was not silent (cancelled by
//             someone other than the hang detector: not the recipe's fault);
//   5. hang   the NCCL watchdog's collective timeout, a silent log, or the final state TIMEOUT or
//             DEADLINE;
//   6. crash  any other traceback or error echo, or the final state FAILED;
//   7. none   otherwise (COMPLETED, a state still running, or no state given, and a clean log).
// States are Slurm's words; case is ignored, and so is what follows the first word or a '+'
// (sacct prints `CANCELLED by 0`, `CANCELLED+`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "adapters/metrics/megatron_log.h"
#include "events/event.h"

namespace attune {

// What the launcher knows and the log does not say.
struct JobOutcome {
  // COMPLETED, FAILED, OUT_OF_MEMORY, NODE_FAIL, TIMEOUT, CANCELLED, ...; empty while the job runs
  // or when it is not known.
  std::string final_state;
  bool log_silent = false;  // the log made no progress for longer than the hang timeout
  bool pruned = false;      // cancelled by a black-box search's early-abort pruner
};

struct Failure {
  FailureClass failure_class = FailureClass::kCrash;
  std::string message;  // the log line that decided the class, or "final state X", "log silent"
  std::uint64_t line_number = 0;  // of that log line; 0 when the launcher's facts decided

  friend bool operator==(const Failure&, const Failure&) = default;
};

std::optional<Failure> classify_failure(const MegatronLog& log, const JobOutcome& job);

}  // namespace attune
