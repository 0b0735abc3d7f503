// The control plane's rules, each with a test that fails if the rule is broken.
#include "core/decide.h"

#include <gtest/gtest.h>

#include "events/recipe.h"
#include "gate/policy.h"
#include "tests/core/campaign_driver.h"

namespace attune {
namespace {

TEST(Decide, SearchWaitsForCalibrationAndTheBandIsSetFromIt) {
  Campaign campaign;
  const auto early = campaign.apply(
      proposal(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4")));
  ASSERT_NE(find_body<LaunchRefused>(early), nullptr);
  EXPECT_EQ(find_body<LaunchRefused>(early)->reason, RefusalReason::kInvalid);

  campaign.calibrate({1000.0, 1010.0});
  EXPECT_FALSE(campaign.state().view.baseline_band.band_set);
  RunId last = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  const auto finished = campaign.run_for(last, 0.5, Campaign::measured(990.0));
  const BandSet* band = find_body<BandSet>(finished);
  ASSERT_NE(band, nullptr);
  EXPECT_DOUBLE_EQ(band->mean_tokens_per_sec_per_gpu, 1000.0);
  EXPECT_NEAR(band->rsd, 0.01, 1e-12);                  // sample std dev 10 over mean 1000
  EXPECT_NEAR(band->band_fraction, 0.03, 1e-12);        // max(3 %, 3 x 1 %)
  EXPECT_NEAR(band->mean_launch_gpu_hours, 8.0, 1e-9);  // 16 GPUs x 0.5 h
  EXPECT_DOUBLE_EQ(band->budget_gpu_hours, 240.0);      // 30 x 8 = 240, a multiple of 10
  EXPECT_EQ(phase_of(campaign.state()), Phase::kSearching);
}

TEST(Decide, AutoBudgetRoundsUpToTenGpuHours) {
  EXPECT_DOUBLE_EQ(auto_budget_gpu_hours(8.0), 240.0);
  EXPECT_DOUBLE_EQ(auto_budget_gpu_hours(8.01), 250.0);
  EXPECT_DOUBLE_EQ(auto_budget_gpu_hours(0.1), 10.0);
}

TEST(Decide, TheBandIsThreeSigmaWhenThatExceedsTheFloor) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1040.0, 960.0});
  EXPECT_NEAR(campaign.state().view.baseline_band.band_fraction, 0.12, 1e-12);  // 3 x 4 %
}

TEST(Decide, RefusesARecipeIdenticalToOneAlreadyRun) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  ProposeLaunch same = proposal(RunPurpose::kSearch, campaign.baseline());
  const auto refused = campaign.apply(same);
  ASSERT_NE(find_body<LaunchRefused>(refused), nullptr);
  EXPECT_EQ(find_body<LaunchRefused>(refused)->reason, RefusalReason::kDuplicate);

  // Another spelling of the same recipe is the same recipe.
  Recipe respelled = recipe_of(
      "--bf16 --lr 0.00001 --tensor-model-parallel-size=2 --pipeline-model-parallel-size 2 "
      "--micro-batch-size 1 --global-batch-size 64 --recompute-granularity selective");
  const auto refused_again = campaign.apply(proposal(RunPurpose::kSearch, respelled));
  ASSERT_NE(find_body<LaunchRefused>(refused_again), nullptr);
  EXPECT_EQ(find_body<LaunchRefused>(refused_again)->reason, RefusalReason::kDuplicate);
}

