// `attune campaign run` and `attune campaign resume`: the main job, on the embedded default
// (the simulated cluster on a virtual clock, and a local RocksDB ledger), on local processes, or
// on a Slurm cluster.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
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
#include <variant>

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
#include "events/whole_file.h"
#include "gate/policy.h"
#include "projections/number_format.h"
#include "projections/render.h"
#include "projections/run_rows.h"
#include "projections/text_table.h"
#include "tools/attune/agent_supervisor.h"
#include "tools/attune/baseline_script.h"
#include "tools/attune/campaign_check.h"
#include "tools/attune/campaign_figures.h"
#include "tools/attune/campaign_runner.h"
#include "tools/attune/campaign_session.h"
#include "tools/attune/cli.h"
#include "tools/attune/interrupt.h"
#include "tools/attune/report.h"
#include "tools/attune/shipped_files.h"

namespace attune::cli {
namespace {

namespace fs = std::filesystem;

// How the final summary prints its run table: within 100 columns (the change cut), with a long
// change continued on the next lines, or every column whole.
struct TableOptions {
  bool wide = false;
  bool verbose = false;
};

struct RunOptions {
  std::string campaign_file;
  std::string db = "attune-ledger";
  std::optional<std::uint64_t> seed;
  std::optional<std::string> tuner;  // overrides the campaign file's [tuner] name
  AgentOptions agent;
  bool json = false;
  TableOptions table;
};

struct ResumeOptions {
  std::string db;
  std::string campaign;
  AgentOptions agent;
  bool json = false;
  TableOptions table;
};

// A campaign whose baseline never calibrated had nothing to tune: it ends in an error, not in
// a shipped baseline that looks like a result.
bool calibration_failed(const CampaignView& view) {
  return view.baseline_band.band_run_ids.empty() && view.stop.stop.has_value();
}

constexpr int kSummarySchemaVersion = 2;

// The report beside the ledger (DIR/ID.report.html), rebuilt from the ledger; empty when it
// cannot be written (the campaign is recorded either way, and `attune report` makes it again).
std::string write_report_beside(const EventStore& store, const std::string& db,
                                const std::string& campaign_id) {
  auto data = gather_report(store, campaign_id, db);
  if (!data.ok()) {
    std::cerr << "attune: warning: the report was not written: " << data.error() << "\n";
    return "";
  }
  const std::string path = (fs::path(db) / (campaign_id + ".report.html")).string();
  Status written = write_whole_file(path, render_report_html(data.value()), 0644, false);
  if (!written.ok()) {
    std::cerr << "attune: warning: " << written.error() << "\n";
    return "";
  }
  return path;
}

struct Launches {
  std::uint32_t count = 0;
  std::uint32_t failed = 0;
};

Launches launches_of(const ControlState& state) {
  Launches launches;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose == RunPurpose::kCheck) continue;
    ++launches.count;
    launches.failed += run.failed && run.failed->failure_class != FailureClass::kInfra ? 1 : 0;
  }
  return launches;
}

