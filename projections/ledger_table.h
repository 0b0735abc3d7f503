// LedgerTable: one row per admitted run — what it changed, why, what it measured, what it cost.
//
// Owns the campaign's run table as the tuner and the user read it: for each admitted run its
// purpose, its proposal (recipe, diff, levers, hypothesis), the objective classes of its changes,
// its job times, its measurement or failure class, the verdict the Leader projection gave it, the
// GPU-hours charged and the infrastructure-retry and check links; plus every refused proposal.
// Refused proposals are not runs. A pure value type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "events/event.h"
#include "projections/leader.h"

namespace attune {

struct LedgerRow {
  RunId run_id = 0;
  ProposalId proposal_id = 0;
  RunPurpose purpose = RunPurpose::kSearch;
  std::uint32_t gpus = 0;
  double expected_gpu_hours = 0.0;
  std::uint64_t admitted_sequence = 0;

  // From the proposal (empty when the admission names an unknown proposal).
  std::string recipe;
  std::string recipe_hash;
  std::vector<SettingChange> diff;
  std::string diff_summary;                       // "baseline" for an empty diff
  std::vector<ObjectiveClass> objective_classes;  // distinct, in order of first appearance
  std::vector<Lever> levers;
  Hypothesis hypothesis;
  bool profile = false;

  // From the jobs and the metrics reader.
  std::optional<std::int64_t> admitted_at_unix_ns;  // JobStarted
  std::optional<std::int64_t> released_at_unix_ns;  // JobFinished
  std::vector<std::string> nodes;
  std::optional<double> tokens_per_s_per_gpu;  // the first measurement
  std::optional<FailureClass> failure_class;   // the first failure
  std::string failure_message;
  FailureCause failure_cause = FailureCause::kUnknown;  // what its deciding evidence names

  // From the Leader projection.
  std::optional<Verdict> verdict;
  double gain_fraction = 0.0;

  // From the charges.
  std::uint32_t charge_count = 0;
  double gpu_hours_charged = 0.0;  // sum of this run's charges, in event order
  std::optional<Account> account;  // the first charge's account

  // Links between runs; 0 = none.
  RunId retry_of_run_id = 0;
  RunId retried_by_run_id = 0;
  RunId check_of_run_id = 0;
  RunId parent_run_id = 0;  // the run whose recipe a search run changes (0 = the baseline)

  friend bool operator==(const LedgerRow&, const LedgerRow&) = default;
};

struct RefusedProposal {
  std::uint64_t sequence = 0;
  ProposalId proposal_id = 0;
  RefusalReason reason = RefusalReason::kInvalid;
  std::string detail;
  std::string diff_summary;  // empty when the proposal is unknown

  friend bool operator==(const RefusedProposal&, const RefusedProposal&) = default;
};

struct LedgerTable {
  std::map<RunId, LedgerRow> rows;
  std::vector<RefusedProposal> refused;  // in event order
  // Proposals not yet admitted or refused, by id (first wins). An admitted proposal moves into
  // its row; a refused one leaves its diff summary in `refused`.
  std::map<ProposalId, CandidateProposed> pending;

  friend bool operator==(const LedgerTable&, const LedgerTable&) = default;
};

LedgerTable initial_ledger_table();

// Applies one event. `leader` is the Leader projection after this same event.
void evolve(LedgerTable& state, const Envelope& event, const Leader& leader);
// The same, taking a proposal's contents instead of copying them (a replay's events are not read
// again); `event` is left valid but unspecified.
void evolve(LedgerTable& state, Envelope&& event, const Leader& leader);

// One side of a change as the tables show it: "(none)" when absent, "(set)" for a flag without a
// value, else the value.
std::string side_text(bool present, const std::string& value);

// "--tensor-model-parallel-size 2→1; --recompute-granularity (none)→full"; "baseline" for an
// empty diff. An absent side reads "(none)", a present flag without a value "(set)".
std::string diff_summary_of(std::span<const SettingChange> diff);

// The distinct objective classes of the changes, in order of first appearance.
std::vector<ObjectiveClass> objective_classes_of(std::span<const SettingChange> diff);

}  // namespace attune