TEST(Decide, RefusesMoreThanOneLeverButAdmitsOneCoupledSetOfParallelDegrees) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  Recipe two_levers = campaign.with("--pipeline-model-parallel-size", "4");
  ASSERT_TRUE(set_flag(two_levers, "--recompute-granularity", "full").ok());
  const auto refused = campaign.apply(proposal(RunPurpose::kSearch, two_levers));
  ASSERT_NE(find_body<LaunchRefused>(refused), nullptr);
  EXPECT_EQ(find_body<LaunchRefused>(refused)->reason, RefusalReason::kMultipleLevers);
  EXPECT_NE(find_body<LaunchRefused>(refused)->detail.find("recompute"), std::string::npos);

  Recipe coupled = campaign.with("--pipeline-model-parallel-size", "4");
  ASSERT_TRUE(set_flag(coupled, "--tensor-model-parallel-size", "1").ok());
  const auto admitted = campaign.apply(proposal(RunPurpose::kSearch, coupled));
  EXPECT_NE(find_body<LaunchAdmitted>(admitted), nullptr);
  const CandidateProposed* proposed = find_body<CandidateProposed>(admitted);
  ASSERT_NE(proposed, nullptr);
  ASSERT_EQ(proposed->levers.size(), 1u);
  EXPECT_EQ(proposed->levers[0].name, "parallel-layout");
  EXPECT_EQ(proposed->levers[0].objective_class, ObjectiveClass::kStructural);
}

TEST(Decide, CountsLeversAgainstTheParentRunNotTheBaseline) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  RunId deeper =
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  ASSERT_NE(deeper, 0u);
  Recipe child = campaign.with("--pipeline-model-parallel-size", "4");
  ASSERT_TRUE(set_flag(child, "--recompute-granularity", "full").ok());
  ProposeLaunch from_parent = proposal(RunPurpose::kSearch, child);
  from_parent.parent_run_id = deeper;
  EXPECT_EQ(find_body<LaunchRefused>(campaign.decide_only(from_parent)), nullptr);
  ProposeLaunch from_baseline = proposal(RunPurpose::kSearch, child);
  EXPECT_NE(find_body<LaunchRefused>(campaign.decide_only(from_baseline)), nullptr);
}

// Launch scripts often spell out defaults (`--context-parallel-size 1`). A child that no longer
// writes one, but leaves it at that value, changes no lever there, so it is not a second lever;
// and a child that only drops it is the same recipe for Megatron.
TEST(Decide, ADefaultSpelledOutOnOneSideOnlyIsNoChange) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  Recipe spelled = campaign.with("--pipeline-model-parallel-size", "4");
  ASSERT_TRUE(set_flag(spelled, "--context-parallel-size", "1").ok());
  const RunId parent = campaign.launch(RunPurpose::kSearch, spelled);
  ASSERT_NE(parent, 0u);

  Recipe child = campaign.with("--pipeline-model-parallel-size", "4");
  ASSERT_TRUE(set_flag(child, "--recompute-granularity", "full").ok());
  ProposeLaunch one_lever = proposal(RunPurpose::kSearch, child);
  one_lever.parent_run_id = parent;
  const auto admitted = campaign.decide_only(one_lever);
  EXPECT_EQ(find_body<LaunchRefused>(admitted), nullptr);
  const CandidateProposed* proposed = find_body<CandidateProposed>(admitted);
  ASSERT_NE(proposed, nullptr);
  ASSERT_EQ(proposed->levers.size(), 1u);
  EXPECT_EQ(proposed->levers[0].name, "recompute");

  // Another value than the default is a change of the layout.
  Recipe other = child;
  ASSERT_TRUE(set_flag(other, "--context-parallel-size", "2").ok());
  ProposeLaunch two_levers = proposal(RunPurpose::kSearch, other);
  two_levers.parent_run_id = parent;
  const auto two = campaign.decide_only(two_levers);
  const LaunchRefused* refused = find_body<LaunchRefused>(two);
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->reason, RefusalReason::kMultipleLevers);

  // Only dropping the default gives the parent's recipe again for Megatron: a duplicate of that
  // run, from any parent, not a new launch.
  for (const RunId from : {parent, RunId{0}}) {
    ProposeLaunch nothing =
        proposal(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
    nothing.parent_run_id = from;
    const auto none = campaign.decide_only(nothing);
    const LaunchRefused* same = find_body<LaunchRefused>(none);
    ASSERT_NE(same, nullptr) << "from run " << from;
    EXPECT_EQ(same->reason, RefusalReason::kDuplicate);
    EXPECT_NE(same->detail.find("run " + std::to_string(parent)), std::string::npos)
        << same->detail;
  }
}

