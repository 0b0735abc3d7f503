// The campaign's reactions, each rule with a test in the decider style: given events, when react,
// then the commands to run next (or nothing: the campaign waits for news).
#include "core/react.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/core/campaign_driver.h"

namespace attune {
namespace {

constexpr double kEstimateGpuHours = 1.0;

// A fixed cost estimate per launch, and the context react() reads.
class Reactions {
 public:
  explicit Reactions(Campaign& campaign) : campaign_(campaign) {
    estimate_ = [this](const Recipe&, RunPurpose, std::uint32_t) { return estimate_gpu_hours; };
  }

  ReactContext context() const {
    ReactContext context{campaign_.baseline(), estimate_};
    context.tuner_idle = tuner_idle;
    context.tuner_waits_for_input = tuner_waits_for_input;
    context.learn_rules = learn_rules;
    return context;
  }

  // What follows the events of the last command the campaign applied.
  std::vector<Reaction> after_news() const {
    return react(campaign_.state(), campaign_.news(), context());
  }
  // What follows when nothing new happened (the first step, a resume).
  std::vector<Reaction> at_rest() const { return react(campaign_.state(), {}, context()); }

  double estimate_gpu_hours = kEstimateGpuHours;
  bool tuner_idle = false;
  bool tuner_waits_for_input = false;
  bool learn_rules = false;

 private:
  Campaign& campaign_;
  LaunchEstimate estimate_;
};

// The next step react() names (the last reaction), as a command of type T, or nullopt.
template <typename T>
std::optional<T> next_command(const std::vector<Reaction>& reactions) {
  if (reactions.empty()) return std::nullopt;
  const auto* command = std::get_if<Command>(&reactions.back());
  const T* found = command == nullptr ? nullptr : std::get_if<T>(command);
  return found == nullptr ? std::nullopt : std::optional<T>(*found);
}

template <typename T>
bool next_is(const std::vector<Reaction>& reactions) {
  return !reactions.empty() && std::holds_alternative<T>(reactions.back());
}

// A campaign past calibration (band 3 %, baseline 1000 tokens/s/GPU) with a budget to spend.
Campaign calibrated(CampaignSetup setup = {}) {
  setup.budget_auto = false;
  if (setup.budget_gpu_hours == 0.0) setup.budget_gpu_hours = 100.0;
  Campaign campaign(setup);
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  return campaign;
}

// A campaign whose search stopped with run 4 measured at `throughput`.
Campaign stopped_after_one_candidate(double throughput) {
  Campaign campaign = calibrated();
  RunId run =
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  campaign.run_for(run, 0.1, Campaign::measured(throughput));
  campaign.apply(RecordStop{StopRecorded{StopReason::kTunerStopped, run, {}, "", "done"}});
  return campaign;
}

RunMeasured with_loss(double throughput) {
  RunMeasured measured = Campaign::measured(throughput);
  measured.loss_curve.assign(20, 5.0);
  return measured;
}

// ---- Effects of the news ------------------------------------------------------------------

TEST(React, AnAdmittedRunIsSubmittedAndAStartedOneWatched) {
  Campaign campaign;
  Reactions reactions(campaign);
  const RunId run = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  const auto after_admission = reactions.after_news();
  ASSERT_FALSE(after_admission.empty());
  EXPECT_EQ(std::get<SubmitRun>(after_admission.front()).run_id, run);

  campaign.apply(ReportSubmitted{run, "job-1", 0});
  EXPECT_EQ(reactions.after_news().size(), 1u) << "a submission calls for no effect, only the "
                                                  "next calibration run";
  campaign.apply(ReportStarted{run, 0, {"n1"}});
  const auto after_start = reactions.after_news();
  ASSERT_FALSE(after_start.empty());
  EXPECT_EQ(std::get<WatchRun>(after_start.front()).run_id, run);
}

// ---- Calibrating --------------------------------------------------------------------------

TEST(React, CalibrationRunsTheBaselineOnNodesNoEarlierCalibrationRunUsed) {
  Campaign campaign;
  Reactions reactions(campaign);
  const std::optional<ProposeLaunch> first = next_command<ProposeLaunch>(reactions.at_rest());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->purpose, RunPurpose::kCalibration);
  EXPECT_EQ(recipe_hash(first->recipe), recipe_hash(campaign.baseline()));
  EXPECT_DOUBLE_EQ(first->expected_gpu_hours, kEstimateGpuHours);
  EXPECT_TRUE(first->exclude_nodes.empty());