nlohmann::json summary_json(const ControlState& state, const std::string& db,
                            const std::optional<ShippedFiles>& files, const std::string& report,
                            const Economics& economics) {
  const CampaignView& view = state.view;
  const RecipeShipped* shipped = view.stop.shipped ? &*view.stop.shipped : nullptr;
  const Budget& budget = view.budget;
  const BaselineBand& band = view.baseline_band;
  const Launches launches = launches_of(state);
  nlohmann::json out;
  out["schema_version"] = kSummarySchemaVersion;
  out["campaign_id"] = view.campaign_id;
  out["ledger"] = db;
  out["report_file"] = report;
  out["shipped"] = {{"recipe", shipped ? shipped->recipe : ""},
                    {"recipe_file", files ? files->script : ""},
                    {"baseline_file", files ? files->baseline : ""},
                    {"diff_file", files ? files->diff : ""},
                    {"json_file", files ? files->json : ""},
                    {"sbatch_file", files ? files->sbatch : ""},
                    {"user_script_file", files ? files->user_script : ""},
                    {"change_by_hand", files ? files->by_hand : std::vector<std::string>()},
                    {"run_id", shipped ? shipped->run_id : 0},
                    {"is_baseline", shipped ? shipped->is_baseline : true},
                    {"gain_fraction", shipped ? shipped->gain_fraction : 0.0},
                    {"tokens_per_s_per_gpu", shipped ? shipped->tokens_per_sec_per_gpu : 0.0},
                    {"evidence", shipped ? shipped->evidence : ""}};
  out["baseline"] = {{"tokens_per_s_per_gpu", band.mean_tokens_per_s_per_gpu},
                     {"rsd", band.rsd_fraction},
                     {"band_fraction", band.band_fraction},
                     {"calibration_runs", band.band_run_ids.size()}};
  out["gpu_hours"] = {{"tuner", budget.tuner_gpu_hours},
                      {"checks", budget.checks_gpu_hours},
                      {"infra", budget.infra_gpu_hours},
                      {"reserve", budget.reserve_gpu_hours},
                      {"budget", budget.budget_gpu_hours}};
  out["economics"] = to_json(economics);
  out["llm"] = {{"turns", budget.llm_turns},
                {"input_tokens", budget.llm_input_tokens},
                {"output_tokens", budget.llm_output_tokens},
                {"cost_usd", budget.llm_cost_usd}};
  out["launches"] = launches.count;
  out["failed_launches"] = launches.failed;
  out["refused_proposals"] = view.ledger.refused.size();
  return out;
}

void print_summary_text(const ControlState& state, const std::string& db,
                        const std::optional<ShippedFiles>& files, const std::string& report,
                        const Economics& economics, const std::vector<RunRow>& rows,
                        const TableOptions& table) {
  const CampaignView& view = state.view;
  const RecipeShipped* shipped = view.stop.shipped ? &*view.stop.shipped : nullptr;
  const Budget& budget = view.budget;
  const BaselineBand& band = view.baseline_band;
  const Launches launches = launches_of(state);
  std::ostringstream out;
  out << "\n" << render_runs_text(rows, table.wide ? 0 : kTerminalWidth, table.verbose) << "\n";
  out << "shipped   ";
  if (!shipped) {
    out << "nothing\n";
  } else if (shipped->is_baseline) {
    out << "the baseline recipe (" << shipped->evidence << ")\n";
  } else {
    out << "run " << shipped->run_id << ": " << format_fixed(shipped->tokens_per_sec_per_gpu, 1)
        << " tokens/s/GPU, " << format_signed_percent(shipped->gain_fraction, 2)
        << " over the baseline (band " << format_percent(band.band_fraction, 2) << ")\n";
  }
  out << "baseline  " << format_fixed(band.mean_tokens_per_s_per_gpu, 1) << " tokens/s/GPU, rsd "
      << format_percent(band.rsd_fraction, 2) << " over " << band.band_run_ids.size()
      << " calibration runs\n"
      << "gpu-hours tuner " << format_fixed(budget.tuner_gpu_hours, 1) << ", checks "
      << format_fixed(budget.checks_gpu_hours, 1) << " (reserve "
      << format_fixed(budget.reserve_gpu_hours, 1) << "), infrastructure "
      << format_fixed(budget.infra_gpu_hours, 1) << ", budget "
      << format_fixed(budget.budget_gpu_hours, 1) << "\n"
      << render_economics_text(economics);
  if (budget.llm_turns > 0) {
    out << "llm       $" << format_fixed(budget.llm_cost_usd, 2) << " over " << budget.llm_turns
        << " turns (" << budget.llm_input_tokens << " input, " << budget.llm_output_tokens
        << " output tokens)\n";
  }
  out << "launches  " << launches.count << " (" << launches.failed << " failed), "
      << view.ledger.refused.size() << " proposals refused\n";
  // The files lie beside the ledger: named once by the ledger's folder, then by their names.
  out << "ledger    " << db << " (campaign " << view.campaign_id << ")\n";
  auto name = [](const std::string& path) { return fs::path(path).filename().string(); };
  if (files) {
    out << "recipe    " << name(files->script) << " beside the ledger (runs as it stands: bash "
        << name(files->script) << ")\nfiles     " << name(files->baseline) << ", "
        << name(files->diff) << ", " << name(files->json);
    if (!files->sbatch.empty()) out << ", " << name(files->sbatch);
    out << "\n";
    if (!files->user_script.empty()) {
      out << "script    " << name(files->user_script) << " (your script, changes applied)\n";
    }
    for (const std::string& note : files->by_hand) out << "by hand   " << note << "\n";
  }
  if (!report.empty()) out << "report    " << name(report) << " beside the ledger\n";
  std::cout << (table.wide ? out.str() : wrap_words(out.str(), kTerminalWidth, "          "));
}

