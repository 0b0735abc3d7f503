// `attune campaign run` and `attune campaign resume`: the main job, on the embedded default
// (the simulated cluster on a virtual clock, and a local RocksDB ledger), on local processes, or
// on a Slurm cluster.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "adapters/agent/control_plane.h"
#include "adapters/agent/control_socket.h"
#include "adapters/launcher/local_launcher.h"
#include "adapters/launcher/slurm/slurm_launcher.h"
#include "adapters/metrics/log_metrics_source.h"
#include "adapters/profiler/kineto_trace_analyzer.h"
#include "adapters/tuner/expert_tuner.h"
#include "adapters/tuner/learned_rules.h"
#include "adapters/tuner/llm/llm_tuner.h"
#include "adapters/tuner/random_tuner.h"
#include "adapters/tuner/tpe_tuner.h"
#include "adapters/world/sim_job.h"
#include "adapters/world/sim_launcher.h"
#include "adapters/world/world.h"
#include "core/campaign_file.h"
#include "core/runtime.h"
#include "core/text_file.h"
#include "events/assert.h"
#include "events/sha256.h"
#include "gate/policy.h"
#include "projections/number_format.h"
#include "projections/render.h"
#include "tools/attune/agent_supervisor.h"
#include "tools/attune/campaign_runner.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string campaign_file;
  std::string db = "attune-ledger";
  std::optional<std::uint64_t> seed;
  std::optional<std::string> tuner;  // overrides the campaign file's [tuner] name
  AgentOptions agent;
  bool json = false;
};

struct ResumeOptions {
  std::string db;
  std::string campaign;
  AgentOptions agent;
  bool json = false;
};

// The policy a campaign recorded, re-read and checked against the hash recorded when it opened:
// a policy is fixed for the whole campaign.
// The per-user learned-rules catalog: $XDG_DATA_HOME, else ~/.local/share, then
// attune/learned_rules.jsonl; empty when neither is known.
std::string default_learned_rules_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  fs::path base;
  if (xdg != nullptr && *xdg != '\0') {
    base = xdg;
  } else if (home != nullptr && *home != '\0') {
    base = fs::path(home) / ".local" / "share";
  }
  return base.empty() ? "" : (base / "attune" / "learned_rules.jsonl").string();
}

// Reads the campaign's learned-rules catalog into the opened event, so that the ledger records
// what the tuner read and a resumed campaign reads the same. A catalog that does not parse is an
// error naming its line.
Status attach_learned_rules(const CampaignSpec& spec, CampaignOpened& opened) {
  if (spec.learned_rules_path == "none") return Ok{};
  opened.learned_rules_path =
      spec.learned_rules_path.empty() ? default_learned_rules_path() : spec.learned_rules_path;
  std::error_code ec;
  if (opened.learned_rules_path.empty() || !fs::exists(opened.learned_rules_path, ec)) {
    return Ok{};
  }
  auto text = read_text_file(opened.learned_rules_path);
  if (!text.ok()) return make_error(text.error());
  auto parsed = parse_learned_rules(text.value(), opened.learned_rules_path);
  if (!parsed.ok()) return make_error(parsed.error());
  opened.learned_rules = text.value();
  return Ok{};
}

// What a shipped campaign established about its levers, for the runtime to record (once): the
// rules learn_rules() finds that the catalog the campaign read does not hold yet.
std::function<std::vector<LeverRuleLearned>(const ControlState&)> rule_learner() {
  return [](const ControlState& state) {
    std::vector<LearnedRule> known;
    if (!state.view.settings.learned_rules.empty()) {
      auto parsed = parse_learned_rules(state.view.settings.learned_rules, "learned rules");
      if (parsed.ok()) known = std::move(parsed).value();
    }
    std::vector<LeverRuleLearned> rules;
    for (const LearnedRule& rule : learn_rules(state, known)) {
      rules.push_back(LeverRuleLearned{rule.lever, rule.rule, rule.evidence_run_ids, rule.when,
                                       rule.effect, rule.action});
    }
    return rules;
  };
}

