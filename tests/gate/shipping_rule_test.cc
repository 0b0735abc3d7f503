#include "gate/shipping_rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kMean = 1000.0;
constexpr double kBand = 0.03;

ShippingCandidate candidate(RunId run_id, double tokens_per_s_per_gpu) {
  return ShippingCandidate{run_id, tokens_per_s_per_gpu, "hash-" + std::to_string(run_id)};
}

GateResult passed(RunId run_id) {
  return GateResult{run_id, true, LayerOutcome::kPassed, LayerOutcome::kPassed};
}
GateResult failed_layer1(RunId run_id) {
  return GateResult{run_id, true, LayerOutcome::kFailed, LayerOutcome::kNotRun};
}
GateResult failed_layer2(RunId run_id) {
  return GateResult{run_id, true, LayerOutcome::kPassed, LayerOutcome::kFailed};
}
GateResult no_verdict(RunId run_id) {
  return GateResult{run_id, false, LayerOutcome::kNotRun, LayerOutcome::kNotRun};
}

ShippingInput campaign(std::vector<ShippingCandidate> candidates,
                       std::vector<GateResult> results = {}) {
  ShippingInput input;
  input.baseline_mean_tokens_per_s_per_gpu = kMean;
  input.band_fraction = kBand;
  input.candidates = std::move(candidates);
  input.gate_results = std::move(results);
  return input;
}

ShippingDecision decide(const ShippingInput& input) {
  Result<ShippingDecision> decision = decide_shipping(input);
  EXPECT_TRUE(decision.ok()) << decision.error();
  return decision.ok() ? decision.value() : ShippingDecision{};
}

std::optional<RunId> check_next(const ShippingDecision& decision) {
  if (const auto* next = std::get_if<CheckNext>(&decision)) return next->run_id;
  return std::nullopt;
}

Ship shipped(const ShippingDecision& decision) {
  const auto* ship = std::get_if<Ship>(&decision);
  EXPECT_NE(ship, nullptr) << "expected a Ship, got CheckNext";
  return ship != nullptr ? *ship : Ship{};
}

TEST(ShippingRule, NoCandidateShipsTheBaseline) {
  const Ship ship = shipped(decide(campaign({})));
  EXPECT_TRUE(ship.is_baseline);
  EXPECT_EQ(ship.run_id, 0u);
  EXPECT_EQ(ship.tokens_per_s_per_gpu, kMean);
  EXPECT_EQ(ship.gain_fraction, 0.0);
  EXPECT_TRUE(ship.checked_run_ids.empty());
  EXPECT_THAT(ship.evidence, HasSubstr("no candidate beat the baseline mean 1000.00"));
}

TEST(ShippingRule, TheBandIsStrict) {
  // (1030 - 1000) / 1000 = 0.03, not more than the band.
  Ship ship = shipped(decide(campaign({candidate(4, 1030.0)}, {passed(4)})));
  EXPECT_TRUE(ship.is_baseline);
  EXPECT_THAT(ship.evidence, HasSubstr("fastest run 4 (1030.00 tokens/s/GPU, +3.00%)"));
  EXPECT_EQ(check_next(decide(campaign({candidate(4, 1030.5)}))), 4u);
}

TEST(ShippingRule, ChecksTheFastestFirst) {
  const ShippingInput input =
      campaign({candidate(1, 1100.0), candidate(2, 1200.0), candidate(3, 1150.0)});
  EXPECT_EQ(check_next(decide(input)), 2u);
}

TEST(ShippingRule, TiesGoToTheLowerRunId) {
  EXPECT_EQ(check_next(decide(campaign({candidate(5, 1200.0), candidate(3, 1200.0)}))), 3u);
}

TEST(ShippingRule, ShipsTheFirstThatPassesBothLayers) {
  const ShippingInput input =
      campaign({candidate(1, 1100.0), candidate(2, 1200.0), candidate(3, 1150.0)}, {passed(2)});
  const Ship ship = shipped(decide(input));
  EXPECT_FALSE(ship.is_baseline);
  EXPECT_EQ(ship.run_id, 2u);
  EXPECT_EQ(ship.recipe_hash, "hash-2");
  EXPECT_EQ(ship.tokens_per_s_per_gpu, 1200.0);
  EXPECT_DOUBLE_EQ(ship.gain_fraction, 0.2);
  EXPECT_THAT(ship.checked_run_ids, ElementsAre(2u));
  EXPECT_THAT(ship.evidence, HasSubstr("run 2 (1200.00 tokens/s/GPU, +20.00%) beats the baseline"));
  EXPECT_THAT(ship.evidence, HasSubstr("passed layer 1 and passed layer 2"));
}

