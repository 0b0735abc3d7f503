#include "adapters/metrics/failure_class.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>
#include <utility>

namespace attune {

namespace {

// Ranks of the evidence, strongest first (failure_class.h). Evidence superseded by later training
// ranks after everything that may decide.
enum Rank : int {
  kRankPruned = 1,
  kRankOomSign,
  kRankOomState,
  kRankHardwareSign,
  kRankNodeState,
  kRankProgramError,
  kRankInfraSign,
  kRankBadNode,
  kRankCancelledState,
  kRankTimeoutSign,
  kRankSilentOrTimeoutState,
  kRankSuspectedInfra,
  kRankDiverged,
  kRankEcho,
  kRankFailedState,
  kRankPreamble = 50,  // added to a preamble sign's rank: below all the program's own evidence
  kRankSuperseded = 100,
};

struct Ranked {
  int rank = 0;
  std::uint32_t file = 0;
  Evidence evidence;
};

// The state's first word, upper case, without sacct's '+' suffix.
std::string state_word(std::string_view state) {
  const std::size_t start = state.find_first_not_of(" \t");
  if (start == std::string_view::npos) return {};
  state.remove_prefix(start);
  state = state.substr(0, state.find_first_of(" \t+"));
  std::string word(state);
  std::transform(word.begin(), word.end(), word.begin(), [](char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
  });
  return word;
}

struct SignMeaning {
  int rank;
  FailureClass failure_class;
  bool suspected;
  const char* why;
};

SignMeaning meaning_of(FailureSign sign) {
  switch (sign) {
    case FailureSign::kOutOfMemory:
      return {kRankOomSign, FailureClass::kOom, false, "out of memory"};
    case FailureSign::kHardwareFault:
      return {kRankHardwareSign, FailureClass::kInfra, false, "hardware or node fault"};
    case FailureSign::kProgramError:
      return {kRankProgramError, FailureClass::kCrash, false, "program error"};
    case FailureSign::kInfrastructure:
      return {kRankInfraSign, FailureClass::kInfra, false, "network, storage or system error"};
    case FailureSign::kCollectiveTimeout:
      return {kRankTimeoutSign, FailureClass::kHang, false, "collective timeout or time limit"};
    case FailureSign::kSuspectedInfrastructure:
      return {kRankSuspectedInfra, FailureClass::kInfra, true, "NCCL error without a cause"};
    case FailureSign::kErrorEcho:
      return {kRankEcho, FailureClass::kCrash, false, "traceback or error echo"};
  }
  return {kRankEcho, FailureClass::kCrash, false, "traceback or error echo"};
}

Ranked from_sign(const MegatronLog& log, const SignLine& sign) {
  const SignMeaning meaning = meaning_of(sign.sign);
  Ranked out;
  out.rank = meaning.rank;
  out.file = sign.file;
  out.evidence.failure_class = meaning.failure_class;
  out.evidence.suspected = meaning.suspected;
  out.evidence.message = sign.text;
  out.evidence.file = sign.file < log.files.size() ? log.files[sign.file] : std::string();
  out.evidence.line_number = sign.line_number;
  out.evidence.why = meaning.why;
  out.evidence.cause = sign.cause;
  if (sign.superseded) {
    out.rank += kRankSuperseded;
    out.evidence.why += "; training went on after it";
  } else if (sign.preamble) {
    out.rank += kRankPreamble;
    out.evidence.why += "; before the training program started";
  }
  return out;
}

Ranked from_fact(int rank, FailureClass failure_class, std::string message, std::string why,
                 FailureCause cause = FailureCause::kUnknown) {
  Ranked out;
  out.rank = rank;
  out.file = UINT32_MAX;
  out.evidence.failure_class = failure_class;
  out.evidence.message = std::move(message);
  out.evidence.why = std::move(why);
  out.evidence.cause = cause;
  return out;
}

void add_state_evidence(const std::string& state, const JobOutcome& job, std::vector<Ranked>& out) {
  const std::string said = "final state " + state;
  const char* launcher = "the launcher's state";
  if (state == "OUT_OF_MEMORY") {
    out.push_back(
        from_fact(kRankOomState, FailureClass::kOom, said, launcher, FailureCause::kOutOfMemory));
  } else if (state == "NODE_FAIL" || state == "BOOT_FAIL") {
    out.push_back(from_fact(kRankNodeState, FailureClass::kInfra, said, launcher,
                            FailureCause::kNodeFailure));
  } else if (state == "PREEMPTED" || (state == "CANCELLED" && !job.log_silent)) {
    out.push_back(
        from_fact(kRankCancelledState, FailureClass::kInfra, said, "cancelled by someone else",
                  state == "PREEMPTED" ? FailureCause::kPreemption : FailureCause::kUnknown));
  } else if (state == "TIMEOUT" || state == "DEADLINE") {
    out.push_back(from_fact(kRankSilentOrTimeoutState, FailureClass::kHang, said, launcher,
                            FailureCause::kTimeLimit));
  } else if (state == "FAILED") {
    out.push_back(from_fact(kRankFailedState, FailureClass::kCrash, said, launcher));
  }
  if (job.log_silent) {
    out.push_back(from_fact(kRankSilentOrTimeoutState, FailureClass::kHang,
                            "log silent past the hang timeout", "the hang detector",
                            FailureCause::kNoProgress));
  }
}

std::string task_list_text(const std::vector<std::uint32_t>& tasks) {
  std::string out;
  for (std::size_t i = 0; i < tasks.size();) {
    std::size_t j = i;
    while (j + 1 < tasks.size() && tasks[j + 1] == tasks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(tasks[i]);
    if (j > i) out += "-" + std::to_string(tasks[j]);
    i = j + 1;
  }
  return out;
}

// The failed tasks all ran on one node of several: a bad node.
void add_node_evidence(const MegatronLog& log, Failure& failure, std::vector<Ranked>& out) {
  for (const auto& [host, tasks] : log.nodes) {
    if (tasks.failed.empty()) continue;
    failure.failing_nodes.push_back(host);
    failure.failing_tasks.insert(failure.failing_tasks.end(), tasks.failed.begin(),
                                 tasks.failed.end());
  }
  std::sort(failure.failing_tasks.begin(), failure.failing_tasks.end());
  if (failure.failing_nodes.size() != 1 || log.nodes.size() < 2) return;
  out.push_back(from_fact(kRankBadNode, FailureClass::kInfra,
                          "tasks " + task_list_text(failure.failing_tasks) + " failed on " +
                              failure.failing_nodes.front() + " alone, of " +
                              std::to_string(log.nodes.size()) + " nodes",
                          "one node's tasks failed: retry on other nodes"));
}

// The last logged iteration reports a loss or grad norm that is not finite, with no NaN check to
// stop it (forks that count no nan iterations): the training diverged.
void add_divergence_evidence(const MegatronLog& log, std::vector<Ranked>& out) {
  if (log.iterations.empty()) return;
  const IterationLine& last = log.iterations.back();
  const bool loss_bad = last.lm_loss && !std::isfinite(*last.lm_loss);
  const bool norm_bad = last.grad_norm && !std::isfinite(*last.grad_norm);
  if (!loss_bad && !norm_bad) return;
  Ranked diverged =
      from_fact(kRankDiverged, FailureClass::kCrash,
                std::string("iteration ") + std::to_string(last.iteration) + " reports " +
                    (loss_bad ? "an lm loss" : "a grad norm") + " that is not finite",
                "training diverged", FailureCause::kNonFiniteValue);
  diverged.file = last.file;
  diverged.evidence.file = last.file < log.files.size() ? log.files[last.file] : std::string();
  diverged.evidence.line_number = last.line_number;
  out.push_back(std::move(diverged));
}

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// The host a line names: NCCL's own prefix (`TENCENT64:47604:53083 [0] ... NCCL WARN`), or
// Megatron's `node: HOST` / `node HOST,` in its error messages; empty when none.
std::string host_named_in(std::string_view line) {
  if (line.find(" NCCL ") != std::string_view::npos) {
    // A `HOST:PID:TID` token followed by `[DEVICE]`.
    std::size_t start = 0;
    while (start < line.size()) {
      std::size_t end = line.find(' ', start);
      if (end == std::string_view::npos) end = line.size();
      const std::string_view token = line.substr(start, end - start);
      const std::size_t colon = token.find(':');
      const bool pid_tid =
          colon != std::string_view::npos && colon > 0 &&
          token.substr(colon + 1).find_first_not_of("0123456789:") == std::string_view::npos &&
          token.size() > colon + 1;
      if (pid_tid &&
          std::all_of(token.begin(), token.begin() + static_cast<std::ptrdiff_t>(colon),
                      is_host_char) &&
          line.substr(end).starts_with(" [")) {
        return std::string(token.substr(0, colon));
      }
      start = end + 1;
    }
  }
  for (std::string_view mark : {std::string_view("node: "), std::string_view(", node ")}) {
    const std::size_t at = line.find(mark);
    if (at == std::string_view::npos) continue;
    std::size_t end = at + mark.size();
    while (end < line.size() && is_host_char(line[end])) ++end;
    std::string_view host = line.substr(at + mark.size(), end - at - mark.size());
    while (!host.empty() && host.back() == '.') host.remove_suffix(1);
    if (!host.empty()) return std::string(host);
  }
  return {};
}

// The ranked alternatives: one per class and kind, strongest first.
std::vector<Evidence> alternatives_of(const std::vector<Ranked>& ranked) {
  std::vector<Evidence> out;
  for (std::size_t i = 1; i < ranked.size() && out.size() < kAlternativesMax; ++i) {
    const Evidence& evidence = ranked[i].evidence;
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&evidence](const Evidence& kept) {
                                    return kept.failure_class == evidence.failure_class &&
                                           kept.why == evidence.why;
                                  }) ||
                      (ranked[0].evidence.failure_class == evidence.failure_class &&
                       ranked[0].evidence.why == evidence.why);
    if (!seen) out.push_back(evidence);
  }
  return out;
}

}  // namespace