// After a campaign shipped: the rules its ledger records appended to the catalog (by the process
// that recorded them), and a summary beside the ledger.
Status finish_campaign(const ControlState& state, const std::string& db,
                       std::uint64_t rules_from_sequence) {
  const CampaignView& view = state.view;
  if (!view.stop.shipped) return Ok{};
  std::vector<LearnedRule> learned;
  std::string lines;
  for (const LearnedRuleRecord& record : state.learned_rules) {
    LearnedRule rule{record.rule.lever,  record.rule.when, record.rule.effect,
                     record.rule.action, record.rule.rule, record.rule.evidence_run_ids};
    if (record.sequence > rules_from_sequence) lines += learned_rule_line(rule);
    learned.push_back(std::move(rule));
  }
  if (!lines.empty() && !view.settings.learned_rules_path.empty()) {
    std::error_code ec;
    fs::create_directories(fs::path(view.settings.learned_rules_path).parent_path(), ec);
    std::ofstream out(view.settings.learned_rules_path, std::ios::binary | std::ios::app);
    out << lines;
    if (!out) return make_error(view.settings.learned_rules_path + ": cannot append");
  }
  std::ofstream summary(fs::path(db) / (view.campaign_id + ".summary.md"),
                        std::ios::binary | std::ios::trunc);
  summary << campaign_summary(state, builtin_lever_catalog(), learned);
  return Ok{};
}

Result<Policy> load_policy(const CampaignOpened& opened) {
  if (opened.policy_path.empty()) return default_policy();
  auto bytes = read_text_file(opened.policy_path);
  if (!bytes.ok()) return make_error(bytes.error());
  if (to_hex(sha256(bytes.value())) != opened.policy_hash) {
    return make_error(opened.policy_path +
                      ": the policy file changed after the campaign opened (its hash differs "
                      "from the one recorded); a campaign's policy is fixed");
  }
  return parse_policy(bytes.value(), opened.policy_path);
}

// The Slurm launcher's folder in the ledger, and the record of its options there: `campaign
// resume` watches the jobs the way `campaign run` started them.
std::string slurm_jobs_dir(const std::string& campaign_id) {
  return (fs::path("slurm-jobs") / campaign_id).string();
}
std::string slurm_options_path(const std::string& db, const std::string& campaign_id) {
  return (fs::path(db) / slurm_jobs_dir(campaign_id) / "options.json").string();
}

SlurmLauncherOptions slurm_options_of(const CampaignSpec& spec) {
  SlurmLauncherOptions options;
  options.job_template = spec.job_template;
  options.partition = spec.slurm.partition;
  options.gpus_per_node = spec.slurm.gpus_per_node;
  options.sbatch_args = spec.slurm.sbatch_args;
  options.poll_interval_s = spec.slurm.poll_seconds;
  options.start_limit_s = spec.slurm.start_limit_seconds;
  options.log_silence_s = spec.slurm.log_silence_seconds;
  options.expected_seconds_per_step = spec.expected_seconds_per_step;
  options.bin_dir = spec.slurm.bin_dir;
  options.work_dir = spec.slurm.work_dir;
  return options;
}

// Everything a campaign runs on, built from its CampaignOpened: the simulated cluster on a
// virtual clock, local processes in real time, or Slurm jobs in real time (`slurm`: the
// launcher's options, required for a Slurm campaign).
struct Campaign {
  sim::Workload workload;
  std::unique_ptr<sim::World> world;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Launcher> launcher;
  LogMetricsSource metrics;
  std::unique_ptr<Tuner> tuner;
  Policy policy;
  Recipe baseline;
};

