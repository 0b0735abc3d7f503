// attune compare: tuners side by side on the simulated cluster, as the paper's Table 3.
//
// Every arm runs one campaign per seed under the same campaign file, budget rule and control
// plane. Then the final stage re-measures, in one randomised and interleaved order, the baseline,
// every shipped recipe and the oracle's best recipes (attune sim sweep, filtered by the policy),
// twice each, in the same simulated world; a recipe's value is the mean of its repeats. Arms are
// compared with the mean rule and exact one-sided permutation p-values, unrestricted and
// stratified by seed.
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "adapters/model/stack_profile.h"
#include "adapters/model/sweep.h"
#include "adapters/world/sim_job.h"
#include "adapters/world/world.h"
#include "core/campaign_file.h"
#include "gate/config_check.h"
#include "gate/policy.h"
#include "projections/number_format.h"
#include "projections/text_table.h"
#include "tools/attune/baseline_script.h"
#include "tools/attune/campaign_runner.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kRepeats = 2;
constexpr int kOracleRecipes = 3;
constexpr int kOracleCandidatesMax = 400;  // the estimator's best layouts the oracle may probe
constexpr std::uint64_t kOracleProbeSeed = 0x0a7c1e;

struct CompareOptions {
  std::string campaign_file;
  std::string arms = "expert,tpe,random";
  std::uint32_t seeds = 3;
  std::optional<std::uint64_t> reality_seed;
  std::string work_dir;
  bool json = false;
};