  const RunId run = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  campaign.run_for(run, 0.5, Campaign::measured(1000.0), {"n3", "n1"});
  const std::optional<ProposeLaunch> second = next_command<ProposeLaunch>(reactions.after_news());
  ASSERT_TRUE(second);
  EXPECT_EQ(second->exclude_nodes, (std::vector<std::string>{"n1", "n3"}));
}

// The five calibration runs of a campaign, the third on a slow node (each on nodes of its own).
// Five calibration runs measured at `throughputs`, run i on nodes n(2i+1) and n(2i+2).
Campaign with_calibration_runs(const std::vector<double>& throughputs,
                               std::uint32_t concurrency = 1) {
  Campaign campaign(CampaignSetup{.calibration_runs = 5, .concurrency = concurrency});
  for (std::size_t i = 0; i < throughputs.size(); ++i) {
    const RunId run = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
    campaign.run_for(run, 0.5, Campaign::measured(throughputs[i]),
                     {"n" + std::to_string(2 * i + 1), "n" + std::to_string(2 * i + 2)});
  }
  return campaign;
}

Campaign with_a_slow_calibration_run() {
  return with_calibration_runs({5630.0, 5640.0, 4830.0, 5540.0, 5660.0});
}

const BandSet* band_set_in(const std::vector<Envelope>& news) {
  for (const Envelope& envelope : news) {
    if (const auto* band = std::get_if<BandSet>(&envelope.body)) return band;
  }
  return nullptr;
}

TEST(React, ACalibrationRunOnASlowNodeIsRunOnceMoreOnOtherNodesAndLeftOut) {
  Campaign campaign = with_a_slow_calibration_run();
  Reactions reactions(campaign);
  // Run 3 alone makes the band 19.5% (3% without it): no band yet, one more run on unused nodes.
  EXPECT_EQ(band_set_in(campaign.news()), nullptr);
  EXPECT_EQ(phase_of(campaign.state()), Phase::kCalibrating);
  const std::optional<ProposeLaunch> rerun = next_command<ProposeLaunch>(reactions.after_news());
  ASSERT_TRUE(rerun);
  EXPECT_EQ(rerun->purpose, RunPurpose::kCalibration);
  EXPECT_EQ(rerun->exclude_nodes.size(), 10u);
  // The outlier's nodes come first: a cluster too small to avoid all ten keeps it off those.
  EXPECT_EQ(
      std::vector<std::string>(rerun->exclude_nodes.begin(), rerun->exclude_nodes.begin() + 2),
      (std::vector<std::string>{"n5", "n6"}));
  const RunId sixth = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  EXPECT_FALSE(next_command<ProposeLaunch>(reactions.after_news())) << "one run in its place";
  campaign.run_for(sixth, 0.5, Campaign::measured(5600.0), {"n11", "n12"});

  const BandSet* band = band_set_in(campaign.news());
  ASSERT_NE(band, nullptr);
  EXPECT_EQ(band->calibration_run_ids, (std::vector<RunId>{1, 2, 4, 5, sixth}));
  EXPECT_DOUBLE_EQ(band->mean_tokens_per_sec_per_gpu,
                   (5630.0 + 5640.0 + 5540.0 + 5660.0 + 5600.0) / 5);
  EXPECT_DOUBLE_EQ(band->band_fraction, 0.03);
  EXPECT_EQ(phase_of(campaign.state()), Phase::kSearching);
  const auto outlier = calibration_outlier(campaign.state().view.baseline_band);
  ASSERT_TRUE(outlier);
  EXPECT_EQ(outlier->run_id, 3u);
  EXPECT_TRUE(outlier->left_out);

  // Every later launch is admitted asking to avoid the left-out run's nodes: one of them is slow.
  EXPECT_EQ(slow_node_suspects(campaign.state()), (std::vector<std::string>{"n5", "n6"}));
  const RunId search =
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  ASSERT_NE(search, 0u);
  EXPECT_EQ(campaign.state().run(search)->exclude_nodes, (std::vector<std::string>{"n5", "n6"}));
}

TEST(React, WhereTheRunInTheSlowRunsPlaceFailsTheBandKeepsAllFive) {
  Campaign campaign = with_a_slow_calibration_run();
  Reactions reactions(campaign);
  ASSERT_TRUE(next_command<ProposeLaunch>(reactions.after_news()));
  const RunId sixth = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  RunFailed failed;
  failed.failure_class = FailureClass::kInfra;
  campaign.run_for(sixth, 0.1, failed, {"n11", "n12"});

  const BandSet* band = band_set_in(campaign.news());
  ASSERT_NE(band, nullptr) << "a second run in its place is not launched";
  EXPECT_EQ(band->calibration_run_ids, (std::vector<RunId>{1, 2, 3, 4, 5}));
  EXPECT_NEAR(band->band_fraction, 0.195, 0.001);
  EXPECT_EQ(phase_of(campaign.state()), Phase::kSearching);
}

// Two slow runs among five: neither alone halves the band (leaving one out still keeps the other),
// both together do. Each runs once more on unused nodes, side by side, and the band leaves both
// out.
TEST(React, TwoCalibrationRunsOnSlowNodesAreEachRunOnceMoreAndLeftOut) {
  Campaign campaign = with_calibration_runs({5630.0, 5640.0, 4830.0, 5540.0, 4790.0}, 2);
  Reactions reactions(campaign);
  EXPECT_EQ(band_set_in(campaign.news()), nullptr);
  const std::optional<ProposeLaunch> first = next_command<ProposeLaunch>(reactions.after_news());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->exclude_nodes.size(), 10u);
  EXPECT_EQ(
      std::vector<std::string>(first->exclude_nodes.begin(), first->exclude_nodes.begin() + 4),
      (std::vector<std::string>{"n10", "n5", "n6", "n9"}));
  const RunId sixth = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  ASSERT_TRUE(next_command<ProposeLaunch>(reactions.after_news())) << "the second, beside it";
  const RunId seventh = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  EXPECT_FALSE(next_command<ProposeLaunch>(reactions.after_news())) << "one run for each";
  campaign.run_for(sixth, 0.5, Campaign::measured(5600.0), {"n11", "n12"});
  EXPECT_EQ(band_set_in(campaign.news()), nullptr) << "the band waits for both";
  campaign.run_for(seventh, 0.5, Campaign::measured(5610.0), {"n13", "n14"});