Result<Campaign> build_campaign(const CampaignOpened& opened, const std::string& db,
                                const std::string& campaign_id, std::int64_t start_unix_ns,
                                const SlurmLauncherOptions* slurm) {
  if (opened.launcher != "sim" && opened.launcher != "local" && opened.launcher != "slurm") {
    return make_error("launcher '" + opened.launcher +
                      "' is not available in this build; use launcher = \"sim\", \"local\" or "
                      "\"slurm\"");
  }
  Campaign campaign;
  auto precision = sim::parse_precision(opened.precision);
  if (!precision) return make_error("unknown precision '" + opened.precision + "'");
  auto workload = sim::load_workload(
      opened.model, opened.hardware, static_cast<int>(opened.gpu_count),
      static_cast<int>(opened.seq_length), static_cast<int>(opened.global_batch), *precision);
  if (!workload.ok()) return make_error(workload.error());
  campaign.workload = workload.value();
  auto policy = load_policy(opened);
  if (!policy.ok()) return make_error(policy.error());
  campaign.policy = std::move(policy).value();
  auto baseline = parse_recipe(opened.baseline_recipe, "the recorded baseline recipe");
  if (!baseline.ok()) return make_error(baseline.error());
  campaign.baseline = std::move(baseline).value();

  // The tuner before the launcher: a tuner's bad settings stop the campaign before the
  // launcher creates anything under the ledger folder. The LLM tuner reads run logs through the
  // launcher made below.
  auto launcher_slot = std::make_shared<const Launcher*>(nullptr);
  if (opened.tuner == "external") {
    campaign.tuner = std::make_unique<agent::ExternalTuner>();
  } else if (opened.tuner == "random") {
    campaign.tuner = std::make_unique<RandomTuner>(campaign.workload, opened.seed);
  } else if (opened.tuner == "tpe") {
    campaign.tuner = std::make_unique<TpeTuner>(campaign.workload, opened.seed);
  } else if (opened.tuner == "expert") {
    campaign.tuner =
        std::make_unique<ExpertTuner>(campaign.workload, campaign.policy, builtin_lever_catalog());
  } else if (opened.tuner == "llm") {
    auto tuner =
        LlmTuner::open(opened, builtin_lever_catalog(),
                       [launcher_slot](const std::string& log_path) -> Result<std::string> {
                         if (*launcher_slot == nullptr) return make_error("no launcher");
                         return (*launcher_slot)->read_log(log_path);
                       });
    if (!tuner.ok()) return make_error(tuner.error());
    campaign.tuner = std::move(tuner).value();
  } else {
    return make_error("tuner '" + opened.tuner +
                      "' is not available in this build; use expert, tpe, random, llm or external");
  }

  if (opened.launcher == "local") {
    campaign.scheduler = make_asio_scheduler();
    LocalLauncherOptions local;
    local.job_template = opened.job_template;
    local.expected_seconds_per_step = opened.expected_seconds_per_step;
    auto launcher = LocalLauncher::open(*campaign.scheduler, db,
                                        (fs::path("local-jobs") / campaign_id).string(), local);
    if (!launcher.ok()) return make_error(launcher.error());
    campaign.launcher = std::move(launcher).value();
  } else if (opened.launcher == "slurm") {
    ATTUNE_ASSERT(slurm != nullptr, "a Slurm campaign comes with its Slurm options");
    campaign.scheduler = make_asio_scheduler();
    auto launcher =
        SlurmLauncher::open(*campaign.scheduler, db, slurm_jobs_dir(campaign_id), *slurm);
    if (!launcher.ok()) return make_error(launcher.error());
    campaign.launcher = std::move(launcher).value();
  } else {
    sim::WorldConfig config;
    config.reality_seed = opened.reality_seed;
    const int needed = sim::World(campaign.workload, config).nodes_needed();
    // Room for every calibration run on its own nodes, and for `concurrency` jobs at once.
    const int jobs = static_cast<int>(std::max(opened.concurrency, opened.calibration_runs));
    config.nodes = jobs * needed + std::max(sim::kSpareNodesMin, needed / 4);
    campaign.world = std::make_unique<sim::World>(campaign.workload, config);
    campaign.scheduler = make_virtual_scheduler(start_unix_ns);
    auto launcher =
        SimLauncher::open(*campaign.world, *campaign.scheduler, db,
                          (fs::path("sim-cluster") / campaign_id).string(), opened.seed);
    if (!launcher.ok()) return make_error(launcher.error());
    campaign.launcher = std::move(launcher).value();
  }
  *launcher_slot = campaign.launcher.get();
  return campaign;
}