std::optional<Failure> classify_failure(const MegatronLog& log, const JobOutcome& job) {
  Failure failure;
  std::vector<Ranked> ranked;
  if (job.pruned) {
    ranked.push_back(from_fact(kRankPruned, FailureClass::kPruned,
                               "pruned: slower than the leader after steady steps", "the pruner"));
  }
  for (const SignLine& sign : log.signs) ranked.push_back(from_sign(log, sign));
  add_state_evidence(state_word(job.final_state), job, ranked);
  add_node_evidence(log, failure, ranked);
  add_divergence_evidence(log, ranked);
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::tie(a.rank, a.file, a.evidence.line_number) <
           std::tie(b.rank, b.file, b.evidence.line_number);
  });
  if (ranked.empty() || ranked.front().rank >= kRankSuperseded) return std::nullopt;
  const Evidence& decided = ranked.front().evidence;
  failure.failure_class = decided.failure_class;
  failure.message = decided.message;
  failure.line_number = decided.line_number;
  failure.suspected = decided.suspected;
  failure.file = decided.file;
  failure.why = decided.why;
  failure.cause = decided.cause;
  failure.alternatives = alternatives_of(ranked);
  // Without a launcher's task reports, the host pdsh labelled the deciding line with, or the one
  // the line names itself.
  if (failure.failing_nodes.empty()) {
    for (const SignLine& sign : log.signs) {
      if (sign.line_number != failure.line_number || sign.text != failure.message) continue;
      std::string host = sign.host.empty() ? host_named_in(sign.text) : sign.host;
      if (!host.empty()) failure.failing_nodes.push_back(std::move(host));
      break;
    }
  }
  return failure;
}