struct CampaignResult {
  std::uint64_t seed = 0;
  std::string shipped_hash;  // recipe measured in the final stage
  bool shipped_baseline = true;
  double band_fraction = 0;
  double gpu_hours = 0;  // tuner and checks
  double launches = 0;   // search launches
  double failed = 0;     // of them: out of memory, hang or crash
  double failed_gpu_hours = 0;
  double wall_clock_h = 0;
  double value = 0;  // the final stage's mean
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

// tokens/s/GPU of one run of `recipe` in `world` over the measurement window; 0 on failure.
double measure_once(const sim::World& world, const CampaignSpec& spec, const Recipe& recipe,
                    std::uint64_t run_seed) {
  const sim::SimulatedRun run = world.simulate(recipe, spec.steps_per_run, run_seed, {}, false);
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

int run_compare(const CompareOptions& options) {
  auto spec = parse_campaign_file(options.campaign_file);
  if (!spec.ok()) return fail(spec.error());
  std::vector<std::string> script_warnings;
  if (Status script = resolve_baseline_script(spec.value(), script_warnings); !script.ok()) {
    return fail(script.error());
  }
  if (spec->launcher != "sim") {
    return fail(options.campaign_file +
                ": attune compare runs on the simulated cluster; the "
                "file's [cluster] launcher is '" +
                spec->launcher + "', expected \"sim\"");
  }
  if (options.reality_seed) spec->reality_seed = *options.reality_seed;
  std::vector<Arm> arms;
  {
    std::stringstream list(options.arms);
    std::string name;
    while (std::getline(list, name, ',')) {
      if (name != "expert" && name != "tpe" && name != "random") {
        return fail("--arms: unknown tuner '" + name + "'; expected expert, tpe or random");
      }
      for (const Arm& arm : arms) {
        if (arm.name == name) return fail("--arms: '" + name + "' is listed twice");
      }
      arms.push_back(Arm{name, {}});
    }
  }
  if (arms.empty()) return fail("--arms: no tuner named");
  if (options.seeds == 0 || options.seeds > 10) return fail("--seeds: expected 1 to 10");
  Result<Policy> policy = spec->policy_bytes.empty()
                              ? Result<Policy>(default_policy())
                              : parse_policy(spec->policy_bytes, spec->policy_path);
  if (!policy.ok()) return fail(policy.error());
  auto precision = sim::parse_precision(spec->precision);
  if (!precision) return fail("unknown precision '" + spec->precision + "'");
  auto workload = sim::load_workload(spec->model, spec->hardware, static_cast<int>(spec->gpus),
                                     static_cast<int>(spec->seq_length),
                                     static_cast<int>(spec->global_batch), *precision);
  if (!workload.ok()) return fail(workload.error());
  auto stack = sim::load_stack(spec->stack);
  if (!stack.ok()) return fail(stack.error() + " ([cluster] stack)");

  const bool own_work_dir = options.work_dir.empty();
  const fs::path work =
      own_work_dir ? fs::temp_directory_path() / ("attune-compare-" + std::to_string(::getpid()))
                   : fs::path(options.work_dir);
  std::error_code ec;
  if (!own_work_dir && fs::exists(work, ec) && !fs::is_empty(work, ec)) {
    return fail("--work " + work.string() + ": expected a new or empty folder");
  }
  fs::create_directories(work, ec);
  if (ec) return fail(work.string() + ": " + ec.message());

  std::map<std::string, Recipe> recipes;  // by hash: everything the final stage measures
  recipes[recipe_hash(spec->baseline)] = spec->baseline;
  for (Arm& arm : arms) {
    for (std::uint64_t seed = 1; seed <= options.seeds; ++seed) {
      CampaignSpec one = spec.value();
      one.tuner = arm.name;
      one.seed = seed;
      const fs::path db = work / (arm.name + "-seed" + std::to_string(seed));
      auto state = run_campaign_quietly(one, db.string());
      if (!state.ok()) {
        if (own_work_dir) fs::remove_all(work, ec);
        return fail(arm.name + " seed " + std::to_string(seed) + ": " + state.error());
      }
      CampaignResult result = summarise(state.value(), seed);
      if (state->view.stop.shipped) {
        auto recipe = parse_recipe(state->view.stop.shipped->recipe, "shipped");
        if (recipe.ok()) recipes[result.shipped_hash] = recipe.value();
      }
      std::cerr << "compare: " << arm.name << " seed " << seed << ": shipped "
                << (result.shipped_baseline
                        ? std::string("the baseline")
                        : format_signed_percent(state->view.stop.shipped->gain_fraction, 1))
                << ", " << result.launches << " launches, " << format_fixed(result.gpu_hours, 1)
                << " GPU-hours\n";
      arm.campaigns.push_back(result);
    }
  }
  if (own_work_dir) fs::remove_all(work, ec);

  sim::WorldConfig config;
  config.reality_seed = spec->reality_seed;
  config.stack = stack.value();
  config.baseline = spec->baseline;
  const sim::World world(workload.value(), config);

  // The oracle: the estimator's best recipes on the cluster's stack that the policy allows and
  // that run there (one probe each: a recipe that hits a stack defect or runs out of memory in
  // this world is passed over for the next).
  sim::SweepOptions sweep_options;
  sweep_options.top_k = kOracleCandidatesMax;
  sweep_options.stack = stack.value();
  sweep_options.factors = stack->factors;
  sweep_options.admit = [&](const Recipe& recipe) {
    return check_config(policy.value(), spec->baseline, recipe).allowed;
  };
  auto oracle = sim::sweep(workload.value(), spec->baseline, sweep_options);
  std::vector<std::string> oracle_hashes;
  if (oracle.ok()) {
    for (const sim::SweepEntry& entry : oracle->best) {
      if (measure_once(world, spec.value(), entry.recipe, kOracleProbeSeed) <= 0) continue;
      const std::string hash = recipe_hash(entry.recipe);
      recipes[hash] = entry.recipe;
      oracle_hashes.push_back(hash);
      if (oracle_hashes.size() == kOracleRecipes) break;
    }
  }

  // The final stage: two repeats of each recipe, in one shuffled order, in the same world.
  std::vector<std::string> order;
  for (const auto& [hash, recipe] : recipes) {
    for (int i = 0; i < kRepeats; ++i) order.push_back(hash);
  }
  std::mt19937_64 shuffle(0x5eedc0deULL ^ spec->reality_seed);
  std::shuffle(order.begin(), order.end(), shuffle);
  std::map<std::string, std::vector<double>> repeats;
  for (std::size_t i = 0; i < order.size(); ++i) {
    repeats[order[i]].push_back(
        measure_once(world, spec.value(), recipes.at(order[i]), 0xf17a1000ULL + i));
  }
  auto value_of = [&](const std::string& hash) {
    const std::vector<double>& v = repeats[hash];
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  };
  const double baseline_value = value_of(recipe_hash(spec->baseline));
  double oracle_value = baseline_value;
  for (const std::string& hash : oracle_hashes)
    oracle_value = std::max(oracle_value, value_of(hash));
  double band_sum = 0;
  int band_count = 0;
  for (Arm& arm : arms) {
    for (CampaignResult& c : arm.campaigns) {
      c.value = value_of(c.shipped_hash.empty() ? recipe_hash(spec->baseline) : c.shipped_hash);
      c.gain = baseline_value > 0 ? c.value / baseline_value - 1 : 0;
      band_sum += c.band_fraction;
      ++band_count;
    }
  }
  const double band = band_count ? band_sum / band_count : spec->band_floor_fraction;

  struct Verdict {
    std::string a, b, verdict;
    double p_unrestricted = 1, p_stratified = 1, mean_ratio = 1;
  };
  std::vector<Verdict> verdicts;
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
      Verdict v{arms[i].name,         arms[j].name,       "beats",
                p_unrestricted(a, b), p_stratified(a, b), ma / mb};
      verdicts.push_back(v);
    }
  }

