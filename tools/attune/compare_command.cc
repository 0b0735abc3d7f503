// attune compare: tuners side by side on the simulated cluster, as the paper's Table 3.
//
// Every arm runs one campaign per seed under the same campaign file, budget rule and control
// plane. Then the final stage re-measures, in one randomised and interleaved order, the baseline,
// every shipped recipe and the oracle's best recipes (attune sim sweep, filtered by the policy),
// twice each, in the same simulated world. As in the paper's Appendix D, a repeat that produced no
// measurement is run again, a repeat whose lowest GPU draws under 93% of its median GPU's power
// (a slow node: the paper's power flag) is run again, away from every flagged run's nodes, up to
// three runs, and the first unflagged run stands for it, and a recipe
// whose two repeats differ by more than the band gets a third; its value is then the median of
// the three, else the mean of its repeats. Arms are
// compared with the mean rule and exact one-sided permutation p-values, unrestricted and
// stratified by seed.
//
// GPU-hours are a campaign's charged tuner and check runs. Every campaign calibrates its
// baseline (five runs or more); the paper calibrates once per model (its Table D1) and counts a
// campaign's search launches and checks (its Table 3), so the figures without calibration are
// given beside.
//
// With several campaign files (one workload each) or several reality seeds, each pair runs as
// above, and a summary per workload follows: every arm's mean gain, share of the oracle and
// GPU-hours, and the expert's GPU-hours and gain against the black-box arms. Seeds the user names
// and seeds the harness draws at random (--holdout-seeds) are summarised apart.
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "adapters/model/stack_profile.h"
#include "adapters/model/sweep.h"
#include "adapters/tuner/micro_batch.h"
#include "adapters/world/sim_job.h"
#include "adapters/world/world.h"
#include "core/campaign_file.h"
#include "events/split.h"
#include "gate/config_check.h"
#include "gate/policy.h"
#include "projections/final_stage.h"
#include "projections/number_format.h"
#include "projections/text_table.h"
#include "tools/attune/baseline_script.h"
#include "tools/attune/campaign_runner.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

constexpr std::size_t kWorkloadColumn = 32;  // longer campaign names are cut in the summary table

namespace fs = std::filesystem;

constexpr int kOracleRecipes = 5;
constexpr int kOracleCandidatesMax = 400;  // the estimator's best layouts the oracle may probe
constexpr std::uint64_t kOracleProbeSeed = 0x0a7c1e;
constexpr std::uint64_t kFinalStageRunSeed = 0xf17a1000ULL;    // + the repeat's run number
constexpr std::uint64_t kFinalStageRerunSeed = 0xf1a9f1a9ULL;  // a flagged repeat's later runs
// Runs of one repeat while the power flag keeps firing: each later one avoids every flagged run's
// nodes, so a cluster with two slow nodes still gives one clean run.
constexpr int kFlaggedRunsMax = 3;
// The power flag's threshold: the lowest GPU under this share of the median GPU's draw. A healthy
// allocation's lowest GPU draws 0.98-1.0 of it in the world, a slow node's 1 / 1.15 (0.87).
constexpr double kPowerFlagFraction = 0.93;

struct CompareOptions {
  std::string campaign_file;
  std::string campaign_files;  // --campaigns: comma-separated
  std::string arms = "expert,tpe,random";
  std::uint32_t seeds = 3;
  std::optional<std::uint64_t> reality_seed;
  std::string reality_seeds;  // comma-separated
  std::uint32_t holdout_seeds = 0;
  std::string work_dir;
  bool json = false;
};

struct CampaignResult {
  std::uint64_t seed = 0;
  std::string shipped_hash;  // recipe measured in the final stage
  bool shipped_baseline = true;
  double band_fraction = 0;
  double gpu_hours = 0;  // tuner and checks
  // Without the baseline's calibration runs: search launches and checks, the paper's Table 3
  // count (it calibrates once per model).
  double search_gpu_hours = 0;
  double launches = 0;  // search launches
  double failed = 0;    // of them: out of memory, hang or crash
  double failed_gpu_hours = 0;
  double wall_clock_h = 0;
  double value = 0;             // the final stage's value
  std::vector<double> repeats;  // its repeats, in measuring order
  double gain = 0;
};

struct Arm {
  std::string name;
  std::vector<CampaignResult> campaigns;
  double mean(double CampaignResult::*field) const {
    double sum = 0;
    for (const auto& c : campaigns) sum += c.*field;
    return campaigns.empty() ? 0 : sum / static_cast<double>(campaigns.size());
  }
};

CampaignResult summarise(const ControlState& state, std::uint64_t seed) {
  CampaignResult r;
  r.seed = seed;
  const CampaignView& view = state.view;
  r.band_fraction = view.baseline_band.band_fraction;
  r.gpu_hours = view.budget.tuner_gpu_hours + view.budget.checks_gpu_hours;
  std::int64_t first = 0;
  std::int64_t last = 0;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kCheck && run.admitted_at_unix_ns != 0) {
      first = first == 0 ? run.admitted_at_unix_ns : std::min(first, run.admitted_at_unix_ns);
    }
    last = std::max(last, run.released_at_unix_ns);
    // Search launches, retries and checks charged to the tuner: a campaign that launched nothing
    // past calibration spent exactly zero searching.
    if (run.purpose != RunPurpose::kCalibration) {
      auto row = view.ledger.rows.find(id);
      if (row != view.ledger.rows.end() &&
          row->second.account.value_or(Account::kTuner) == Account::kTuner) {
        r.search_gpu_hours += row->second.gpu_hours_charged;
      }
    }
    if (run.purpose != RunPurpose::kSearch) continue;
    ++r.launches;
    if (run.failed && run.failed->failure_class != FailureClass::kInfra) {
      ++r.failed;
      auto row = view.ledger.rows.find(id);
      if (row != view.ledger.rows.end()) r.failed_gpu_hours += row->second.gpu_hours_charged;
    }
  }
  r.wall_clock_h = last > first ? static_cast<double>(last - first) / 3.6e12 : 0.0;
  if (view.stop.shipped) {
    r.shipped_baseline = view.stop.shipped->is_baseline;
    auto recipe = parse_recipe(view.stop.shipped->recipe, "shipped");
    if (recipe.ok()) r.shipped_hash = recipe_hash(recipe.value());
  }
  return r;
}

