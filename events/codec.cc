#include "events/codec.h"

#include <capnp/message.h>
#include <kj/exception.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "events/assert.h"
#include "events/events.capnp.h"

namespace attune {
namespace {

// The hash algorithm an envelope names: plain SHA-256, or HMAC-SHA256 under the named key.
constexpr std::string_view kPlainHashAlgorithm = "sha256";
constexpr std::string_view kKeyedHashAlgorithmPrefix = "hmac-sha256:";
constexpr std::size_t kKeyIdHexDigits = 16;

std::string hash_algorithm_of(const std::string& key_id) {
  return key_id.empty() ? std::string(kPlainHashAlgorithm)
                        : std::string(kKeyedHashAlgorithmPrefix) + key_id;
}

// The Body variant and the schema's body union list the same 18 types; a body added to one without
// the other must not compile.
static_assert(std::variant_size_v<Body> == 20);

// ---- Enums: C++ -> wire -------------------------------------------------------------------------
// Mapped one name at a time, never by cast, so that the two enums may be reordered or extended
// independently. A C++ value outside its named values is a programmer error: encoding it would put
// an undecodable event in the ledger.

[[noreturn]] void abort_on_invalid_enum() {
  ATTUNE_ASSERT(false, "an enum holds one of its named values");
  std::abort();
}

wire::RunPurpose to_wire(RunPurpose value) {
  switch (value) {
    case RunPurpose::kCalibration:
      return wire::RunPurpose::CALIBRATION;
    case RunPurpose::kSearch:
      return wire::RunPurpose::SEARCH;
    case RunPurpose::kCheck:
      return wire::RunPurpose::CHECK;
    case RunPurpose::kRetry:
      return wire::RunPurpose::RETRY;
  }
  abort_on_invalid_enum();
}

wire::ObjectiveClass to_wire(ObjectiveClass value) {
  switch (value) {
    case ObjectiveClass::kStructural:
      return wire::ObjectiveClass::STRUCTURAL;
    case ObjectiveClass::kSameMath:
      return wire::ObjectiveClass::SAME_MATH;
    case ObjectiveClass::kNumeric:
      return wire::ObjectiveClass::NUMERIC;
    case ObjectiveClass::kOther:
      return wire::ObjectiveClass::OTHER;
  }
  abort_on_invalid_enum();
}

wire::FailureClass to_wire(FailureClass value) {
  switch (value) {
    case FailureClass::kOom:
      return wire::FailureClass::OOM;
    case FailureClass::kHang:
      return wire::FailureClass::HANG;
    case FailureClass::kCrash:
      return wire::FailureClass::CRASH;
    case FailureClass::kInfra:
      return wire::FailureClass::INFRA;
    case FailureClass::kPruned:
      return wire::FailureClass::PRUNED;
  }
  abort_on_invalid_enum();
}

// Every cause with its wire value; the wire's ordinals are fixed, so the table pairs them by name.
constexpr std::pair<FailureCause, wire::FailureCause> kFailureCauses[] = {
    {FailureCause::kUnknown, wire::FailureCause::UNKNOWN},
    {FailureCause::kOutOfMemory, wire::FailureCause::OUT_OF_MEMORY},
    {FailureCause::kGpuFault, wire::FailureCause::GPU_FAULT},
    {FailureCause::kNodeFailure, wire::FailureCause::NODE_FAILURE},
    {FailureCause::kNonFiniteValue, wire::FailureCause::NON_FINITE_VALUE},
    {FailureCause::kIllegalMemoryAccess, wire::FailureCause::ILLEGAL_MEMORY_ACCESS},
    {FailureCause::kDuplicateGpu, wire::FailureCause::DUPLICATE_GPU},
    {FailureCause::kTransportStart, wire::FailureCause::TRANSPORT_START},
    {FailureCause::kNetwork, wire::FailureCause::NETWORK},
    {FailureCause::kSystem, wire::FailureCause::SYSTEM},
    {FailureCause::kStorage, wire::FailureCause::STORAGE},
    {FailureCause::kPreemption, wire::FailureCause::PREEMPTION},
    {FailureCause::kCollectiveTimeout, wire::FailureCause::COLLECTIVE_TIMEOUT},
    {FailureCause::kTimeLimit, wire::FailureCause::TIME_LIMIT},
    {FailureCause::kNoProgress, wire::FailureCause::NO_PROGRESS},
};

wire::FailureCause to_wire(FailureCause value) {
  for (const auto& [cause, wired] : kFailureCauses) {
    if (cause == value) return wired;
  }
  abort_on_invalid_enum();
}

wire::RefusalReason to_wire(RefusalReason value) {
  switch (value) {
    case RefusalReason::kDuplicate:
      return wire::RefusalReason::DUPLICATE;
    case RefusalReason::kMultipleLevers:
      return wire::RefusalReason::MULTIPLE_LEVERS;
    case RefusalReason::kLayer1:
      return wire::RefusalReason::LAYER1;
    case RefusalReason::kBudget:
      return wire::RefusalReason::BUDGET;
    case RefusalReason::kConcurrency:
      return wire::RefusalReason::CONCURRENCY;
    case RefusalReason::kInvalid:
      return wire::RefusalReason::INVALID;
  }
  abort_on_invalid_enum();
}

wire::Account to_wire(Account value) {
  switch (value) {
    case Account::kTuner:
      return wire::Account::TUNER;
    case Account::kInfra:
      return wire::Account::INFRA;
  }
  abort_on_invalid_enum();
}

wire::Verdict to_wire(Verdict value) {
  switch (value) {
    case Verdict::kNewLeader:
      return wire::Verdict::NEW_LEADER;
    case Verdict::kNotBetter:
      return wire::Verdict::NOT_BETTER;
    case Verdict::kFailed:
      return wire::Verdict::FAILED;
    case Verdict::kCalibration:
      return wire::Verdict::CALIBRATION;
  }
  abort_on_invalid_enum();
}

wire::StopReason to_wire(StopReason value) {
  switch (value) {
    case StopReason::kBudgetSpent:
      return wire::StopReason::BUDGET_SPENT;
    case StopReason::kTunerStopped:
      return wire::StopReason::TUNER_STOPPED;
    case StopReason::kOperator:
      return wire::StopReason::OPERATOR;
  }
  abort_on_invalid_enum();
}

wire::ChangeKind to_wire(ChangeKind value) {
  switch (value) {
    case ChangeKind::kFlag:
      return wire::ChangeKind::FLAG;
    case ChangeKind::kEnv:
      return wire::ChangeKind::ENV;
  }
  abort_on_invalid_enum();
}

// ---- Enums: wire -> C++ -------------------------------------------------------------------------
// A wire value without a C++ name comes from a newer schema or a corrupt message: nullopt.

std::optional<RunPurpose> from_wire(wire::RunPurpose value) {
  switch (value) {
    case wire::RunPurpose::CALIBRATION:
      return RunPurpose::kCalibration;
    case wire::RunPurpose::SEARCH:
      return RunPurpose::kSearch;
    case wire::RunPurpose::CHECK:
      return RunPurpose::kCheck;
    case wire::RunPurpose::RETRY:
      return RunPurpose::kRetry;
  }
  return std::nullopt;
}

std::optional<ObjectiveClass> from_wire(wire::ObjectiveClass value) {
  switch (value) {
    case wire::ObjectiveClass::STRUCTURAL:
      return ObjectiveClass::kStructural;
    case wire::ObjectiveClass::SAME_MATH:
      return ObjectiveClass::kSameMath;
    case wire::ObjectiveClass::NUMERIC:
      return ObjectiveClass::kNumeric;
    case wire::ObjectiveClass::OTHER:
      return ObjectiveClass::kOther;
  }
  return std::nullopt;
}

std::optional<FailureCause> from_wire(wire::FailureCause value) {
  for (const auto& [cause, wired] : kFailureCauses) {
    if (wired == value) return cause;
  }
  return std::nullopt;
}

std::optional<FailureClass> from_wire(wire::FailureClass value) {
  switch (value) {
    case wire::FailureClass::OOM:
      return FailureClass::kOom;
    case wire::FailureClass::HANG:
      return FailureClass::kHang;
    case wire::FailureClass::CRASH:
      return FailureClass::kCrash;
    case wire::FailureClass::INFRA:
      return FailureClass::kInfra;
    case wire::FailureClass::PRUNED:
      return FailureClass::kPruned;
  }
  return std::nullopt;
}

std::optional<RefusalReason> from_wire(wire::RefusalReason value) {
  switch (value) {
    case wire::RefusalReason::DUPLICATE:
      return RefusalReason::kDuplicate;
    case wire::RefusalReason::MULTIPLE_LEVERS:
      return RefusalReason::kMultipleLevers;
    case wire::RefusalReason::LAYER1:
      return RefusalReason::kLayer1;
    case wire::RefusalReason::BUDGET:
      return RefusalReason::kBudget;
    case wire::RefusalReason::CONCURRENCY:
      return RefusalReason::kConcurrency;
    case wire::RefusalReason::INVALID:
      return RefusalReason::kInvalid;
  }
  return std::nullopt;
}

std::optional<Account> from_wire(wire::Account value) {
  switch (value) {
    case wire::Account::TUNER:
      return Account::kTuner;
    case wire::Account::INFRA:
      return Account::kInfra;
  }
  return std::nullopt;
}

std::optional<Verdict> from_wire(wire::Verdict value) {
  switch (value) {
    case wire::Verdict::NEW_LEADER:
      return Verdict::kNewLeader;
    case wire::Verdict::NOT_BETTER:
      return Verdict::kNotBetter;
    case wire::Verdict::FAILED:
      return Verdict::kFailed;
    case wire::Verdict::CALIBRATION:
      return Verdict::kCalibration;
  }
  return std::nullopt;
}

std::optional<StopReason> from_wire(wire::StopReason value) {
  switch (value) {
    case wire::StopReason::BUDGET_SPENT:
      return StopReason::kBudgetSpent;
    case wire::StopReason::TUNER_STOPPED:
      return StopReason::kTunerStopped;
    case wire::StopReason::OPERATOR:
      return StopReason::kOperator;
  }
  return std::nullopt;
}

std::optional<ChangeKind> from_wire(wire::ChangeKind value) {
  switch (value) {
    case wire::ChangeKind::FLAG:
      return ChangeKind::kFlag;
    case wire::ChangeKind::ENV:
      return ChangeKind::kEnv;
  }
  return std::nullopt;
}

// ---- Writing ------------------------------------------------------------------------------------

capnp::Text::Reader as_text(const std::string& value) {
  return capnp::Text::Reader(value.c_str(), value.size());
}

capnp::Data::Reader as_data(const Digest& digest) {
  return capnp::Data::Reader(digest.data(), digest.size());
}

// Cap'n Proto lists hold fewer than 2^29 elements; an event anywhere near that is a bug.
template <typename T>
unsigned list_size(const std::vector<T>& values) {
  constexpr std::size_t kListElementsMax = (std::size_t{1} << 29) - 1;
  ATTUNE_ASSERT(values.size() <= kListElementsMax, "lists are cut to their limit before encoding");
  (void)kListElementsMax;
  return static_cast<unsigned>(values.size());
}

template <typename Number>
void fill(typename capnp::List<Number>::Builder list, const std::vector<Number>& values) {
  for (unsigned i = 0; i < list.size(); ++i) list.set(i, values[i]);
}

void fill(capnp::List<capnp::Text>::Builder list, const std::vector<std::string>& values) {
  for (unsigned i = 0; i < list.size(); ++i) list.set(i, as_text(values[i]));
}

void write(const SettingChange& value, wire::SettingChange::Builder out) {
  out.setKind(to_wire(value.kind));
  out.setName(as_text(value.name));
  out.setBeforePresent(value.before_present);
  out.setBefore(as_text(value.before));
  out.setAfterPresent(value.after_present);
  out.setAfter(as_text(value.after));
  out.setObjectiveClass(to_wire(value.objective_class));
}

void write(const Lever& value, wire::Lever::Builder out) {
  out.setName(as_text(value.name));
  out.setObjectiveClass(to_wire(value.objective_class));
}

void write(const Hypothesis& value, wire::Hypothesis::Builder out) {
  out.setBottleneck(as_text(value.bottleneck));
  out.setMechanism(as_text(value.mechanism));
  out.setExpectedGainFraction(value.expected_gain_fraction);
  out.setBottleneckTag(as_text(value.bottleneck_tag));
}

void write(const CommTime& value, wire::CommTime::Builder out) {
  out.setKind(as_text(value.kind));
  out.setExposedMs(value.exposed_ms);
}

void write(const ConvergenceCheck& value, wire::ConvergenceCheck::Builder out) {
  out.setName(as_text(value.name));
  out.setMeasured(value.measured);
  out.setThreshold(value.threshold);
  out.setPassed(value.passed);
}

// StageBreakdown holds a list itself, so it is declared before the list writer that calls it.
void write(const StageBreakdown& value, wire::StageBreakdown::Builder out);

template <typename T, typename ListBuilder>
void fill_structs(ListBuilder list, const std::vector<T>& values) {
  for (unsigned i = 0; i < list.size(); ++i) write(values[i], list[i]);
}

void write(const StageBreakdown& value, wire::StageBreakdown::Builder out) {
  out.setStage(value.stage);
  out.setStepMs(value.step_ms);
  out.setComputeMs(value.compute_ms);
  fill_structs(out.initExposedComm(list_size(value.exposed_comm)), value.exposed_comm);
  out.setHostBoundMs(value.host_bound_ms);
  out.setIdleMs(value.idle_ms);
}

// Body writers: each selects its member of the envelope's body union.
using BodyBuilder = wire::Envelope::Body::Builder;

void write(const CampaignOpened& value, BodyBuilder body) {
  auto out = body.initCampaignOpened();
  out.setName(as_text(value.name));
  out.setModel(as_text(value.model));
  out.setHardware(as_text(value.hardware));
  out.setGpuCount(value.gpu_count);
  out.setSeqLength(value.seq_length);
  out.setGlobalBatch(value.global_batch);
  out.setPrecision(as_text(value.precision));
  out.setData(as_text(value.data));
  out.setBaselineRecipe(as_text(value.baseline_recipe));
  out.setBaselineRecipeHash(as_text(value.baseline_recipe_hash));
  out.setPolicyName(as_text(value.policy_name));
  out.setPolicyHash(as_text(value.policy_hash));
  out.setBudgetAuto(value.budget_auto);
  out.setBudgetGpuHours(value.budget_gpu_hours);
  out.setReserveChecks(value.reserve_checks);
  out.setConcurrency(value.concurrency);
  out.setStepsPerRun(value.steps_per_run);
  out.setWindowFirstStep(value.window_first_step);
  out.setWindowLastStep(value.window_last_step);
  out.setCheckSteps(value.check_steps);
  out.setHangTimeoutMinutes(value.hang_timeout_minutes);
  out.setBandFloorFraction(value.band_floor_fraction);
  out.setBandK(value.band_k);
  out.setCalibrationRuns(value.calibration_runs);
  out.setTuner(as_text(value.tuner));
  out.setSeed(value.seed);
  out.setRealitySeed(value.reality_seed);
  out.setCampaignFileHash(as_text(value.campaign_file_hash));
  out.setLauncher(as_text(value.launcher));
  out.setPolicyPath(as_text(value.policy_path));
  out.setJobTemplate(as_text(value.job_template));
  out.setExpectedSecondsPerStep(value.expected_seconds_per_step);
  out.setLearnedRules(as_text(value.learned_rules));
  out.setLearnedRulesPath(as_text(value.learned_rules_path));
  out.setTunerOptions(as_text(value.tuner_options));
  out.setTunerBlackBox(value.tuner_black_box);
  out.setLeverGroupsHash(as_text(value.lever_groups_hash));
  out.setUsdPerGpuHour(value.usd_per_gpu_hour);
  out.setSimStack(as_text(value.sim_stack));
}

void write(const CandidateProposed& value, BodyBuilder body) {
  auto out = body.initCandidateProposed();
  out.setProposalId(value.proposal_id);
  out.setPurpose(to_wire(value.purpose));
  out.setRecipe(as_text(value.recipe));
  out.setRecipeHash(as_text(value.recipe_hash));
  fill_structs(out.initDiff(list_size(value.diff)), value.diff);
  fill_structs(out.initLevers(list_size(value.levers)), value.levers);
  write(value.hypothesis, out.initHypothesis());
  out.setProfile(value.profile);
  out.setRetryOfRunId(value.retry_of_run_id);
  out.setCheckOfRunId(value.check_of_run_id);
  out.setParentRunId(value.parent_run_id);
}

void write(const LaunchRefused& value, BodyBuilder body) {
  auto out = body.initLaunchRefused();
  out.setProposalId(value.proposal_id);
  out.setReason(to_wire(value.reason));
  out.setDetail(as_text(value.detail));
}

void write(const LaunchAdmitted& value, BodyBuilder body) {
  auto out = body.initLaunchAdmitted();
  out.setProposalId(value.proposal_id);
  out.setRunId(value.run_id);
  out.setPurpose(to_wire(value.purpose));
  out.setGpus(value.gpus);
  out.setSteps(value.steps);
  out.setExpectedGpuHours(value.expected_gpu_hours);
  fill(out.initExcludeNodes(list_size(value.exclude_nodes)), value.exclude_nodes);
  out.setJobName(as_text(value.job_name));
}

void write(const JobSubmitted& value, BodyBuilder body) {
  auto out = body.initJobSubmitted();
  out.setRunId(value.run_id);
  out.setLauncherJobId(as_text(value.launcher_job_id));
  out.setJobName(as_text(value.job_name));
  out.setAtUnixNs(value.at_unix_ns);
}

void write(const JobStarted& value, BodyBuilder body) {
  auto out = body.initJobStarted();
  out.setRunId(value.run_id);
  out.setAdmittedAtUnixNs(value.admitted_at_unix_ns);
  fill(out.initNodes(list_size(value.nodes)), value.nodes);
}

void write(const JobFinished& value, BodyBuilder body) {
  auto out = body.initJobFinished();
  out.setRunId(value.run_id);
  out.setReleasedAtUnixNs(value.released_at_unix_ns);
  out.setFinalState(as_text(value.final_state));
  out.setFactsSource(as_text(value.facts_source));
  out.setLogPath(as_text(value.log_path));
}

void write(const RunMeasured& value, BodyBuilder body) {
  auto out = body.initRunMeasured();
  out.setRunId(value.run_id);
  out.setTokensPerSecPerGpu(value.tokens_per_sec_per_gpu);
  fill<double>(out.initStepTimesMs(list_size(value.step_times_ms)), value.step_times_ms);
  out.setWindowRsd(value.window_rsd);
  fill<double>(out.initPeakMemoryGibByStage(list_size(value.peak_memory_gib_by_stage)),
               value.peak_memory_gib_by_stage);
  fill<double>(out.initLossCurve(list_size(value.loss_curve)), value.loss_curve);
  out.setResolvedArgsHash(as_text(value.resolved_args_hash));
}

void write(const RunFailed& value, BodyBuilder body) {
  auto out = body.initRunFailed();
  out.setRunId(value.run_id);
  out.setFailureClass(to_wire(value.failure_class));
  out.setMessage(as_text(value.message));
  out.setNode(as_text(value.node));
  out.setCause(to_wire(value.cause));
}

void write(const Charged& value, BodyBuilder body) {
  auto out = body.initCharged();
  out.setRunId(value.run_id);
  out.setAccount(to_wire(value.account));
  out.setGpus(value.gpus);
  out.setAdmittedAtUnixNs(value.admitted_at_unix_ns);
  out.setReleasedAtUnixNs(value.released_at_unix_ns);
  out.setGpuHours(value.gpu_hours);
}

void write(const BandSet& value, BodyBuilder body) {
  auto out = body.initBandSet();
  fill<RunId>(out.initCalibrationRunIds(list_size(value.calibration_run_ids)),
              value.calibration_run_ids);
  out.setMeanTokensPerSecPerGpu(value.mean_tokens_per_sec_per_gpu);
  out.setRsd(value.rsd);
  out.setBandFraction(value.band_fraction);
  out.setBudgetGpuHours(value.budget_gpu_hours);
  out.setMeanLaunchGpuHours(value.mean_launch_gpu_hours);
}

void write(const VerdictRecorded& value, BodyBuilder body) {
  auto out = body.initVerdictRecorded();
  out.setRunId(value.run_id);
  out.setVerdict(to_wire(value.verdict));
  out.setGainFraction(value.gain_fraction);
  out.setLeaderBefore(value.leader_before);
  out.setLeaderAfter(value.leader_after);
  out.setBandFraction(value.band_fraction);
}

void write(const ProfileAnalyzed& value, BodyBuilder body) {
  auto out = body.initProfileAnalyzed();
  out.setRunId(value.run_id);
  fill_structs(out.initStages(list_size(value.stages)), value.stages);
  out.setSlowestStage(value.slowest_stage);
  out.setLargestCost(as_text(value.largest_cost));
  fill(out.initTracePaths(list_size(value.trace_paths)), value.trace_paths);
}

void write(const StopRecorded& value, BodyBuilder body) {
  auto out = body.initStopRecorded();
  out.setReason(to_wire(value.reason));
  out.setLeaderRunId(value.leader_run_id);
  fill(out.initLeversTested(list_size(value.levers_tested)), value.levers_tested);
  out.setLastDiagnosis(as_text(value.last_diagnosis));
  out.setEvidence(as_text(value.evidence));
}

void write(const ConvergenceChecked& value, BodyBuilder body) {
  auto out = body.initConvergenceChecked();
  out.setCandidateRunId(value.candidate_run_id);
  out.setCheckRunId(value.check_run_id);
  out.setHasVerdict(value.has_verdict);
  out.setLayer1Passed(value.layer1_passed);
  out.setLayer2Passed(value.layer2_passed);
  fill_structs(out.initChecks(list_size(value.checks)), value.checks);
  out.setReason(as_text(value.reason));
}

void write(const RecipeShipped& value, BodyBuilder body) {
  auto out = body.initRecipeShipped();
  out.setRunId(value.run_id);
  out.setIsBaseline(value.is_baseline);
  out.setRecipe(as_text(value.recipe));
  out.setRecipeHash(as_text(value.recipe_hash));
  out.setTokensPerSecPerGpu(value.tokens_per_sec_per_gpu);
  out.setGainFraction(value.gain_fraction);
  out.setEvidence(as_text(value.evidence));
}

void write(const AccessDenied& value, BodyBuilder body) {
  auto out = body.initAccessDenied();
  out.setObject(as_text(value.object));
  out.setRule(as_text(value.rule));
}

void write(const LeverRuleLearned& value, BodyBuilder body) {
  auto out = body.initLeverRuleLearned();
  out.setLever(as_text(value.lever));
  out.setRule(as_text(value.rule));
  fill<RunId>(out.initEvidenceRunIds(list_size(value.evidence_run_ids)), value.evidence_run_ids);
  out.setWhen(as_text(value.when));
  out.setEffect(as_text(value.effect));
  out.setAction(as_text(value.action));
}

void write(const ToolCalled& value, BodyBuilder body) {
  auto out = body.initToolCalled();
  out.setTool(as_text(value.tool));
  out.setInput(as_text(value.input));
  out.setResult(as_text(value.result));
  out.setAllowed(value.allowed);
  out.setSourceLocation(as_text(value.source_location));
  out.setTurn(value.turn);
}

void write(const LlmCharged& value, BodyBuilder body) {
  auto out = body.initLlmCharged();
  out.setTurn(value.turn);
  out.setModel(as_text(value.model));
  out.setInputTokens(value.input_tokens);
  out.setOutputTokens(value.output_tokens);
  out.setCostUsd(value.cost_usd);
}

// ---- Reading ------------------------------------------------------------------------------------

// Keeps the first problem found while reading a message. Readers carry on with a default value so
// that they stay straight-line code; decode_envelope discards the result when there was one.
class Problems {
 public:
  void add(std::string message) {
    if (!first_) first_ = std::move(message);
  }
  const std::optional<std::string>& first() const { return first_; }