// The final summary: what shipped, against what, at what cost; the shipped files and the report
// beside the ledger.
int print_summary(const ControlState& state, const EventStore& store, const std::string& db,
                  bool json, const TableOptions& table) {
  const CampaignView& view = state.view;
  std::optional<ShippedFiles> files;
  if (view.stop.shipped) {
    auto written = write_shipped_files(state, db);
    if (!written.ok()) {
      return fail(written.error() + " (the campaign is recorded; attune status --db " + db +
                  " --campaign " + view.campaign_id + " prints the shipped recipe)");
    }
    files = std::move(written).value();
  }
  const std::string report = write_report_beside(store, db, view.campaign_id);
  const Efficiency efficiency = efficiency_of(view.settings);
  const Economics economics = economics_of(view, efficiency);
  if (json) {
    write_json_output(summary_json(state, db, files, report, economics));
  } else {
    print_summary_text(state, db, files, report, economics, run_rows(view, efficiency), table);
  }
  return calibration_failed(view) ? fail(view.stop.stop->evidence) : kExitOk;
}

// How long a supervisor's give-up waits for room in the scheduler's queue before trying again.
constexpr int kPostRetryMs = 10;
// How many times an interrupt tries to reach a busy scheduler (5 s) before it gives up.
constexpr int kInterruptPostTries = 500;
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
  auto path = agent::parse_listen_address(agent.listen);
  if (!path.ok()) return path;
  // Refused before the ledger or the keyring is touched.
  if (Status free = agent::check_listen_path(path.value()); !free.ok()) {
    return make_error(free.error());
  }
  return path;
}

// Runs the campaign's loop. With an external tuner the control socket serves the agent while
// the loop runs, and with an agent command the agent is kept running; `open_or_resume` is
// called once the socket is up, so that a socket that cannot be bound changes nothing.
Status drive(CampaignSession& session, const std::string& socket_path, const AgentOptions& agent,
             const std::string& agent_log_path, bool quiet,
             const std::function<Status()>& open_or_resume) {
  CampaignRuntime& runtime = session.runtime();
  if (socket_path.empty()) {
    Status ready = open_or_resume();
    if (!ready.ok()) return ready;
    return runtime.run();
  }
  agent::ControlPlane plane(runtime, session.scheduler(), session.launcher());
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
    Scheduler* scheduler = &session.scheduler();
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

// The first SIGINT or SIGTERM ends the campaign's loop; on the local launcher it also stops the
// jobs in flight (SIGTERM to each job's process group, the cancellation journaled, so that the
// resume finds them cancelled and retries them as infrastructure failures). Slurm jobs keep
// running for the resume to reattach, and a simulated run has nothing outside this process.
void arm_interrupt(Interrupt& interrupt, CampaignSession& session,
                   const std::shared_ptr<std::atomic<int>>& stopped_jobs) {
  interrupt.on_signal([&session, stopped_jobs](int signal) {
    const std::string reason =
        std::string("interrupted by ") + (signal == SIGINT ? "SIGINT" : "SIGTERM");
    auto stop = [&session, stopped_jobs, reason] {
      if (session.launcher().name() == "local") {
        for (const auto& [id, run] : session.state().runs) {
          if (!run.submitted || run.finished) continue;
          session.launcher().cancel(id, reason);
          stopped_jobs->fetch_add(1);
        }
      }
      session.scheduler().stop();
    };
    // The scheduler's queue of posted callbacks is bounded; wait for room, a while.
    for (int tries = 0; tries < kInterruptPostTries && !session.scheduler().post(stop); ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kPostRetryMs));
    }
  });
}