TEST(Decide, RefusesANumericChangeThroughLayerOneNamingTheFlag) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  const auto refused = campaign.apply(proposal(RunPurpose::kSearch, campaign.with("--lr", "2e-5")));
  const LaunchRefused* refusal = find_body<LaunchRefused>(refused);
  ASSERT_NE(refusal, nullptr);
  EXPECT_EQ(refusal->reason, RefusalReason::kLayer1);
  EXPECT_NE(refusal->detail.find("--lr"), std::string::npos) << refusal->detail;
  EXPECT_NE(refusal->detail.find("numeric"), std::string::npos) << refusal->detail;
  // The proposal itself is recorded, with the gate's class for the change.
  const CandidateProposed* proposed = find_body<CandidateProposed>(refused);
  ASSERT_NE(proposed, nullptr);
  ASSERT_EQ(proposed->diff.size(), 1u);
  EXPECT_EQ(proposed->diff[0].objective_class, ObjectiveClass::kNumeric);
}

TEST(Decide, RefusesALaunchThatDoesNotFitTheBudgetLessTheReserve) {
  Campaign campaign;
  // Budget 240; reserve 3 checks x 8 GPU-hours x 20/14 steps; calibration spent 3 x 8.
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  const Budget& budget = campaign.state().view.budget;
  const double reserve = 3 * 8.0 * 20.0 / 14.0;
  const double calibration = 3 * 8.0;
  EXPECT_NEAR(budget.reserve_gpu_hours, reserve, 1e-9);
  EXPECT_NEAR(budget.remaining_gpu_hours, 240.0 - reserve - calibration, 1e-9);
  ProposeLaunch too_big =
      proposal(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  too_big.expected_gpu_hours = budget.remaining_gpu_hours + 0.01;
  const auto refused = campaign.apply(too_big);
  ASSERT_NE(find_body<LaunchRefused>(refused), nullptr);
  EXPECT_EQ(find_body<LaunchRefused>(refused)->reason, RefusalReason::kBudget);

  // Runs in flight count against what is left.
  RunId first = campaign.launch(RunPurpose::kSearch,
                                campaign.with("--pipeline-model-parallel-size", "4"), 100.0);
  ASSERT_NE(first, 0u);
  ProposeLaunch second =
      proposal(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "1"));
  second.expected_gpu_hours = 240.0 - reserve - calibration - 100.0 + 0.01;
  EXPECT_EQ(find_body<LaunchRefused>(campaign.apply(second))->reason, RefusalReason::kBudget);
}

TEST(Decide, AdmitsAtMostConcurrencyRunsInFlight) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  ASSERT_NE(
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4")),
      0u);
  ASSERT_NE(
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "1")),
      0u);
  ASSERT_NE(
      campaign.launch(RunPurpose::kSearch, campaign.with("--tensor-model-parallel-size", "4")), 0u);
  const auto refused = campaign.apply(
      proposal(RunPurpose::kSearch, campaign.with("--tensor-model-parallel-size", "1")));
  ASSERT_NE(find_body<LaunchRefused>(refused), nullptr);
  EXPECT_EQ(find_body<LaunchRefused>(refused)->reason, RefusalReason::kConcurrency);
}

TEST(Decide, ChargesGpusTimesAdmissionToReleaseWhateverTheOutcome) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  RunId run =
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  const auto finished =
      campaign.run_for(run, 0.25, RunFailed{0, FailureClass::kOom, "CUDA out of memory", ""});
  const Charged* charged = find_body<Charged>(finished);
  ASSERT_NE(charged, nullptr);
  EXPECT_EQ(charged->account, Account::kTuner);
  EXPECT_NEAR(charged->gpu_hours, 16 * 0.25, 1e-9);
  EXPECT_EQ(find_body<VerdictRecorded>(finished)->verdict, Verdict::kFailed);
}

