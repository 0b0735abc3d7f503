#include "projections/ledger_table.h"

#include <gtest/gtest.h>

#include "projections/campaign_view.h"
#include "stream_builder.h"

namespace attune {
namespace {

using test::flag_change;
using test::StreamBuilder;

TEST(DiffSummary, NamesEachChangeBeforeAndAfter) {
  const std::vector<SettingChange> diff = {flag_change("--tensor-model-parallel-size", "2", "1"),
                                           flag_change("--recompute-granularity", "", "full")};
  EXPECT_EQ(diff_summary_of(diff),
            "--tensor-model-parallel-size 2\xE2\x86\x92"
            "1; --recompute-granularity (none)\xE2\x86\x92"
            "full");
}

TEST(DiffSummary, AnEmptyDiffIsTheBaseline) { EXPECT_EQ(diff_summary_of({}), "baseline"); }

TEST(DiffSummary, APresentFlagWithoutAValueIsSet) {
  SettingChange change = flag_change("--overlap-grad-reduce", "", "");
  change.after_present = true;
  const std::vector<SettingChange> diff = {change};
  EXPECT_EQ(diff_summary_of(diff), "--overlap-grad-reduce (none)\xE2\x86\x92(set)");
}

TEST(ObjectiveClasses, AreDistinctInOrderOfFirstAppearance) {
  const std::vector<SettingChange> diff = {
      flag_change("--a", "1", "2", ObjectiveClass::kSameMath),
      flag_change("--b", "1", "2", ObjectiveClass::kStructural),
      flag_change("--c", "1", "2", ObjectiveClass::kSameMath)};
  EXPECT_EQ(objective_classes_of(diff),
            (std::vector<ObjectiveClass>{ObjectiveClass::kSameMath, ObjectiveClass::kStructural}));
}

TEST(LedgerTable, OneRowPerAdmittedRunAndRefusalsApart) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.band_set(1000.0, 0.0, 0.03);
  b.propose(2, RunPurpose::kSearch,
            {flag_change("--micro-batch-size", "1", "2", ObjectiveClass::kNumeric)});
  b.refuse(2, RefusalReason::kLayer1, "--micro-batch-size is numeric");
  b.measured_run(3, RunPurpose::kSearch, 1100.0,
                 {flag_change("--tensor-model-parallel-size", "2", "1")});
  const CampaignView view = fold(b.events());
  const LedgerTable& ledger = view.ledger;
  ASSERT_EQ(ledger.rows.size(), 2u);
  EXPECT_FALSE(ledger.rows.contains(2));

  const LedgerRow& baseline = ledger.rows.at(1);
  EXPECT_EQ(baseline.purpose, RunPurpose::kCalibration);
  EXPECT_EQ(baseline.diff_summary, "baseline");
  EXPECT_EQ(baseline.verdict, Verdict::kCalibration);

  const LedgerRow& candidate = ledger.rows.at(3);
  EXPECT_EQ(candidate.diff_summary,
            "--tensor-model-parallel-size 2\xE2\x86\x92"
            "1");
  EXPECT_EQ(candidate.objective_classes, std::vector<ObjectiveClass>{ObjectiveClass::kStructural});
  EXPECT_EQ(candidate.hypothesis.bottleneck, "tp comm");
  EXPECT_EQ(candidate.tokens_per_s_per_gpu, 1100.0);
  EXPECT_FALSE(candidate.failure_class);
  EXPECT_EQ(candidate.verdict, Verdict::kNewLeader);
  EXPECT_DOUBLE_EQ(candidate.gain_fraction, 0.1);
  EXPECT_DOUBLE_EQ(candidate.gpu_hours_charged, 2.0);
  EXPECT_EQ(candidate.account, Account::kTuner);
  EXPECT_TRUE(candidate.admitted_at_unix_ns);
  EXPECT_TRUE(candidate.released_at_unix_ns);

  ASSERT_EQ(ledger.refused.size(), 1u);
  EXPECT_EQ(ledger.refused[0].proposal_id, 2u);
  EXPECT_EQ(ledger.refused[0].reason, RefusalReason::kLayer1);
  EXPECT_EQ(ledger.refused[0].detail, "--micro-batch-size is numeric");
  EXPECT_EQ(ledger.refused[0].diff_summary,
            "--micro-batch-size 1\xE2\x86\x92"
            "2");
}

TEST(LedgerTable, LinksAnInfrastructureRetryBothWays) {
  StreamBuilder b;
  b.open();
  b.band_set(1000.0, 0.0, 0.03);
  b.failed_run(1, RunPurpose::kSearch, FailureClass::kInfra,
               {flag_change("--tensor-model-parallel-size", "2", "1")});
  b.propose(2, RunPurpose::kRetry, {flag_change("--tensor-model-parallel-size", "2", "1")}, 1);
  b.admit(2, 2, RunPurpose::kRetry);
  const CampaignView view = fold(b.events());
  const LedgerRow& failed = view.ledger.rows.at(1);
  EXPECT_EQ(failed.failure_class, FailureClass::kInfra);
  EXPECT_EQ(failed.account, Account::kInfra);
  EXPECT_EQ(failed.verdict, Verdict::kFailed);
  EXPECT_EQ(failed.retried_by_run_id, 2u);
  EXPECT_EQ(view.ledger.rows.at(2).retry_of_run_id, 1u);
  EXPECT_FALSE(view.ledger.rows.at(2).verdict);
}

TEST(LedgerTable, VerdictsGivenWhenTheBandIsSetReachTheRows) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kSearch, 1100.0, {flag_change("--x", "1", "2")});
  EXPECT_FALSE(fold(b.events()).ledger.rows.at(1).verdict);
  b.band_set(1000.0, 0.0, 0.03);
  EXPECT_EQ(fold(b.events()).ledger.rows.at(1).verdict, Verdict::kNewLeader);
}

TEST(LedgerTable, AnAdmissionOfAnUnknownProposalStillMakesARow) {
  StreamBuilder b;
  b.open();
  b.admit(42, 1, RunPurpose::kSearch);
  const CampaignView view = fold(b.events());
  ASSERT_TRUE(view.ledger.rows.contains(1));
  EXPECT_EQ(view.ledger.rows.at(1).proposal_id, 42u);
  EXPECT_TRUE(view.ledger.rows.at(1).recipe.empty());
  EXPECT_EQ(view.ledger.rows.at(1).diff_summary, "(proposal 42 unknown)");
}

}  // namespace
}  // namespace attune