// The sign in a new piece of a live log that ends the run now: a fatal sign (out of memory, a
// hardware fault, a program or infrastructure error) or a collective timeout, written after the
// training program started. A batch script's own errors before that (a tool that failed to load)
// and lines training went on after end nothing.
std::optional<FailureSign> live_abort_sign(const MegatronLog& piece, bool program_started) {
  const std::uint64_t first_program = piece.first_program_lines.at(0);
  std::optional<FailureSign> found;
  for (const SignLine& sign : piece.signs) {
    const bool in_program =
        program_started || (first_program > 0 && sign.line_number >= first_program);
    if (!in_program || sign.superseded) continue;
    switch (sign.sign) {
      case FailureSign::kOutOfMemory:
      case FailureSign::kHardwareFault:
      case FailureSign::kProgramError:
      case FailureSign::kInfrastructure:
        return sign.sign;
      case FailureSign::kCollectiveTimeout:
        found = found.value_or(sign.sign);
        break;
      default:
        break;
    }
  }
  return found;
}

namespace {

std::string class_text(FailureClass failure_class, bool suspected) {
  return std::string(to_string(failure_class)) + (suspected ? " (suspected)" : "");
}

}  // namespace

std::string failure_class_text(const Failure& failure) {
  return class_text(failure.failure_class, failure.suspected);
}

std::string failure_class_text(const Evidence& evidence) {
  return class_text(evidence.failure_class, evidence.suspected);
}

}  // namespace attune