// What one run of the final stage showed besides its throughput: its lowest GPU's power draw over
// its median GPU's, and the nodes it ran on.
struct RunSeen {
  double power = 1.0;
  std::vector<std::string> nodes;
};

// tokens/s/GPU of one run of `recipe` in `world` over the measurement window; 0 on failure. The
// scheduler's allocation for `run_seed`, or, given `avoid`, one of nodes outside it (as far as
// the cluster has enough others).
double measure_once(const sim::World& world, const CampaignSpec& spec, const Recipe& recipe,
                    std::uint64_t run_seed, RunSeen* seen = nullptr,
                    const std::vector<std::string>& avoid = {}) {
  const std::vector<std::string> nodes =
      avoid.empty() ? std::vector<std::string>{}
                    : world.allocate_avoiding(static_cast<std::uint32_t>(world.nodes_needed()), {},
                                              avoid, run_seed);
  const sim::SimulatedRun run = world.simulate(recipe, spec.steps_per_run, run_seed, nodes, false);
  if (seen != nullptr) *seen = RunSeen{run.lowest_gpu_power_fraction, run.nodes};
  if (run.outcome != sim::JobOutcome::kCompleted) return 0.0;
  double seconds = 0;
  int steps = 0;
  for (std::uint32_t step = spec.window_first_step;
       step <= spec.window_last_step && step <= run.step_times_s.size(); ++step) {
    seconds += run.step_times_s[step - 1];
    ++steps;
  }
  if (steps == 0 || seconds <= 0) return 0.0;
  const double tokens = static_cast<double>(spec.global_batch) * spec.seq_length * steps;
  return tokens / seconds / spec.gpus;
}

// Exact one-sided permutation p-values of mean(a) - mean(b) >= observed.
double p_unrestricted(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> pooled = a;
  pooled.insert(pooled.end(), b.begin(), b.end());
  const std::size_t n = pooled.size();
  const std::size_t k = a.size();
  auto stat = [&](const std::vector<bool>& in_a) {
    double sa = 0;
    double sb = 0;
    for (std::size_t i = 0; i < n; ++i) (in_a[i] ? sa : sb) += pooled[i];
    return sa / static_cast<double>(k) - sb / static_cast<double>(n - k);
  };
  std::vector<bool> mask(n, false);
  std::fill(mask.begin(), mask.begin() + static_cast<std::ptrdiff_t>(k), true);
  const double observed = stat(mask);
  long total = 0;
  long extreme = 0;
  std::vector<bool> perm(n, false);
  std::fill(perm.end() - static_cast<std::ptrdiff_t>(k), perm.end(), true);
  do {
    ++total;
    if (stat(perm) >= observed - 1e-9 * std::abs(observed)) ++extreme;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return total == 0 ? 1.0 : static_cast<double>(extreme) / static_cast<double>(total);
}

double p_stratified(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  auto stat = [&](unsigned swaps) {
    double diff = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool swap = (swaps >> i) & 1u;
      diff += swap ? b[i] - a[i] : a[i] - b[i];
    }
    return diff / static_cast<double>(n);
  };
  const double observed = stat(0);
  long extreme = 0;
  const unsigned total = 1u << n;
  for (unsigned s = 0; s < total; ++s) {
    if (stat(s) >= observed - 1e-9 * std::abs(observed)) ++extreme;
  }
  return static_cast<double>(extreme) / static_cast<double>(total);
}

// The comma-separated items of an option, spaces around them dropped; empty items are skipped.
std::vector<std::string> list_of(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view field : split_fields(text, ',')) {
    while (!field.empty() && field.front() == ' ') field.remove_prefix(1);
    while (!field.empty() && field.back() == ' ') field.remove_suffix(1);
    if (!field.empty()) out.emplace_back(field);
  }
  return out;
}

// One arm beating another under the mean rule.
struct ArmVerdict {
  std::string winner, loser;
  double p_unrestricted = 1, p_stratified = 1, mean_ratio = 1;
};

// One campaign file at one reality seed: every arm's campaigns and the final stage.
struct Comparison {
  std::string campaign_file;
  CampaignSpec spec;      // the reality seed it ran at
  bool held_out = false;  // a reality seed the harness drew at random
  std::vector<Arm> arms;
  double baseline_value = 0;
  double oracle_value = 0;
  std::vector<double> baseline_repeats;
  double band = 0;
  int third_repeats = 0;    // recipes whose two repeats differed by more than the band
  int rerun_repeats = 0;    // measurements run again because a repeat produced none
  int flagged_repeats = 0;  // repeats run again because the power flag fired
  std::vector<ArmVerdict> verdicts;

  double oracle_fraction(const Arm& arm) const {
    double sum = 0;
    for (const auto& c : arm.campaigns) sum += oracle_value > 0 ? c.value / oracle_value : 0;
    return arm.campaigns.empty() ? 0.0 : sum / static_cast<double>(arm.campaigns.size());
  }
};