  const BandSet* band = band_set_in(campaign.news());
  ASSERT_NE(band, nullptr);
  EXPECT_EQ(band->calibration_run_ids, (std::vector<RunId>{1, 2, 4, sixth, seventh}));
  EXPECT_DOUBLE_EQ(band->band_fraction, 0.03);
  const auto outlier = calibration_outlier(campaign.state().view.baseline_band);
  ASSERT_TRUE(outlier);
  EXPECT_TRUE(outlier->left_out);
  EXPECT_EQ(outlier->left_out_run_ids, (std::vector<RunId>{3, 5}));
  EXPECT_EQ(left_out_runs_text(*outlier), "calibration runs 3 and 5");
  EXPECT_EQ(slow_node_suspects(campaign.state()),
            (std::vector<std::string>{"n10", "n5", "n6", "n9"}));
}

TEST(React, CalibrationFillsTheLaunchSlotsAndNoMore) {
  Campaign campaign(CampaignSetup{.calibration_runs = 5, .concurrency = 2});
  Reactions reactions(campaign);
  campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  EXPECT_TRUE(next_command<ProposeLaunch>(reactions.after_news()));
  campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  const auto full = reactions.after_news();
  EXPECT_EQ(full.size(), 1u) << "only the submission of the second run";
  EXPECT_TRUE(std::holds_alternative<SubmitRun>(full.front()));
}

TEST(React, CalibrationLaunchesNoMoreThanTheRunsTheBandNeeds) {
  Campaign campaign(CampaignSetup{.calibration_runs = 2, .concurrency = 3});
  Reactions reactions(campaign);
  campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  campaign.launch(RunPurpose::kCalibration, campaign.baseline());
  EXPECT_FALSE(next_command<ProposeLaunch>(reactions.after_news()));
}

