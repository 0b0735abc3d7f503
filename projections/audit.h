// Audit: consistency checks over a campaign's event stream, and the lists `attune audit` prints.
//
// Owns the findings: one line each, naming the event (by sequence number) where the stream stops
// being consistent. Checks: sequence numbers start at 1 and are contiguous; every event names the
// first event's campaign and links to its predecessor's hash (the hashes themselves are the
// event store's to verify); the first event is the only CampaignOpened; every LaunchAdmitted and
// LaunchRefused refers to a proposal; every job, measurement, failure, verdict and charge refers
// to an admitted run; no run is measured or failed twice, or both; at most one charge per run,
// with the admitted GPUs, released >= admitted, gpu_hours == gpus x (released - admitted) within
// 1e-9 relative, and the job's own admission and release times when those are recorded. Also
// lists every charge, every LLM turn's charge, every refused launch and every access denied. A pure
// value type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "events/event.h"
#include "projections/id_map.h"
#include "projections/id_set.h"

namespace attune {

inline constexpr double kUnixNsPerHour = 3.6e12;
inline constexpr double kChargeRelativeTolerance = 1e-9;

struct AuditFinding {
  std::uint64_t sequence = 0;  // the event where the inconsistency shows
  std::string message;         // one line

  friend bool operator==(const AuditFinding&, const AuditFinding&) = default;
};

struct ChargeEntry {
  std::uint64_t sequence = 0;
  RunId run_id = 0;
  Account account = Account::kTuner;
  std::uint32_t gpus = 0;
  std::int64_t admitted_at_unix_ns = 0;
  std::int64_t released_at_unix_ns = 0;
  double gpu_hours = 0.0;

  friend bool operator==(const ChargeEntry&, const ChargeEntry&) = default;
};

struct RefusalEntry {
  std::uint64_t sequence = 0;
  ProposalId proposal_id = 0;
  RefusalReason reason = RefusalReason::kInvalid;
  std::string detail;

  friend bool operator==(const RefusalEntry&, const RefusalEntry&) = default;
};

struct AccessDeniedEntry {
  std::uint64_t sequence = 0;
  std::string actor;  // from the envelope
  std::string object;
  std::string rule;

  friend bool operator==(const AccessDeniedEntry&, const AccessDeniedEntry&) = default;
};

struct LlmChargeEntry {
  std::uint64_t sequence = 0;
  std::string actor;
  std::uint32_t turn = 0;
  std::string model;
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  double cost_usd = 0.0;

  friend bool operator==(const LlmChargeEntry&, const LlmChargeEntry&) = default;
};

struct AuditRun {
  std::uint32_t gpus = 0;
  std::optional<std::int64_t> started_at_unix_ns;   // JobStarted
  std::optional<std::int64_t> finished_at_unix_ns;  // JobFinished
  std::optional<ChargeEntry> first_charge;
  bool measured = false;
  bool failed = false;

  friend bool operator==(const AuditRun&, const AuditRun&) = default;
};

struct Audit {
  std::vector<AuditFinding> findings;  // in event order
  std::vector<ChargeEntry> charges;
  std::vector<RefusalEntry> refusals;
  std::vector<AccessDeniedEntry> access_denied;
  std::vector<LlmChargeEntry> llm_charges;

  // Bookkeeping.
  std::uint64_t event_count = 0;
  std::uint64_t last_sequence = 0;
  Digest last_hash{};
  std::string campaign_id;  // the first event's
  bool opened = false;
  IdSet proposal_ids;
  IdMap<AuditRun> runs;  // admitted runs

  friend bool operator==(const Audit&, const Audit&) = default;
};

Audit initial_audit();

void evolve(Audit& state, const Envelope& event);

// gpus x (released - admitted) in GPU-hours.
double gpu_hours_of(std::uint32_t gpus, std::int64_t admitted_at_unix_ns,
                    std::int64_t released_at_unix_ns);

}  // namespace attune