// What every comparison of one campaign file needs, read once.
struct Setup {
  std::string file;
  CampaignSpec spec;
  Policy policy;
  sim::Workload workload;
  sim::StackProfile stack;
};

Result<Setup> load_setup(const std::string& file) {
  auto spec = parse_campaign_file(file);
  if (!spec.ok()) return make_error(spec.error());
  std::vector<std::string> script_warnings;
  if (Status script = resolve_baseline_script(spec.value(), script_warnings); !script.ok()) {
    return make_error(script.error());
  }
  if (spec->launcher != "sim") {
    return make_error(file +
                      ": attune compare runs on the simulated cluster; the file's [cluster] "
                      "launcher is '" +
                      spec->launcher + "', expected \"sim\"");
  }
  Result<Policy> policy = spec->policy_bytes.empty()
                              ? Result<Policy>(default_policy())
                              : parse_policy(spec->policy_bytes, spec->policy_path);
  if (!policy.ok()) return make_error(policy.error());
  auto precision = sim::parse_precision(spec->precision);
  if (!precision) return make_error(file + ": unknown precision '" + spec->precision + "'");
  auto workload = sim::load_workload(spec->model, spec->hardware, static_cast<int>(spec->gpus),
                                     static_cast<int>(spec->seq_length),
                                     static_cast<int>(spec->global_batch), *precision);
  if (!workload.ok()) return make_error(file + ": " + workload.error());
  auto stack = sim::load_stack(spec->stack);
  if (!stack.ok()) return make_error(file + ": " + stack.error() + " ([cluster] stack)");
  return Setup{file, std::move(spec).value(), std::move(policy).value(),
               std::move(workload).value(), std::move(stack).value()};
}

Result<std::vector<Arm>> parse_arms(const std::string& text) {
  std::vector<Arm> arms;
  for (const std::string& name : list_of(text)) {
    if (name != "expert" && name != "tpe" && name != "tpe-prefilter" && name != "random") {
      return make_error("--arms: unknown tuner '" + name +
                        "'; expected expert, tpe, tpe-prefilter or random");
    }
    for (const Arm& arm : arms) {
      if (arm.name == name) return make_error("--arms: '" + name + "' is listed twice");
    }
    arms.push_back(Arm{name, {}});
  }
  if (arms.empty()) return make_error("--arms: no tuner named");
  return arms;
}

// Runs every arm's campaigns into `work`; fills `recipes` with what each shipped.
Status run_campaigns(const CampaignSpec& spec, std::uint32_t seeds, const fs::path& work,
                     std::vector<Arm>& arms, std::map<std::string, Recipe>& recipes) {
  for (Arm& arm : arms) {
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
      CampaignSpec one = spec;
      one.tuner = arm.name;
      one.seed = seed;
      const fs::path db = work / (arm.name + "-seed" + std::to_string(seed));
      auto state = run_campaign_quietly(one, db.string());
      if (!state.ok())
        return make_error(spec.name + ", reality seed " + std::to_string(spec.reality_seed) + ": " +
                          arm.name + " seed " + std::to_string(seed) + ": " + state.error());
      CampaignResult result = summarise(state.value(), seed);
      if (state->view.stop.shipped) {
        auto recipe = parse_recipe(state->view.stop.shipped->recipe, "shipped");
        if (recipe.ok()) recipes[result.shipped_hash] = recipe.value();
      }
      const std::string shipped =
          result.shipped_baseline
              ? std::string("the baseline")
              : format_signed_percent(state->view.stop.shipped->gain_fraction, 1);
      std::cerr << wrap_words("compare: " + spec.name + ", reality " +
                                  std::to_string(spec.reality_seed) + ": " + arm.name + " seed " +
                                  std::to_string(seed) + ": shipped " + shipped + ", " +
                                  format_fixed(result.launches, 0) + " launches, " +
                                  format_fixed(result.gpu_hours, 1) + " GPU-hours",
                              kTerminalWidth, "    ")
                << "\n";
      arm.campaigns.push_back(result);
    }
  }
  return Ok{};
}

// The oracle: the estimator's best recipes on the cluster's stack that the policy allows and
// that run in `world` (one probe each: a recipe that hits a stack defect or runs out of memory
// there is passed over for the next). Adds them to `recipes`; returns their hashes.
std::vector<std::string> oracle_recipes(const Setup& setup, const CampaignSpec& spec,
                                        const sim::World& world,
                                        std::map<std::string, Recipe>& recipes) {
  sim::SweepOptions sweep_options;
  sweep_options.top_k = kOracleCandidatesMax;
  sweep_options.stack = setup.stack;
  sweep_options.factors = setup.stack.factors;
  sweep_options.admit = [&](const Recipe& recipe) {
    return check_config(setup.policy, spec.baseline, recipe).allowed;
  };
  // An upper bound tries every lever the policy allows, the rows per microbatch included.
  sweep_options.micro_batch_sizes = free_micro_batch_sizes(setup.policy, spec.baseline);
  auto oracle = sim::sweep(setup.workload, spec.baseline, sweep_options);
  std::vector<std::string> hashes;
  if (!oracle.ok()) return hashes;
  for (const sim::SweepEntry& entry : oracle->best) {
    if (measure_once(world, spec, entry.recipe, kOracleProbeSeed) <= 0) continue;
    const std::string hash = recipe_hash(entry.recipe);
    recipes[hash] = entry.recipe;
    hashes.push_back(hash);
    if (hashes.size() == kOracleRecipes) break;
  }
  return hashes;
}