TEST(ShippingRule, AFailedCandidateMovesToTheNext) {
  const std::vector<ShippingCandidate> candidates{candidate(1, 1100.0), candidate(2, 1200.0),
                                                  candidate(3, 1150.0)};
  EXPECT_EQ(check_next(decide(campaign(candidates, {failed_layer2(2)}))), 3u);
  const Ship ship = shipped(decide(campaign(candidates, {failed_layer2(2), passed(3)})));
  EXPECT_EQ(ship.run_id, 3u);
  EXPECT_THAT(ship.checked_run_ids, ElementsAre(2u, 3u));
  EXPECT_THAT(ship.evidence, HasSubstr("faster run 2 (1200.00 tokens/s/GPU, +20.00%) passed "
                                       "layer 1 and failed layer 2"));
}

TEST(ShippingRule, NoVerdictIsSkippedForTheNext) {
  const std::vector<ShippingCandidate> candidates{candidate(1, 1100.0), candidate(2, 1200.0)};
  EXPECT_EQ(check_next(decide(campaign(candidates, {no_verdict(2)}))), 1u);
  const Ship ship = shipped(decide(campaign(candidates, {no_verdict(2), passed(1)})));
  EXPECT_EQ(ship.run_id, 1u);
  EXPECT_THAT(ship.evidence,
              HasSubstr("got no verdict (both check runs failed on infrastructure)"));
}

TEST(ShippingRule, NeverShipsAFailedOrSkippedLayer) {
  const std::vector<ShippingCandidate> one{candidate(1, 1100.0)};
  for (const GateResult& result :
       {failed_layer1(1), failed_layer2(1), no_verdict(1),
        GateResult{1, true, LayerOutcome::kPassed, LayerOutcome::kNotRun},
        GateResult{1, true, LayerOutcome::kNotRun, LayerOutcome::kPassed},
        GateResult{1, true, LayerOutcome::kFailed, LayerOutcome::kPassed},
        GateResult{1, false, LayerOutcome::kPassed, LayerOutcome::kPassed}}) {
    const Ship ship = shipped(decide(campaign(one, {result})));
    EXPECT_TRUE(ship.is_baseline);
    EXPECT_THAT(ship.checked_run_ids, ElementsAre(1u));
    EXPECT_THAT(ship.evidence, HasSubstr("none of the 1 candidate(s) checked passed the gate"));
  }
}

TEST(ShippingRule, ConsidersAtMostThree) {
  const std::vector<ShippingCandidate> candidates{candidate(1, 1400.0), candidate(2, 1300.0),
                                                  candidate(3, 1200.0), candidate(4, 1100.0)};
  const Ship ship = shipped(
      decide(campaign(candidates, {failed_layer1(1), no_verdict(2), failed_layer2(3), passed(4)})));
  EXPECT_TRUE(ship.is_baseline);
  EXPECT_THAT(ship.checked_run_ids, ElementsAre(1u, 2u, 3u));
  EXPECT_THAT(ship.evidence, HasSubstr("1 slower candidate(s) beat the band but are beyond the 3 "
                                       "checks allowed"));
  // Without a result for the fourth, it is still not asked for.
  EXPECT_TRUE(std::holds_alternative<Ship>(
      decide(campaign(candidates, {failed_layer1(1), no_verdict(2), failed_layer2(3)}))));
}

TEST(ShippingRule, ChecksMaxIsAParameter) {
  ShippingInput input = campaign({candidate(1, 1400.0), candidate(2, 1300.0)}, {failed_layer1(1)});
  input.checks_max = 1;
  EXPECT_TRUE(shipped(decide(input)).is_baseline);
  input.checks_max = 2;
  EXPECT_EQ(check_next(decide(input)), 2u);
}