std::string shipped_recipe_path(const std::string& db, const std::string& campaign_id) {
  return (fs::path(db) / (campaign_id + ".shipped.sh")).string();
}

// The final summary: what shipped, against what, at what cost.
int print_summary(const ControlState& state, const std::string& db, bool json) {
  const CampaignView& view = state.view;
  const RecipeShipped* shipped = view.stop.shipped ? &*view.stop.shipped : nullptr;
  std::uint32_t launches = 0;
  std::uint32_t failed = 0;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose == RunPurpose::kCheck) continue;
    ++launches;
    failed += run.failed && run.failed->failure_class != FailureClass::kInfra ? 1 : 0;
  }
  const std::string recipe_path = shipped_recipe_path(db, view.campaign_id);
  if (shipped) {
    std::ofstream out(recipe_path, std::ios::binary | std::ios::trunc);
    out << "# Shipped by attune, campaign " << view.campaign_id << "\n# "
        << (shipped->is_baseline
                ? "the baseline recipe: nothing cleared the band and the gate"
                : "run " + std::to_string(shipped->run_id) + ", " +
                      format_signed_percent(shipped->gain_fraction, 2) + " over the baseline")
        << "\n"
        << shipped->recipe;
  }
  const Budget& budget = view.budget;
  const BaselineBand& band = view.baseline_band;
  if (json) {
    nlohmann::json out;
    out["campaign_id"] = view.campaign_id;
    out["ledger"] = db;
    out["shipped"] = {{"recipe", shipped ? shipped->recipe : ""},
                      {"recipe_file", recipe_path},
                      {"run_id", shipped ? shipped->run_id : 0},
                      {"is_baseline", shipped ? shipped->is_baseline : true},
                      {"gain_fraction", shipped ? shipped->gain_fraction : 0.0},
                      {"tokens_per_s_per_gpu", shipped ? shipped->tokens_per_sec_per_gpu : 0.0},
                      {"evidence", shipped ? shipped->evidence : ""}};
    out["baseline"] = {{"mean", band.mean_tokens_per_s_per_gpu},
                       {"rsd", band.rsd_fraction},
                       {"band_fraction", band.band_fraction},
                       {"calibration_runs", band.band_run_ids.size()}};
    out["gpu_hours"] = {{"tuner", budget.tuner_gpu_hours},
                        {"checks", budget.checks_gpu_hours},
                        {"infra", budget.infra_gpu_hours},
                        {"reserve", budget.reserve_gpu_hours},
                        {"budget", budget.budget_gpu_hours}};
    out["llm"] = {{"turns", budget.llm_turns},
                  {"input_tokens", budget.llm_input_tokens},
                  {"output_tokens", budget.llm_output_tokens},
                  {"cost_usd", budget.llm_cost_usd}};
    out["launches"] = launches;
    out["failed_launches"] = failed;
    out["refused_proposals"] = view.ledger.refused.size();
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "\n" << render_ledger_text(view) << "\n";
  std::cout << "shipped   ";
  if (!shipped) {
    std::cout << "nothing\n";
  } else if (shipped->is_baseline) {
    std::cout << "the baseline recipe (" << shipped->evidence << ")\n";
  } else {
    std::cout << "run " << shipped->run_id << ": "
              << format_fixed(shipped->tokens_per_sec_per_gpu, 1) << " tokens/s/GPU, "
              << format_signed_percent(shipped->gain_fraction, 2) << " over the baseline (band "
              << format_percent(band.band_fraction, 2) << ")\n";
  }
  std::cout << "baseline  " << format_fixed(band.mean_tokens_per_s_per_gpu, 1)
            << " tokens/s/GPU, rsd " << format_percent(band.rsd_fraction, 2) << " over "
            << band.band_run_ids.size() << " calibration runs\n";
  std::cout << "gpu-hours tuner " << format_fixed(budget.tuner_gpu_hours, 1) << ", checks "
            << format_fixed(budget.checks_gpu_hours, 1) << " (reserve "
            << format_fixed(budget.reserve_gpu_hours, 1) << "), infrastructure "
            << format_fixed(budget.infra_gpu_hours, 1) << ", budget "
            << format_fixed(budget.budget_gpu_hours, 1) << "\n";
  if (budget.llm_turns > 0) {
    std::cout << "llm       $" << format_fixed(budget.llm_cost_usd, 2) << " over "
              << budget.llm_turns << " turns (" << budget.llm_input_tokens << " input, "
              << budget.llm_output_tokens << " output tokens)\n";
  }
  std::cout << "launches  " << launches << " (" << failed << " failed), "
            << view.ledger.refused.size() << " proposals refused\n";
  std::cout << "recipe    " << recipe_path << "\n";
  std::cout << "ledger    " << db << " (campaign " << view.campaign_id << ")\n";
  return kExitOk;
}