// One repeat of the final stage with the paper's power flag (its Appendix D, Final stage): a
// repeat whose lowest GPU draws less than kPowerFlagFraction of the launch's median GPU (a slow
// node) is run again, away from the nodes of every run flagged so far (the flag names the GPU,
// so the harness knows the node; the cluster may hold another slow one), up to kFlaggedRunsMax
// runs; the first unflagged run stands for it, and where all are flagged, their mean does.
// Counts the repeats run again in `flagged`.
double flagged_repeat(const sim::World& world, const CampaignSpec& spec, const Recipe& recipe,
                      std::uint64_t run, int& flagged) {
  RunSeen seen;
  const double value = measure_once(world, spec, recipe, kFinalStageRunSeed + run, &seen);
  if (value <= 0 || seen.power >= kPowerFlagFraction) return value;
  ++flagged;
  double flagged_sum = value;
  int flagged_runs = 1;
  std::vector<std::string> avoid = seen.nodes;
  for (int attempt = 1; attempt < kFlaggedRunsMax; ++attempt) {
    RunSeen again_seen;
    const double again =
        measure_once(world, spec, recipe, kFinalStageRerunSeed + run * kFlaggedRunsMax + attempt,
                     &again_seen, avoid);
    if (again <= 0) break;
    if (again_seen.power >= kPowerFlagFraction) return again;
    flagged_sum += again;
    ++flagged_runs;
    avoid.insert(avoid.end(), again_seen.nodes.begin(), again_seen.nodes.end());
  }
  return flagged_sum / flagged_runs;
}

// The final stage's repeats of every recipe (projections/final_stage), each run in `world`.
FinalStageRepeats measure_repeats(const sim::World& world, const CampaignSpec& spec,
                                  const std::map<std::string, Recipe>& recipes, double band,
                                  int& flagged) {
  std::vector<std::string> keys;
  for (const auto& [hash, recipe] : recipes) keys.push_back(hash);
  return measure_final_stage(keys, band, 0x5eedc0deULL ^ spec.reality_seed,
                             [&](const std::string& hash, std::uint64_t run) {
                               return flagged_repeat(world, spec, recipes.at(hash), run, flagged);
                             });
}

// The final stage: the band (the campaigns' mean), the repeats of every recipe in the same
// world, then every value and gain.
void final_stage(const Setup& setup, const std::map<std::string, Recipe>& measured,
                 Comparison& out) {
  const CampaignSpec& spec = out.spec;
  double band_sum = 0;
  int band_count = 0;
  for (const Arm& arm : out.arms) {
    for (const CampaignResult& c : arm.campaigns) {
      band_sum += c.band_fraction;
      ++band_count;
    }
  }
  out.band = band_count ? band_sum / band_count : spec.band_floor_fraction;

  sim::WorldConfig config;
  config.reality_seed = spec.reality_seed;
  config.stack = setup.stack;
  config.baseline = spec.baseline;
  const sim::World world(setup.workload, config);
  std::map<std::string, Recipe> recipes = measured;
  const std::vector<std::string> oracle_hashes = oracle_recipes(setup, spec, world, recipes);
  const FinalStageRepeats repeats =
      measure_repeats(world, spec, recipes, out.band, out.flagged_repeats);
  out.third_repeats = repeats.third;
  out.rerun_repeats = repeats.rerun;
  auto repeats_of = [&](const std::string& hash) {
    const auto it = repeats.values.find(hash);
    return it == repeats.values.end() ? std::vector<double>{} : it->second;
  };
  auto value_of = [&](const std::string& hash) { return value_of_repeats(repeats_of(hash)); };
  out.baseline_repeats = repeats_of(recipe_hash(spec.baseline));
  out.baseline_value = value_of(recipe_hash(spec.baseline));
  out.oracle_value = out.baseline_value;
  for (const std::string& hash : oracle_hashes) {
    out.oracle_value = std::max(out.oracle_value, value_of(hash));
  }
  for (Arm& arm : out.arms) {
    for (CampaignResult& c : arm.campaigns) {
      const std::string& hash =
          c.shipped_hash.empty() ? recipe_hash(spec.baseline) : c.shipped_hash;
      c.value = value_of(hash);
      c.repeats = repeats_of(hash);
      c.gain = out.baseline_value > 0 ? c.value / out.baseline_value - 1 : 0;
    }
  }
}

std::vector<ArmVerdict> verdicts_of(const std::vector<Arm>& arms, double band) {
  std::vector<ArmVerdict> verdicts;
  for (std::size_t i = 0; i < arms.size(); ++i) {
    for (std::size_t j = 0; j < arms.size(); ++j) {
      if (i == j) continue;
      std::vector<double> a;
      std::vector<double> b;
      for (const auto& c : arms[i].campaigns) a.push_back(c.value);
      for (const auto& c : arms[j].campaigns) b.push_back(c.value);
      const double ma = arms[i].mean(&CampaignResult::value);
      const double mb = arms[j].mean(&CampaignResult::value);
      if (!(mb > 0 && ma > mb * (1 + band))) continue;
      verdicts.push_back(
          {arms[i].name, arms[j].name, p_unrestricted(a, b), p_stratified(a, b), ma / mb});
    }
  }
  return verdicts;
}