TEST(React, ARefusedCalibrationLaunchWaitsForNews) {
  Campaign campaign(CampaignSetup{.budget_auto = false, .budget_gpu_hours = 10.0});
  Reactions reactions(campaign);
  ProposeLaunch too_big = proposal(RunPurpose::kCalibration, campaign.baseline());
  too_big.expected_gpu_hours = 1000.0;
  campaign.apply(too_big);
  ASSERT_TRUE(std::holds_alternative<LaunchRefused>(campaign.news().back().body));
  EXPECT_TRUE(reactions.after_news().empty());
}

TEST(React, CalibrationStopsWhenEveryLaunchItMayMakeFailed) {
  Campaign campaign(CampaignSetup{.calibration_runs = 2, .concurrency = 3});
  Reactions reactions(campaign);
  const std::uint32_t launches_max = 2 * kCalibrationLaunchesPerRunMax;
  for (std::uint32_t i = 0; i < launches_max; ++i) {
    const RunId run = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
    ASSERT_NE(run, 0u);
    // Failures of differing kinds: no early stop; the launch limit ends the calibration.
    campaign.run_for(run, 0.1,
                     i % 2 == 0 ? RunFailed{0, FailureClass::kOom, "CUDA out of memory", ""}
                                : RunFailed{0, FailureClass::kCrash, "Traceback", ""});
  }
  const std::optional<RecordStop> stop = next_command<RecordStop>(reactions.after_news());
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->stop.reason, StopReason::kOperator);
  EXPECT_NE(stop->stop.evidence.find("6 of 6 baseline launches"), std::string::npos)
      << stop->stop.evidence;
}

TEST(React, CalibrationStopsEarlyWhenTheFirstLaunchesAllFailTheSameWay) {
  Campaign campaign(CampaignSetup{.calibration_runs = 5, .concurrency = 1});
  Reactions reactions(campaign);
  for (std::uint32_t i = 0; i < kCalibrationSameFailuresStop; ++i) {
    EXPECT_FALSE(next_command<RecordStop>(reactions.after_news())) << "after " << i << " failures";
    const RunId run = campaign.launch(RunPurpose::kCalibration, campaign.baseline());
    ASSERT_NE(run, 0u);
    campaign.run_for(run, 0.1, RunFailed{0, FailureClass::kOom, "CUDA out of memory", ""});
  }
  const std::optional<RecordStop> stop = next_command<RecordStop>(reactions.after_news());
  ASSERT_TRUE(stop) << "the rest of the calibration is not spent";
  EXPECT_NE(stop->stop.evidence.find("first 3 baseline launches all failed (oom)"),
            std::string::npos)
      << stop->stop.evidence;
}

// ---- Searching ----------------------------------------------------------------------------

TEST(React, SearchAsksTheTunerWhileALaunchSlotIsFree) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  EXPECT_TRUE(next_is<AskTuner>(reactions.after_news()));
  for (const char* pipeline : {"4", "1", "8"}) {
    ASSERT_NE(campaign.launch(RunPurpose::kSearch,
                              campaign.with("--pipeline-model-parallel-size", pipeline)),
              0u);
  }
  EXPECT_FALSE(next_is<AskTuner>(reactions.after_news())) << "three runs in flight";
}

TEST(React, AnIdleTunerIsNotAskedAgainUntilNews) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  reactions.tuner_idle = true;
  EXPECT_TRUE(reactions.at_rest().empty());
}

TEST(React, ABudgetRefusalWaitsForARunToFinish) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  ProposeLaunch too_big =
      proposal(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  too_big.expected_gpu_hours = 1000.0;
  campaign.apply(too_big);
  EXPECT_TRUE(reactions.after_news().empty());
}

TEST(React, TheTunerIsStoppedAfterKRefusalsInARow) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  for (std::uint32_t i = 0; i < kRefusalsInARowMax; ++i) {
    campaign.apply(proposal(RunPurpose::kSearch, campaign.with("--lr", "2e-5")));
  }
  const std::optional<RecordStop> stop = next_command<RecordStop>(reactions.after_news());
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->stop.reason, StopReason::kTunerStopped);
  EXPECT_NE(stop->stop.evidence.find("200 proposals were refused"), std::string::npos);
  EXPECT_EQ(stop->stop.levers_tested, (std::vector<std::string>{"--lr"}));
}

