#include "adapters/metrics/failure_class.h"

#include <algorithm>
#include <string_view>

namespace attune {

namespace {

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

Failure from_sign(FailureClass failure_class, const SignLine& line) {
  return Failure{failure_class, line.text, line.line_number};
}

Failure from_state(FailureClass failure_class, const std::string& state) {
  return Failure{failure_class, "final state " + state, 0};
}

}  // namespace

std::optional<Failure> classify_failure(const MegatronLog& log, const JobOutcome& job) {
  const std::string state = state_word(job.final_state);
  const auto sign = [&log](FailureSign kind) -> const std::optional<SignLine>& {
    return log.first_sign(kind);
  };

  if (job.pruned) {
    return Failure{FailureClass::kPruned, "pruned: slower than the leader after steady steps", 0};
  }
  if (const auto& line = sign(FailureSign::kOutOfMemory)) {
    return from_sign(FailureClass::kOom, *line);
  }
  if (state == "OUT_OF_MEMORY") return from_state(FailureClass::kOom, state);
  if (state == "NODE_FAIL" || state == "BOOT_FAIL") return from_state(FailureClass::kInfra, state);
  if (const auto& line = sign(FailureSign::kProgramError)) {
    return from_sign(FailureClass::kCrash, *line);
  }
  if (const auto& line = sign(FailureSign::kInfrastructure)) {
    return from_sign(FailureClass::kInfra, *line);
  }
  if (state == "PREEMPTED" || (state == "CANCELLED" && !job.log_silent)) {
    return from_state(FailureClass::kInfra, state);
  }
  if (const auto& line = sign(FailureSign::kCollectiveTimeout)) {
    return from_sign(FailureClass::kHang, *line);
  }
  if (job.log_silent) return Failure{FailureClass::kHang, "log silent past the hang timeout", 0};
  if (state == "TIMEOUT" || state == "DEADLINE") return from_state(FailureClass::kHang, state);
  if (const auto& line = sign(FailureSign::kErrorEcho)) {
    return from_sign(FailureClass::kCrash, *line);
  }
  if (state == "FAILED") return from_state(FailureClass::kCrash, state);
  return std::nullopt;
}

}  // namespace attune
