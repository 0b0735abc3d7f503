// The paper's four workloads in the simulated world on the paper's stack (slime): at reality
// seeds the stack profile was not fitted on, each public recipe must calibrate, on the mean over
// those seeds, within 15% of the throughput the paper measured (its Tables D2 and D3), within 25%
// at every one of them (a world's hidden factors move each term by up to 20%), and never run out
// of memory. The test also prints each world's oracle gain beside the paper's best campaign.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>

#include "adapters/model/sweep.h"
#include "adapters/tuner/micro_batch.h"
#include "adapters/world/world.h"
#include "gate/config_check.h"
#include "gate/policy.h"
#include "tests/adapters/sim_world_fixtures.h"

namespace attune::sim {
namespace {

struct PaperWorkload {
  const char* recipe;  // the preset recipe, also the name of its policy's model
  const char* model;
  const char* gpu;
  int gpus;
  int seq;
  int gbs;
  Precision precision;
  double paper_tokens_per_s_per_gpu;  // the re-measured public recipe (Tables D2, D3)
  double paper_best_gain;             // the paper's best campaign (Table 2, Table 3, §3.2)
};

const PaperWorkload kPaper[] = {
    {"glm-4.5-b200x128", "glm-4.5", "b200", 128, 4096, 2048, Precision::kBf16, 723.6, 0.547},
    {"minimax-m2-b200x64", "minimax-m2", "b200", 64, 4096, 1024, Precision::kBf16, 895.2, 1.66},
    {"mixtral-8x22b-h100x128", "mixtral-8x22b", "h100", 128, 4096, 256, Precision::kBf16, 1072.4,
     0.022},
    {"llama3.1-405b-b200x128", "llama3.1-405b", "b200", 128, 8192, 64, Precision::kFp8, 397.3,
     0.119},
};

// Reality seeds the slime profile was not chosen on (it was fitted at 1000 to 1005).
constexpr std::uint64_t kHeldOutSeeds[] = {7001, 7002, 7003, 7004};
constexpr int kCalibrationRuns = 5;
constexpr double kMeanTolerance = 0.15;
constexpr double kSeedTolerance = 0.25;
constexpr int kOracleCandidates = 15;

StackProfile slime() {
  Result<StackProfile> stack = load_stack("slime");
  EXPECT_TRUE(stack.ok()) << (stack.ok() ? "" : stack.error());
  return stack.ok() ? std::move(stack).value() : StackProfile{};
}

// Tokens/s/GPU over steps 4-13 of a 14-step run; 0 when the run did not complete.
double measured(const World& world, const PaperWorkload& p, const Recipe& recipe,
                std::uint64_t run_seed, JobOutcome* outcome = nullptr) {
  const SimulatedRun run = world.simulate(recipe, 14, run_seed, {}, false);
  if (outcome) *outcome = run.outcome;
  if (run.outcome != JobOutcome::kCompleted) return 0;
  double seconds = 0;
  for (std::size_t i = 3; i < 13; ++i) seconds += run.step_times_s[i];
  return static_cast<double>(p.gbs) * p.seq * 10 / seconds / p.gpus;
}

// The best of the world's top candidates that the policy allows, measured in the world; the rows
// per microbatch are tried where the policy frees them, as attune compare's oracle does.
double oracle(const World& world, const Workload& w, const PaperWorkload& p, const Recipe& baseline,
              const Policy& policy) {
  SweepOptions options;
  options.top_k = 400;
  options.factors = world.hidden_factors();
  options.stack = world.config().stack;
  options.micro_batch_sizes = free_micro_batch_sizes(policy, baseline);
  Result<SweepResult> sweep_result = sweep(w, baseline, options);
  EXPECT_TRUE(sweep_result.ok());
  double best = 0;
  int tried = 0;
  for (const SweepEntry& entry : sweep_result->best) {
    if (!check_config(policy, baseline, entry.recipe).allowed) continue;
    const double value = measured(world, p, entry.recipe, 99);
    if (value <= 0) continue;
    best = std::max(best, value);
    if (++tried == kOracleCandidates) break;
  }
  return best;
}

TEST(SimPaperWorlds, PublicRecipesCalibrateNearThePapersFiguresAtHeldOutSeeds) {
  std::printf("%-24s %6s %10s %10s %7s %10s %10s\n", "workload", "seed", "paper", "world", "error",
              "paper best", "oracle");
  for (const PaperWorkload& p : kPaper) {
    const Workload w = testing::load(p.model, p.gpu, p.gpus, p.seq, p.gbs, p.precision);
    const Recipe baseline = testing::preset(p.recipe);
    const Policy policy = testing::policy_file(p.model);
    double error_sum = 0;
    for (std::size_t i = 0; i < std::size(kHeldOutSeeds); ++i) {
      WorldConfig config;
      config.reality_seed = kHeldOutSeeds[i];
      config.stack = slime();
      config.baseline = baseline;
      const World world(w, config);
      double sum = 0;
      int completed = 0;
      for (int run = 0; run < kCalibrationRuns; ++run) {
        JobOutcome outcome = JobOutcome::kCompleted;
        const double value = measured(world, p, baseline, 500 + run, &outcome);
        EXPECT_TRUE(outcome == JobOutcome::kCompleted || outcome == JobOutcome::kInfrastructure)
            << p.recipe << " seed " << config.reality_seed << ": " << job_outcome_name(outcome);
        if (value > 0) {
          sum += value;
          ++completed;
        }
      }
      ASSERT_GT(completed, 0) << p.recipe;
      const double mean = sum / completed;
      const double error = mean / p.paper_tokens_per_s_per_gpu - 1;
      error_sum += error;
      EXPECT_LE(std::abs(error), kSeedTolerance)
          << p.recipe << " at reality seed " << config.reality_seed << ": " << mean
          << " tokens/s/GPU against the paper's " << p.paper_tokens_per_s_per_gpu;
      // The oracle is costly: two of the seeds.
      std::string oracle_text = "-";
      if (i < 2) {
        const double best = oracle(world, w, p, baseline, policy);
        char text[32];
        std::snprintf(text, sizeof text, "%+.1f%%", 100 * (std::max(best, mean) / mean - 1));
        oracle_text = text;
      }
      std::printf("%-24s %6llu %10.1f %10.1f %+6.1f%% %+9.1f%% %10s\n", p.recipe,
                  static_cast<unsigned long long>(config.reality_seed),
                  p.paper_tokens_per_s_per_gpu, mean, 100 * error, 100 * p.paper_best_gain,
                  oracle_text.c_str());
    }
    const double mean_error = error_sum / static_cast<double>(std::size(kHeldOutSeeds));
    std::printf("%-24s %6s %10.1f %10s %+6.1f%%\n", p.recipe, "mean", p.paper_tokens_per_s_per_gpu,
                "", 100 * mean_error);
    EXPECT_LE(std::abs(mean_error), kMeanTolerance) << p.recipe;
  }
}

// A recipe preset with flags changed ("flag" -> "value").
Recipe with_flags(const char* preset,
                  std::initializer_list<std::pair<const char*, const char*>> changes) {
  Recipe recipe = testing::preset(preset);
  for (const auto& [flag, value] : changes) recipe = testing::with(std::move(recipe), flag, value);
  return recipe;
}

// How a 14-step run of `recipe` ends in `w`'s world on the paper's stack.
JobOutcome outcome_at(const Workload& w, const PaperWorkload& p, const Recipe& recipe,
                      std::uint64_t reality_seed) {
  WorldConfig config;
  config.reality_seed = reality_seed;
  config.stack = slime();
  config.baseline = testing::preset(p.recipe);
  return World(w, config).simulate(recipe, 14, 500, {}, false).outcome;
}

bool ran(JobOutcome outcome) {
  return outcome == JobOutcome::kCompleted || outcome == JobOutcome::kInfrastructure;
}

// What the paper's campaigns found about memory on its stack, at every reality seed (the hidden
// memory factor included): its Llama-3.1-405B campaigns shipped 8 stages of two virtual stages,
// which fit, and its GLM-4.5 TP1 layout ran with full recomputation. The paper's GLM-4.5
// campaigns also ran out of memory with tensor parallelism one under the public recipe's
// selective recomputation, at 8 stages (three campaigns) and at 16 (Section 3.4); in this world
// both fit. A memory factor on the stack cannot mend that alone: to run them out of memory at
// every seed (hidden memory factors down to 0.95) it would take a stack factor of 1.096 at 8
// stages (expert parallelism 8) and 1.24 at 16, while the Llama recipe stops fitting at 1.166
// times the model's activations: a stack factor of 1.11 at a seed whose hidden factor is 1.05
// (at 1.15, 4 of these 12 seeds). This test holds the bound the Llama recipe sets.
TEST(SimPaperWorlds, TheRecipesThePapersCampaignsRanFitOnItsStack) {
  const PaperWorkload& glm = kPaper[0];
  const PaperWorkload& llama = kPaper[3];
  const Recipe glm_tp1_full = with_flags(glm.recipe, {{"tensor-model-parallel-size", "1"},
                                                      {"sequence-parallel", "false"},
                                                      {"pipeline-model-parallel-size", "16"},
                                                      {"expert-model-parallel-size", "8"},
                                                      {"decoder-first-pipeline-num-layers", "6"},
                                                      {"decoder-last-pipeline-num-layers", "2"},
                                                      {"recompute-granularity", "full"},
                                                      {"recompute-method", "uniform"},
                                                      {"recompute-num-layers", "1"}});
  const Recipe llama_vp2 =
      with_flags(llama.recipe, {{"num-virtual-stages-per-pipeline-rank", "2"}});
  const Workload glm_w =
      testing::load(glm.model, glm.gpu, glm.gpus, glm.seq, glm.gbs, glm.precision);
  const Workload llama_w =
      testing::load(llama.model, llama.gpu, llama.gpus, llama.seq, llama.gbs, llama.precision);
  // Runs (an infrastructure failure is the node's, not the recipe's), not merely "not out of
  // memory": a layout Megatron refused would pass that.
  for (std::uint64_t seed = 7001; seed <= 7012; ++seed) {
    const JobOutcome tp1 = outcome_at(glm_w, glm, glm_tp1_full, seed);
    const JobOutcome vp2 = outcome_at(llama_w, llama, llama_vp2, seed);
    EXPECT_TRUE(ran(tp1)) << "GLM-4.5 TP1, seed " << seed << ": " << job_outcome_name(tp1);
    EXPECT_TRUE(ran(vp2)) << "Llama VP2, seed " << seed << ": " << job_outcome_name(vp2);
  }
}

}  // namespace
}  // namespace attune::sim