TEST(React, AnInfrastructureFailureIsRetriedOnceOnOtherNodes) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  const Recipe recipe = campaign.with("--pipeline-model-parallel-size", "4");
  const RunId run = campaign.launch(RunPurpose::kSearch, recipe, 2.5);
  campaign.run_for(run, 0.1, RunFailed{0, FailureClass::kInfra, "NCCL error", "n9"}, {"n1", "n2"});
  const std::optional<ProposeLaunch> retry = next_command<ProposeLaunch>(reactions.after_news());
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->purpose, RunPurpose::kRetry);
  EXPECT_EQ(retry->retry_of_run_id, run);
  EXPECT_EQ(recipe_hash(retry->recipe), recipe_hash(recipe));
  EXPECT_DOUBLE_EQ(retry->expected_gpu_hours, 2.5) << "the failed run's estimate";
  EXPECT_EQ(retry->exclude_nodes, (std::vector<std::string>{"n1", "n2", "n9"}));

  campaign.apply(*retry);
  EXPECT_TRUE(next_is<AskTuner>(reactions.after_news())) << "retried once, then the tuner";
}

TEST(React, ARetryThatCannotFitStopsTheSearchWhenNothingIsInFlight) {
  // Budget 100: calibration spent 24 GPU-hours, the reserve holds 3 x 8 x 20/14, 41.7 are left.
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  const RunId failing = campaign.launch(RunPurpose::kSearch,
                                        campaign.with("--pipeline-model-parallel-size", "4"), 30.0);
  const RunId spending = campaign.launch(RunPurpose::kSearch,
                                         campaign.with("--pipeline-model-parallel-size", "1"), 5.0);
  campaign.run_for(spending, 1.0, Campaign::measured(1000.0));  // 16 GPU-hours spent
  campaign.run_for(failing, 0.1, RunFailed{0, FailureClass::kInfra, "NCCL error", ""});
  ASSERT_LT(campaign.state().view.budget.remaining_gpu_hours, 30.0);
  const std::optional<RecordStop> stop = next_command<RecordStop>(reactions.after_news());
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->stop.reason, StopReason::kBudgetSpent);
  EXPECT_NE(stop->stop.evidence.find("do not fit the retry of run 4"), std::string::npos)
      << stop->stop.evidence;
}

TEST(React, ARetryThatCannotFitWaitsWhileRunsAreInFlightAndTheTunerIsAsked) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  const RunId failing = campaign.launch(RunPurpose::kSearch,
                                        campaign.with("--pipeline-model-parallel-size", "4"), 30.0);
  const RunId spending = campaign.launch(RunPurpose::kSearch,
                                         campaign.with("--pipeline-model-parallel-size", "1"), 5.0);
  campaign.launch(RunPurpose::kSearch, campaign.with("--tensor-model-parallel-size", "4"), 1.0);
  campaign.run_for(spending, 1.0, Campaign::measured(1000.0));
  campaign.run_for(failing, 0.1, RunFailed{0, FailureClass::kInfra, "NCCL error", ""});
  EXPECT_TRUE(next_is<AskTuner>(reactions.after_news()));
}

// ---- The tuner's answers ------------------------------------------------------------------

TEST(React, AProposalThatFitsIsALaunchAndOneThatCannotWithNothingInFlightStops) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  TunerProposal proposed{campaign.with("--pipeline-model-parallel-size", "4"), 0,
                         Hypothesis{"pp bubble", "deeper pipeline", 0.1, "bubble"}, true};
  auto launch = answer_reaction(campaign.state(), proposed, reactions.context());
  ASSERT_TRUE(launch.has_value());
  const auto* propose = std::get_if<ProposeLaunch>(&*launch);
  ASSERT_TRUE(propose);
  EXPECT_EQ(propose->purpose, RunPurpose::kSearch);
  EXPECT_TRUE(propose->profile);
  EXPECT_EQ(propose->hypothesis.bottleneck, "pp bubble");

  reactions.estimate_gpu_hours = campaign.state().view.budget.remaining_gpu_hours + 1.0;
  auto stop = answer_reaction(campaign.state(), proposed, reactions.context());
  ASSERT_TRUE(stop.has_value());
  ASSERT_TRUE(std::holds_alternative<RecordStop>(*stop));
  EXPECT_EQ(std::get<RecordStop>(*stop).stop.reason, StopReason::kBudgetSpent);

  // With a run in flight the proposal is made, and decide() refuses it for the budget.
  campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "1"));
  auto waits = answer_reaction(campaign.state(), proposed, reactions.context());
  ASSERT_TRUE(waits.has_value());
  EXPECT_TRUE(std::holds_alternative<ProposeLaunch>(*waits));
}

