#include "adapters/world/sim_launcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "adapters/launcher/job_journal.h"
#include "adapters/model/performance_model.h"
#include "adapters/world/sim_job.h"
#include "core/text_file.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

constexpr double kExpectedStartupSeconds = 90.0;  // the estimator's guess at model build time
constexpr std::int64_t kNsPerSecond = 1'000'000'000;

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

std::int64_t seconds_to_ns(double seconds) {
  return static_cast<std::int64_t>(std::llround(seconds * kNsPerSecond));
}

}  // namespace

struct SimLauncher::Job {
  LaunchSpec spec;
  std::string job_id;
  std::int64_t submitted_at_unix_ns = 0;
  std::int64_t started_at_unix_ns = 0;
  std::vector<std::string> nodes;
  std::uint64_t run_seed = 0;
  std::string log_path;
  std::string trace_dir;
  std::optional<std::int64_t> cancelled_at_unix_ns;
  std::string cancel_reason;
  sim::SimJobResult result;
  std::string launcher_error;  // the launcher's own I/O failed for this job
  bool finished = false;
};

SimLauncher::SimLauncher(const sim::World& world, Scheduler& scheduler, std::string root,
                         std::string cluster_dir, std::uint64_t seed)
    : world_(world),
      scheduler_(scheduler),
      root_(std::move(root)),
      cluster_dir_(std::move(cluster_dir)),
      seed_(seed) {}

std::string SimLauncher::absolute(const std::string& relative) const {
  return (fs::path(root_) / relative).string();
}

SimLauncher::~SimLauncher() = default;

Result<std::unique_ptr<SimLauncher>> SimLauncher::open(const sim::World& world,
                                                       Scheduler& scheduler, std::string root,
                                                       std::string cluster_dir,
                                                       std::uint64_t seed) {
  std::error_code ec;
  const fs::path folder = fs::path(root) / cluster_dir;
  fs::create_directories(folder / "logs", ec);
  if (ec) return make_error(folder.string() + ": cannot create the simulated cluster's folder");
  std::unique_ptr<SimLauncher> launcher(
      new SimLauncher(world, scheduler, std::move(root), cluster_dir, seed));
  // The cluster's own record of what it was asked to run.
  const std::string journal = (folder / "jobs.jsonl").string();
  auto entries = read_journal(journal);
  if (!entries.ok()) return make_error(entries.error());
  for (const JournalEntry& entry : entries.value()) {
    const nlohmann::json& json = entry.submission;
    const std::string name = json["job_name"].get<std::string>();
    auto job = std::make_unique<Job>();
    job->spec.job_name = name;
    job->spec.run_id = json.value("run_id", 0u);
    job->job_id = json.value("job_id", "");
    job->submitted_at_unix_ns = json.value("submitted_at_unix_ns", std::int64_t{0});
    job->started_at_unix_ns = json.value("started_at_unix_ns", std::int64_t{0});
    job->nodes = json.value("nodes", std::vector<std::string>{});
    job->run_seed = json.value("run_seed", std::uint64_t{0});
    job->cancelled_at_unix_ns = entry.cancelled_at_unix_ns;
    job->cancel_reason = entry.cancel_reason;
    launcher->known_[name] = std::move(job);
  }
  return launcher;
}

Status SimLauncher::record(const Job& job) {
  nlohmann::json line = {{"job_name", job.spec.job_name},
                         {"job_id", job.job_id},
                         {"run_id", job.spec.run_id},
                         {"submitted_at_unix_ns", job.submitted_at_unix_ns},
                         {"started_at_unix_ns", job.started_at_unix_ns},
                         {"nodes", job.nodes},
                         {"run_seed", job.run_seed}};
  return append_journal_submission(absolute((fs::path(cluster_dir_) / "jobs.jsonl").string()),
                                   line);
}

Status SimLauncher::submit(const LaunchSpec& spec) {
  if (known_.contains(spec.job_name)) {
    return make_error("job " + spec.job_name + " was already submitted to the simulated cluster");
  }
  auto job = std::make_unique<Job>();
  job->spec = spec;
  job->job_id = "sim-" + std::to_string(spec.run_id);
  job->submitted_at_unix_ns = scheduler_.now_unix_ns();
  job->started_at_unix_ns = job->submitted_at_unix_ns + seconds_to_ns(kSimSchedulingDelaySeconds);
  job->run_seed = mix(seed_, spec.run_id);
  std::vector<std::string> busy;
  for (const auto& [run_id, other] : active_) {
    if (!other->finished) busy.insert(busy.end(), other->nodes.begin(), other->nodes.end());
  }
  const auto needed = static_cast<std::uint32_t>(world_.nodes_needed());
  job->nodes = world_.allocate_avoiding(needed, busy, spec.exclude_nodes, job->run_seed);
  if (job->nodes.empty()) {
    return make_error("the simulated cluster has no " + std::to_string(needed) +
                      " free nodes for " + spec.job_name);
  }
  Status recorded = record(*job);
  if (!recorded.ok()) return recorded;
  const std::string name = spec.job_name;
  const RunId run_id = spec.run_id;
  known_[name] = std::move(job);
  active_[run_id] = known_[name].get();
  schedule(run_id);
  return Ok{};
}

