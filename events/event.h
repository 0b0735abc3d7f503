// The ledger's vocabulary: one immutable fact per event, in plain C++ types.
//
// Every event is an Envelope (sequence number, campaign, recorded time, actor, hash chain) around
// one body from the Body variant. Bodies are facts in the past tense. events.capnp is the wire
// form of exactly these types; codec.h converts between the two and is the only place that sees
// Cap'n Proto. Fields carry their unit in their name. New fields are added at the end of a
// struct, as Cap'n Proto's evolution rules require of the schema.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "events/sha256.h"

namespace attune {

using RunId = std::uint32_t;       // 1, 2, ... within a campaign; 0 means "none"
using ProposalId = std::uint32_t;  // 1, 2, ... within a campaign; 0 means "none"

// Why a run was launched. Charged to the tuner's account unless it fails on infrastructure.
enum class RunPurpose : std::uint8_t { kCalibration, kSearch, kCheck, kRetry };

enum class ObjectiveClass : std::uint8_t { kStructural, kSameMath, kNumeric, kOther };

// kPruned: a black-box search's early abort (slower than a fraction of the leader after a few
// steady steps), scored zero; not a fault of the recipe or the cluster.
enum class FailureClass : std::uint8_t { kOom, kHang, kCrash, kInfra, kPruned };

// What a failed run's deciding evidence names as the cause, finer than its class: the mark the
// log reader matched, or the launcher's fact. kUnknown when the evidence names no cause in this
// list (a traceback, an assertion, Slurm's FAILED).
enum class FailureCause : std::uint8_t {
  kUnknown,
  kOutOfMemory,          // CUDA, cuBLAS or NCCL could not allocate; Slurm's OUT_OF_MEMORY
  kGpuFault,             // a critical Xid, an uncorrectable ECC error, a GPU off the bus
  kNodeFailure,          // Slurm's node failure, NODE_FAIL or BOOT_FAIL
  kNonFiniteValue,       // Megatron's NaN/Inf check, or a logged loss or norm not finite
  kIllegalMemoryAccess,  // a kernel's illegal memory access
  kDuplicateGpu,         // NCCL: two ranks on one GPU
  kTransportStart,       // NVSHMEM (DeepEP's transport) could not start
  kNetwork,              // NCCL's network layer: InfiniBand verbs, a NET plugin that cannot start
  kSystem,               // NCCL's system or internal error: a system call, a library, a device
  kStorage,              // an I/O error, a stale file handle, a full disk or quota
  kPreemption,           // Slurm preempted the job
  kCollectiveTimeout,    // NCCL's watchdog caught a collective that did not finish
  kTimeLimit,            // Slurm's time limit, TIMEOUT or DEADLINE
  kNoProgress,  // the log stopped growing past the hang timeout; PyTorch's NCCL watchdog got stuck
};

enum class RefusalReason : std::uint8_t {
  kDuplicate,       // canonical hash equals a recipe already run
  kMultipleLevers,  // more than one lever or coupled set
  kLayer1,          // configuration check refused
  kBudget,          // expected cost does not fit the remaining budget less the reserve
  kConcurrency,     // too many runs in flight
  kInvalid,         // malformed proposal (unknown run, bad recipe)
};

enum class Account : std::uint8_t { kTuner, kInfra };

enum class Verdict : std::uint8_t {
  kNewLeader,    // beat the leader by more than the band
  kNotBetter,    // measured, did not clear the band
  kFailed,       // no measurement (oom, hang, crash, or two infra failures)
  kCalibration,  // a calibration run; not judged against a leader
};

enum class StopReason : std::uint8_t { kBudgetSpent, kTunerStopped, kOperator };

enum class ChangeKind : std::uint8_t { kFlag, kEnv };

// One setting that differs between two recipes. An empty before/after with present=false means
// the setting is absent on that side.
struct SettingChange {
  ChangeKind kind = ChangeKind::kFlag;
  std::string name;  // canonical flag spelling ("--micro-batch-size") or env var name
  bool before_present = false;
  std::string before;
  bool after_present = false;
  std::string after;
  ObjectiveClass objective_class = ObjectiveClass::kNumeric;

  friend bool operator==(const SettingChange&, const SettingChange&) = default;
};

struct Lever {
  std::string name;
  ObjectiveClass objective_class = ObjectiveClass::kNumeric;