// One progress line on stdout. The runtime (scheduler thread) and an agent's supervisor (its
// own thread) both print: whole lines, never interleaved.
void print_progress_line(const std::string& line) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::cout << line << "\n" << std::flush;
}

RuntimeOptions runtime_options(bool json, const TraceAnalyzer& trace_analyzer) {
  RuntimeOptions options;
  options.trace_analyzer = &trace_analyzer;
  options.crash_after_event = crash_after_event_from_environment();
  options.learn_rules = rule_learner();
  if (!json) {
    options.progress = print_progress_line;
  }
  return options;
}

// How long a supervisor's give-up waits for room in the scheduler's queue before trying again.
constexpr int kPostRetryMs = 10;
// How often a supervisor's stop, given up during calibration, looks again.
constexpr std::int64_t kGiveUpRetryNs = 1'000'000'000;

// The socket path of an interactive campaign, checked before the ledger is touched.
Result<std::string> listen_path(const std::string& tuner, const AgentOptions& agent) {
  if (tuner != "external") {
    if (!agent.listen.empty()) {
      return make_error(
          "--listen serves an external agent; it needs --tuner external (the "
          "campaign's tuner is '" +
          tuner + "')");
    }
    return std::string();
  }
  if (agent.listen.empty()) {
    return make_error("the external tuner needs a control socket: --listen unix:PATH");
  }
  return agent::parse_listen_address(agent.listen);
}