// One campaign file at one reality seed, its ledgers in `work` (left for the caller to remove).
Result<Comparison> compare_at(const Setup& setup, std::uint64_t reality_seed, bool held_out,
                              const CompareOptions& options, const std::vector<Arm>& arms,
                              const fs::path& work) {
  Comparison out;
  out.campaign_file = setup.file;
  out.spec = setup.spec;
  out.spec.reality_seed = reality_seed;
  out.held_out = held_out;
  out.arms = arms;
  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec) return make_error(work.string() + ": " + ec.message());
  std::map<std::string, Recipe> recipes;  // by hash: everything the final stage measures
  recipes[recipe_hash(out.spec.baseline)] = out.spec.baseline;
  if (Status ran = run_campaigns(out.spec, options.seeds, work, out.arms, recipes); !ran.ok()) {
    return make_error(ran.error());
  }
  final_stage(setup, recipes, out);
  out.verdicts = verdicts_of(out.arms, out.band);
  return out;
}

nlohmann::json comparison_json(const Comparison& c, std::uint32_t seeds) {
  nlohmann::json out;
  out["campaign_file"] = c.campaign_file;
  out["workload"] = c.spec.name;
  out["reality_seed"] = c.spec.reality_seed;
  out["held_out"] = c.held_out;
  out["seeds"] = seeds;
  out["band_fraction"] = c.band;
  out["baseline_tokens_per_s_per_gpu"] = c.baseline_value;
  out["oracle_tokens_per_s_per_gpu"] = c.oracle_value;
  out["baseline_repeats"] = c.baseline_repeats;
  out["third_repeats"] = c.third_repeats;
  out["rerun_repeats"] = c.rerun_repeats;
  out["flagged_repeats"] = c.flagged_repeats;
  for (const Arm& arm : c.arms) {
    nlohmann::json a;
    std::vector<double> gains;
    std::vector<double> values;
    nlohmann::json repeats = nlohmann::json::array();
    double launches = 0;
    double failed = 0;
    for (const auto& r : arm.campaigns) {
      gains.push_back(r.gain);
      values.push_back(r.value);
      repeats.push_back(r.repeats);
      launches += r.launches;
      failed += r.failed;
    }
    a["mean_gain_fraction"] = arm.mean(&CampaignResult::gain);
    a["campaign_gain_fractions"] = gains;
    a["campaign_tokens_per_s_per_gpu"] = values;
    a["campaign_repeats"] = repeats;
    a["gpu_hours_mean"] = arm.mean(&CampaignResult::gpu_hours);
    a["search_gpu_hours_mean"] = arm.mean(&CampaignResult::search_gpu_hours);
    a["launches_mean"] = arm.mean(&CampaignResult::launches);
    a["failed_launch_share"] = launches > 0 ? failed / launches : 0.0;
    a["failed_gpu_hours_mean"] = arm.mean(&CampaignResult::failed_gpu_hours);
    a["wall_clock_hours_mean"] = arm.mean(&CampaignResult::wall_clock_h);
    a["oracle_fraction_mean"] = c.oracle_fraction(arm);
    out["arms"][arm.name] = a;
  }
  out["verdicts"] = nlohmann::json::array();
  for (const ArmVerdict& v : c.verdicts) {
    out["verdicts"].push_back({{"winner", v.winner},
                               {"loser", v.loser},
                               {"mean_ratio", v.mean_ratio},
                               {"p_unrestricted", v.p_unrestricted},
                               {"p_stratified", v.p_stratified}});
  }
  return out;
}

void print_comparison(const Comparison& c, std::uint32_t seeds) {
  std::cout << wrap_words(c.spec.name + ": " + c.spec.model + " on " + std::to_string(c.spec.gpus) +
                              " x " + c.spec.hardware + ", reality seed " +
                              std::to_string(c.spec.reality_seed) +
                              (c.held_out ? " (held out)" : "") + ", " + std::to_string(seeds) +
                              " campaigns per arm",
                          kTerminalWidth, "  ")
            << "\n";
  std::cout << "final stage: baseline " << format_fixed(c.baseline_value, 1)
            << " tokens/s/GPU, oracle " << format_fixed(c.oracle_value, 1) << " ("
            << format_signed_percent(c.oracle_value / c.baseline_value - 1, 1) << "), band "
            << format_percent(c.band, 2) << "\n";
  std::cout << "repeats: 2 per recipe, a 3rd for " << c.third_repeats
            << " (two apart by more than the band), " << c.rerun_repeats
            << " rerun (no measurement)\n"
            << "power flag: " << c.flagged_repeats
            << " repeats run again (lowest GPU under 93% of the median GPU's power)\n\n";
  // Narrow headers, so that three campaigns per arm fit 100 columns; the legend follows.
  TextTable table({{"arm"},
                   {"gain", Align::kRight},
                   {"campaigns"},
                   {"GPU-h", Align::kRight},
                   {"launches", Align::kRight},
                   {"failed", Align::kRight},
                   {"wall", Align::kRight},
                   {"of oracle", Align::kRight}});
  for (const Arm& arm : c.arms) {
    std::string each;
    double launches = 0;
    double failed = 0;
    for (const auto& r : arm.campaigns) {
      each += (each.empty() ? "" : " ") + format_signed_percent(r.gain, 1);
      launches += r.launches;
      failed += r.failed;
    }
    table.add_row({arm.name, format_signed_percent(arm.mean(&CampaignResult::gain), 1), each,
                   format_fixed(arm.mean(&CampaignResult::gpu_hours), 1),
                   format_fixed(arm.mean(&CampaignResult::launches), 1),
                   format_percent(launches > 0 ? failed / launches : 0.0, 0) + " (" +
                       format_fixed(arm.mean(&CampaignResult::failed_gpu_hours), 1) + ")",
                   format_fixed(arm.mean(&CampaignResult::wall_clock_h), 1) + " h",
                   format_percent(c.oracle_fraction(arm), 0)});
  }
  std::cout << table.render();
  std::cout << "gain: the mean; failed: share of search launches (their GPU-hours); wall: "
               "wall-clock\n";
  std::string search;
  for (const Arm& arm : c.arms) {
    search += (search.empty() ? " " : ", ") + arm.name + " " +
              format_fixed(arm.mean(&CampaignResult::search_gpu_hours), 1);
  }
  std::cout << wrap_words("GPU-hours without the calibration runs:" + search, kTerminalWidth, "  ")
            << "\n\n";
  if (c.verdicts.empty()) std::cout << "no arm beats another by more than the band\n";
  for (const ArmVerdict& v : c.verdicts) {
    std::cout << v.winner << " beats " << v.loser << " (mean "
              << format_signed_percent(v.mean_ratio - 1, 1)
              << "; permutation p = " << format_fixed(v.p_unrestricted, 3) << ", stratified "
              << format_fixed(v.p_stratified, 3) << ")\n";
  }
}

