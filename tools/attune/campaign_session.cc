#include "tools/attune/campaign_session.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>

#include "adapters/agent/control_plane.h"
#include "adapters/launcher/local_launcher.h"
#include "adapters/model/presets.h"
#include "adapters/model/stack_profile.h"
#include "adapters/tuner/expert_tuner.h"
#include "adapters/tuner/learned_rules.h"
#include "adapters/tuner/llm/llm_tuner.h"
#include "adapters/tuner/micro_batch.h"
#include "adapters/tuner/random_tuner.h"
#include "adapters/tuner/tpe_tuner.h"
#include "adapters/world/sim_launcher.h"
#include "core/text_file.h"
#include "events/assert.h"
#include "events/sha256.h"
#include "events/whole_file.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;

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

std::string slurm_jobs_dir(const std::string& campaign_id) {
  return (fs::path("slurm-jobs") / campaign_id).string();
}

}  // namespace

// The policy a campaign recorded, re-read and checked against the hash recorded when it opened:
// a policy is fixed for the whole campaign.
Result<Policy> load_policy(const CampaignOpened& opened, const std::string& db) {
  if (opened.policy_path.empty()) return default_policy();
  // Recorded relative to the ledger (older ledgers: to the folder the campaign ran in).
  std::string path = opened.policy_path;
  std::error_code ec;
  const fs::path beside_ledger = fs::path(db) / path;
  if (fs::path(path).is_relative() && fs::exists(beside_ledger, ec)) {
    path = beside_ledger.lexically_normal().string();
  }
  auto bytes = read_text_file(path);
  if (!bytes.ok()) {
    return make_error(bytes.error() + " (the campaign's policy, recorded as '" +
                      opened.policy_path + "' relative to the ledger " + db + ")");
  }
  if (to_hex(sha256(bytes.value())) != opened.policy_hash) {
    return make_error(path +
                      ": the policy file changed after the campaign opened (its hash differs "
                      "from the one recorded); a campaign's policy is fixed");
  }
  return parse_policy(bytes.value(), path);
}

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
  std::string torn;
  auto parsed = parse_learned_rules(text.value(), opened.learned_rules_path, &torn);
  if (!parsed.ok()) return make_error(parsed.error());
  if (!torn.empty()) std::cerr << "attune: warning: " << torn << "\n";
  opened.learned_rules.clear();
  for (const LearnedRule& rule :
       rules_for_launcher(std::move(parsed).value(), spec.launcher, spec.simulated_rules)) {
    opened.learned_rules += learned_rule_line(rule);
  }
  return Ok{};
}

void record_paths_for_resume(const std::string& db, CampaignOpened& opened) {
  std::error_code ec;
  if (!opened.policy_path.empty() && !opened.policy_path.starts_with("/")) {
    const fs::path relative = fs::absolute(opened.policy_path, ec)
                                  .lexically_normal()
                                  .lexically_relative(fs::absolute(db, ec).lexically_normal());
    if (!ec && !relative.empty()) opened.policy_path = relative.string();
  }
  if (!opened.learned_rules_path.empty()) {
    const fs::path absolute = fs::absolute(opened.learned_rules_path, ec);
    if (!ec) opened.learned_rules_path = absolute.lexically_normal().string();
  }
  // A stack file (not a preset name) is found again from any folder.
  if (opened.sim_stack.ends_with(".toml") || opened.sim_stack.find('/') != std::string::npos) {
    const fs::path absolute = fs::absolute(opened.sim_stack, ec);
    if (!ec) opened.sim_stack = absolute.lexically_normal().string();
  }
}

// The Slurm launcher's record of its options beside the ledger: `campaign resume` watches the
// jobs the way `campaign run` started them.
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

// One progress line on stderr (stdout keeps the summary, JSON under --json). The runtime (scheduler
// thread) and an agent's supervisor (its own thread) both print: whole lines, never interleaved.
void print_progress_line(const std::string& line) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::cerr << line << "\n" << std::flush;
}