// Runs the campaign's loop. With an external tuner the control socket serves the agent while
// the loop runs, and with an agent command the agent is kept running; `open_or_resume` is
// called once the socket is up, so that a socket that cannot be bound changes nothing.
Status drive(CampaignRuntime& runtime, Campaign& campaign, const std::string& socket_path,
             const AgentOptions& agent, const std::string& agent_log_path, bool quiet,
             const std::function<Status()>& open_or_resume) {
  if (socket_path.empty()) {
    Status ready = open_or_resume();
    if (!ready.ok()) return ready;
    return runtime.run();
  }
  agent::ControlPlane plane(runtime, *campaign.scheduler, *campaign.launcher);
  agent::ControlServer server(socket_path,
                              [&plane](const std::string& line) { return plane.handle(line); });
  Status listening = server.start();
  if (!listening.ok()) return listening;
  Status ready = open_or_resume();
  if (!ready.ok()) return ready;
  std::unique_ptr<AgentSupervisor> supervisor;
  if (!agent.command.empty()) {
    AgentSupervisorOptions options;
    options.command = agent.command;
    options.socket_path = socket_path;
    options.log_path = agent_log_path;
    options.restarts_max = agent.restarts_max;
    if (!quiet) options.progress = print_progress_line;
    // The agent is needed while the campaign calibrates or searches; after the stop it may
    // end its turn for good.
    options.agent_needed = [&plane] {
      const auto status = nlohmann::json::parse(plane.handle(R"({"op":"status"})"), nullptr, false);
      const std::string phase = status.is_object() ? status.value("phase", "") : "";
      return phase == "calibrating" || phase == "searching";
    };
    Scheduler* scheduler = campaign.scheduler.get();
    // A stop given up during calibration is recorded once the search begins.
    auto record_give_up = std::make_shared<std::function<void(const std::string&)>>();
    *record_give_up = [scheduler, &runtime,
                       weak = std::weak_ptr(record_give_up)](const std::string& evidence) {
      const Phase phase = phase_of(runtime.state());
      if (phase == Phase::kCalibrating || phase == Phase::kNotOpened) {
        if (auto self = weak.lock()) {
          scheduler->schedule_after(kGiveUpRetryNs, [self, evidence] { (*self)(evidence); });
        }
        return;
      }
      if (phase != Phase::kSearching) return;
      TunerStop stop;
      stop.evidence = evidence;
      (void)runtime.record_stop(stop, "control-plane");
    };
    options.give_up = [scheduler, record_give_up](const std::string& evidence) {
      // The supervisor gives up once: wait for room rather than drop it.
      while (!scheduler->post([record_give_up, evidence] { (*record_give_up)(evidence); })) {
        std::this_thread::sleep_for(std::chrono::milliseconds(kPostRetryMs));
      }
    };
    supervisor = std::make_unique<AgentSupervisor>(std::move(options));
    supervisor->start();
  }
  if (!quiet) print_progress_line("control socket " + socket_path);
  Status ran = runtime.run();
  plane.close("the campaign has finished (" + std::string(to_string(phase_of(runtime.state()))) +
              ")");
  if (supervisor) supervisor->stop();
  server.stop();
  return ran;
}

std::string agent_log_path(const std::string& db, const std::string& campaign_id) {
  return (fs::path(db) / (campaign_id + ".agent.log")).string();
}

}  // namespace

Result<ControlState> run_campaign_quietly(const CampaignSpec& spec, const std::string& db) {
  const std::string campaign_id = campaign_id_for(spec);
  const CampaignOpened opened = campaign_opened(spec);  // learned rules neither read nor written
  if (opened.launcher != "sim") {
    return make_error(
        "only campaigns on the simulated cluster (launcher = \"sim\") can be run "
        "in process; this one uses '" +
        opened.launcher + "'");
  }
  auto campaign = build_campaign(opened, db, campaign_id, sim::kVirtualStartUnixNs, nullptr);
  if (!campaign.ok()) return make_error(campaign.error());
  auto store = EventStore::open(db);
  if (!store.ok()) return make_error(store.error());
  auto version = (*store)->version(campaign_id);
  if (!version.ok()) return make_error(version.error());
  if (version.value() != 0) return make_error("campaign " + campaign_id + " already in " + db);
  const profiler::KinetoTraceAnalyzer trace_analyzer(db);
  RuntimeOptions options;
  options.trace_analyzer = &trace_analyzer;
  CampaignRuntime runtime(**store, campaign_id, campaign->policy, campaign->baseline,
                          *campaign->scheduler, *campaign->launcher, campaign->metrics,
                          *campaign->tuner, options);
  Status opened_status = runtime.open(opened);
  if (!opened_status.ok()) return make_error(opened_status.error());
  Status ran = runtime.run();
  if (!ran.ok()) return make_error("campaign " + campaign_id + ": " + ran.error());
  return runtime.state();
}