Result<bool> SimLauncher::reattach(const LaunchSpec& spec) {
  auto found = known_.find(spec.job_name);
  if (found == known_.end()) return false;
  Job& job = *found->second;
  job.spec = spec;
  active_[spec.run_id] = &job;
  schedule(spec.run_id);
  return true;
}

// Runs the job in the world (deterministic from its record) and schedules its reports.
void SimLauncher::schedule(RunId run_id) {
  Job& job = *active_.at(run_id);
  auto recipe = parse_recipe(job.spec.recipe, job.spec.job_name);
  const fs::path logs = fs::path(cluster_dir_) / "logs";
  job.log_path = (logs / (job.spec.job_name + ".log")).string();
  if (job.spec.profile) {
    job.trace_dir = (fs::path(cluster_dir_) / "traces" / job.spec.job_name).string();
    std::error_code ec;
    fs::create_directories(absolute(job.trace_dir), ec);
    if (ec) job.launcher_error = absolute(job.trace_dir) + ": cannot create: " + ec.message();
  }
  sim::SimJobRun run;
  run.steps = job.spec.steps;
  run.run_seed = job.run_seed;
  run.nodes = job.nodes;
  run.profile = job.spec.profile;
  // The traces go under the launcher's root (the ledger's folder), whatever the working folder.
  const std::string trace_dir = job.trace_dir.empty() ? "" : absolute(job.trace_dir);
  auto result =
      recipe.ok() ? sim::run_sim_job(world_, recipe.value(), run, job.started_at_unix_ns, trace_dir)
                  : Result<sim::SimJobResult>(make_error(recipe.error()));
  const std::int64_t now = scheduler_.now_unix_ns();
  JobReport submitted;
  submitted.kind = JobReport::Kind::kSubmitted;
  submitted.run_id = run_id;
  submitted.launcher_job_id = job.job_id;
  submitted.at_unix_ns = job.submitted_at_unix_ns;
  scheduler_.schedule_at(now, [this, submitted] { report(submitted); });
  JobReport started;
  started.kind = JobReport::Kind::kStarted;
  started.run_id = run_id;
  started.at_unix_ns = job.started_at_unix_ns;
  started.nodes = job.nodes;
  scheduler_.schedule_at(std::max(now, job.started_at_unix_ns),
                         [this, started] { report(started); });
  if (recipe.ok() && !result.ok() && job.launcher_error.empty()) {
    // Writing its traces failed: the launcher's own I/O, not the recipe's doing.
    job.launcher_error = "writing the traces of " + job.spec.job_name + ": " + result.error();
  }
  if (!job.launcher_error.empty()) {
    scheduler_.schedule_at(std::max(now, job.started_at_unix_ns) + 1, [this, run_id] {
      finish(run_id, active_.at(run_id)->started_at_unix_ns + 1, "FAILED", "");
    });
    return;
  }
  if (!result.ok()) {
    // The job cannot even be rendered (a recipe that does not parse): it fails at once.
    job.result.log = "Traceback (most recent call last):\nRuntimeError: " + result.error() + "\n";
    job.result.exit_code = sim::kJobExitFailure;
    scheduler_.schedule_at(std::max(now, job.started_at_unix_ns) + 1, [this, run_id] {
      finish(run_id, active_.at(run_id)->started_at_unix_ns + 1, "FAILED", "");
    });
    return;
  }
  job.result = std::move(result).value();
  if (job.cancelled_at_unix_ns) {
    const std::int64_t at = *job.cancelled_at_unix_ns;
    const std::string reason = job.cancel_reason;
    scheduler_.schedule_at(std::max(now, at),
                           [this, run_id, at, reason] { finish(run_id, at, "CANCELLED", reason); });
    return;
  }
  if (!job.result.exit_code) return;  // a hang: it ends only when cancelled
  const std::int64_t end = job.started_at_unix_ns + seconds_to_ns(job.result.run.end_s);
  std::string state = *job.result.exit_code == 0 ? "COMPLETED" : "FAILED";
  if (job.result.run.infra == sim::InfraFailure::kNodeLost) state = "NODE_FAIL";
  scheduler_.schedule_at(std::max(now, end),
                         [this, run_id, end, state] { finish(run_id, end, state, ""); });
}

