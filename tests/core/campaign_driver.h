// A campaign driven by hand through decide() and evolve(), as the runtime drives it, without a
// store: the fixture of the decider-style tests (given events, when a command, then events).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/control_state.h"
#include "core/decide.h"
#include "core/lever_groups.h"
#include "events/recipe.h"
#include "gate/policy.h"

namespace attune {
namespace {

constexpr std::int64_t kHourNs = 3'600'000'000'000;

Recipe recipe_of(const std::string& text) {
  auto recipe = parse_recipe(text, "test");
  EXPECT_TRUE(recipe.ok()) << recipe.error();
  return recipe.value();
}

const char* kBaselineText =
    "--tensor-model-parallel-size 2\n--pipeline-model-parallel-size 2\n--micro-batch-size 1\n"
    "--global-batch-size 64\n--lr 1e-5\n--recompute-granularity selective\n--bf16\n";

struct CampaignSetup {
  bool budget_auto = true;
  double budget_gpu_hours = 0.0;
  std::uint32_t calibration_runs = 3;
  std::uint32_t concurrency = 3;
  bool tuner_black_box = false;
};

// Drives decide() and folds its events, as the runtime does, without a store.
class Campaign {
 public:
  explicit Campaign(bool budget_auto = true, double budget_gpu_hours = 0.0,
                    std::uint32_t calibration_runs = 3)
      : Campaign(CampaignSetup{budget_auto, budget_gpu_hours, calibration_runs}) {}

  explicit Campaign(const CampaignSetup& setup)
      : policy_(default_policy()), baseline_(recipe_of(kBaselineText)) {
    CampaignOpened opened;
    opened.name = "t";
    opened.gpu_count = 16;
    opened.seq_length = 4096;
    opened.global_batch = 64;
    opened.baseline_recipe = canonical_text(baseline_);
    opened.baseline_recipe_hash = recipe_hash(baseline_);
    opened.budget_auto = setup.budget_auto;
    opened.budget_gpu_hours = setup.budget_gpu_hours;
    opened.calibration_runs = setup.calibration_runs;
    opened.concurrency = setup.concurrency;
    opened.tuner_black_box = setup.tuner_black_box;
    append({opened});
  }

  DecideContext context() const {
    return DecideContext{policy_, baseline_, LeverGroups::builtin(), now_};
  }

  std::vector<Body> decide_only(const Command& command) {
    auto bodies = decide(state_, command, context());
    EXPECT_TRUE(bodies.ok()) << bodies.error();
    return bodies.ok() ? bodies.value() : std::vector<Body>{};
  }

  std::vector<Body> apply(const Command& command) {
    std::vector<Body> bodies = decide_only(command);
    append(bodies);
    return bodies;
  }

  // Folds `bodies` as recorded events; news() then holds their envelopes.
  void append(const std::vector<Body>& bodies) {
    news_.clear();
    for (const Body& body : bodies) {
      Envelope envelope;
      envelope.sequence = state_.view.last_sequence + 1;
      envelope.campaign_id = "t";
      envelope.recorded_at_unix_ns = now_;
      envelope.actor = "test";
      envelope.body = body;
      evolve(state_, envelope);
      news_.push_back(std::move(envelope));
    }
  }

  // Admits a launch of `recipe` and returns its run id (0 when refused).
  RunId launch(RunPurpose purpose, const Recipe& recipe, double expected_gpu_hours = 1.0,
               RunId retry_of = 0) {
    ProposeLaunch command;
    command.purpose = purpose;
    command.recipe = recipe;
    command.expected_gpu_hours = expected_gpu_hours;
    command.retry_of_run_id = retry_of;
    for (const Body& body : apply(command)) {
      if (const auto* admitted = std::get_if<LaunchAdmitted>(&body)) return admitted->run_id;
    }
    return 0;
  }

  void start(RunId run, std::vector<std::string> nodes = {"n1", "n2"}) {
    apply(ReportSubmitted{run, "job-" + std::to_string(run), now_});
    apply(ReportStarted{run, now_, std::move(nodes)});
  }

  std::vector<Body> finish(RunId run, double hours, std::variant<RunMeasured, RunFailed> outcome) {
    now_ += static_cast<std::int64_t>(hours * kHourNs);
    ReportFinished finished;
    finished.run_id = run;
    finished.released_at_unix_ns = now_;
    finished.final_state = std::holds_alternative<RunMeasured>(outcome) ? "COMPLETED" : "FAILED";
    finished.facts_source = "test";
    finished.log_path = "run-" + std::to_string(run) + ".log";
    finished.outcome = std::move(outcome);
    return apply(finished);
  }

  // Starts the run now and finishes it `hours` later with a measurement or a failure.
  std::vector<Body> run_for(RunId run, double hours, std::variant<RunMeasured, RunFailed> outcome,
                            std::vector<std::string> nodes = {"n1", "n2"}) {
    start(run, std::move(nodes));
    return finish(run, hours, std::move(outcome));
  }

  static RunMeasured measured(double throughput) {
    RunMeasured m;
    m.tokens_per_sec_per_gpu = throughput;
    return m;
  }

  void calibrate(std::vector<double> throughputs, double hours_each = 0.5) {
    for (double throughput : throughputs) {
      RunId run = launch(RunPurpose::kCalibration, baseline_);
      ASSERT_NE(run, 0u);
      run_for(run, hours_each, measured(throughput));
    }
  }

  Recipe with(const std::string& flag, const std::string& value) const {
    Recipe recipe = baseline_;
    EXPECT_TRUE(set_flag(recipe, flag, value).ok());
    return recipe;
  }

  const ControlState& state() const { return state_; }
  const Recipe& baseline() const { return baseline_; }
  const Policy& policy() const { return policy_; }
  const std::vector<Envelope>& news() const { return news_; }

 private:
  Policy policy_;
  Recipe baseline_;
  ControlState state_ = initial_control_state();
  std::vector<Envelope> news_;
  std::int64_t now_ = 1'767'225'600'000'000'000;
};

inline ProposeLaunch proposal(RunPurpose purpose, Recipe recipe) {
  ProposeLaunch launch;
  launch.purpose = purpose;
  launch.recipe = std::move(recipe);
  return launch;
}

template <typename T>
const T* find_body(const std::vector<Body>& bodies) {
  for (const Body& body : bodies) {
    if (const auto* found = std::get_if<T>(&body)) return found;
  }
  return nullptr;
}

}  // namespace
}  // namespace attune