  friend bool operator==(const Lever&, const Lever&) = default;
};

struct Hypothesis {
  std::string bottleneck;
  std::string mechanism;
  double expected_gain_fraction = 0.0;
  std::string bottleneck_tag;  // the diagnosis tag (ep_a2a, tp_comm, ...) when the tuner names one

  friend bool operator==(const Hypothesis&, const Hypothesis&) = default;
};

// ---- Bodies ---------------------------------------------------------------------------------

struct CampaignOpened {
  std::string name;
  std::string model;     // preset name or path of a model TOML file
  std::string hardware;  // preset name or path of a hardware TOML file
  std::uint32_t gpu_count = 0;
  std::uint32_t seq_length = 0;
  std::uint32_t global_batch = 0;
  std::string precision;             // "bf16" or "fp8"
  std::string data;                  // dataset description or path
  std::string baseline_recipe;       // canonical text
  std::string baseline_recipe_hash;  // hex SHA-256 of the canonical text
  std::string policy_name;
  std::string policy_hash;  // hex SHA-256 of the policy file's bytes
  bool budget_auto = false;
  double budget_gpu_hours = 0.0;  // 0 while budget_auto and calibration has not finished
  std::uint32_t reserve_checks = 3;
  std::uint32_t concurrency = 3;
  std::uint32_t steps_per_run = 14;
  std::uint32_t window_first_step = 4;
  std::uint32_t window_last_step = 13;
  std::uint32_t check_steps = 20;
  std::uint32_t hang_timeout_minutes = 30;
  double band_floor_fraction = 0.03;
  double band_k = 3.0;
  std::uint32_t calibration_runs = 5;
  std::string tuner;
  std::uint64_t seed = 0;
  std::uint64_t reality_seed = 0;
  std::string campaign_file_hash;          // hex SHA-256 of the campaign file's bytes
  std::string launcher;                    // "sim", "local", "slurm"
  std::string policy_path;                 // empty for the built-in default policy
  std::string job_template;                // the local launcher's command line, with placeholders
  double expected_seconds_per_step = 0.0;  // the local launcher's cost estimate
  std::string learned_rules;       // the learned-rules catalog as read at the start (JSON lines)
  std::string learned_rules_path;  // where the campaign appends what it learns; empty: nowhere
  std::string tuner_options;       // the campaign file's [tuner] table (TOML text)
  bool tuner_black_box = false;    // the tuner draws whole configurations: rule 2 does not bind it
  std::string lever_groups_hash;   // hex SHA-256 of the lever groups that count levers (rule 2)
  double usd_per_gpu_hour = 0.0;   // [cost]: the price of one GPU-hour; 0 = no dollar figures
  std::string sim_stack;  // the simulated cluster's stack: preset name or path; empty: default

  friend bool operator==(const CampaignOpened&, const CampaignOpened&) = default;
};

struct CandidateProposed {
  ProposalId proposal_id = 0;
  RunPurpose purpose = RunPurpose::kSearch;
  std::string recipe;               // canonical text of the full candidate recipe
  std::string recipe_hash;          // hex SHA-256 of recipe
  std::vector<SettingChange> diff;  // against the baseline
  std::vector<Lever> levers;        // search: against the parent run; otherwise the baseline
  Hypothesis hypothesis;
  bool profile = false;       // run with profiling (3 extra steps, one traced rank per stage)
  RunId retry_of_run_id = 0;  // set for an infrastructure retry
  RunId check_of_run_id = 0;  // set for a correctness check run
  RunId parent_run_id = 0;    // the run whose recipe it changes (0 = the baseline)

  friend bool operator==(const CandidateProposed&, const CandidateProposed&) = default;
};

struct LaunchRefused {
  ProposalId proposal_id = 0;
  RefusalReason reason = RefusalReason::kInvalid;
  std::string detail;  // one line naming the flag, its class and the rule, or the budget figures

  friend bool operator==(const LaunchRefused&, const LaunchRefused&) = default;
};

struct LaunchAdmitted {
  ProposalId proposal_id = 0;
  RunId run_id = 0;
  RunPurpose purpose = RunPurpose::kSearch;
  std::uint32_t gpus = 0;
  std::uint32_t steps = 0;
  double expected_gpu_hours = 0.0;
  std::vector<std::string> exclude_nodes;  // nodes the launcher must avoid
  std::string job_name;                    // deterministic from campaign and run id