// What an interrupted campaign says: where it stopped and how to go on. Exit 128 + the signal.
int interrupted(int signal, int stopped_jobs, const CampaignSession& session, const std::string& db,
                const std::string& campaign_id) {
  const ControlState& state = session.state();
  std::cerr << "attune: interrupted by " << (signal == SIGINT ? "SIGINT" : "SIGTERM")
            << " at event " << state.view.last_sequence << " (" << to_string(phase_of(state))
            << ")";
  if (stopped_jobs > 0) std::cerr << "; " << stopped_jobs << " local jobs stopped";
  if (state.view.settings.launcher == "slurm") std::cerr << "; Slurm jobs keep running";
  std::cerr << "\nattune: every event so far is in the ledger; continue with:\n"
            << "  attune campaign resume --db " << db << " --campaign " << campaign_id << "\n";
  return 128 + signal;
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
  SessionOptions options;
  options.progress = false;
  options.learn = false;
  options.start_unix_ns = sim::kVirtualStartUnixNs;
  auto session = CampaignSession::build(opened, db, campaign_id, options);
  if (!session.ok()) return make_error(session.error());
  auto store = open_ledger_for_writing(db);
  if (!store.ok()) return make_error(store.error());
  auto version = (*store)->version(campaign_id);
  if (!version.ok()) return make_error(version.error());
  if (version.value() != 0) return make_error("campaign " + campaign_id + " already in " + db);
  (*session)->attach(**store);
  Status opened_status = (*session)->open(opened);
  if (!opened_status.ok()) return make_error(opened_status.error());
  Status ran = (*session)->runtime().run();
  if (!ran.ok()) return make_error("campaign " + campaign_id + ": " + ran.error());
  return (*session)->state();
}