TEST(ShippingRule, AFasterUncheckedCandidateComesBeforeASlowerPassingOne) {
  const ShippingInput input = campaign({candidate(1, 1100.0), candidate(2, 1200.0)}, {passed(1)});
  EXPECT_EQ(check_next(decide(input)), 2u);
}

TEST(ShippingRule, CandidatesInsideTheBandAreNeverCheckedOrShipped) {
  const ShippingInput input =
      campaign({candidate(1, 1010.0), candidate(2, 900.0), candidate(3, 1100.0)},
               {passed(1), passed(2), failed_layer2(3)});
  const Ship ship = shipped(decide(input));
  EXPECT_TRUE(ship.is_baseline);
  EXPECT_THAT(ship.checked_run_ids, ElementsAre(3u));
}

TEST(ShippingRule, RejectsInconsistentInput) {
  ShippingInput input = campaign({candidate(1, 1100.0), candidate(1, 1200.0)});
  EXPECT_THAT(decide_shipping(input).error(), HasSubstr("run 1 is listed twice"));
  input = campaign({candidate(0, 1100.0)});
  EXPECT_THAT(decide_shipping(input).error(), HasSubstr("run id 0"));
  input = campaign({candidate(1, 1100.0)}, {passed(2)});
  EXPECT_THAT(decide_shipping(input).error(), HasSubstr("not a measured candidate"));
  input = campaign({candidate(1, 1100.0)}, {passed(1), failed_layer2(1)});
  EXPECT_THAT(decide_shipping(input).error(), HasSubstr("two gate results"));
  input = campaign({candidate(1, std::numeric_limits<double>::quiet_NaN())});
  EXPECT_THAT(decide_shipping(input).error(), HasSubstr("non-finite throughput"));
  input = campaign({});
  input.baseline_mean_tokens_per_s_per_gpu = 0.0;
  EXPECT_FALSE(decide_shipping(input).ok());
  input = campaign({});
  input.band_fraction = -0.01;
  EXPECT_FALSE(decide_shipping(input).ok());
  input = campaign({});
  input.checks_max = 0;
  EXPECT_FALSE(decide_shipping(input).ok());
}

// ---- Properties over random campaigns ----

enum class TrueOutcome { kPass, kFailLayer1, kFailLayer2, kSkipLayer2, kNoVerdict };

GateResult result_for(RunId run_id, TrueOutcome outcome) {
  switch (outcome) {
    case TrueOutcome::kPass:
      return passed(run_id);
    case TrueOutcome::kFailLayer1:
      return failed_layer1(run_id);
    case TrueOutcome::kFailLayer2:
      return failed_layer2(run_id);
    case TrueOutcome::kSkipLayer2:
      return GateResult{run_id, true, LayerOutcome::kPassed, LayerOutcome::kNotRun};
    case TrueOutcome::kNoVerdict:
      return no_verdict(run_id);
  }
  return no_verdict(run_id);
}

constexpr std::size_t kCandidatesMax = 8;

struct RandomCampaign {
  ShippingInput input;                    // without gate results
  std::map<RunId, TrueOutcome> outcomes;  // what each candidate's check would give
};

// Up to 8 candidates with distinct run ids, throughputs on a 1 % grid from -10 % to +30 % of the
// mean (so ties and candidates exactly at the band occur), and a band from 0 to 10 %.
RandomCampaign random_campaign() {
  RandomCampaign c;
  c.input.baseline_mean_tokens_per_s_per_gpu = *rc::gen::inRange(500, 2001);
  c.input.band_fraction = *rc::gen::inRange(0, 11) / 100.0;
  std::vector<RunId> ids = *rc::gen::unique<std::vector<RunId>>(rc::gen::inRange<RunId>(1, 40));
  if (ids.size() > kCandidatesMax) ids.resize(kCandidatesMax);
  for (RunId id : ids) {
    const int gain_percent = *rc::gen::inRange(-10, 31);
    c.input.candidates.push_back(
        candidate(id, c.input.baseline_mean_tokens_per_s_per_gpu * (1.0 + gain_percent / 100.0)));
    c.outcomes[id] =
        *rc::gen::element(TrueOutcome::kPass, TrueOutcome::kFailLayer1, TrueOutcome::kFailLayer2,
                          TrueOutcome::kSkipLayer2, TrueOutcome::kNoVerdict);
  }
  return c;
}