  friend bool operator==(const LaunchAdmitted&, const LaunchAdmitted&) = default;
};

struct JobSubmitted {
  RunId run_id = 0;
  std::string launcher_job_id;
  std::string job_name;
  std::int64_t at_unix_ns = 0;

  friend bool operator==(const JobSubmitted&, const JobSubmitted&) = default;
};

struct JobStarted {
  RunId run_id = 0;
  std::int64_t admitted_at_unix_ns = 0;  // cluster admission: charging starts here
  std::vector<std::string> nodes;

  friend bool operator==(const JobStarted&, const JobStarted&) = default;
};

struct JobFinished {
  RunId run_id = 0;
  std::int64_t released_at_unix_ns = 0;  // cluster release: charging ends here
  std::string final_state;   // the scheduler's word: COMPLETED, FAILED, OUT_OF_MEMORY, ...
  std::string facts_source;  // where the facts came from: sim, local, sacct, squeue, jobcomp
  std::string log_path;

  friend bool operator==(const JobFinished&, const JobFinished&) = default;
};

struct RunMeasured {
  RunId run_id = 0;
  double tokens_per_sec_per_gpu = 0.0;  // aggregate over the measurement window
  std::vector<double> step_times_ms;    // every logged step
  double window_rsd = 0.0;              // relative std. dev. of step time within the window
  std::vector<double> peak_memory_gib_by_stage;
  std::vector<double> loss_curve;  // lm loss per step
  std::string resolved_args_hash;  // hex SHA-256 of the printed arguments block

  friend bool operator==(const RunMeasured&, const RunMeasured&) = default;
};

struct RunFailed {
  RunId run_id = 0;
  FailureClass failure_class = FailureClass::kCrash;
  std::string message;  // the log line or scheduler state that decided the class
  std::string node;     // the node blamed, when known (infrastructure failures)
  FailureCause cause = FailureCause::kUnknown;  // what the deciding evidence names

  friend bool operator==(const RunFailed&, const RunFailed&) = default;
};

struct Charged {
  RunId run_id = 0;
  Account account = Account::kTuner;
  std::uint32_t gpus = 0;
  std::int64_t admitted_at_unix_ns = 0;
  std::int64_t released_at_unix_ns = 0;
  double gpu_hours = 0.0;  // gpus * (released - admitted)

  friend bool operator==(const Charged&, const Charged&) = default;
};

struct BandSet {
  std::vector<RunId> calibration_run_ids;
  double mean_tokens_per_sec_per_gpu = 0.0;
  double rsd = 0.0;
  double band_fraction = 0.0;
  double budget_gpu_hours = 0.0;  // the budget in force from here on (sized here when auto)
  double mean_launch_gpu_hours = 0.0;

  friend bool operator==(const BandSet&, const BandSet&) = default;
};

struct VerdictRecorded {
  RunId run_id = 0;
  Verdict verdict = Verdict::kNotBetter;
  double gain_fraction = 0.0;  // (T_run - T_baseline_mean) / T_baseline_mean
  RunId leader_before = 0;     // 0 = the baseline
  RunId leader_after = 0;
  double band_fraction = 0.0;

  friend bool operator==(const VerdictRecorded&, const VerdictRecorded&) = default;
};

struct CommTime {
  std::string kind;  // tp, ep_a2a, pp_p2p, dp, cp, unknown
  double exposed_ms = 0.0;

  friend bool operator==(const CommTime&, const CommTime&) = default;
};

struct StageBreakdown {
  std::uint32_t stage = 0;
  double step_ms = 0.0;
  double compute_ms = 0.0;
  std::vector<CommTime> exposed_comm;
  double host_bound_ms = 0.0;
  double idle_ms = 0.0;

  friend bool operator==(const StageBreakdown&, const StageBreakdown&) = default;
};

struct ProfileAnalyzed {
  RunId run_id = 0;
  std::vector<StageBreakdown> stages;
  std::uint32_t slowest_stage = 0;
  std::string largest_cost;  // e.g. "ep_a2a on stage 3"
  std::vector<std::string> trace_paths;

  friend bool operator==(const ProfileAnalyzed&, const ProfileAnalyzed&) = default;
};

struct StopRecorded {
  StopReason reason = StopReason::kBudgetSpent;
  RunId leader_run_id = 0;
  std::vector<std::string> levers_tested;
  std::string last_diagnosis;
  std::string evidence;

  friend bool operator==(const StopRecorded&, const StopRecorded&) = default;
};

struct ConvergenceCheck {
  std::string name;
  double measured = 0.0;
  double threshold = 0.0;
  bool passed = false;