TEST(Decide, InfrastructureFailuresGoToTheirOwnAccountAndAreRetriedOnceOnOtherNodes) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  const Recipe recipe = campaign.with("--pipeline-model-parallel-size", "4");
  RunId run = campaign.launch(RunPurpose::kSearch, recipe);
  const double tuner_before = campaign.state().view.budget.tuner_gpu_hours;
  auto failed = campaign.run_for(run, 0.5, RunFailed{0, FailureClass::kInfra, "NCCL error", "n2"});
  EXPECT_EQ(find_body<Charged>(failed)->account, Account::kInfra);
  EXPECT_DOUBLE_EQ(campaign.state().view.budget.tuner_gpu_hours, tuner_before);
  EXPECT_NEAR(campaign.state().view.budget.infra_gpu_hours, 8.0, 1e-9);

  // A plain relaunch of the same recipe is a duplicate; the retry is not.
  EXPECT_EQ(find_body<LaunchRefused>(campaign.apply(proposal(RunPurpose::kSearch, recipe)))->reason,
            RefusalReason::kDuplicate);
  RunId retry = campaign.launch(RunPurpose::kRetry, recipe, 1.0, run);
  ASSERT_NE(retry, 0u);
  EXPECT_EQ(campaign.launch(RunPurpose::kRetry, recipe, 1.0, run), 0u) << "retried twice";
  auto failed_again = campaign.run_for(
      retry, 0.5, RunFailed{0, FailureClass::kInfra, "NCCL error", "n3"}, {"n3", "n4"});
  // The retry's infra failure is the cluster's too, and a second one is a recipe failure.
  EXPECT_EQ(find_body<Charged>(failed_again)->account, Account::kInfra);
  EXPECT_EQ(campaign.launch(RunPurpose::kRetry, recipe, 1.0, retry), 0u);
}

TEST(Decide, OnlyAnInfrastructureFailureMayBeRetried) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  const Recipe recipe = campaign.with("--pipeline-model-parallel-size", "4");
  RunId run = campaign.launch(RunPurpose::kSearch, recipe);
  campaign.run_for(run, 0.5, RunFailed{0, FailureClass::kCrash, "Traceback", ""});
  EXPECT_EQ(campaign.launch(RunPurpose::kRetry, recipe, 1.0, run), 0u);
}

TEST(Decide, ACandidateLeadsOnlyWhenItBeatsTheLeaderByMoreThanTheBand) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});  // band 3 %
  RunId inside =
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  auto judged = campaign.run_for(inside, 0.5, Campaign::measured(1030.0));  // exactly the band
  EXPECT_EQ(find_body<VerdictRecorded>(judged)->verdict, Verdict::kNotBetter);
  RunId above =
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "1"));
  judged = campaign.run_for(above, 0.5, Campaign::measured(1031.0));
  EXPECT_EQ(find_body<VerdictRecorded>(judged)->verdict, Verdict::kNewLeader);
  EXPECT_EQ(campaign.state().view.leader.run_id, above);
  // The next one is judged against the new leader, with the baseline mean as the denominator.
  RunId next =
      campaign.launch(RunPurpose::kSearch, campaign.with("--tensor-model-parallel-size", "4"));
  judged = campaign.run_for(next, 0.5, Campaign::measured(1060.0));
  EXPECT_EQ(find_body<VerdictRecorded>(judged)->verdict, Verdict::kNotBetter);
  EXPECT_NEAR(find_body<VerdictRecorded>(judged)->gain_fraction, 0.06, 1e-12);
}

TEST(Decide, ReportsThatContradictTheLedgerAreErrorsNotEvents) {
  Campaign campaign;
  auto unknown = decide(campaign.state(), ReportStarted{42, 0, {}}, campaign.context());
  EXPECT_FALSE(unknown.ok());
  RunId run = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  campaign.run_for(run, 0.5, Campaign::measured(1000.0));
  ReportFinished again;
  again.run_id = run;
  again.outcome = Campaign::measured(1000.0);
  EXPECT_FALSE(decide(campaign.state(), again, campaign.context()).ok());
}

TEST(Decide, JobNamesAreDeterministicFromCampaignAndRun) {
  EXPECT_EQ(job_name_for("glm-1234abcd", 7), "attune-glm-1234abcd-r7");
  Campaign campaign;
  const auto admitted = campaign.apply(proposal(RunPurpose::kCalibration, campaign.baseline()));
  EXPECT_EQ(find_body<LaunchAdmitted>(admitted)->job_name, "attune-t-r1");
}

}  // namespace
}  // namespace attune