TEST(React, ATunerThatHasNothingLeftStopsTheSearchUnlessRunsAreInFlightOrItWaitsForItsAgent) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  auto nothing = answer_reaction(campaign.state(), TunerWait{}, reactions.context());
  ASSERT_TRUE(nothing.has_value());
  EXPECT_EQ(std::get<RecordStop>(*nothing).stop.evidence, "the tuner has nothing left to propose");

  reactions.tuner_waits_for_input = true;
  EXPECT_FALSE(answer_reaction(campaign.state(), TunerWait{}, reactions.context()).has_value());
  reactions.tuner_waits_for_input = false;
  campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  EXPECT_FALSE(answer_reaction(campaign.state(), TunerWait{}, reactions.context()).has_value());

  auto stopped = answer_reaction(campaign.state(), TunerStop{"converged", {"recompute"}, "pp"},
                                 reactions.context());
  ASSERT_TRUE(stopped.has_value());
  const StopRecorded& stop = std::get<RecordStop>(*stopped).stop;
  EXPECT_EQ(stop.reason, StopReason::kTunerStopped);
  EXPECT_EQ(stop.evidence, "converged");
  EXPECT_EQ(stop.levers_tested, (std::vector<std::string>{"recompute"}));
}

// ---- Shipping -----------------------------------------------------------------------------

TEST(React, ShippingWaitsForTheSearchRunsInFlight) {
  Campaign campaign = calibrated();
  Reactions reactions(campaign);
  campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  campaign.apply(RecordStop{StopRecorded{StopReason::kTunerStopped, 0, {}, "", "done"}});
  EXPECT_TRUE(reactions.after_news().empty());
}

TEST(React, WithoutACandidateAboveTheBandTheBaselineShips) {
  Campaign campaign = stopped_after_one_candidate(1020.0);
  Reactions reactions(campaign);
  const std::optional<RecordShipment> shipped =
      next_command<RecordShipment>(reactions.after_news());
  ASSERT_TRUE(shipped);
  EXPECT_TRUE(shipped->shipped.is_baseline);
  EXPECT_EQ(shipped->shipped.recipe_hash, campaign.state().view.settings.baseline_recipe_hash);
}

TEST(React, ACandidateIsCheckedAfterTheBaselinesReferenceRunThenJudged) {
  Campaign campaign = stopped_after_one_candidate(1200.0);
  Reactions reactions(campaign);
  const std::optional<ProposeLaunch> reference =
      next_command<ProposeLaunch>(reactions.after_news());
  ASSERT_TRUE(reference);
  EXPECT_EQ(reference->purpose, RunPurpose::kCheck);
  EXPECT_EQ(reference->check_of_run_id, 0u);
  const RunId reference_run = campaign.launch(RunPurpose::kCheck, reference->recipe);
  EXPECT_TRUE(next_is<SubmitRun>(reactions.after_news())) << "the reference run is in flight";

  campaign.run_for(reference_run, 0.1, with_loss(1000.0));
  const std::optional<ProposeLaunch> check = next_command<ProposeLaunch>(reactions.after_news());
  ASSERT_TRUE(check);
  EXPECT_EQ(check->check_of_run_id, 4u);
  ProposeLaunch launch = *check;
  launch.expected_gpu_hours = 1.0;
  campaign.apply(launch);
  const RunId check_run = campaign.state().next_run_id() - 1;
  campaign.run_for(check_run, 0.1, with_loss(1200.0));
  const auto reactions_now = reactions.after_news();
  ASSERT_TRUE(next_is<JudgeCheck>(reactions_now));
  EXPECT_EQ(std::get<JudgeCheck>(reactions_now.back()), (JudgeCheck{4, check_run, reference_run}));
}