 private:
  std::optional<std::string> first_;
};

template <typename WireEnum>
auto read_enum(WireEnum raw, const char* field, Problems& problems) {
  auto value = from_wire(raw);
  if (!value) {
    problems.add(std::string(field) + ": unknown enum value " +
                 std::to_string(static_cast<std::uint16_t>(raw)));
    return typename decltype(value)::value_type{};
  }
  return *value;
}

std::string read_text(capnp::Text::Reader text) { return std::string(text.cStr(), text.size()); }

Digest read_digest(capnp::Data::Reader data, const char* field, Problems& problems) {
  Digest digest{};
  if (data.size() != digest.size()) {
    problems.add(std::string(field) + ": " + std::to_string(data.size()) + " bytes, expected " +
                 std::to_string(digest.size()));
    return digest;
  }
  std::memcpy(digest.data(), data.begin(), digest.size());
  return digest;
}

template <typename Number>
std::vector<Number> read_numbers(typename capnp::List<Number>::Reader list) {
  std::vector<Number> values;
  values.reserve(list.size());
  for (Number value : list) values.push_back(value);
  return values;
}

std::vector<std::string> read_texts(capnp::List<capnp::Text>::Reader list) {
  std::vector<std::string> values;
  values.reserve(list.size());
  for (auto text : list) values.push_back(read_text(text));
  return values;
}

SettingChange read(wire::SettingChange::Reader in, Problems& problems) {
  SettingChange value;
  value.kind = read_enum(in.getKind(), "SettingChange.kind", problems);
  value.name = read_text(in.getName());
  value.before_present = in.getBeforePresent();
  value.before = read_text(in.getBefore());
  value.after_present = in.getAfterPresent();
  value.after = read_text(in.getAfter());
  value.objective_class =
      read_enum(in.getObjectiveClass(), "SettingChange.objective_class", problems);
  return value;
}

Lever read(wire::Lever::Reader in, Problems& problems) {
  Lever value;
  value.name = read_text(in.getName());
  value.objective_class = read_enum(in.getObjectiveClass(), "Lever.objective_class", problems);
  return value;
}

Hypothesis read(wire::Hypothesis::Reader in, Problems&) {
  Hypothesis value;
  value.bottleneck = read_text(in.getBottleneck());
  value.mechanism = read_text(in.getMechanism());
  value.expected_gain_fraction = in.getExpectedGainFraction();
  value.bottleneck_tag = read_text(in.getBottleneckTag());
  return value;
}

CommTime read(wire::CommTime::Reader in, Problems&) {
  CommTime value;
  value.kind = read_text(in.getKind());
  value.exposed_ms = in.getExposedMs();
  return value;
}

ConvergenceCheck read(wire::ConvergenceCheck::Reader in, Problems&) {
  ConvergenceCheck value;
  value.name = read_text(in.getName());
  value.measured = in.getMeasured();
  value.threshold = in.getThreshold();
  value.passed = in.getPassed();
  return value;
}

// StageBreakdown holds a list itself, so it is declared before the list reader that calls it.
StageBreakdown read(wire::StageBreakdown::Reader in, Problems& problems);

template <typename T, typename ListReader>
std::vector<T> read_structs(ListReader list, Problems& problems) {
  std::vector<T> values;
  values.reserve(list.size());
  for (auto item : list) values.push_back(read(item, problems));
  return values;
}

StageBreakdown read(wire::StageBreakdown::Reader in, Problems& problems) {
  StageBreakdown value;
  value.stage = in.getStage();
  value.step_ms = in.getStepMs();
  value.compute_ms = in.getComputeMs();
  value.exposed_comm = read_structs<CommTime>(in.getExposedComm(), problems);
  value.host_bound_ms = in.getHostBoundMs();
  value.idle_ms = in.getIdleMs();
  return value;
}

CampaignOpened read(wire::CampaignOpened::Reader in, Problems&) {
  CampaignOpened value;
  value.name = read_text(in.getName());
  value.model = read_text(in.getModel());
  value.hardware = read_text(in.getHardware());
  value.gpu_count = in.getGpuCount();
  value.seq_length = in.getSeqLength();
  value.global_batch = in.getGlobalBatch();
  value.precision = read_text(in.getPrecision());
  value.data = read_text(in.getData());
  value.baseline_recipe = read_text(in.getBaselineRecipe());
  value.baseline_recipe_hash = read_text(in.getBaselineRecipeHash());
  value.policy_name = read_text(in.getPolicyName());
  value.policy_hash = read_text(in.getPolicyHash());
  value.budget_auto = in.getBudgetAuto();
  value.budget_gpu_hours = in.getBudgetGpuHours();
  value.reserve_checks = in.getReserveChecks();
  value.concurrency = in.getConcurrency();
  value.steps_per_run = in.getStepsPerRun();
  value.window_first_step = in.getWindowFirstStep();
  value.window_last_step = in.getWindowLastStep();
  value.check_steps = in.getCheckSteps();
  value.hang_timeout_minutes = in.getHangTimeoutMinutes();
  value.band_floor_fraction = in.getBandFloorFraction();
  value.band_k = in.getBandK();
  value.calibration_runs = in.getCalibrationRuns();
  value.tuner = read_text(in.getTuner());
  value.seed = in.getSeed();
  value.reality_seed = in.getRealitySeed();
  value.campaign_file_hash = read_text(in.getCampaignFileHash());
  value.launcher = read_text(in.getLauncher());
  value.policy_path = read_text(in.getPolicyPath());
  value.job_template = read_text(in.getJobTemplate());
  value.expected_seconds_per_step = in.getExpectedSecondsPerStep();
  value.learned_rules = read_text(in.getLearnedRules());
  value.learned_rules_path = read_text(in.getLearnedRulesPath());
  value.tuner_options = read_text(in.getTunerOptions());
  value.tuner_black_box = in.getTunerBlackBox();
  value.lever_groups_hash = read_text(in.getLeverGroupsHash());
  value.usd_per_gpu_hour = in.getUsdPerGpuHour();
  value.sim_stack = read_text(in.getSimStack());
  return value;
}

CandidateProposed read(wire::CandidateProposed::Reader in, Problems& problems) {
  CandidateProposed value;
  value.proposal_id = in.getProposalId();
  value.purpose = read_enum(in.getPurpose(), "CandidateProposed.purpose", problems);
  value.recipe = read_text(in.getRecipe());
  value.recipe_hash = read_text(in.getRecipeHash());
  value.diff = read_structs<SettingChange>(in.getDiff(), problems);
  value.levers = read_structs<Lever>(in.getLevers(), problems);
  value.hypothesis = read(in.getHypothesis(), problems);
  value.profile = in.getProfile();
  value.retry_of_run_id = in.getRetryOfRunId();
  value.check_of_run_id = in.getCheckOfRunId();
  value.parent_run_id = in.getParentRunId();
  return value;
}

LaunchRefused read(wire::LaunchRefused::Reader in, Problems& problems) {
  LaunchRefused value;
  value.proposal_id = in.getProposalId();
  value.reason = read_enum(in.getReason(), "LaunchRefused.reason", problems);
  value.detail = read_text(in.getDetail());
  return value;
}

LaunchAdmitted read(wire::LaunchAdmitted::Reader in, Problems& problems) {
  LaunchAdmitted value;
  value.proposal_id = in.getProposalId();
  value.run_id = in.getRunId();
  value.purpose = read_enum(in.getPurpose(), "LaunchAdmitted.purpose", problems);
  value.gpus = in.getGpus();
  value.steps = in.getSteps();
  value.expected_gpu_hours = in.getExpectedGpuHours();
  value.exclude_nodes = read_texts(in.getExcludeNodes());
  value.job_name = read_text(in.getJobName());
  return value;
}

JobSubmitted read(wire::JobSubmitted::Reader in, Problems&) {
  JobSubmitted value;
  value.run_id = in.getRunId();
  value.launcher_job_id = read_text(in.getLauncherJobId());
  value.job_name = read_text(in.getJobName());
  value.at_unix_ns = in.getAtUnixNs();
  return value;
}

JobStarted read(wire::JobStarted::Reader in, Problems&) {
  JobStarted value;
  value.run_id = in.getRunId();
  value.admitted_at_unix_ns = in.getAdmittedAtUnixNs();
  value.nodes = read_texts(in.getNodes());
  return value;
}

JobFinished read(wire::JobFinished::Reader in, Problems&) {
  JobFinished value;
  value.run_id = in.getRunId();
  value.released_at_unix_ns = in.getReleasedAtUnixNs();
  value.final_state = read_text(in.getFinalState());
  value.facts_source = read_text(in.getFactsSource());
  value.log_path = read_text(in.getLogPath());
  return value;
}

RunMeasured read(wire::RunMeasured::Reader in, Problems&) {
  RunMeasured value;
  value.run_id = in.getRunId();
  value.tokens_per_sec_per_gpu = in.getTokensPerSecPerGpu();
  value.step_times_ms = read_numbers<double>(in.getStepTimesMs());
  value.window_rsd = in.getWindowRsd();
  value.peak_memory_gib_by_stage = read_numbers<double>(in.getPeakMemoryGibByStage());
  value.loss_curve = read_numbers<double>(in.getLossCurve());
  value.resolved_args_hash = read_text(in.getResolvedArgsHash());
  return value;
}

RunFailed read(wire::RunFailed::Reader in, Problems& problems) {
  RunFailed value;
  value.run_id = in.getRunId();
  value.failure_class = read_enum(in.getFailureClass(), "RunFailed.failure_class", problems);
  value.message = read_text(in.getMessage());
  value.node = read_text(in.getNode());
  value.cause = read_enum(in.getCause(), "RunFailed.cause", problems);
  return value;
}

Charged read(wire::Charged::Reader in, Problems& problems) {
  Charged value;
  value.run_id = in.getRunId();
  value.account = read_enum(in.getAccount(), "Charged.account", problems);
  value.gpus = in.getGpus();
  value.admitted_at_unix_ns = in.getAdmittedAtUnixNs();
  value.released_at_unix_ns = in.getReleasedAtUnixNs();
  value.gpu_hours = in.getGpuHours();
  if (!std::isfinite(value.gpu_hours) || value.gpu_hours < 0.0) {
    problems.add("Charged.gpu_hours: " + std::to_string(value.gpu_hours) +
                 " is not a finite, non-negative number of GPU-hours");
  }
  return value;
}

BandSet read(wire::BandSet::Reader in, Problems&) {
  BandSet value;
  value.calibration_run_ids = read_numbers<RunId>(in.getCalibrationRunIds());
  value.mean_tokens_per_sec_per_gpu = in.getMeanTokensPerSecPerGpu();
  value.rsd = in.getRsd();
  value.band_fraction = in.getBandFraction();
  value.budget_gpu_hours = in.getBudgetGpuHours();
  value.mean_launch_gpu_hours = in.getMeanLaunchGpuHours();
  return value;
}

VerdictRecorded read(wire::VerdictRecorded::Reader in, Problems& problems) {
  VerdictRecorded value;
  value.run_id = in.getRunId();
  value.verdict = read_enum(in.getVerdict(), "VerdictRecorded.verdict", problems);
  value.gain_fraction = in.getGainFraction();
  value.leader_before = in.getLeaderBefore();
  value.leader_after = in.getLeaderAfter();
  value.band_fraction = in.getBandFraction();
  return value;
}

ProfileAnalyzed read(wire::ProfileAnalyzed::Reader in, Problems& problems) {
  ProfileAnalyzed value;
  value.run_id = in.getRunId();
  value.stages = read_structs<StageBreakdown>(in.getStages(), problems);
  value.slowest_stage = in.getSlowestStage();
  value.largest_cost = read_text(in.getLargestCost());
  value.trace_paths = read_texts(in.getTracePaths());
  return value;
}

StopRecorded read(wire::StopRecorded::Reader in, Problems& problems) {
  StopRecorded value;
  value.reason = read_enum(in.getReason(), "StopRecorded.reason", problems);
  value.leader_run_id = in.getLeaderRunId();
  value.levers_tested = read_texts(in.getLeversTested());
  value.last_diagnosis = read_text(in.getLastDiagnosis());
  value.evidence = read_text(in.getEvidence());
  return value;
}

ConvergenceChecked read(wire::ConvergenceChecked::Reader in, Problems& problems) {
  ConvergenceChecked value;
  value.candidate_run_id = in.getCandidateRunId();
  value.check_run_id = in.getCheckRunId();
  value.has_verdict = in.getHasVerdict();
  value.layer1_passed = in.getLayer1Passed();
  value.layer2_passed = in.getLayer2Passed();
  value.checks = read_structs<ConvergenceCheck>(in.getChecks(), problems);
  value.reason = read_text(in.getReason());
  return value;
}

RecipeShipped read(wire::RecipeShipped::Reader in, Problems&) {
  RecipeShipped value;
  value.run_id = in.getRunId();
  value.is_baseline = in.getIsBaseline();
  value.recipe = read_text(in.getRecipe());
  value.recipe_hash = read_text(in.getRecipeHash());
  value.tokens_per_sec_per_gpu = in.getTokensPerSecPerGpu();
  value.gain_fraction = in.getGainFraction();
  value.evidence = read_text(in.getEvidence());
  return value;
}

AccessDenied read(wire::AccessDenied::Reader in, Problems&) {
  AccessDenied value;
  value.object = read_text(in.getObject());
  value.rule = read_text(in.getRule());
  return value;
}

LeverRuleLearned read(wire::LeverRuleLearned::Reader in, Problems&) {
  LeverRuleLearned value;
  value.lever = read_text(in.getLever());
  value.rule = read_text(in.getRule());
  value.evidence_run_ids = read_numbers<RunId>(in.getEvidenceRunIds());
  value.when = read_text(in.getWhen());
  value.effect = read_text(in.getEffect());
  value.action = read_text(in.getAction());
  return value;
}

ToolCalled read(wire::ToolCalled::Reader in, Problems&) {
  ToolCalled value;
  value.tool = read_text(in.getTool());
  value.input = read_text(in.getInput());
  value.result = read_text(in.getResult());
  value.allowed = in.getAllowed();
  value.source_location = read_text(in.getSourceLocation());
  value.turn = in.getTurn();
  return value;
}

LlmCharged read(wire::LlmCharged::Reader in, Problems&) {
  LlmCharged value;
  value.turn = in.getTurn();
  value.model = read_text(in.getModel());
  value.input_tokens = in.getInputTokens();
  value.output_tokens = in.getOutputTokens();
  value.cost_usd = in.getCostUsd();
  return value;
}

Body read_body(wire::Envelope::Body::Reader in, Problems& problems) {
  using Which = wire::Envelope::Body::Which;
  switch (in.which()) {
    case Which::CAMPAIGN_OPENED:
      return read(in.getCampaignOpened(), problems);
    case Which::CANDIDATE_PROPOSED:
      return read(in.getCandidateProposed(), problems);
    case Which::LAUNCH_REFUSED:
      return read(in.getLaunchRefused(), problems);
    case Which::LAUNCH_ADMITTED:
      return read(in.getLaunchAdmitted(), problems);
    case Which::JOB_SUBMITTED:
      return read(in.getJobSubmitted(), problems);
    case Which::JOB_STARTED:
      return read(in.getJobStarted(), problems);
    case Which::JOB_FINISHED:
      return read(in.getJobFinished(), problems);
    case Which::RUN_MEASURED:
      return read(in.getRunMeasured(), problems);
    case Which::RUN_FAILED:
      return read(in.getRunFailed(), problems);
    case Which::CHARGED:
      return read(in.getCharged(), problems);
    case Which::BAND_SET:
      return read(in.getBandSet(), problems);
    case Which::VERDICT_RECORDED:
      return read(in.getVerdictRecorded(), problems);
    case Which::PROFILE_ANALYZED:
      return read(in.getProfileAnalyzed(), problems);
    case Which::STOP_RECORDED:
      return read(in.getStopRecorded(), problems);
    case Which::CONVERGENCE_CHECKED:
      return read(in.getConvergenceChecked(), problems);
    case Which::RECIPE_SHIPPED:
      return read(in.getRecipeShipped(), problems);
    case Which::ACCESS_DENIED:
      return read(in.getAccessDenied(), problems);
    case Which::LEVER_RULE_LEARNED:
      return read(in.getLeverRuleLearned(), problems);
    case Which::TOOL_CALLED:
      return read(in.getToolCalled(), problems);
    case Which::LLM_CHARGED:
      return read(in.getLlmCharged(), problems);
  }
  problems.add("body: unknown union member " + std::to_string(static_cast<unsigned>(in.which())));
  return Body{};
}

Result<Envelope> read_envelope(wire::Envelope::Reader in) {
  Problems problems;
  Envelope envelope;
  const std::string algorithm = read_text(in.getHashAlgorithm());
  if (algorithm.starts_with(kKeyedHashAlgorithmPrefix)) {
    envelope.key_id = algorithm.substr(kKeyedHashAlgorithmPrefix.size());
    if (envelope.key_id.size() != kKeyIdHexDigits ||
        envelope.key_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
      problems.add("hash_algorithm: \"" + algorithm + "\" names no key id (16 hex digits)");
    }
  } else if (algorithm != kPlainHashAlgorithm) {
    problems.add("hash_algorithm: \"" + algorithm +
                 "\", expected \"sha256\" or \"hmac-sha256:ID\"");
  }
  envelope.sequence = in.getSequence();
  envelope.campaign_id = read_text(in.getCampaignId());
  envelope.recorded_at_unix_ns = in.getRecordedAtUnixNs();
  envelope.actor = read_text(in.getActor());
  envelope.prev_hash = read_digest(in.getPrevHash(), "prev_hash", problems);
  envelope.hash = read_digest(in.getHash(), "hash", problems);
  envelope.body = read_body(in.getBody(), problems);
  if (problems.first()) return make_error("decode_envelope: " + *problems.first());
  return envelope;
}

}  // namespace

std::string encode_envelope(const Envelope& envelope, bool include_hash) {
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<wire::Envelope>();
  out.setSequence(envelope.sequence);
  out.setCampaignId(as_text(envelope.campaign_id));
  out.setRecordedAtUnixNs(envelope.recorded_at_unix_ns);
  out.setActor(as_text(envelope.actor));
  const std::string algorithm = hash_algorithm_of(envelope.key_id);
  out.setHashAlgorithm(capnp::Text::Reader(algorithm.data(), algorithm.size()));
  out.setPrevHash(as_data(envelope.prev_hash));
  if (include_hash) out.setHash(as_data(envelope.hash));
  std::visit([&](const auto& body) { write(body, out.initBody()); }, envelope.body);

  kj::Array<capnp::word> words = capnp::canonicalize(out.asReader());
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

Result<Envelope> decode_envelope(std::string_view bytes) {
  constexpr std::size_t kWordBytes = sizeof(capnp::word);
  if (bytes.empty() || bytes.size() % kWordBytes != 0) {
    return make_error("decode_envelope: " + std::to_string(bytes.size()) +
                      " bytes is not a positive multiple of " + std::to_string(kWordBytes));
  }
  // Cap'n Proto reads words in place, so the bytes are copied to word-aligned memory first: a
  // buffer per thread, grown as needed and reused, since replay decodes millions of events.
  // Whether the bytes are canonical is the chain's question (verify_records re-encodes each
  // event and compares), not the reader's.
  thread_local std::vector<capnp::word> words;
  words.resize(std::max(words.size(), bytes.size() / kWordBytes));
  std::memcpy(words.data(), bytes.data(), bytes.size());
  kj::ArrayPtr<const capnp::word> segments[] = {
      kj::arrayPtr(words.data(), bytes.size() / kWordBytes)};
  try {
    capnp::SegmentArrayMessageReader message(kj::arrayPtr(segments, 1));
    return read_envelope(message.getRoot<wire::Envelope>());
  } catch (const kj::Exception& exception) {
    return make_error("decode_envelope: " + std::string(exception.getDescription().cStr()));
  }
}

Digest chain_hash(const Envelope& envelope, const LedgerKey* key) {
  ATTUNE_ASSERT(envelope.key_id.empty() || (key != nullptr && key->id == envelope.key_id),
                "a keyed event is hashed with the key it names");
  const std::string covered = encode_envelope(envelope, false);
  const std::span<const std::uint8_t> parts[] = {
      envelope.prev_hash, {reinterpret_cast<const std::uint8_t*>(covered.data()), covered.size()}};
  return envelope.key_id.empty() ? sha256(parts) : hmac_sha256(key->secret, parts);
}

}  // namespace attune