// Fisher-Yates with rapidcheck's draws, so a failing order shrinks and replays.
template <typename T>
std::vector<T> random_permutation(std::vector<T> items) {
  for (std::size_t i = items.size(); i > 1; --i) {
    const std::size_t j = *rc::gen::inRange<std::size_t>(0, i);
    std::swap(items[i - 1], items[j]);
  }
  return items;
}

bool clears_band(const ShippingInput& input, const ShippingCandidate& c) {
  const double mean = input.baseline_mean_tokens_per_s_per_gpu;
  return (c.tokens_per_s_per_gpu - mean) / mean > input.band_fraction;
}

// The eligible candidates, fastest first, ties by run id: the specification's order.
std::vector<ShippingCandidate> eligible_in_order(const ShippingInput& input) {
  std::vector<ShippingCandidate> eligible;
  for (const ShippingCandidate& c : input.candidates) {
    if (clears_band(input, c)) eligible.push_back(c);
  }
  std::sort(eligible.begin(), eligible.end(), [](const auto& a, const auto& b) {
    return std::make_pair(-a.tokens_per_s_per_gpu, a.run_id) <
           std::make_pair(-b.tokens_per_s_per_gpu, b.run_id);
  });
  return eligible;
}

const ShippingCandidate* find_candidate(const ShippingInput& input, RunId run_id) {
  for (const ShippingCandidate& c : input.candidates) {
    if (c.run_id == run_id) return &c;
  }
  return nullptr;
}

struct CampaignEnd {
  Ship ship;
  std::vector<RunId> checked;  // in the order they were asked for
};

// Runs the rule to its end: every CheckNext is answered with the candidate's true outcome.
CampaignEnd run_to_ship(RandomCampaign c) {
  CampaignEnd end;
  for (std::size_t round = 0; round <= c.input.candidates.size(); ++round) {
    const Result<ShippingDecision> decision = decide_shipping(c.input);
    RC_ASSERT(decision.ok());
    if (const auto* ship = std::get_if<Ship>(&decision.value())) {
      end.ship = *ship;
      return end;
    }
    const RunId next = std::get<CheckNext>(decision.value()).run_id;
    RC_ASSERT(std::find(end.checked.begin(), end.checked.end(), next) == end.checked.end());
    end.checked.push_back(next);
    c.input.gate_results.push_back(result_for(next, c.outcomes.at(next)));
  }
  RC_FAIL("the rule asked for more checks than there are candidates");
}

RC_GTEST_PROP(ShippingRuleProperty, NeverShipsARecipeThatFailedOrSkippedALayer, ()) {
  const RandomCampaign c = random_campaign();
  const CampaignEnd end = run_to_ship(c);
  if (!end.ship.is_baseline) {
    RC_ASSERT(c.outcomes.at(end.ship.run_id) == TrueOutcome::kPass);
    const ShippingCandidate* shipped_candidate = find_candidate(c.input, end.ship.run_id);
    RC_ASSERT(shipped_candidate != nullptr);
    RC_ASSERT(clears_band(c.input, *shipped_candidate));
    RC_ASSERT(end.ship.recipe_hash == shipped_candidate->recipe_hash);
  }
}

RC_GTEST_PROP(ShippingRuleProperty, ShipsTheBaselineExactlyWhenNoneOfTheFirstThreePasses, ()) {
  const RandomCampaign c = random_campaign();
  const std::vector<ShippingCandidate> eligible = eligible_in_order(c.input);
  bool any_passes = false;
  for (std::size_t i = 0; i < std::min<std::size_t>(eligible.size(), 3); ++i) {
    any_passes = any_passes || c.outcomes.at(eligible[i].run_id) == TrueOutcome::kPass;
  }
  RC_ASSERT(run_to_ship(c).ship.is_baseline == !any_passes);
}