TEST(React, ACheckThatFailsTwiceOnInfrastructureHasNoVerdict) {
  Campaign campaign = stopped_after_one_candidate(1200.0);
  Reactions reactions(campaign);
  const RunId reference_run = campaign.launch(RunPurpose::kCheck, campaign.baseline());
  campaign.run_for(reference_run, 0.1, with_loss(1000.0));
  const Recipe candidate = campaign.with("--pipeline-model-parallel-size", "4");
  ProposeLaunch check = proposal(RunPurpose::kCheck, candidate);
  check.check_of_run_id = 4;
  campaign.apply(check);
  const RunId first = campaign.state().next_run_id() - 1;
  campaign.run_for(first, 0.1, RunFailed{0, FailureClass::kInfra, "node lost", "n7"}, {"n7"});
  const std::optional<ProposeLaunch> again = next_command<ProposeLaunch>(reactions.after_news());
  ASSERT_TRUE(again) << "a second check run, on other nodes";
  EXPECT_EQ(again->exclude_nodes, (std::vector<std::string>{"n7"}));
  campaign.apply(*again);
  const RunId second = campaign.state().next_run_id() - 1;
  campaign.run_for(second, 0.1, RunFailed{0, FailureClass::kInfra, "node lost", "n8"}, {"n8"});
  const std::optional<RecordGateResult> gate =
      next_command<RecordGateResult>(reactions.after_news());
  ASSERT_TRUE(gate);
  EXPECT_FALSE(gate->result.has_verdict);
  EXPECT_EQ(gate->result.candidate_run_id, 4u);
}

TEST(React, TheBaselineShipsWhenItsReferenceCheckRunFails) {
  Campaign campaign = stopped_after_one_candidate(1200.0);
  Reactions reactions(campaign);
  const RunId reference_run = campaign.launch(RunPurpose::kCheck, campaign.baseline());
  campaign.run_for(reference_run, 0.1, RunFailed{0, FailureClass::kCrash, "Traceback", ""});
  const std::optional<RecordShipment> shipped =
      next_command<RecordShipment>(reactions.after_news());
  ASSERT_TRUE(shipped);
  EXPECT_TRUE(shipped->shipped.is_baseline);
  EXPECT_NE(shipped->shipped.evidence.find("no loss curve"), std::string::npos);
}

TEST(React, APassingCandidateShipsAndTheCampaignThenLearnsOnce) {
  Campaign campaign = stopped_after_one_candidate(1200.0);
  Reactions reactions(campaign);
  ConvergenceChecked passed;
  passed.candidate_run_id = 4;
  passed.check_run_id = 6;
  passed.has_verdict = true;
  passed.layer1_passed = passed.layer2_passed = true;
  campaign.apply(RecordGateResult{passed});
  const std::optional<RecordShipment> shipped =
      next_command<RecordShipment>(reactions.after_news());
  ASSERT_TRUE(shipped);
  EXPECT_FALSE(shipped->shipped.is_baseline);
  EXPECT_EQ(shipped->shipped.run_id, 4u);
  campaign.apply(*shipped);
  EXPECT_TRUE(reactions.after_news().empty()) << "a campaign that does not learn is done";
  reactions.learn_rules = true;
  EXPECT_TRUE(next_is<LearnRules>(reactions.after_news()));
  campaign.apply(RecordLearnedRules{
      {LeverRuleLearned{"parallel-layout", "deeper helps", {4}, "pp_bubble", "helped", ""}}});
  EXPECT_TRUE(reactions.after_news().empty()) << "the rules are recorded";
  EXPECT_FALSE(decide(campaign.state(), RecordLearnedRules{}, campaign.context()).ok())
      << "a campaign records its rules once";
}

// ---- Judging a check run ------------------------------------------------------------------

std::string arguments_log(const std::string& extra) {
  return "------------------------ arguments ------------------------\n"
         "  micro_batch_size ................................ 1\n"
         "  tensor_model_parallel_size ...................... 2\n" +
         extra + "-------------------- end of arguments ---------------------\n";
}

