// Properties of the whole fold over random campaigns, and a few unit tests of CampaignView.
#include "projections/campaign_view.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "campaign_generator.h"
#include "projections/render.h"
#include "stream_builder.h"

namespace attune {
namespace {

using test::gen_campaign;
using test::gen_chaotic_stream;
using test::StreamBuilder;

std::string all_bytes(const CampaignView& view) {
  return to_json(view).dump() + render_status_text(view) + render_ledger_text(view) +
         render_audit_text(view);
}

void check_prefix_then_rest_equals_whole(const std::vector<Envelope>& events) {
  const auto split = *rc::gen::inRange<std::size_t>(0, events.size() + 1);
  const std::span<const Envelope> all(events);
  CampaignView view = fold(all.first(split));
  for (const Envelope& event : all.subspan(split)) evolve(view, event);
  RC_ASSERT(view == fold(all));
}

void check_deterministic(const std::vector<Envelope>& events) {
  const std::string first = all_bytes(fold(events));
  RC_ASSERT(first == all_bytes(fold(events)));
  const std::vector<Envelope> copy = events;
  RC_ASSERT(first == all_bytes(fold(copy)));
}

void check_books(const std::vector<Envelope>& events) {
  CampaignView view = initial_view();
  double charged_gpu_hours = 0.0;
  for (const Envelope& event : events) {
    evolve(view, event);
    if (const auto* charge = std::get_if<Charged>(&event.body)) {
      charged_gpu_hours += std::max(0.0, charge->gpu_hours);
    }
    const Budget& b = view.budget;
    for (double figure :
         {b.budget_gpu_hours, b.reserve_gpu_hours, b.tuner_gpu_hours, b.checks_gpu_hours,
          b.infra_gpu_hours, b.charged_gpu_hours, b.in_flight_gpu_hours, b.remaining_gpu_hours,
          b.reserve_left_gpu_hours, b.overshoot_gpu_hours}) {
      RC_ASSERT(figure >= 0.0);
    }
    RC_ASSERT(b.charged_gpu_hours == charged_gpu_hours);
    const double accounts = b.tuner_gpu_hours + b.checks_gpu_hours + b.infra_gpu_hours;
    RC_ASSERT(std::fabs(accounts - b.charged_gpu_hours) <=
              1e-9 * std::max(1.0, b.charged_gpu_hours));
  }
}

bool is_judged_purpose(RunPurpose purpose) {
  return purpose == RunPurpose::kSearch || purpose == RunPurpose::kRetry;
}

// The leader changes only to a measured, admitted search or retry run that beats the previous
// leader by more than the band; and every such run measured once the band is set is judged then.
void check_leader_changes(const std::vector<Envelope>& events) {
  CampaignView view = initial_view();
  for (const Envelope& event : events) {
    const CampaignView before = view;
    evolve(view, event);
    const BaselineBand& band = view.baseline_band;
    RunId previous_run_id = before.leader.run_id;
    double previous_tokens =
        previous_run_id == 0 ? band.mean_tokens_per_s_per_gpu : before.leader.tokens_per_s_per_gpu;
    for (std::size_t k = before.leader.history.size(); k < view.leader.history.size(); ++k) {
      const LeaderChange& change = view.leader.history[k];
      RC_ASSERT(band.band_set);
      RC_ASSERT(change.previous_run_id == previous_run_id);
      RC_ASSERT(change.run_id != 0u);
      const auto row = view.ledger.rows.find(change.run_id);
      RC_ASSERT(row != view.ledger.rows.end());
      RC_ASSERT(is_judged_purpose(row->second.purpose));
      RC_ASSERT(row->second.tokens_per_s_per_gpu.has_value());
      RC_ASSERT(*row->second.tokens_per_s_per_gpu == change.tokens_per_s_per_gpu);
      RC_ASSERT((change.tokens_per_s_per_gpu - previous_tokens) / band.mean_tokens_per_s_per_gpu >
                band.band_fraction);
      previous_run_id = change.run_id;
      previous_tokens = change.tokens_per_s_per_gpu;
    }
    RC_ASSERT(view.leader.run_id == previous_run_id);

    const auto* measured = std::get_if<RunMeasured>(&event.body);
    if (measured == nullptr || !band.band_set) continue;
    const auto row_before = before.ledger.rows.find(measured->run_id);
    if (row_before == before.ledger.rows.end()) continue;
    const LedgerRow& row = row_before->second;
    if (measured->run_id == 0 || !is_judged_purpose(row.purpose) || row.tokens_per_s_per_gpu ||
        row.failure_class) {
      continue;
    }
    const RunVerdict& verdict = view.leader.verdicts.at(measured->run_id);
    RC_ASSERT(verdict.sequence == event.sequence);
    const double leader_tokens = before.leader.run_id == 0 ? band.mean_tokens_per_s_per_gpu
                                                           : before.leader.tokens_per_s_per_gpu;
    // No gain can be judged against a baseline mean that is not positive.
    const bool beats =
        band.mean_tokens_per_s_per_gpu > 0.0 &&
        (measured->tokens_per_sec_per_gpu - leader_tokens) / band.mean_tokens_per_s_per_gpu >
            band.band_fraction;
    RC_ASSERT((verdict.verdict == Verdict::kNewLeader) == beats);
    RC_ASSERT(view.leader.run_id == (beats ? measured->run_id : before.leader.run_id));
  }
}

RC_GTEST_PROP(CampaignProperties, FoldingAPrefixThenTheRestEqualsFoldingTheWhole, ()) {
  check_prefix_then_rest_equals_whole(*gen_campaign());
}

RC_GTEST_PROP(CampaignProperties, FoldingIsDeterministic, ()) {
  check_deterministic(*gen_campaign());
}

RC_GTEST_PROP(CampaignProperties, TheBooksNeverGoNegativeAndAddUp, ()) {
  check_books(*gen_campaign());
}

RC_GTEST_PROP(CampaignProperties, TheLeaderChangesOnlyToARunThatClearsTheBand, ()) {
  check_leader_changes(*gen_campaign());
}

RC_GTEST_PROP(CampaignProperties, AWellFormedCampaignAuditsClean, ()) {
  const std::vector<Envelope> events = *gen_campaign();
  const CampaignView view = fold(events);
  for (const AuditFinding& finding : view.audit.findings) {
    RC_FAIL("event " + std::to_string(finding.sequence) + ": " + finding.message);
  }
  RC_ASSERT(view.audit.event_count == events.size());
  // Shows what the generator covers (printed with the property's result).
  RC_CLASSIFY(view.leader.run_id != 0, "a run leads");
  RC_CLASSIFY(view.ledger.rows.size() > 10, "more than 10 runs");
  RC_CLASSIFY(view.leader.history.size() >= 2, "the leader changed twice");
  RC_CLASSIFY(view.budget.infra_gpu_hours > 0.0, "infrastructure charged");
  RC_CLASSIFY(view.budget.checks_gpu_hours > 0.0, "checks charged");
  RC_CLASSIFY(view.stop.state == CampaignState::kShipped, "shipped");
  RC_CLASSIFY(view.budget.overshoot_gpu_hours > 0.0, "overshoot");
}

RC_GTEST_PROP(CampaignProperties, EveryAdmittedRunIsARowAndEveryRefusalIsNot, ()) {
  const std::vector<Envelope> events = *gen_campaign();
  const CampaignView view = fold(events);
  std::size_t admitted = 0;
  std::size_t refused = 0;
  for (const Envelope& event : events) {
    if (std::holds_alternative<LaunchAdmitted>(event.body)) ++admitted;
    if (std::holds_alternative<LaunchRefused>(event.body)) ++refused;
  }
  RC_ASSERT(view.ledger.rows.size() == admitted);
  RC_ASSERT(view.ledger.refused.size() == refused);
  RC_ASSERT(view.audit.refusals.size() == refused);
}

RC_GTEST_PROP(ChaoticStreamProperties, FoldingAPrefixThenTheRestEqualsFoldingTheWhole, ()) {
  check_prefix_then_rest_equals_whole(*gen_chaotic_stream());
}

RC_GTEST_PROP(ChaoticStreamProperties, FoldingIsDeterministicAndRenders, ()) {
  check_deterministic(*gen_chaotic_stream());
}

RC_GTEST_PROP(ChaoticStreamProperties, TheBooksNeverGoNegativeAndAddUp, ()) {
  check_books(*gen_chaotic_stream());
}

RC_GTEST_PROP(ChaoticStreamProperties, TheLeaderChangesOnlyToARunThatClearsTheBand, ()) {
  check_leader_changes(*gen_chaotic_stream());
}

TEST(CampaignView, StartsEmpty) {
  const CampaignView view = initial_view();
  EXPECT_FALSE(view.opened);
  EXPECT_EQ(view.event_count, 0u);
  EXPECT_EQ(view.leader.run_id, 0u);
  EXPECT_EQ(view.stop.state, CampaignState::kRunning);
  EXPECT_EQ(view, fold({}));
}

TEST(CampaignView, KeepsTheFirstCampaignOpened) {
  CampaignOpened second = test::test_opened(5.0);
  second.model = "other";
  StreamBuilder b("c-42");
  b.open(test::test_opened(100.0));
  b.open(second);
  const CampaignView view = fold(b.events());
  EXPECT_TRUE(view.opened);
  EXPECT_EQ(view.campaign_id, "c-42");
  EXPECT_EQ(view.settings.model, "llama3-8b");
  EXPECT_EQ(view.budget.budget_gpu_hours, 100.0);
  EXPECT_EQ(view.event_count, 2u);
  EXPECT_EQ(view.last_sequence, 2u);
  EXPECT_EQ(view.audit.findings.size(), 1u);
}

TEST(CampaignView, EvolvingEventByEventEqualsFolding) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.band_set(1000.0, 0.0, 0.03, 0.0, 2.0);
  b.measured_run(2, RunPurpose::kSearch, 1100.0, {test::flag_change("--x", "1", "2")});
  CampaignView view = initial_view();
  for (const Envelope& event : b.events()) evolve(view, event);
  EXPECT_EQ(view, fold(b.events()));
  EXPECT_EQ(view.leader.run_id, 2u);
}

}  // namespace
}  // namespace attune