// ---- Several workloads and reality seeds: the paper's Table 3, the given seeds and the held-out
// seeds reported apart.

// One arm over the comparisons of one workload and one kind of seed.
struct ArmSummary {
  std::string arm;
  double gain = 0;              // mean over every campaign
  double oracle_fraction = 0;   // mean over every campaign
  double gpu_hours = 0;         // mean per campaign
  double search_gpu_hours = 0;  // mean per campaign, without the calibration runs
  int campaigns = 0;
};

struct WorkloadSummary {
  std::string workload;
  bool held_out = false;
  std::vector<std::uint64_t> reality_seeds;
  std::vector<ArmSummary> arms;
  // The expert against the black-box arms (where both ran): its GPU-hours over the cheaper
  // black-box arm's (with and without the calibration runs), and its gain over the best
  // black-box arm's.
  std::optional<double> expert_gpu_hours_ratio;
  std::optional<double> expert_search_gpu_hours_ratio;
  std::optional<double> expert_gain_over_best_black_box;
};

WorkloadSummary summarise_group(const std::vector<const Comparison*>& group) {
  WorkloadSummary s;
  s.workload = group.front()->spec.name;
  s.held_out = group.front()->held_out;
  for (const Comparison* c : group) {
    s.reality_seeds.push_back(c->spec.reality_seed);
    for (const Arm& arm : c->arms) {
      auto it = std::find_if(s.arms.begin(), s.arms.end(),
                             [&](const ArmSummary& a) { return a.arm == arm.name; });
      if (it == s.arms.end()) it = s.arms.insert(s.arms.end(), ArmSummary{arm.name});
      for (const CampaignResult& r : arm.campaigns) {
        it->gain += r.gain;
        it->oracle_fraction += c->oracle_value > 0 ? r.value / c->oracle_value : 0;
        it->gpu_hours += r.gpu_hours;
        it->search_gpu_hours += r.search_gpu_hours;
        ++it->campaigns;
      }
    }
  }
  const ArmSummary* expert = nullptr;
  std::optional<double> cheapest, cheapest_search, best_gain;
  for (ArmSummary& a : s.arms) {
    const double n = std::max(1, a.campaigns);
    a.gain /= n;
    a.oracle_fraction /= n;
    a.gpu_hours /= n;
    a.search_gpu_hours /= n;
    if (a.arm == "expert") {
      expert = &a;
      continue;
    }
    cheapest = cheapest ? std::min(*cheapest, a.gpu_hours) : a.gpu_hours;
    cheapest_search =
        cheapest_search ? std::min(*cheapest_search, a.search_gpu_hours) : a.search_gpu_hours;
    best_gain = best_gain ? std::max(*best_gain, a.gain) : a.gain;
  }
  if (expert != nullptr && cheapest && *cheapest > 0) {
    s.expert_gpu_hours_ratio = expert->gpu_hours / *cheapest;
  }
  if (expert != nullptr && cheapest_search && *cheapest_search > 0) {
    s.expert_search_gpu_hours_ratio = expert->search_gpu_hours / *cheapest_search;
  }
  if (expert != nullptr && best_gain && *best_gain > 0) {
    s.expert_gain_over_best_black_box = expert->gain / *best_gain;
  }
  return s;
}