  if (options.json) {
    nlohmann::json out;
    out["campaign_file"] = options.campaign_file;
    out["reality_seed"] = spec->reality_seed;
    out["seeds"] = options.seeds;
    out["band_fraction"] = band;
    out["baseline_tokens_per_s_per_gpu"] = baseline_value;
    out["oracle_tokens_per_s_per_gpu"] = oracle_value;
    for (const Arm& arm : arms) {
      nlohmann::json a;
      std::vector<double> gains;
      double oracle_fraction = 0;
      double launches = 0;
      double failed = 0;
      for (const auto& c : arm.campaigns) {
        gains.push_back(c.gain);
        oracle_fraction += oracle_value > 0 ? c.value / oracle_value : 0;
        launches += c.launches;
        failed += c.failed;
      }
      a["mean_gain_fraction"] = arm.mean(&CampaignResult::gain);
      a["campaign_gain_fractions"] = gains;
      a["gpu_hours_mean"] = arm.mean(&CampaignResult::gpu_hours);
      a["launches_mean"] = arm.mean(&CampaignResult::launches);
      a["failed_launch_share"] = launches > 0 ? failed / launches : 0.0;
      a["failed_gpu_hours_mean"] = arm.mean(&CampaignResult::failed_gpu_hours);
      a["wall_clock_hours_mean"] = arm.mean(&CampaignResult::wall_clock_h);
      a["oracle_fraction_mean"] =
          arm.campaigns.empty() ? 0.0 : oracle_fraction / arm.campaigns.size();
      out["arms"][arm.name] = a;
    }
    out["verdicts"] = nlohmann::json::array();
    for (const Verdict& v : verdicts) {
      out["verdicts"].push_back({{"winner", v.a},
                                 {"loser", v.b},
                                 {"mean_ratio", v.mean_ratio},
                                 {"p_unrestricted", v.p_unrestricted},
                                 {"p_stratified", v.p_stratified}});
    }
    write_json_output(std::move(out));
    return kExitOk;
  }

  std::cout << spec->name << ": " << spec->model << " on " << spec->gpus << " x " << spec->hardware
            << ", reality seed " << spec->reality_seed << ", " << options.seeds
            << " campaigns per arm\n";
  std::cout << "final stage: baseline " << format_fixed(baseline_value, 1)
            << " tokens/s/GPU, oracle " << format_fixed(oracle_value, 1) << " ("
            << format_signed_percent(oracle_value / baseline_value - 1, 1) << "), band "
            << format_percent(band, 2) << "\n\n";
  TextTable table({{"arm"},
                   {"mean gain", Align::kRight},
                   {"campaigns"},
                   {"GPU-hours", Align::kRight},
                   {"launches", Align::kRight},
                   {"failed (GPU-h)", Align::kRight},
                   {"wall-clock", Align::kRight},
                   {"of oracle", Align::kRight}});
  for (const Arm& arm : arms) {
    std::string each;
    double launches = 0;
    double failed = 0;
    double oracle_fraction = 0;
    for (const auto& c : arm.campaigns) {
      each += (each.empty() ? "" : ", ") + format_signed_percent(c.gain, 1);
      launches += c.launches;
      failed += c.failed;
      oracle_fraction += oracle_value > 0 ? c.value / oracle_value : 0;
    }
    table.add_row(
        {arm.name, format_signed_percent(arm.mean(&CampaignResult::gain), 1), each,
         format_fixed(arm.mean(&CampaignResult::gpu_hours), 1),
         format_fixed(arm.mean(&CampaignResult::launches), 1),
         format_percent(launches > 0 ? failed / launches : 0.0, 0) + " (" +
             format_fixed(arm.mean(&CampaignResult::failed_gpu_hours), 1) + ")",
         format_fixed(arm.mean(&CampaignResult::wall_clock_h), 1) + " h",
         format_percent(oracle_fraction / std::max<std::size_t>(1, arm.campaigns.size()), 0)});
  }
  std::cout << table.render() << "\n";
  if (verdicts.empty()) std::cout << "no arm beats another by more than the band\n";
  for (const Verdict& v : verdicts) {
    std::cout << v.a << " beats " << v.b << " (mean " << format_signed_percent(v.mean_ratio - 1, 1)
              << "; permutation p = " << format_fixed(v.p_unrestricted, 3) << ", stratified "
              << format_fixed(v.p_stratified, 3) << ")\n";
  }
  return kExitOk;
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CompareOptions>();
  auto* compare = app.add_subcommand(
      "compare",
      "Run tuners side by side on the simulated cluster: per arm, one campaign per seed from the "
      "same campaign file; then re-measure the baseline, every shipped recipe and the oracle's "
      "best recipes twice each in one shuffled order, and compare the arms with the mean rule "
      "and exact permutation p-values");
  compare->add_option("--campaign", options->campaign_file, "Campaign file (launcher = \"sim\")")
      ->required();
  compare->add_option("--arms", options->arms, "Tuners, comma-separated: expert, tpe, random")
      ->capture_default_str();
  compare->add_option("--seeds", options->seeds, "Campaigns per arm (seeds 1..N), 1 to 10")
      ->capture_default_str();
  compare->add_option("--reality-seed", options->reality_seed,
                      "The simulated world (default: the campaign file's)");
  compare->add_option("--work", options->work_dir,
                      "Keep the campaigns' ledgers in this new folder (default: a temporary "
                      "folder, removed at the end)");
  compare->add_flag("--json", options->json, "Machine-readable output");
  compare->callback([options, &exit_code] { exit_code = run_compare(*options); });
}

}  // namespace attune::cli
