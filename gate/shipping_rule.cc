#include "gate/shipping_rule.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "projections/leader.h"
#include "projections/number_format.h"

namespace attune {

namespace {

constexpr int kThroughputDecimals = 2;
constexpr int kPercentDecimals = 2;

bool passed_gate(const GateResult& result) {
  return result.has_verdict && result.layer1 == LayerOutcome::kPassed &&
         result.layer2 == LayerOutcome::kPassed;
}

std::string layer_text(const char* layer, LayerOutcome outcome) {
  switch (outcome) {
    case LayerOutcome::kPassed:
      return std::string("passed ") + layer;
    case LayerOutcome::kFailed:
      return std::string("failed ") + layer;
    case LayerOutcome::kNotRun:
      return std::string("skipped ") + layer;
  }
  return std::string("unknown outcome of ") + layer;
}

std::string outcome_text(const GateResult& result) {
  if (!result.has_verdict) return "got no verdict (both check runs failed on infrastructure)";
  return layer_text("layer 1", result.layer1) + " and " + layer_text("layer 2", result.layer2);
}

std::string run_text(const ShippingCandidate& candidate, double baseline_mean) {
  return "run " + std::to_string(candidate.run_id) + " (" +
         format_fixed(candidate.tokens_per_s_per_gpu, kThroughputDecimals) + " tokens/s/GPU, " +
         format_signed_percent(gain_fraction_of(candidate.tokens_per_s_per_gpu, baseline_mean),
                               kPercentDecimals) +
         ")";
}

Status validate(const ShippingInput& input) {
  if (!std::isfinite(input.baseline_mean_tokens_per_s_per_gpu) ||
      !(input.baseline_mean_tokens_per_s_per_gpu > 0.0)) {
    return make_error("the baseline mean throughput must be positive and finite, got " +
                      format_fixed(input.baseline_mean_tokens_per_s_per_gpu, kThroughputDecimals));
  }
  if (!std::isfinite(input.band_fraction) || input.band_fraction < 0.0) {
    return make_error("the band must be a non-negative finite fraction, got " +
                      format_fixed(input.band_fraction, 6));
  }
  if (input.checks_max == 0) return make_error("checks_max must be at least 1");
  std::set<RunId> run_ids;
  for (const ShippingCandidate& candidate : input.candidates) {
    if (candidate.run_id == 0) return make_error("a candidate has run id 0 (the baseline's)");
    if (!run_ids.insert(candidate.run_id).second) {
      return make_error("run " + std::to_string(candidate.run_id) + " is listed twice");
    }
    if (!std::isfinite(candidate.tokens_per_s_per_gpu)) {
      return make_error("run " + std::to_string(candidate.run_id) + " has a non-finite throughput");
    }
  }
  std::set<RunId> checked;
  for (const GateResult& result : input.gate_results) {
    if (!run_ids.contains(result.run_id)) {
      return make_error("a gate result names run " + std::to_string(result.run_id) +
                        ", which is not a measured candidate");
    }
    if (!checked.insert(result.run_id).second) {
      return make_error("run " + std::to_string(result.run_id) + " has two gate results");
    }
  }
  return Ok{};
}

// The candidates that beat the baseline mean by more than the band, fastest first; run ids are
// distinct, so this order is total and the input order is irrelevant.
std::vector<ShippingCandidate> eligible_fastest_first(const ShippingInput& input) {
  const double mean = input.baseline_mean_tokens_per_s_per_gpu;
  std::vector<ShippingCandidate> eligible;
  for (const ShippingCandidate& candidate : input.candidates) {
    if (beats_by_more_than_band(candidate.tokens_per_s_per_gpu, mean, mean, input.band_fraction)) {
      eligible.push_back(candidate);
    }
  }
  std::sort(eligible.begin(), eligible.end(),
            [](const ShippingCandidate& a, const ShippingCandidate& b) {
              if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
                return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
              }
              return a.run_id < b.run_id;
            });
  return eligible;
}

// The baseline's evidence when no candidate beat the band: the band, and the fastest candidate.
std::string nothing_beat_the_band_text(const ShippingInput& input, const std::string& band_text) {
  const double mean = input.baseline_mean_tokens_per_s_per_gpu;
  std::string evidence = "no candidate beat the baseline mean " +
                         format_fixed(mean, kThroughputDecimals) +
                         " tokens/s/GPU by more than the band " + band_text;
  const auto fastest = std::max_element(input.candidates.begin(), input.candidates.end(),
                                        [](const ShippingCandidate& a, const ShippingCandidate& b) {
                                          if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
                                            return a.tokens_per_s_per_gpu < b.tokens_per_s_per_gpu;
                                          }
                                          return a.run_id > b.run_id;
                                        });
  if (fastest != input.candidates.end()) evidence += "; fastest " + run_text(*fastest, mean);
  return evidence;
}