Result<std::unique_ptr<CampaignSession>> CampaignSession::build(const CampaignOpened& opened,
                                                                std::string db,
                                                                std::string campaign_id,
                                                                SessionOptions options) {
  if (opened.launcher != "sim" && opened.launcher != "local" && opened.launcher != "slurm") {
    return make_error("launcher '" + opened.launcher +
                      "' is not available in this build; use launcher = \"sim\", \"local\" or "
                      "\"slurm\"");
  }
  std::unique_ptr<CampaignSession> session(new CampaignSession());
  session->db_ = std::move(db);
  session->campaign_id_ = std::move(campaign_id);
  session->options_ = std::move(options);
  auto precision = sim::parse_precision(opened.precision);
  if (!precision) return make_error("unknown precision '" + opened.precision + "'");
  auto workload = sim::load_workload(
      opened.model, opened.hardware, static_cast<int>(opened.gpu_count),
      static_cast<int>(opened.seq_length), static_cast<int>(opened.global_batch), *precision);
  if (!workload.ok()) return make_error(workload.error());
  session->workload_ = workload.value();
  auto policy = load_policy(opened, session->db_);
  if (!policy.ok()) return make_error(policy.error());
  session->policy_ = std::move(policy).value();
  auto baseline = parse_recipe(opened.baseline_recipe, "the recorded baseline recipe");
  if (!baseline.ok()) return make_error(baseline.error());
  session->baseline_ = std::move(baseline).value();
  auto stack = sim::load_stack(opened.sim_stack);
  if (!stack.ok()) return make_error(stack.error() + " ([cluster] stack)");
  session->stack_ = std::move(stack).value();
  Status tuner = session->build_tuner(opened);
  if (!tuner.ok()) return make_error(tuner.error());
  Status launcher = session->build_launcher(opened);
  if (!launcher.ok()) return make_error(launcher.error());

  session->trace_analyzer_ = std::make_unique<profiler::KinetoTraceAnalyzer>(session->db_);
  return session;
}

void CampaignSession::attach(EventStore& store) {
  ATTUNE_ASSERT(runtime_ == nullptr, "a session is attached to one ledger, once");
  store_ = &store;
  RuntimeOptions runtime;
  runtime.trace_analyzer = trace_analyzer_.get();
  runtime.crash_after_event = crash_after_event_from_environment();
  if (options_.learn) runtime.learn_rules = rule_learner();
  if (options_.progress) runtime.progress = print_progress_line;
  runtime_ = std::make_unique<CampaignRuntime>(store, campaign_id_, policy_, baseline_, *scheduler_,
                                               *launcher_, metrics_, *tuner_, std::move(runtime));
}

CampaignSession::~CampaignSession() {
  runtime_.reset();  // before the adapters it listens to
}

Status CampaignSession::build_tuner(const CampaignOpened& opened) {
  launcher_slot_ = std::make_shared<const Launcher*>(nullptr);
  if (opened.tuner == "external") {
    tuner_ = std::make_unique<agent::ExternalTuner>();
  } else if (opened.tuner == "random") {
    tuner_ = std::make_unique<RandomTuner>(workload_, opened.seed,
                                           free_micro_batch_sizes(policy_, baseline_));
  } else if (opened.tuner == "tpe" || opened.tuner == "tpe-prefilter") {
    tuner_ = std::make_unique<TpeTuner>(workload_, opened.seed, "/usr/bin/python3",
                                        opened.tuner == "tpe-prefilter",
                                        free_micro_batch_sizes(policy_, baseline_));
  } else if (opened.tuner == "expert") {
    tuner_ = std::make_unique<ExpertTuner>(workload_, policy_, builtin_lever_catalog(), stack_);
  } else if (opened.tuner == "llm") {
    auto tuner =
        LlmTuner::open(opened, builtin_lever_catalog(),
                       [slot = launcher_slot_](const std::string& log_path) -> Result<std::string> {
                         if (*slot == nullptr) return make_error("no launcher");
                         return (*slot)->read_log(log_path);
                       });
    if (!tuner.ok()) return make_error(tuner.error());
    tuner_ = std::move(tuner).value();
  } else {
    return make_error(
        "tuner '" + opened.tuner +
        "' is not available in this build; use expert, tpe, tpe-prefilter, random, llm or "
        "external");
  }
  return Ok{};
}