namespace {

int run_campaign(const RunOptions& options) {
  auto spec = parse_campaign_file(options.campaign_file);
  if (!spec.ok()) return fail(spec.error());
  if (options.seed) spec->seed = *options.seed;
  if (options.tuner) spec->tuner = *options.tuner;
  auto socket_path = listen_path(spec->tuner, options.agent);
  if (!socket_path.ok()) return fail(socket_path.error());
  if (!spec->policy_bytes.empty()) {
    auto policy = parse_policy(spec->policy_bytes, spec->policy_path);
    if (!policy.ok()) return fail(policy.error());
  }
  const std::string campaign_id = campaign_id_for(spec.value());
  CampaignOpened opened = campaign_opened(spec.value());
  Status learned = attach_learned_rules(spec.value(), opened);
  if (!learned.ok()) return fail(learned.error());
  // Everything is checked before the ledger is touched: bad input changes nothing.
  const SlurmLauncherOptions slurm = slurm_options_of(spec.value());
  auto campaign = build_campaign(opened, options.db, campaign_id, sim::kVirtualStartUnixNs, &slurm);

  if (!campaign.ok()) return fail(options.campaign_file + ": " + campaign.error());

  auto store = EventStore::open(options.db);
  if (!store.ok()) return fail(store.error());
  auto version = (*store)->version(campaign_id);
  if (!version.ok()) return fail(version.error());
  if (version.value() != 0) {
    return fail("campaign " + campaign_id + " already exists in " + options.db +
                "; continue it with: attune campaign resume --db " + options.db + " --campaign " +
                campaign_id);
  }
  if (opened.launcher == "slurm") {
    Status saved = save_slurm_options(slurm_options_path(options.db, campaign_id), slurm);
    if (!saved.ok()) return fail(saved.error());
  }
  const profiler::KinetoTraceAnalyzer trace_analyzer(options.db);
  CampaignRuntime runtime(**store, campaign_id, campaign->policy, campaign->baseline,
                          *campaign->scheduler, *campaign->launcher, campaign->metrics,
                          *campaign->tuner, runtime_options(options.json, trace_analyzer));
  if (!options.json) {
    std::cout << "campaign " << campaign_id << ": " << opened.model << " on " << opened.gpu_count
              << " x " << opened.hardware << ", tuner " << opened.tuner << ", ledger " << options.db
              << "\n";
  }
  bool opened_ok = false;
  Status ran = drive(runtime, campaign.value(), socket_path.value(), options.agent,
                     agent_log_path(options.db, campaign_id), options.json, [&] {
                       Status status = runtime.open(opened);
                       opened_ok = status.ok();
                       return status;
                     });
  if (!opened_ok) return fail(ran.error());
  if (!ran.ok()) return fail("campaign " + campaign_id + ": " + ran.error());
  Status finished = finish_campaign(runtime.state(), options.db, 0);
  if (!finished.ok()) return fail("campaign " + campaign_id + ": " + finished.error());
  return print_summary(runtime.state(), options.db, options.json);
}

int resume_campaign(const ResumeOptions& options) {
  std::unique_ptr<EventStore> store;
  {
    std::error_code ec;
    if (!fs::exists(fs::path(options.db) / "CURRENT", ec)) {
      return fail("no ledger in " + options.db);
    }
    auto opened_store = EventStore::open(options.db);
    if (!opened_store.ok()) return fail(opened_store.error());
    store = std::move(opened_store).value();
  }
  auto events = store->read(options.campaign, 1, 1);
  if (!events.ok()) return fail(events.error());
  if (events->empty()) return fail("unknown campaign '" + options.campaign + "' in " + options.db);
  const auto* opened = std::get_if<CampaignOpened>(&events->front().body);
  if (opened == nullptr)
    return fail("campaign " + options.campaign + " does not start with CampaignOpened");
  auto version = store->version(options.campaign);
  auto last = store->read(options.campaign, version.value(), version.value());
  if (!last.ok() || last->empty()) return fail("cannot read the last event of " + options.campaign);
  std::optional<SlurmLauncherOptions> slurm;
  if (opened->launcher == "slurm") {
    auto loaded = load_slurm_options(slurm_options_path(options.db, options.campaign));
    if (!loaded.ok()) return fail(loaded.error());
    // The ledger's record of the template and the pace is the campaign's.
    loaded->job_template = opened->job_template;
    loaded->expected_seconds_per_step = opened->expected_seconds_per_step;
    slurm = std::move(loaded).value();
  }
  auto socket_path = listen_path(opened->tuner, options.agent);
  if (!socket_path.ok()) return fail(socket_path.error());
  auto campaign = build_campaign(*opened, options.db, options.campaign,
                                 last->back().recorded_at_unix_ns, slurm ? &*slurm : nullptr);
  if (!campaign.ok()) return fail(campaign.error());
  const profiler::KinetoTraceAnalyzer trace_analyzer(options.db);
  CampaignRuntime runtime(*store, options.campaign, campaign->policy, campaign->baseline,
                          *campaign->scheduler, *campaign->launcher, campaign->metrics,
                          *campaign->tuner, runtime_options(options.json, trace_analyzer));
  bool resumed_ok = false;
  Status ran = drive(runtime, campaign.value(), socket_path.value(), options.agent,
                     agent_log_path(options.db, options.campaign), options.json, [&] {
                       Status resumed = runtime.resume();
                       resumed_ok = resumed.ok();
                       if (resumed_ok && !options.json) {
                         std::cout << "resuming campaign " << options.campaign << " at event "
                                   << runtime.state().view.last_sequence << " ("
                                   << to_string(phase_of(runtime.state())) << ")\n";
                       }
                       return resumed;
                     });
  if (!resumed_ok) return fail(ran.error());
  if (!ran.ok()) return fail("campaign " + options.campaign + ": " + ran.error());
  Status finished = finish_campaign(runtime.state(), options.db, version.value());
  if (!finished.ok()) return fail("campaign " + options.campaign + ": " + finished.error());
  return print_summary(runtime.state(), options.db, options.json);
}

}  // namespace