std::vector<WorkloadSummary> summarise_all(const std::vector<Comparison>& comparisons) {
  std::vector<WorkloadSummary> out;
  std::vector<std::pair<std::string, bool>> keys;
  for (const Comparison& c : comparisons) {
    const std::pair<std::string, bool> key{c.campaign_file, c.held_out};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  for (const auto& key : keys) {
    std::vector<const Comparison*> group;
    for (const Comparison& c : comparisons) {
      if (c.campaign_file == key.first && c.held_out == key.second) group.push_back(&c);
    }
    out.push_back(summarise_group(group));
  }
  return out;
}

std::string seeds_text(const std::vector<std::uint64_t>& seeds) {
  std::string out;
  for (const std::uint64_t seed : seeds) out += (out.empty() ? "" : ",") + std::to_string(seed);
  return out;
}

void print_summaries(const std::vector<WorkloadSummary>& summaries) {
  std::cout << "\nSummary (the paper's Table 3): mean over every campaign of each workload\n"
            << "gain: the mean; GPU-h: the mean per campaign, and without the calibration runs\n";
  TextTable table({{"workload"},
                   {"seeds"},
                   {"arm"},
                   {"gain", Align::kRight},
                   {"of oracle", Align::kRight},
                   {"GPU-h", Align::kRight},
                   {"no calib.", Align::kRight}});
  // The seeds themselves go below the table, so that it fits 100 columns however many there are.
  std::vector<std::string> seed_lines;
  for (const WorkloadSummary& s : summaries) {
    const std::string kind = s.held_out ? "held out" : "given";
    for (const ArmSummary& a : s.arms) {
      table.add_row({cut_to_width(s.workload, kWorkloadColumn), kind, a.arm,
                     format_signed_percent(a.gain, 1), format_percent(a.oracle_fraction, 0),
                     format_fixed(a.gpu_hours, 1), format_fixed(a.search_gpu_hours, 1)});
    }
    const std::string line = kind + ": reality seed" + (s.reality_seeds.size() > 1 ? "s " : " ") +
                             seeds_text(s.reality_seeds);
    if (std::find(seed_lines.begin(), seed_lines.end(), line) == seed_lines.end()) {
      seed_lines.push_back(line);
    }
  }
  std::cout << table.render();
  for (const std::string& line : seed_lines)
    std::cout << wrap_words(line, kTerminalWidth, "  ") << "\n";
  for (const WorkloadSummary& s : summaries) {
    if (!s.expert_gpu_hours_ratio && !s.expert_gain_over_best_black_box) continue;
    const auto times = [](const std::optional<double>& ratio) {
      return ratio ? format_fixed(*ratio, 2) + "x" : std::string("-");
    };
    const std::string text =
        s.workload + (s.held_out ? " (held out)" : " (given)") + ": expert GPU-hours " +
        times(s.expert_gpu_hours_ratio) + " the cheaper black-box arm's (" +
        times(s.expert_search_gpu_hours_ratio) + " without calibration); " +
        (s.expert_gain_over_best_black_box
             ? "gain " + times(s.expert_gain_over_best_black_box) + " the best black-box arm's"
             : std::string("no black-box arm gained"));
    std::cout << wrap_words(text, kTerminalWidth, "  ") << "\n";
  }
}

nlohmann::json summaries_json(const std::vector<WorkloadSummary>& summaries) {
  nlohmann::json out = nlohmann::json::array();
  for (const WorkloadSummary& s : summaries) {
    nlohmann::json w;
    w["workload"] = s.workload;
    w["held_out"] = s.held_out;
    w["reality_seeds"] = s.reality_seeds;
    for (const ArmSummary& a : s.arms) {
      w["arms"][a.arm] = {{"mean_gain_fraction", a.gain},
                          {"oracle_fraction_mean", a.oracle_fraction},
                          {"gpu_hours_mean", a.gpu_hours},
                          {"search_gpu_hours_mean", a.search_gpu_hours},
                          {"campaigns", a.campaigns}};
    }
    w["expert_gpu_hours_over_cheaper_black_box"] =
        s.expert_gpu_hours_ratio ? nlohmann::json(*s.expert_gpu_hours_ratio) : nlohmann::json();
    w["expert_search_gpu_hours_over_cheaper_black_box"] =
        s.expert_search_gpu_hours_ratio ? nlohmann::json(*s.expert_search_gpu_hours_ratio)
                                        : nlohmann::json();
    w["expert_gain_over_best_black_box"] = s.expert_gain_over_best_black_box
                                               ? nlohmann::json(*s.expert_gain_over_best_black_box)
                                               : nlohmann::json();
    out.push_back(w);
  }
  return out;
}

// The reality seeds the user names (--reality-seed or --reality-seeds), each once.
Result<std::vector<std::uint64_t>> given_reality_seeds(const CompareOptions& options) {
  std::vector<std::uint64_t> out;
  if (options.reality_seed && !options.reality_seeds.empty()) {
    return make_error("--reality-seed and --reality-seeds: give one of them");
  }
  if (options.reality_seed) out.push_back(*options.reality_seed);
  for (const std::string& field : list_of(options.reality_seeds)) {
    std::uint64_t seed = 0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), seed);
    if (error != std::errc() || end != field.data() + field.size()) {
      return make_error("--reality-seeds: '" + field + "' is not a seed (expected an integer)");
    }
    if (std::find(out.begin(), out.end(), seed) != out.end()) {
      return make_error("--reality-seeds: " + field + " is listed twice");
    }
    out.push_back(seed);
  }
  if (options.holdout_seeds > 10) return make_error("--holdout-seeds: expected 0 to 10");
  return out;
}

// Held-out seeds, drawn here, at the edge, from the operating system's entropy (and printed, so
// that a run can be repeated with --reality-seeds); none equals a seed already chosen.
std::vector<std::uint64_t> draw_holdout_seeds(std::uint32_t count,
                                              const std::vector<std::uint64_t>& taken) {
  std::random_device entropy;
  std::vector<std::uint64_t> out;
  while (out.size() < count) {
    const std::uint64_t seed = 100000 + (static_cast<std::uint64_t>(entropy()) % 900000);
    if (std::find(taken.begin(), taken.end(), seed) != taken.end() ||
        std::find(out.begin(), out.end(), seed) != out.end()) {
      continue;
    }
    out.push_back(seed);
    std::cerr << "compare: held-out reality seed " << seed << " (drawn)\n";
  }
  return out;
}

Result<std::vector<std::string>> campaign_files_of(const CompareOptions& options) {
  std::vector<std::string> files = list_of(options.campaign_files);
  if (!options.campaign_file.empty()) files.insert(files.begin(), options.campaign_file);
  if (files.empty()) return make_error("compare: name a campaign file (--campaign or --campaigns)");
  std::vector<fs::path> seen;
  for (const std::string& file : files) {
    std::error_code ec;
    const fs::path path = fs::weakly_canonical(file, ec);
    if (std::find(seen.begin(), seen.end(), path) != seen.end()) {
      return make_error("compare: campaign file " + file + " is named twice");
    }
    seen.push_back(path);
  }
  return files;
}