// The baseline's evidence when every checked candidate failed the gate: each one's outcome, and
// how many slower ones beat the band beyond the checks allowed.
std::string none_passed_text(const ShippingInput& input,
                             const std::vector<ShippingCandidate>& eligible,
                             const std::map<RunId, GateResult>& results) {
  const double mean = input.baseline_mean_tokens_per_s_per_gpu;
  const std::size_t considered = std::min<std::size_t>(eligible.size(), input.checks_max);
  std::string evidence =
      "none of the " + std::to_string(considered) + " candidate(s) checked passed the gate";
  for (std::size_t i = 0; i < considered; ++i) {
    evidence +=
        "; " + run_text(eligible[i], mean) + " " + outcome_text(results.at(eligible[i].run_id));
  }
  if (eligible.size() > considered) {
    evidence += "; " + std::to_string(eligible.size() - considered) +
                " slower candidate(s) beat the band but are beyond the " +
                std::to_string(input.checks_max) + " checks allowed";
  }
  return evidence;
}

}  // namespace

Result<ShippingDecision> decide_shipping(const ShippingInput& input) {
  if (Status valid = validate(input); !valid.ok()) return make_error(valid.error());
  const double mean = input.baseline_mean_tokens_per_s_per_gpu;

  const std::vector<ShippingCandidate> eligible = eligible_fastest_first(input);
  std::map<RunId, GateResult> results;
  for (const GateResult& result : input.gate_results) results.emplace(result.run_id, result);

  const std::string band_text = format_percent(input.band_fraction, kPercentDecimals);
  const std::size_t considered = std::min<std::size_t>(eligible.size(), input.checks_max);
  Ship ship;
  ship.tokens_per_s_per_gpu = mean;
  std::string passed_over;  // the faster candidates that did not pass, for the evidence
  for (std::size_t i = 0; i < considered; ++i) {
    const ShippingCandidate& candidate = eligible[i];
    const auto found = results.find(candidate.run_id);
    if (found == results.end()) return ShippingDecision{CheckNext{candidate.run_id}};
    ship.checked_run_ids.push_back(candidate.run_id);
    if (passed_gate(found->second)) {
      ship.run_id = candidate.run_id;
      ship.is_baseline = false;
      ship.recipe_hash = candidate.recipe_hash;
      ship.tokens_per_s_per_gpu = candidate.tokens_per_s_per_gpu;
      ship.gain_fraction = gain_fraction_of(candidate.tokens_per_s_per_gpu, mean);
      ship.evidence = run_text(candidate, mean) + " beats the baseline mean " +
                      format_fixed(mean, kThroughputDecimals) + " by more than the band " +
                      band_text + " and " + outcome_text(found->second) + passed_over;
      return ShippingDecision{std::move(ship)};
    }
    passed_over += "; faster " + run_text(candidate, mean) + " " + outcome_text(found->second);
  }

  ship.evidence = eligible.empty() ? nothing_beat_the_band_text(input, band_text)
                                   : none_passed_text(input, eligible, results);
  return ShippingDecision{std::move(ship)};
}

}  // namespace attune
