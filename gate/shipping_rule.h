// Shipping rule: which recipe a campaign ships at its end, and which candidate to check next.
//
// Owns one pure decision. The candidates that beat the baseline by more than the band,
// (T - mean) / mean > band strictly (the leader's judging rule), are ordered fastest first, ties
// broken by the lower run id; at most `checks_max` of them (the campaign's reserve of checks,
// three by default) are considered, in that order. Walking them:
// - no gate result yet          -> CheckNext{that run}: it must be checked before any slower one;
// - layer 1 and layer 2 passed  -> Ship{that run};
// - anything else (a layer failed or was not run, or no verdict because both check runs failed
//   on infrastructure) -> the next one. A candidate without a verdict still used one of the
//   `checks_max` checks.
// When the walk ends without a ship, the baseline ships. The decision depends only on the set of
// inputs, never on their order. No clock, no I/O, no state; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "events/event.h"
#include "events/result.h"

namespace attune {

// A measured candidate (a search or retry run with a measurement).
struct ShippingCandidate {
  RunId run_id = 0;  // > 0; 0 is the baseline
  double tokens_per_s_per_gpu = 0.0;
  std::string recipe_hash;

  friend bool operator==(const ShippingCandidate&, const ShippingCandidate&) = default;
};

enum class LayerOutcome : std::uint8_t { kNotRun, kPassed, kFailed };

// The concluded gate check of one candidate (one ConvergenceChecked).
struct GateResult {
  RunId run_id = 0;                             // the candidate checked
  bool has_verdict = false;                     // false: both check runs failed on infrastructure
  LayerOutcome layer1 = LayerOutcome::kNotRun;  // on the check run's resolved arguments
  LayerOutcome layer2 = LayerOutcome::kNotRun;  // convergence of the check run's loss curve

  friend bool operator==(const GateResult&, const GateResult&) = default;
};

struct ShippingInput {
  double baseline_mean_tokens_per_s_per_gpu = 0.0;  // > 0
  double band_fraction = 0.0;                       // >= 0
  std::uint32_t checks_max = 3;                     // candidates considered at most
  std::vector<ShippingCandidate> candidates;        // any order, distinct run ids
  std::vector<GateResult> gate_results;             // any order, at most one per candidate
};

// Check this candidate next (the caller launches its check run and records the result).
struct CheckNext {
  RunId run_id = 0;

  friend bool operator==(const CheckNext&, const CheckNext&) = default;
};

struct Ship {
  RunId run_id = 0;  // 0 = the baseline
  bool is_baseline = true;
  std::string recipe_hash;             // empty for the baseline: the caller holds its hash
  double tokens_per_s_per_gpu = 0.0;   // the baseline mean for the baseline
  double gain_fraction = 0.0;          // over the baseline mean; 0 for the baseline
  std::vector<RunId> checked_run_ids;  // the candidates whose gate results decided, in order
  std::string evidence;                // one line: why this recipe ships

  friend bool operator==(const Ship&, const Ship&) = default;
};

using ShippingDecision = std::variant<CheckNext, Ship>;

// The decision, or an error for inconsistent input: a baseline mean that is not positive and
// finite, a negative or non-finite band, checks_max 0, a candidate with run id 0, a duplicate
// run id, a non-finite throughput, a gate result for a run that is not a candidate or a second
// gate result for one.
Result<ShippingDecision> decide_shipping(const ShippingInput& input);

}  // namespace attune