int report_comparisons(const std::vector<Comparison>& comparisons, const CompareOptions& options) {
  if (comparisons.size() == 1) {
    if (options.json) {
      write_json_output(comparison_json(comparisons.front(), options.seeds));
    } else {
      print_comparison(comparisons.front(), options.seeds);
    }
    return kExitOk;
  }
  const std::vector<WorkloadSummary> summaries = summarise_all(comparisons);
  if (options.json) {
    nlohmann::json out;
    out["comparisons"] = nlohmann::json::array();
    for (const Comparison& c : comparisons) {
      out["comparisons"].push_back(comparison_json(c, options.seeds));
    }
    out["summary"] = summaries_json(summaries);
    write_json_output(std::move(out));
    return kExitOk;
  }
  for (std::size_t i = 0; i < comparisons.size(); ++i) {
    if (i > 0) std::cout << "\n";
    print_comparison(comparisons[i], options.seeds);
  }
  print_summaries(summaries);
  return kExitOk;
}

int run_compare(const CompareOptions& options) {
  auto files = campaign_files_of(options);
  if (!files.ok()) return fail(files.error());
  auto arms = parse_arms(options.arms);
  if (!arms.ok()) return fail(arms.error());
  if (options.seeds == 0 || options.seeds > 10) return fail("--seeds: expected 1 to 10");
  auto given = given_reality_seeds(options);
  if (!given.ok()) return fail(given.error());
  std::vector<Setup> setups;
  for (const std::string& file : files.value()) {
    auto setup = load_setup(file);
    if (!setup.ok()) return fail(setup.error());
    setups.push_back(std::move(setup).value());
  }
  if (given->empty()) {
    for (const Setup& setup : setups) {
      if (setup.spec.reality_seed != setups.front().spec.reality_seed) {
        return fail(
            "compare: the campaign files name different reality seeds; give "
            "--reality-seeds");
      }
    }
    given->push_back(setups.front().spec.reality_seed);
  }
  std::vector<std::pair<std::uint64_t, bool>> seeds;  // each seed, and whether it is held out
  for (const std::uint64_t seed : given.value()) seeds.emplace_back(seed, false);
  for (const std::uint64_t seed : draw_holdout_seeds(options.holdout_seeds, given.value())) {
    seeds.emplace_back(seed, true);
  }

  const bool own_work_dir = options.work_dir.empty();
  const fs::path work =
      own_work_dir ? fs::temp_directory_path() / ("attune-compare-" + std::to_string(::getpid()))
                   : fs::path(options.work_dir);
  std::error_code ec;
  if (!own_work_dir && fs::exists(work, ec) && !fs::is_empty(work, ec)) {
    return fail("--work " + work.string() + ": expected a new or empty folder");
  }
  std::vector<Comparison> comparisons;
  for (std::size_t i = 0; i < setups.size(); ++i) {
    for (const auto& [seed, held_out] : seeds) {
      const fs::path dir = work / (std::to_string(i + 1) + "-" + setups[i].spec.name + "-reality" +
                                   std::to_string(seed));
      auto compared = compare_at(setups[i], seed, held_out, options, arms.value(), dir);
      if (!compared.ok()) {
        if (own_work_dir) fs::remove_all(work, ec);
        return fail(compared.error());
      }
      comparisons.push_back(std::move(compared).value());
    }
  }
  if (own_work_dir) fs::remove_all(work, ec);
  return report_comparisons(comparisons, options);
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CompareOptions>();
  auto* compare = app.add_subcommand(
      "compare",
      "Run tuners side by side on the simulated cluster: per arm, one campaign per seed from the "
      "same campaign file; then re-measure the baseline, every shipped recipe and the oracle's "
      "best recipes twice each in one shuffled order (a repeat whose lowest GPU's power is "
      "flagged, a slow node, again away from the flagged nodes, up to three runs; a third time "
      "where the two differ by more than the "
      "band; the value is then their median), and compare the arms with the mean "
      "rule and exact permutation p-values. GPU-hours are given with and without the baseline's "
      "calibration runs");
  compare->add_option("--campaign", options->campaign_file, "Campaign file (launcher = \"sim\")");
  compare->add_option("--campaigns", options->campaign_files,
                      "Several campaign files, comma-separated (one workload each); with more "
                      "than one comparison the output ends with the paper's Table 3");
  compare
      ->add_option("--arms", options->arms,
                   "Tuners, comma-separated: expert, tpe, tpe-prefilter, random")
      ->capture_default_str();
  compare->add_option("--seeds", options->seeds, "Campaigns per arm (seeds 1..N), 1 to 10")
      ->capture_default_str();
  compare->add_option("--reality-seed", options->reality_seed,
                      "The simulated world (default: the campaign file's)");
  compare->add_option("--reality-seeds", options->reality_seeds,
                      "Several simulated worlds, comma-separated; each campaign file runs in each");
  compare
      ->add_option("--holdout-seeds", options->holdout_seeds,
                   "Also draw N reality seeds at random (0 to 10), reported apart as held out "
                   "(printed, so that a run can be repeated with --reality-seeds)")
      ->capture_default_str();
  compare->add_option("--work", options->work_dir,
                      "Keep the campaigns' ledgers in this new folder (default: a temporary "
                      "folder, removed at the end)");
  compare->add_flag("--json", options->json, "Machine-readable output");
  compare->callback([options, &exit_code] { exit_code = run_compare(*options); });
}

}  // namespace attune::cli