namespace {

// The campaign file read with the command line's overrides, its baseline script resolved, the
// preflight and the policy passed; or the exit code of a refusal whose lines are printed. Nothing
// is touched before this passes, so bad input changes nothing.
std::variant<CampaignSpec, int> checked_spec(const RunOptions& options) {
  auto spec = parse_campaign_file(options.campaign_file);
  if (!spec.ok()) return fail(spec.error());
  if (options.seed) spec->seed = *options.seed;
  if (options.tuner) spec->tuner = *options.tuner;
  std::vector<std::string> script_warnings;
  if (Status script = resolve_baseline_script(spec.value(), script_warnings); !script.ok()) {
    return fail(script.error());
  }
  for (const std::string& warning : script_warnings) {
    std::cerr << "attune: warning: " << options.campaign_file << ": " << warning << "\n";
  }
  // The preflight: a campaign that cannot work is refused before it spends anything.
  const PreflightReport preflight_report = preflight(spec.value());
  if (!preflight_report.problems.empty()) {
    for (const std::string& problem : preflight_report.problems) {
      std::cerr << "attune: " << options.campaign_file << ": " << problem << "\n";
    }
    return kExitError;
  }
  if (!spec->policy_bytes.empty()) {
    auto policy = parse_policy(spec->policy_bytes, spec->policy_path);
    if (!policy.ok()) return fail(policy.error());
  }
  return std::move(spec).value();
}

// A new campaign from its file.
int run_campaign(const RunOptions& options) {
  Interrupt interrupt;
  auto checked = checked_spec(options);
  if (const int* refused = std::get_if<int>(&checked)) return *refused;
  CampaignSpec& spec = std::get<CampaignSpec>(checked);
  auto socket_path = listen_path(spec.tuner, options.agent);
  if (!socket_path.ok()) return fail(socket_path.error());
  const std::string campaign_id = campaign_id_for(spec);
  CampaignOpened opened = campaign_opened(spec);
  Status learned = attach_learned_rules(spec, opened);
  if (!learned.ok()) return fail(learned.error());
  record_paths_for_resume(options.db, opened);
  SessionOptions session_options;
  session_options.slurm = slurm_options_of(spec);
  session_options.start_unix_ns = sim::kVirtualStartUnixNs;
  auto session = CampaignSession::build(opened, options.db, campaign_id, session_options);
  if (!session.ok()) return fail(options.campaign_file + ": " + session.error());
  auto store = open_ledger_for_writing(options.db);
  if (!store.ok()) return fail(store.error());
  auto version = (*store)->version(campaign_id);
  if (!version.ok()) return fail(version.error());
  if (version.value() != 0) {
    return fail("campaign " + campaign_id + " already exists in " + options.db +
                "; continue it with: attune campaign resume --db " + options.db + " --campaign " +
                campaign_id);
  }
  if (opened.launcher == "slurm") {
    Status saved =
        save_slurm_options(slurm_options_path(options.db, campaign_id), *session_options.slurm);
    if (!saved.ok()) return fail(saved.error());
  }
  if (Status shape = save_baseline_shape(options.db, campaign_id, spec.baseline_shape);
      !shape.ok()) {
    return fail(shape.error());
  }
  CampaignSession& campaign = **session;
  campaign.attach(**store);
  std::cerr << wrap_words("campaign " + campaign_id + ": " + opened.model + " on " +
                              std::to_string(opened.gpu_count) + " x " + opened.hardware +
                              ", tuner " + opened.tuner + ", ledger " + options.db,
                          kTerminalWidth, "  ")
            << "\n";
  auto stopped_jobs = std::make_shared<std::atomic<int>>(0);
  arm_interrupt(interrupt, campaign, stopped_jobs);
  bool opened_ok = false;
  Status ran = drive(campaign, socket_path.value(), options.agent,
                     agent_log_path(options.db, campaign_id), false, [&] {
                       Status status = campaign.open(opened);
                       opened_ok = status.ok();
                       return status;
                     });
  interrupt.disarm();
  if (!opened_ok) return fail(ran.error());
  if (interrupt.signal() != 0) {
    return interrupted(interrupt.signal(), *stopped_jobs, campaign, options.db, campaign_id);
  }
  if (!ran.ok()) return fail("campaign " + campaign_id + ": " + ran.error());
  Status finished = campaign.finish();
  if (!finished.ok()) return fail("campaign " + campaign_id + ": " + finished.error());
  return print_summary(campaign.state(), **store, options.db, options.json, options.table);
}

// The CampaignOpened event of a campaign in the ledger, and when its last event was recorded.
struct RecordedCampaign {
  CampaignOpened opened;
  std::int64_t last_recorded_at_unix_ns = 0;
};

Result<RecordedCampaign> recorded_campaign(const EventStore& store, const std::string& db,
                                           const std::string& campaign_id) {
  auto events = store.read(campaign_id, 1, 1);
  if (!events.ok()) return make_error(events.error());
  if (events->empty()) return make_error("unknown campaign '" + campaign_id + "' in " + db);
  const auto* opened = std::get_if<CampaignOpened>(&events->front().body);
  if (opened == nullptr) {
    return make_error("campaign " + campaign_id + " does not start with CampaignOpened");
  }
  auto version = store.version(campaign_id);
  if (!version.ok()) return make_error(version.error());
  auto last = store.read(campaign_id, version.value(), version.value());
  if (!last.ok() || last->empty())
    return make_error("cannot read the last event of " + campaign_id);
  return RecordedCampaign{*opened, last->back().recorded_at_unix_ns};
}

int resume_campaign(const ResumeOptions& options) {
  Interrupt interrupt;
  std::error_code ec;
  if (!fs::exists(fs::path(options.db) / "CURRENT", ec)) return fail("no ledger in " + options.db);
  auto store = open_ledger_for_writing(options.db);
  if (!store.ok()) return fail(store.error());
  if (!is_valid_campaign_id(options.campaign)) {
    return fail("invalid campaign id '" + options.campaign +
                "': expected 1-64 characters of [A-Za-z0-9._-], not starting with '.'");
  }
  auto recorded = recorded_campaign(**store, options.db, options.campaign);
  if (!recorded.ok()) return fail(recorded.error());
  // A campaign is continued only on a chain that holds: resuming would extend a broken one.
  auto chain = verify_campaign_chain(**store, options.campaign);
  if (!chain.ok()) return fail(chain.error());
  if (chain->word != "verified") {
    return fail("campaign " + options.campaign + " is not resumed: its hash chain is " +
                chain->word + " (" + chain->reason + "); see attune audit --db " + options.db +
                " --campaign " + options.campaign);
  }
  const CampaignOpened& opened = recorded->opened;
  SessionOptions session_options;
  session_options.start_unix_ns = recorded->last_recorded_at_unix_ns;
  if (opened.launcher == "slurm") {
    auto loaded = load_slurm_options(slurm_options_path(options.db, options.campaign));
    if (!loaded.ok()) return fail(loaded.error());
    // The ledger's record of the template and the pace is the campaign's.
    loaded->job_template = opened.job_template;
    loaded->expected_seconds_per_step = opened.expected_seconds_per_step;
    session_options.slurm = std::move(loaded).value();
  }
  auto socket_path = listen_path(opened.tuner, options.agent);
  if (!socket_path.ok()) return fail(socket_path.error());
  auto session = CampaignSession::build(opened, options.db, options.campaign, session_options);
  if (!session.ok()) return fail(session.error());
  CampaignSession& campaign = **session;
  campaign.attach(**store);
  auto stopped_jobs = std::make_shared<std::atomic<int>>(0);
  arm_interrupt(interrupt, campaign, stopped_jobs);
  bool resumed_ok = false;
  Status ran = drive(campaign, socket_path.value(), options.agent,
                     agent_log_path(options.db, options.campaign), false, [&] {
                       Status resumed = campaign.resume();
                       resumed_ok = resumed.ok();
                       if (resumed_ok) {
                         std::cerr << "resuming campaign " << options.campaign << " at event "
                                   << campaign.state().view.last_sequence << " ("
                                   << to_string(phase_of(campaign.state())) << ")\n";
                       }
                       return resumed;
                     });
  interrupt.disarm();
  if (!resumed_ok) return fail(ran.error());
  if (interrupt.signal() != 0) {
    return interrupted(interrupt.signal(), *stopped_jobs, campaign, options.db, options.campaign);
  }
  if (!ran.ok()) return fail("campaign " + options.campaign + ": " + ran.error());
  Status finished = campaign.finish();
  if (!finished.ok()) return fail("campaign " + options.campaign + ": " + finished.error());
  return print_summary(campaign.state(), **store, options.db, options.json, options.table);
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

int check_campaign(const std::string& file, bool json) {
  auto spec = parse_campaign_file(file);
  if (!spec.ok()) return fail(spec.error());
  std::vector<std::string> warnings;
  if (Status script = resolve_baseline_script(spec.value(), warnings); !script.ok()) {
    return fail(script.error());
  }
  PreflightReport report = preflight(spec.value());
  for (const std::string& warning : warnings) report.notes.push_back("warning   " + warning);
  if (json) {
    write_json_output({{"schema_version", 1},
                       {"campaign_file", file},
                       {"ready", report.problems.empty()},
                       {"problems", report.problems},
                       {"notes", report.notes},
                       {"batch_script", report.batch_script}});
    return report.problems.empty() ? kExitOk : kExitNo;
  }
  for (const std::string& problem : report.problems) {
    std::cout << "problem   " << problem << "\n";
  }
  if (!report.problems.empty()) return kExitNo;
  for (const std::string& note : report.notes) std::cout << note << "\n";
  if (!report.batch_script.empty()) {
    std::cout << "\nThe baseline's first batch script (not submitted):\n" << report.batch_script;
  }
  std::cout << "ready     nothing refuses this campaign\n";
  return kExitOk;
}

void add_campaign_commands(CLI::App& app, int& exit_code) {
  CLI::App* campaign = app.add_subcommand("campaign", "Run and resume campaigns");
  campaign->require_subcommand(1);

  auto run_options = std::make_shared<RunOptions>();
  CLI::App* run = campaign->add_subcommand(
      "run",
      "Run a campaign from a campaign file (TOML) to a shipped recipe: calibrate the baseline, "
      "search under the budget, check the best candidates with the gate, ship. Progress (each "
      "run submitted, started and finished, with the elapsed time and the budget's ETA) goes to "
      "stderr; the summary, the runs and the report's path to stdout. SIGINT or SIGTERM stops "
      "the local jobs and prints the resume command");
  run->add_option("CAMPAIGN.toml", run_options->campaign_file, "The campaign file")->required();
  run->add_option("--db", run_options->db, "Ledger folder (a RocksDB database)")
      ->capture_default_str();
  run->add_option("--seed", run_options->seed, "Override the campaign file's seed");
  run->add_option("--tuner", run_options->tuner,
                  "Override the campaign file's tuner: expert, tpe, tpe-prefilter, random, llm, or "
                  "external (an "
                  "agent drives the campaign through the control socket; needs --listen)");
  run->add_option("--listen", run_options->agent.listen,
                  "unix:PATH: serve the control socket for an external tuner's agent (attune "
                  "propose, wait, status, ... with --socket PATH or ATTUNE_SOCKET)");
  run->add_flag("--json", run_options->json,
                "Print the final summary as one JSON object (progress stays on stderr)");
  run->add_flag("--wide", run_options->table.wide,
                "The summary's run table with every column and each change whole");
  run->add_flag("--verbose", run_options->table.verbose,
                "The run table within 100 columns, a long change continued on the next lines");
  run->callback([&exit_code, run_options] { exit_code = run_campaign(*run_options); });

  auto check_file = std::make_shared<std::string>();
  auto check_json = std::make_shared<bool>(false);
  CLI::App* check = campaign->add_subcommand(
      "check",
      "The preflight, without a launch: the workload against the baseline (sizes, precision, "
      "parallel degrees, layers), values that are not finite, the memory prediction, the "
      "calibration's cost against the budget, the launcher's readiness (Slurm: commands, "
      "template, one rendered batch script). Exit 0 ready, 1 with one line per problem");
  check->add_option("CAMPAIGN.toml", *check_file, "The campaign file")->required();
  check->add_flag("--json", *check_json, "Print the report as one JSON object");
  check->callback([&exit_code, check_file, check_json] {
    exit_code = check_campaign(*check_file, *check_json);
  });

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
  resume->add_flag("--json", resume_options->json,
                   "Print the final summary as one JSON object (progress stays on stderr)");
  resume->add_flag("--wide", resume_options->table.wide,
                   "The summary's run table with every column and each change whole");
  resume->add_flag("--verbose", resume_options->table.verbose,
                   "The run table within 100 columns, a long change continued on the next lines");
  resume->callback([&exit_code, resume_options] { exit_code = resume_campaign(*resume_options); });
}

}  // namespace attune::cli
