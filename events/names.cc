#include <type_traits>

#include "events/event.h"

namespace attune {

const char* body_name(const Body& body) {
  static constexpr const char* kNames[] = {
      "CampaignOpened",  "CandidateProposed", "LaunchRefused",
      "LaunchAdmitted",  "JobSubmitted",      "JobStarted",
      "JobFinished",     "RunMeasured",       "RunFailed",
      "Charged",         "BandSet",           "VerdictRecorded",
      "ProfileAnalyzed", "StopRecorded",      "ConvergenceChecked",
      "RecipeShipped",   "AccessDenied",      "LeverRuleLearned",
      "ToolCalled",      "LlmCharged"};
  static_assert(std::size(kNames) == std::variant_size_v<Body>);
  return kNames[body.index()];
}

const char* to_string(RunPurpose value) {
  switch (value) {
    case RunPurpose::kCalibration:
      return "calibration";
    case RunPurpose::kSearch:
      return "search";
    case RunPurpose::kCheck:
      return "check";
    case RunPurpose::kRetry:
      return "retry";
  }
  return "?";
}

const char* to_string(ObjectiveClass value) {
  switch (value) {
    case ObjectiveClass::kStructural:
      return "structural";
    case ObjectiveClass::kSameMath:
      return "same-math";
    case ObjectiveClass::kNumeric:
      return "numeric";
    case ObjectiveClass::kOther:
      return "other";
  }
  return "?";
}

const char* to_string(FailureClass value) {
  switch (value) {
    case FailureClass::kOom:
      return "oom";
    case FailureClass::kHang:
      return "hang";
    case FailureClass::kCrash:
      return "crash";
    case FailureClass::kInfra:
      return "infra";
    case FailureClass::kPruned:
      return "pruned";
  }
  return "?";
}

const char* to_string(FailureCause value) {
  switch (value) {
    case FailureCause::kUnknown:
      return "unknown";
    case FailureCause::kOutOfMemory:
      return "out-of-memory";
    case FailureCause::kGpuFault:
      return "gpu-fault";
    case FailureCause::kNodeFailure:
      return "node-failure";
    case FailureCause::kNonFiniteValue:
      return "non-finite-value";
    case FailureCause::kIllegalMemoryAccess:
      return "illegal-memory-access";
    case FailureCause::kDuplicateGpu:
      return "duplicate-gpu";
    case FailureCause::kTransportStart:
      return "transport-start";
    case FailureCause::kNetwork:
      return "network";
    case FailureCause::kSystem:
      return "system";
    case FailureCause::kStorage:
      return "storage";
    case FailureCause::kPreemption:
      return "preemption";
    case FailureCause::kCollectiveTimeout:
      return "collective-timeout";
    case FailureCause::kTimeLimit:
      return "time-limit";
    case FailureCause::kNoProgress:
      return "no-progress";
  }
  return "?";
}

std::string failure_text(FailureClass failure_class, FailureCause cause) {
  std::string text = to_string(failure_class);
  if (cause != FailureCause::kUnknown) text += std::string(" (") + to_string(cause) + ")";
  return text;
}

const char* to_string(RefusalReason value) {
  switch (value) {
    case RefusalReason::kDuplicate:
      return "duplicate";
    case RefusalReason::kMultipleLevers:
      return "multiple-levers";
    case RefusalReason::kLayer1:
      return "layer1";
    case RefusalReason::kBudget:
      return "budget";
    case RefusalReason::kConcurrency:
      return "concurrency";
    case RefusalReason::kInvalid:
      return "invalid";
  }
  return "?";
}

const char* to_string(Account value) {
  switch (value) {
    case Account::kTuner:
      return "tuner";
    case Account::kInfra:
      return "infra";
  }
  return "?";
}

const char* to_string(Verdict value) {
  switch (value) {
    case Verdict::kNewLeader:
      return "new-leader";
    case Verdict::kNotBetter:
      return "not-better";
    case Verdict::kFailed:
      return "failed";
    case Verdict::kCalibration:
      return "calibration";
  }
  return "?";
}

const char* to_string(StopReason value) {
  switch (value) {
    case StopReason::kBudgetSpent:
      return "budget-spent";
    case StopReason::kTunerStopped:
      return "tuner-stopped";
    case StopReason::kOperator:
      return "operator";
  }
  return "?";
}

const char* to_string(ChangeKind value) {
  switch (value) {
    case ChangeKind::kFlag:
      return "flag";
    case ChangeKind::kEnv:
      return "env";
  }
  return "?";
}

}  // namespace attune