RC_GTEST_PROP(ShippingRuleProperty, NeverAsksToCheckMoreThanThree, ()) {
  const RandomCampaign c = random_campaign();
  const CampaignEnd end = run_to_ship(c);
  RC_ASSERT(end.checked.size() <= 3u);
  RC_ASSERT(end.checked == end.ship.checked_run_ids);
  for (RunId id : end.checked) {
    const ShippingCandidate* checked_candidate = find_candidate(c.input, id);
    RC_ASSERT(checked_candidate != nullptr);
    RC_ASSERT(clears_band(c.input, *checked_candidate));
  }
}

RC_GTEST_PROP(ShippingRuleProperty, AFasterPassingCandidateIsNeverPassedOver, ()) {
  const RandomCampaign c = random_campaign();
  const CampaignEnd end = run_to_ship(c);
  const std::vector<ShippingCandidate> eligible = eligible_in_order(c.input);
  // Every candidate ahead of the shipped one (or, for the baseline, among the first three)
  // was checked and did not pass; the checks went in speed order.
  std::size_t ahead = std::min<std::size_t>(eligible.size(), 3);
  if (!end.ship.is_baseline) {
    ahead = static_cast<std::size_t>(
        std::find_if(eligible.begin(), eligible.end(),
                     [&](const ShippingCandidate& e) { return e.run_id == end.ship.run_id; }) -
        eligible.begin());
    RC_ASSERT(ahead < eligible.size());
  }
  for (std::size_t i = 0; i < ahead; ++i) {
    RC_ASSERT(c.outcomes.at(eligible[i].run_id) != TrueOutcome::kPass);
    RC_ASSERT(i < end.checked.size() && end.checked[i] == eligible[i].run_id);
  }
}

// Arbitrary partial results (any subset of candidates, in any order) give the same decision
// for every order of the inputs, and the same decision twice.
RC_GTEST_PROP(ShippingRuleProperty, IsDeterministicAndIndependentOfInputOrder, ()) {
  RandomCampaign c = random_campaign();
  for (const ShippingCandidate& candidate : c.input.candidates) {
    if (*rc::gen::arbitrary<bool>()) {
      c.input.gate_results.push_back(result_for(candidate.run_id, c.outcomes.at(candidate.run_id)));
    }
  }
  const Result<ShippingDecision> first = decide_shipping(c.input);
  RC_ASSERT(first.ok());
  const Result<ShippingDecision> again = decide_shipping(c.input);
  RC_ASSERT(again.ok());
  RC_ASSERT(first.value() == again.value());

  ShippingInput shuffled = c.input;
  shuffled.candidates = random_permutation(c.input.candidates);
  shuffled.gate_results = random_permutation(c.input.gate_results);
  const Result<ShippingDecision> reordered = decide_shipping(shuffled);
  RC_ASSERT(reordered.ok());
  RC_ASSERT(first.value() == reordered.value());
}

// With arbitrary partial results, a CheckNext names an unchecked eligible candidate among the
// first three, and every one ahead of it was checked and did not pass.
RC_GTEST_PROP(ShippingRuleProperty, CheckNextIsTheFastestUnresolvedOfTheFirstThree, ()) {
  RandomCampaign c = random_campaign();
  for (const ShippingCandidate& candidate : c.input.candidates) {
    if (*rc::gen::arbitrary<bool>()) {
      c.input.gate_results.push_back(result_for(candidate.run_id, c.outcomes.at(candidate.run_id)));
    }
  }
  const Result<ShippingDecision> decision = decide_shipping(c.input);
  RC_ASSERT(decision.ok());
  const auto* next = std::get_if<CheckNext>(&decision.value());
  if (next == nullptr) return;
  std::map<RunId, TrueOutcome> checked;
  for (const GateResult& result : c.input.gate_results) {
    checked[result.run_id] = c.outcomes.at(result.run_id);
  }
  const std::vector<ShippingCandidate> eligible = eligible_in_order(c.input);
  std::size_t position = 0;
  while (position < eligible.size() && eligible[position].run_id != next->run_id) ++position;
  RC_ASSERT(position < std::min<std::size_t>(eligible.size(), 3));
  RC_ASSERT(!checked.contains(next->run_id));
  for (std::size_t i = 0; i < position; ++i) {
    RC_ASSERT(checked.contains(eligible[i].run_id));
    RC_ASSERT(checked.at(eligible[i].run_id) != TrueOutcome::kPass);
  }
}

}  // namespace
}  // namespace attune
