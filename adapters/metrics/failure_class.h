// Failure classification: oom, hang, crash or infra, from a log's failure signs together with the
// launcher's view of the job, as a ranking of the evidence.
//
// Pure. Every sign the log holds and every fact the launcher gives is a piece of evidence with a
// class and a rank; the strongest decides, and the others are kept, ranked, as alternatives.
// Strongest first:
//   1. pruned   the black-box search's pruner cancelled the run;
//   2. oom      an out-of-memory sign, then the final state OUT_OF_MEMORY;
//   3. infra    a hardware fault (a critical Xid, an uncorrectable ECC error, a node failure), then
//               the final state NODE_FAIL or BOOT_FAIL: the program errors it causes (an illegal
//               memory access) are its echoes;
//   4. crash    the first program error that names its own cause (AssertionError, StopIteration,
//               a Megatron NaN check, an illegal memory access): other ranks' NCCL errors and
//               timeouts are then its echoes;
//   5. infra    an infrastructure sign (NCCL network/system error, a NET plugin that cannot start,
//               a stale file handle, a full disk);
//   6. infra    the failed tasks all ran on one node of several (Slurm's task reports): a bad node,
//               to retry on other nodes;
//   7. infra    the final state PREEMPTED, or CANCELLED while the log was not silent (cancelled by
//               someone other than the hang detector: not the recipe's fault);
//   8. hang     the NCCL watchdog's collective timeout or Slurm's time limit; a silent log; the
//               final state TIMEOUT or DEADLINE;
//   9. infra    (suspected) an NCCL error without a named cause (an unhandled CUDA error, invalid
//               usage): a recipe can cause it and so can a node; the retry rule decides;
//  10. crash    any other traceback or error echo, then the final state FAILED;
//  11. none     otherwise (COMPLETED, a state still running, or no state given, and a clean log).
// A sign after which training went on (a batch script's preamble error, a traceback two logged
// iterations before the end) did not end the job: it is an alternative, never the decision.
// Warning-level lines are no signs at all (megatron_log.h). States are Slurm's words; case is
// ignored, and so is what follows the first word or a '+' (sacct prints `CANCELLED by 0`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// One piece of evidence: what it would make of the run, and the line or fact it rests on.
struct Evidence {
  FailureClass failure_class = FailureClass::kCrash;
  bool suspected = false;  // infra only by suspicion: the log cannot rule out the recipe
  std::string message;     // the log line, or "final state X", "log silent ...", a node's tasks
  std::string file;        // the log file of that line; empty for the launcher's facts
  std::uint64_t line_number = 0;  // of that log line; 0 when the launcher's facts decided
  std::string why;                // what kind of evidence it is, in a few words
  FailureCause cause = FailureCause::kUnknown;  // the cause the line or fact names

  friend bool operator==(const Evidence&, const Evidence&) = default;
};

struct Failure {
  FailureClass failure_class = FailureClass::kCrash;
  std::string message;  // the log line that decided the class, or "final state X", "log silent"
  std::uint64_t line_number = 0;  // of that log line; 0 when the launcher's facts decided
  bool suspected = false;         // infra (suspected): the retry rule decides
  std::string file;               // the file of the deciding line, when the log was several
  std::string why;                // the deciding evidence's kind
  FailureCause cause = FailureCause::kUnknown;  // the cause the deciding evidence names
  // The rest of the evidence, strongest first, one per class and kind (at most kAlternativesMax).
  std::vector<Evidence> alternatives;
  // Hosts whose tasks exited with an error (Slurm's task reports), and those tasks.
  std::vector<std::string> failing_nodes;
  std::vector<std::uint32_t> failing_tasks;

  friend bool operator==(const Failure&, const Failure&) = default;
};

constexpr std::size_t kAlternativesMax = 8;

std::optional<Failure> classify_failure(const MegatronLog& log, const JobOutcome& job);

// The sign in a new piece of a live log (whole lines, read on their own) that ends the run at
// once: a fatal sign (out of memory, a hardware fault, a program or infrastructure error), else a
// collective timeout, written after the training program started (in an earlier piece when
// `program_started`, else at the piece's first program line). A batch script's own errors before
// that, and lines the training went on after, end nothing.
std::optional<FailureSign> live_abort_sign(const MegatronLog& piece, bool program_started);

// "infra (suspected)" or the class's name.
std::string failure_class_text(const Failure& failure);
std::string failure_class_text(const Evidence& evidence);

}  // namespace attune