void SimLauncher::cancel(RunId run_id, const std::string& reason) {
  auto found = active_.find(run_id);
  if (found == active_.end() || found->second->finished) return;
  Job& job = *found->second;
  const std::int64_t now = scheduler_.now_unix_ns();
  job.cancelled_at_unix_ns = now;
  job.cancel_reason = reason;
  (void)append_journal_cancellation(absolute((fs::path(cluster_dir_) / "jobs.jsonl").string()),
                                    job.spec.job_name, now, reason);
  finish(run_id, now, "CANCELLED", reason);
}

void SimLauncher::finish(RunId run_id, std::int64_t at_unix_ns, const std::string& final_state,
                         const std::string& cancel_reason) {
  auto found = active_.find(run_id);
  if (found == active_.end() || found->second->finished) return;
  Job& job = *found->second;
  job.finished = true;
  // The log holds what the job wrote until it ended.
  std::size_t bytes = job.result.log.size();
  if (final_state == "CANCELLED") {
    bytes = 0;
    const double elapsed_s =
        static_cast<double>(at_unix_ns - job.started_at_unix_ns) / kNsPerSecond;
    for (const auto& [seconds, size] : job.result.log_growth) {
      if (seconds <= elapsed_s) bytes = size;
    }
  }
  if (job.launcher_error.empty()) {
    std::ofstream log(absolute(job.log_path), std::ios::binary | std::ios::trunc);
    log << std::string_view(job.result.log).substr(0, bytes);
    log.flush();
    if (!log) job.launcher_error = absolute(job.log_path) + ": cannot write the run's log";
  }
  JobReport finished;
  finished.launcher_error = job.launcher_error;
  finished.kind = JobReport::Kind::kFinished;
  finished.run_id = run_id;
  finished.at_unix_ns = at_unix_ns;
  finished.final_state = final_state;
  finished.facts_source = "sim";
  finished.log_path = job.log_path;
  finished.cancel_reason = cancel_reason;
  if (final_state == "COMPLETED") {
    for (const std::string& path : job.result.trace_paths) {
      finished.trace_paths.push_back(fs::path(path).lexically_relative(root_).string());
    }
  }
  report(finished);
}

void SimLauncher::report(const JobReport& job_report) {
  if (listener_) listener_(job_report);
}

std::optional<std::int64_t> SimLauncher::last_progress_unix_ns(RunId run_id) const {
  auto found = active_.find(run_id);
  if (found == active_.end() || found->second->finished) return std::nullopt;
  const Job& job = *found->second;
  const std::int64_t now = scheduler_.now_unix_ns();
  if (now < job.started_at_unix_ns) return std::nullopt;
  const double elapsed_s = static_cast<double>(now - job.started_at_unix_ns) / kNsPerSecond;
  double last_s = 0.0;
  for (const auto& [seconds, size] : job.result.log_growth) {
    if (seconds <= elapsed_s) last_s = seconds;
  }
  return job.started_at_unix_ns + seconds_to_ns(last_s);
}

double SimLauncher::expected_gpu_hours(const LaunchSpec& spec) const {
  auto recipe = parse_recipe(spec.recipe, "estimate");
  double seconds = kExpectedStartupSeconds;
  if (recipe.ok()) {
    // The estimate on the cluster's stack; the world's hidden factors stay hidden.
    const sim::Prediction prediction =
        sim::predict_on_stack(world_.workload(), recipe.value(), world_.config().stack);
    if (prediction.valid && prediction.fits_in_memory) {
      const std::uint32_t steps = spec.steps + (spec.profile ? sim::kProfiledSteps : 0);
      seconds += prediction.step_time_s * steps;
    }
  }
  return static_cast<double>(spec.gpus) * seconds / 3600.0;
}

Result<std::string> SimLauncher::read_log(const std::string& log_path) const {
  return read_text_file(absolute(log_path));
}

Result<std::string> SimLauncher::read_log_so_far(RunId run_id) const {
  auto found = active_.find(run_id);
  if (found == active_.end()) return make_error("run " + std::to_string(run_id) + " is unknown");
  if (found->second->finished) return read_log(found->second->log_path);
  const Job& job = *found->second;
  const std::int64_t now = scheduler_.now_unix_ns();
  if (now < job.started_at_unix_ns) return std::string();
  const double elapsed_s = static_cast<double>(now - job.started_at_unix_ns) / kNsPerSecond;
  std::size_t bytes = 0;
  for (const auto& [seconds, size] : job.result.log_growth) {
    if (seconds <= elapsed_s) bytes = size;
  }
  return job.result.log.substr(0, bytes);
}

}  // namespace attune