Status CampaignSession::build_launcher(const CampaignOpened& opened) {
  if (opened.launcher == "local") {
    scheduler_ = make_asio_scheduler();
    LocalLauncherOptions local;
    local.job_template = opened.job_template;
    local.expected_seconds_per_step = opened.expected_seconds_per_step;
    auto launcher = LocalLauncher::open(*scheduler_, db_,
                                        (fs::path("local-jobs") / campaign_id_).string(), local);
    if (!launcher.ok()) return make_error(launcher.error());
    launcher_ = std::move(launcher).value();
  } else if (opened.launcher == "slurm") {
    ATTUNE_ASSERT(options_.slurm.has_value(), "a Slurm campaign comes with its Slurm options");
    scheduler_ = make_asio_scheduler();
    auto launcher =
        SlurmLauncher::open(*scheduler_, db_, slurm_jobs_dir(campaign_id_), *options_.slurm);
    if (!launcher.ok()) return make_error(launcher.error());
    launcher_ = std::move(launcher).value();
  } else {
    sim::WorldConfig config;
    config.reality_seed = opened.reality_seed;
    config.stack = stack_;
    config.baseline = baseline_;
    const int needed = sim::World(workload_, config).nodes_needed();
    // Room for every calibration run on its own nodes, and for `concurrency` jobs at once.
    const int jobs = static_cast<int>(std::max(opened.concurrency, opened.calibration_runs));
    config.nodes = jobs * needed + std::max(sim::kSpareNodesMin, needed / 4);
    world_ = std::make_unique<sim::World>(workload_, config);
    scheduler_ = make_virtual_scheduler(options_.start_unix_ns);
    auto launcher = SimLauncher::open(
        *world_, *scheduler_, db_, (fs::path("sim-cluster") / campaign_id_).string(), opened.seed);
    if (!launcher.ok()) return make_error(launcher.error());
    launcher_ = std::move(launcher).value();
  }
  *launcher_slot_ = launcher_.get();
  return Ok{};
}

Status CampaignSession::open(const CampaignOpened& opened) {
  first_sequence_ = 0;
  return runtime_->open(opened);
}

Status CampaignSession::resume() {
  auto version = store_->version(campaign_id_);
  if (!version.ok()) return make_error(version.error());
  first_sequence_ = version.value();
  return runtime_->resume();
}

// Appends whole lines to a catalog that other campaigns read and append to, under an exclusive
// lock: a torn last line (a writer that stopped mid-line) is cut first, then the lines go in one
// write and are synced.
Status CampaignSession::finish() {
  const ControlState& state = runtime_->state();
  const CampaignView& view = state.view;
  if (!view.stop.shipped) return Ok{};
  std::vector<LearnedRule> learned;
  std::string lines;
  for (const LearnedRuleRecord& record : state.learned_rules) {
    LearnedRule rule{record.rule.lever,     record.rule.when, record.rule.effect,
                     record.rule.action,    record.rule.rule, record.rule.evidence_run_ids,
                     view.settings.launcher};
    if (record.sequence > first_sequence_) lines += learned_rule_line(rule);
    learned.push_back(std::move(rule));
  }
  if (!lines.empty() && !view.settings.learned_rules_path.empty()) {
    const std::string& path = view.settings.learned_rules_path;
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    Result<std::uint64_t> cut = append_whole_lines(path, lines);
    if (!cut.ok()) return make_error(cut.error() + " (the learned rules)");
    if (*cut > 0) {
      std::cerr << "attune: warning: " << path << ": cut a torn last line of " << *cut
                << " bytes before appending\n";
    }
  }
  std::ofstream summary(fs::path(db_) / (view.campaign_id + ".summary.md"),
                        std::ios::binary | std::ios::trunc);
  summary << campaign_summary(state, builtin_lever_catalog(), learned);
  if (!summary) return make_error(db_ + ": cannot write " + view.campaign_id + ".summary.md");
  // The events of a shipped campaign never change: one sorted run of files replays fastest.
  return store_->compact(campaign_id_);
}

}  // namespace attune::cli