TEST(React, AFailedCheckRunIsAVerdictAgainstItsCandidate) {
  Campaign campaign = stopped_after_one_candidate(1200.0);
  const RunId reference_run = campaign.launch(RunPurpose::kCheck, campaign.baseline());
  campaign.run_for(reference_run, 0.1, with_loss(1000.0));
  ProposeLaunch check =
      proposal(RunPurpose::kCheck, campaign.with("--pipeline-model-parallel-size", "4"));
  check.check_of_run_id = 4;
  campaign.apply(check);
  const RunId check_run = campaign.state().next_run_id() - 1;
  campaign.run_for(check_run, 0.1, RunFailed{0, FailureClass::kOom, "CUDA out of memory", ""});
  const ConvergenceChecked judged =
      judge_check(campaign.state(), JudgeCheck{4, check_run, reference_run}, CheckLogs{},
                  campaign.policy(), campaign.baseline(), ConvergenceThresholds{});
  EXPECT_TRUE(judged.has_verdict);
  EXPECT_FALSE(judged.layer1_passed && judged.layer2_passed);
  EXPECT_NE(judged.reason.find("oom: CUDA out of memory"), std::string::npos) << judged.reason;
}

TEST(React, AJudgementComparesResolvedArgumentsAndLossCurves) {
  Campaign campaign = stopped_after_one_candidate(1200.0);
  const RunId reference_run = campaign.launch(RunPurpose::kCheck, campaign.baseline());
  campaign.run_for(reference_run, 0.1, with_loss(1000.0));
  ProposeLaunch check =
      proposal(RunPurpose::kCheck, campaign.with("--pipeline-model-parallel-size", "4"));
  check.check_of_run_id = 4;
  campaign.apply(check);
  const RunId check_run = campaign.state().next_run_id() - 1;
  campaign.run_for(check_run, 0.1, with_loss(1200.0));
  const JudgeCheck judged{4, check_run, reference_run};

  CheckLogs unreadable;
  EXPECT_EQ(judge_check(campaign.state(), judged, unreadable, campaign.policy(),
                        campaign.baseline(), ConvergenceThresholds{})
                .reason,
            "cannot read a check run's log");

  CheckLogs same;
  same.reference_log = arguments_log("");
  same.check_log = arguments_log("");
  const ConvergenceChecked passed = judge_check(campaign.state(), judged, same, campaign.policy(),
                                                campaign.baseline(), ConvergenceThresholds{});
  EXPECT_TRUE(passed.layer1_passed);
  EXPECT_TRUE(passed.layer2_passed) << passed.reason;

  // A numeric argument that the recipe diff never showed changed in the resolved arguments.
  CheckLogs overridden = same;
  overridden.check_log =
      arguments_log("  accumulate_allreduce_grads_in_fp32 .............. False\n");
  overridden.reference_log =
      arguments_log("  accumulate_allreduce_grads_in_fp32 .............. True\n");
  const ConvergenceChecked refused =
      judge_check(campaign.state(), judged, overridden, campaign.policy(), campaign.baseline(),
                  ConvergenceThresholds{});
  EXPECT_FALSE(refused.layer1_passed);
  EXPECT_NE(refused.reason.find("layer 1 on resolved arguments"), std::string::npos)
      << refused.reason;
}

// ---- Watching a running job ---------------------------------------------------------------

TEST(React, ARunIsHungAfterTheTimeoutSinceItsLastSignOfLife) {
  constexpr std::int64_t kMinuteNs = 60'000'000'000;
  EXPECT_EQ(hang_deadline_unix_ns(1000, std::nullopt, 30), 1000 + 30 * kMinuteNs);
  EXPECT_EQ(hang_deadline_unix_ns(1000, 5000, 30), 5000 + 30 * kMinuteNs);
}

TEST(React, OnlyASearchRunOfATunerThatPrunesIsWatchedForTheEarlyAbort) {
  Campaign campaign = calibrated();
  const RunId run =
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  EXPECT_FALSE(prune_watch(campaign.state(), run, std::nullopt).has_value());
  const auto watch = prune_watch(campaign.state(), run, 0.9);
  ASSERT_TRUE(watch.has_value());
  EXPECT_DOUBLE_EQ(watch->floor_tokens_per_s_per_gpu, 900.0);
  // One leader step: 64 rows of 4096 tokens at 1000 tokens/s/GPU on 16 GPUs = 16.384 s.
  EXPECT_EQ(watch->interval_ns, 16'384'000'000);
  campaign.apply(RecordStop{StopRecorded{StopReason::kTunerStopped, 0, {}, "", "done"}});
  const RunId check = campaign.launch(RunPurpose::kCheck, campaign.baseline());
  EXPECT_FALSE(prune_watch(campaign.state(), check, 0.9).has_value());
}

}  // namespace
}  // namespace attune