int run_campaign_file(const std::string& campaign_file, const std::string& db,
                      const std::optional<std::string>& tuner, const AgentOptions& agent,
                      bool json) {
  RunOptions options;
  options.campaign_file = campaign_file;
  options.db = db;
  options.tuner = tuner;
  options.agent = agent;
  options.json = json;
  return run_campaign(options);
}

void add_campaign_commands(CLI::App& app, int& exit_code) {
  CLI::App* campaign = app.add_subcommand("campaign", "Run and resume campaigns");
  campaign->require_subcommand(1);

  auto run_options = std::make_shared<RunOptions>();
  CLI::App* run = campaign->add_subcommand(
      "run",
      "Run a campaign from a campaign file (TOML) to a shipped recipe: calibrate the baseline, "
      "search under the budget, check the best candidates with the gate, ship");
  run->add_option("CAMPAIGN.toml", run_options->campaign_file, "The campaign file")->required();
  run->add_option("--db", run_options->db, "Ledger folder (a RocksDB database)")
      ->capture_default_str();
  run->add_option("--seed", run_options->seed, "Override the campaign file's seed");
  run->add_option("--tuner", run_options->tuner,
                  "Override the campaign file's tuner: expert, tpe, random, llm, or external (an "
                  "agent drives the campaign through the control socket; needs --listen)");
  run->add_option("--listen", run_options->agent.listen,
                  "unix:PATH: serve the control socket for an external tuner's agent (attune "
                  "propose, wait, status, ... with --socket PATH or ATTUNE_SOCKET)");
  run->add_flag("--json", run_options->json, "Print the final summary as one JSON object");
  run->callback([&exit_code, run_options] { exit_code = run_campaign(*run_options); });

  auto resume_options = std::make_shared<ResumeOptions>();
  CLI::App* resume = campaign->add_subcommand(
      "resume",
      "Continue a campaign after a crash: fold the ledger, reattach to its jobs, never submit a "
      "run twice");
  resume->add_option("--db", resume_options->db, "Ledger folder")->required();
  resume->add_option("--campaign", resume_options->campaign, "Campaign id")->required();
  resume->add_option("--listen", resume_options->agent.listen,
                     "unix:PATH: the control socket, for a campaign with an external tuner");
  resume->add_option("--agent", resume_options->agent.command,
                     "For an external tuner: the agent command to start and restart");
  resume->add_flag("--json", resume_options->json, "Print the final summary as one JSON object");
  resume->callback([&exit_code, resume_options] { exit_code = resume_campaign(*resume_options); });
}

}  // namespace attune::cli