  friend bool operator==(const ConvergenceCheck&, const ConvergenceCheck&) = default;
};

struct ConvergenceChecked {
  RunId candidate_run_id = 0;
  RunId check_run_id = 0;  // 0 when no check run produced a verdict
  bool has_verdict = false;
  bool layer1_passed = false;
  bool layer2_passed = false;
  std::vector<ConvergenceCheck> checks;
  std::string reason;

  friend bool operator==(const ConvergenceChecked&, const ConvergenceChecked&) = default;
};

struct RecipeShipped {
  RunId run_id = 0;  // 0 = the baseline
  bool is_baseline = true;
  std::string recipe;
  std::string recipe_hash;
  double tokens_per_sec_per_gpu = 0.0;
  double gain_fraction = 0.0;
  std::string evidence;

  friend bool operator==(const RecipeShipped&, const RecipeShipped&) = default;
};

struct AccessDenied {
  std::string object;  // what was attempted: a path, a command, a flag
  std::string rule;    // the rule that refused it

  friend bool operator==(const AccessDenied&, const AccessDenied&) = default;
};

struct LeverRuleLearned {
  std::string lever;
  std::string rule;  // guidance without model names or figures
  std::vector<RunId> evidence_run_ids;
  std::string when;    // the diagnosis tag it was learned under
  std::string effect;  // "helped" or "hurt"
  std::string action;  // the change in words ("--moe-token-dispatcher-type set to flex"), if any

  friend bool operator==(const LeverRuleLearned&, const LeverRuleLearned&) = default;
};

// A tool call of an agent tuner and its answer. A framework-source read records where it read
// (the paper's rule 3: read a flag's implementation before using it).
struct ToolCalled {
  std::string tool;
  std::string input;   // the arguments, JSON
  std::string result;  // the answer, cut to kToolResultBytesMax
  bool allowed = true;
  std::string source_location;  // "path:first-last" for framework-source reads
  std::uint32_t turn = 0;

  friend bool operator==(const ToolCalled&, const ToolCalled&) = default;
};
inline constexpr std::size_t kToolResultBytesMax = 4096;

// One LLM turn's tokens and cost, on the LLM account.
struct LlmCharged {
  std::uint32_t turn = 0;
  std::string model;
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  double cost_usd = 0.0;

  friend bool operator==(const LlmCharged&, const LlmCharged&) = default;
};

using Body =
    std::variant<CampaignOpened, CandidateProposed, LaunchRefused, LaunchAdmitted, JobSubmitted,
                 JobStarted, JobFinished, RunMeasured, RunFailed, Charged, BandSet, VerdictRecorded,
                 ProfileAnalyzed, StopRecorded, ConvergenceChecked, RecipeShipped, AccessDenied,
                 LeverRuleLearned, ToolCalled, LlmCharged>;

// What a writer hands to the store: the store assigns sequence numbers and hashes.
struct NewEvent {
  std::int64_t recorded_at_unix_ns = 0;
  std::string actor;  // "control-plane", "tuner:expert", "launcher:sim", "operator", ...
  Body body;
};

// A recorded event, as read back from the ledger.
struct Envelope {
  std::uint64_t sequence = 0;  // 1, 2, ... within a campaign
  std::string campaign_id;
  std::int64_t recorded_at_unix_ns = 0;
  std::string actor;
  // The ledger key that chains it (events/ledger_key.h); empty for an unkeyed ledger's event.
  std::string key_id;
  Digest prev_hash{};  // all zero for the first event
  // HMAC-SHA256(key, prev_hash || canonical bytes of this envelope without hash); plain SHA-256
  // of the same bytes when key_id is empty.
  Digest hash{};
  Body body;

  friend bool operator==(const Envelope&, const Envelope&) = default;
};

// The body's type name as it appears in exports ("RunMeasured").
const char* body_name(const Body& body);

const char* to_string(RunPurpose value);
const char* to_string(ObjectiveClass value);
const char* to_string(FailureClass value);
const char* to_string(FailureCause value);
// A failure's class and, when it names one, its cause: "crash (transport-start)", "hang".
std::string failure_text(FailureClass failure_class, FailureCause cause);
const char* to_string(RefusalReason value);
const char* to_string(Account value);
const char* to_string(Verdict value);
const char* to_string(StopReason value);
const char* to_string(ChangeKind value);

}  // namespace attune
