#include "adapters/launcher/slurm/slurm_launcher.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "adapters/launcher/disk_space.h"
#include "adapters/launcher/job_journal.h"
#include "adapters/launcher/slurm/sbatch_script.h"
#include "adapters/metrics/failure_class.h"
#include "adapters/metrics/megatron_log.h"
#include "core/text_file.h"

namespace attune {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kNsPerS = 1'000'000'000;

std::int64_t seconds_to_ns(double seconds) {
  return static_cast<std::int64_t>(std::llround(seconds * 1e9));
}

std::optional<std::int64_t> file_size(const std::string& path) {
  struct stat facts {};
  if (::stat(path.c_str(), &facts) != 0) return std::nullopt;
  return static_cast<std::int64_t>(facts.st_size);
}

std::string joined(const std::vector<std::string>& words, char separator) {
  std::string out;
  for (const std::string& word : words) {
    if (!out.empty()) out += separator;
    out += word;
  }
  return out;
}

// Of several jobs with one name (a name reused outside attune), the latest submission.
const SlurmJobFacts* latest_named(const std::vector<SlurmJobFacts>& facts,
                                  const std::string& name) {
  const SlurmJobFacts* latest = nullptr;
  for (const SlurmJobFacts& one : facts) {
    if (one.name != name) continue;
    if (latest == nullptr || one.submit_unix_s >= latest->submit_unix_s) latest = &one;
  }
  return latest;
}

const SlurmJobFacts* with_id(const std::vector<SlurmJobFacts>& facts, const std::string& job_id) {
  for (const SlurmJobFacts& one : facts) {
    if (one.job_id == job_id) return &one;
  }
  return nullptr;
}

}  // namespace

struct SlurmLauncher::Job {
  LaunchSpec spec;
  std::string job_id;
  std::string log_file;  // absolute
  std::int64_t submitted_at_unix_ns = 0;
  bool started = false;
  bool finished = false;
  std::int64_t log_read_bytes = 0;
  std::string log_partial_line;  // the bytes after the last newline read so far
  bool program_started = false;  // the log showed the training program's first line
  std::int64_t last_progress_unix_ns = 0;
  std::optional<std::int64_t> cancelled_at_unix_ns;
  std::string cancel_reason;
  bool cancel_delivered = false;  // scancel accepted it
  std::uint32_t unlisted_sweeps = 0;
};

SlurmLauncher::SlurmLauncher(Scheduler& scheduler, std::string root, std::string jobs_dir,
                             SlurmLauncherOptions options)
    : scheduler_(scheduler),
      root_(std::move(root)),
      jobs_dir_(std::move(jobs_dir)),
      options_(std::move(options)) {
  work_dir_ = fs::absolute(options_.work_dir.empty() ? fs::path(root_) / jobs_dir_
                                                     : fs::path(options_.work_dir))
                  .lexically_normal()
                  .string();
}

SlurmLauncher::~SlurmLauncher() = default;

Result<std::unique_ptr<SlurmLauncher>> SlurmLauncher::open(Scheduler& scheduler, std::string root,
                                                           std::string jobs_dir,
                                                           SlurmLauncherOptions options) {
  Status checked = check_slurm_options(options);
  if (!checked.ok()) return make_error(checked.error());
  std::unique_ptr<SlurmLauncher> launcher(
      new SlurmLauncher(scheduler, std::move(root), std::move(jobs_dir), std::move(options)));
  std::error_code ec;
  fs::create_directories(fs::path(launcher->root_) / launcher->jobs_dir_, ec);
  for (const char* folder : {"logs", "scripts", "recipes"}) {
    if (!ec) fs::create_directories(fs::path(launcher->work_dir_) / folder, ec);
  }
  if (ec) return make_error(launcher->work_dir_ + ": cannot create the Slurm launcher's folders");

  auto config = launcher->run({launcher->command("scontrol"), "show", "config"});
  if (!config.ok()) return make_error(config.error());
  if (config->exit_code != 0) {
    return make_error("scontrol show config: the cluster does not answer: " +
                      first_line_of(config.value()));
  }
  launcher->records_ = parse_scontrol_config(config->out);

  auto entries = read_journal(launcher->journal_path());
  if (!entries.ok()) return make_error(entries.error());
  for (const JournalEntry& entry : entries.value()) {
    const nlohmann::json& json = entry.submission;
    auto job = std::make_unique<Job>();
    job->spec.job_name = json["job_name"].get<std::string>();
    job->spec.run_id = json.value("run_id", RunId{0});
    job->job_id = json.value("job_id", "");
    job->log_file = json.value("log_file", "");
    job->submitted_at_unix_ns = json.value("submitted_at_unix_ns", std::int64_t{0});
    job->cancelled_at_unix_ns = entry.cancelled_at_unix_ns;
    job->cancel_reason = entry.cancel_reason;
    launcher->known_[job->spec.job_name] = std::move(job);
  }
  return launcher;
}

std::string SlurmLauncher::command(const std::string& name) const {
  return options_.bin_dir.empty() ? name : (fs::path(options_.bin_dir) / name).string();
}

Result<CommandOutput> SlurmLauncher::run(std::vector<std::string> argv) const {
  return run_command(argv, static_cast<std::int64_t>(options_.command_timeout_s * 1000.0));
}

std::string SlurmLauncher::journal_path() const {
  return (fs::path(root_) / jobs_dir_ / "jobs.jsonl").string();
}

std::string SlurmLauncher::work_path(const std::string& folder, const std::string& file) const {
  return (fs::path(work_dir_) / folder / file).string();
}

std::string SlurmLauncher::reported_path(const std::string& absolute_path) const {
  const fs::path root = fs::absolute(root_).lexically_normal();
  const fs::path relative = fs::path(absolute_path).lexically_relative(root);
  if (relative.empty() || *relative.begin() == "..") return absolute_path;
  return relative.string();
}

// The nodes to exclude of those asked: all of them while enough usable nodes remain for the job,
// else the first ones asked for that still leave enough. Nodes that cannot take the job anyway
// are always excluded.
std::vector<std::string> SlurmLauncher::exclusions(const std::vector<std::string>& asked,
                                                   std::uint32_t nodes_needed) const {
  if (asked.empty()) return {};
  std::vector<std::string> argv = {command("sinfo"), "-h", "-N", "-o", "%N %T"};
  if (!options_.partition.empty()) argv.push_back("--partition=" + options_.partition);
  auto nodes = run(argv);
  if (!nodes.ok() || nodes->exit_code != 0) return asked;  // sbatch will say what is wrong
  const std::vector<std::string> usable = parse_usable_nodes(nodes->out);
  std::set<std::string> remaining(usable.begin(), usable.end());
  std::set<std::string> known;  // sbatch refuses to exclude a node it does not know
  std::istringstream lines(nodes->out);
  for (std::string line; std::getline(lines, line);) known.insert(line.substr(0, line.find(' ')));
  std::vector<std::string> excluded;
  for (const std::string& node : asked) {
    if (!known.contains(node)) continue;
    if (!remaining.contains(node)) {
      excluded.push_back(node);
    } else if (remaining.size() > nodes_needed) {
      remaining.erase(node);
      excluded.push_back(node);
    }
  }
  std::sort(excluded.begin(), excluded.end());
  excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
  return excluded;
}

Status SlurmLauncher::submit(const LaunchSpec& spec) {
  if (known_.contains(spec.job_name)) {
    return make_error("job " + spec.job_name + " was already submitted to Slurm");
  }
  auto recipe = parse_recipe(spec.recipe, spec.job_name);
  if (!recipe.ok()) return make_error("the recipe of " + spec.job_name + ": " + recipe.error());
  auto job = std::make_unique<Job>();
  job->spec = spec;
  job->log_file = work_path("logs", spec.job_name + ".log");
  const std::uint32_t nodes =
      std::max<std::uint32_t>(1, (spec.gpus + options_.gpus_per_node - 1) / options_.gpus_per_node);

  auto script_file = write_job_files(spec, recipe.value(), job->log_file, nodes);
  if (!script_file.ok()) return make_error(script_file.error());
  // The log exists from submission on, so that its growth is measured from zero.
  std::ofstream(job->log_file, std::ios::binary | std::ios::trunc).flush();

  const std::vector<std::string> excluded = exclusions(spec.exclude_nodes, nodes);
  const std::vector<std::string> argv =
      sbatch_argv(spec, job->log_file, nodes, excluded, script_file.value());
  const std::int64_t submitted_at = scheduler_.now_unix_ns();
  auto submitted = run(argv);
  if (!submitted.ok()) return make_error(submitted.error());
  if (submitted->exit_code != 0) {
    return make_error("sbatch " + spec.job_name + ": " + first_line_of(submitted.value()));
  }
  // --parsable prints "id" or "id;cluster".
  const std::string& out = submitted->out;
  job->job_id = out.substr(0, out.find_first_of(";\n"));
  if (job->job_id.empty() || job->job_id.find_first_not_of("0123456789_") != std::string::npos) {
    return make_error("sbatch " + spec.job_name + ": no job id in its answer '" + out + "'");
  }
  job->submitted_at_unix_ns = submitted_at;
  Status recorded =
      append_journal_submission(journal_path(), {{"job_name", spec.job_name},
                                                 {"run_id", spec.run_id},
                                                 {"job_id", job->job_id},
                                                 {"log_file", job->log_file},
                                                 {"excluded", excluded},
                                                 {"submitted_at_unix_ns", submitted_at}});
  if (!recorded.ok()) {
    // The job is still found by its name after a crash, but this launcher cannot go on.
    (void)run({command("scancel"), job->job_id});
    return recorded;
  }

  Job& placed = *job;
  known_[spec.job_name] = std::move(job);
  active_[spec.run_id] = &placed;
  announce_submitted(placed);
  return Ok{};
}

Result<std::string> SlurmLauncher::write_job_files(const LaunchSpec& spec, const Recipe& recipe,
                                                   const std::string& log_file,
                                                   std::uint32_t nodes) const {
  SbatchValues values;
  values.campaign_id = spec.campaign_id;
  values.job_name = spec.job_name;
  values.run_id = spec.run_id;
  values.steps = spec.steps;
  values.nodes = nodes;
  values.gpus = spec.gpus;
  values.gpus_per_node = options_.gpus_per_node;
  values.log_path = log_file;
  values.recipe_file = work_path("recipes", spec.job_name + ".recipe");
  values.recipe = recipe;
  const std::string script_file = work_path("scripts", spec.job_name + ".sbatch");
  std::ofstream recipe_out(values.recipe_file, std::ios::binary | std::ios::trunc);
  recipe_out << spec.recipe;
  std::ofstream script_out(script_file, std::ios::binary | std::ios::trunc);
  script_out << render_sbatch_script(options_.job_template, values);
  recipe_out.flush();
  script_out.flush();
  if (!recipe_out || !script_out) {
    return make_error(script_file + ": cannot write the batch script or its recipe");
  }
  return script_file;
}

std::vector<std::string> SlurmLauncher::sbatch_argv(const LaunchSpec& spec,
                                                    const std::string& log_file,
                                                    std::uint32_t nodes,
                                                    const std::vector<std::string>& excluded,
                                                    const std::string& script_file) const {
  std::vector<std::string> argv = {
      command("sbatch"),      "--parsable",           "--job-name=" + spec.job_name,
      "--output=" + log_file, "--error=" + log_file,  "--open-mode=append",
      "--no-requeue",         "--chdir=" + work_dir_, "--nodes=" + std::to_string(nodes)};
  if (!options_.partition.empty()) argv.push_back("--partition=" + options_.partition);
  if (!excluded.empty()) argv.push_back("--exclude=" + joined(excluded, ','));
  argv.insert(argv.end(), options_.sbatch_args.begin(), options_.sbatch_args.end());
  argv.push_back(script_file);
  return argv;
}

void SlurmLauncher::announce_submitted(const Job& job) {
  JobReport report_submitted;
  report_submitted.kind = JobReport::Kind::kSubmitted;
  report_submitted.run_id = job.spec.run_id;
  report_submitted.launcher_job_id = job.job_id;
  report_submitted.at_unix_ns = job.submitted_at_unix_ns;
  std::weak_ptr<int> alive = alive_;
  scheduler_.schedule_at(scheduler_.now_unix_ns(), [this, alive, report_submitted] {
    if (!alive.expired()) report(report_submitted);
  });
  ensure_polling();
}

Result<std::vector<SlurmJobFacts>> SlurmLauncher::listing() {
  ++sweeps_;
  auto listed = run({command("squeue"), "--json"});
  if (!listed.ok()) return make_error(listed.error());
  if (listed->exit_code != 0) return make_error("squeue: " + first_line_of(listed.value()));
  auto facts = parse_squeue_json(listed->out);
  if (facts.ok()) {
    cached_listing_ = facts.value();
    cached_listing_at_unix_ns_ = scheduler_.now_unix_ns();
  }
  return facts;
}

// The records of finished jobs for `jobs`, by job id (or by name, for jobs found by name after
// a crash): sacct where the cluster keeps accounting, else the job-completion log.
std::vector<SlurmJobFacts> SlurmLauncher::finished_records(const std::vector<Job*>& jobs,
                                                           bool by_name) {
  if (jobs.empty()) return {};
  if (records_.accounting) {
    std::vector<std::string> keys;
    for (const Job* job : jobs) keys.push_back(by_name ? job->spec.job_name : job->job_id);
    std::vector<std::string> argv = {command("sacct"),         "-X", "-P", "-n", "-a", "-o",
                                     std::string(kSacctFormat)};
    if (by_name) {
      // Without a start time sacct looks at today's jobs only.
      argv.insert(argv.end(), {"--starttime=now-" + std::to_string(kSacctLookBackDays) + "days",
                               "--name=" + joined(keys, ',')});
    } else {
      argv.push_back("--jobs=" + joined(keys, ','));
    }
    auto found = run(argv);
    if (!found.ok() || found->exit_code != 0) return {};
    return parse_sacct_text(found->out);
  }
  if (records_.jobcomp_file.empty()) return {};
  auto text = read_text_file(records_.jobcomp_file);
  return text.ok() ? parse_jobcomp_text(text.value()) : std::vector<SlurmJobFacts>{};
}

Result<bool> SlurmLauncher::reattach(const LaunchSpec& spec) {
  auto found = known_.find(spec.job_name);
  if (found == known_.end()) {
    // Submitted, perhaps, but never recorded: ask the cluster for the name.
    const bool fresh = cached_listing_ && scheduler_.now_unix_ns() - cached_listing_at_unix_ns_ <
                                              seconds_to_ns(options_.poll_interval_s);
    std::vector<SlurmJobFacts> listed;
    if (fresh) {
      listed = *cached_listing_;
    } else {
      auto queried = listing();
      if (!queried.ok()) return make_error("finding job " + spec.job_name + ": " + queried.error());
      listed = std::move(queried).value();
    }
    const SlurmJobFacts* facts = latest_named(listed, spec.job_name);
    std::vector<SlurmJobFacts> recorded;
    if (facts == nullptr) {
      Job probe;
      probe.spec = spec;
      recorded = finished_records({&probe}, true);
      facts = latest_named(recorded, spec.job_name);
    }
    if (facts == nullptr) return false;
    auto job = std::make_unique<Job>();
    job->spec = spec;
    job->job_id = facts->job_id;
    job->log_file = work_path("logs", spec.job_name + ".log");
    job->submitted_at_unix_ns = facts->submit_unix_s * kNsPerS;
    Status journaled = append_journal_submission(
        journal_path(), {{"job_name", spec.job_name},
                         {"run_id", spec.run_id},
                         {"job_id", job->job_id},
                         {"log_file", job->log_file},
                         {"found_by_name", true},
                         {"submitted_at_unix_ns", job->submitted_at_unix_ns}});
    if (!journaled.ok()) return make_error(journaled.error());
    found = known_.emplace(spec.job_name, std::move(job)).first;
  }
  Job& job = *found->second;
  if (job.finished) return true;  // already reported in this launcher's life
  job.spec = spec;
  job.cancel_delivered = job.cancelled_at_unix_ns.has_value();
  active_[spec.run_id] = &job;
  JobReport report_submitted;
  report_submitted.kind = JobReport::Kind::kSubmitted;
  report_submitted.run_id = spec.run_id;
  report_submitted.launcher_job_id = job.job_id;
  report_submitted.at_unix_ns = job.submitted_at_unix_ns;
  std::weak_ptr<int> alive = alive_;
  scheduler_.schedule_at(scheduler_.now_unix_ns(), [this, alive, report_submitted] {
    if (!alive.expired()) report(report_submitted);
  });
  ensure_polling();
  return true;
}

void SlurmLauncher::cancel(RunId run_id, const std::string& reason) {
  auto found = active_.find(run_id);
  if (found == active_.end() || found->second->finished || found->second->cancelled_at_unix_ns) {
    return;
  }
  request_cancel(*found->second, reason);
  ensure_polling();
}

// Records the cancellation, then asks Slurm; a refused scancel is asked again at the next sweep.
void SlurmLauncher::request_cancel(Job& job, const std::string& reason) {
  if (!job.cancelled_at_unix_ns) {
    const std::int64_t now = scheduler_.now_unix_ns();
    job.cancelled_at_unix_ns = now;
    job.cancel_reason = reason;
    (void)append_journal_cancellation(journal_path(), job.spec.job_name, now, reason);
    std::ofstream(job.log_file, std::ios::app)
        << "attune: cancelling Slurm job " << job.job_id << " (" << reason << ")\n";
  }
  auto cancelled = run({command("scancel"), job.job_id});
  job.cancel_delivered = cancelled.ok() && cancelled->exit_code == 0;
}

void SlurmLauncher::ensure_polling() {
  if (poll_pending_) return;
  poll_pending_ = true;
  std::weak_ptr<int> alive = alive_;
  scheduler_.schedule_after(seconds_to_ns(options_.poll_interval_s), [this, alive] {
    if (alive.expired()) return;
    poll_pending_ = false;
    poll();
  });
}

// One sweep: a single squeue listing for every job in flight, then the logs of those running.
void SlurmLauncher::poll() {
  std::vector<Job*> watched;
  for (const auto& [run_id, job] : active_) {
    if (!job->finished) watched.push_back(job);
  }
  if (watched.empty()) return;
  auto listed = listing();
  if (!listed.ok()) {
    ensure_polling();  // slurmctld busy or down: nothing is concluded from silence
    return;
  }
  const std::int64_t now = scheduler_.now_unix_ns();
  std::vector<JobReport> reports;
  std::vector<std::pair<Job*, SlurmJobFacts>> ended;
  std::vector<Job*> unlisted;
  for (Job* job : watched) {
    const SlurmJobFacts* facts = with_id(listed.value(), job->job_id);
    if (facts == nullptr) {
      unlisted.push_back(job);
      continue;
    }
    job->unlisted_sweeps = 0;
    if (is_final_state(facts->state)) {
      ended.emplace_back(job, *facts);
      continue;
    }
    if (job->cancelled_at_unix_ns && !job->cancel_delivered) request_cancel(*job, "");
    if (is_running_state(facts->state)) {
      if (!job->started) started(*job, *facts, reports);
      read_log_growth(*job, now);
    } else if (!job->cancelled_at_unix_ns &&
               now - job->submitted_at_unix_ns >= seconds_to_ns(options_.start_limit_s)) {
      request_cancel(*job, "not-started");
    }
  }

  finish_ended(ended, reports);
  settle_unlisted(unlisted, reports);

  bool in_flight = false;
  for (const Job* job : watched) in_flight = in_flight || !job->finished;
  if (in_flight) ensure_polling();
  // Reported after the sweep: a listener may submit or cancel, changing active_.
  for (const JobReport& one : reports) report(one);
}

void SlurmLauncher::finish_ended(std::vector<std::pair<Job*, SlurmJobFacts>>& ended,
                                 std::vector<JobReport>& reports) {
  std::string source = "squeue";
  if (records_.accounting && !ended.empty()) {
    // The accounting record, where there is one, is the scheduler's own word on a finished job.
    std::vector<Job*> jobs;
    for (const auto& [job, facts] : ended) jobs.push_back(job);
    const std::vector<SlurmJobFacts> accounted = finished_records(jobs, false);
    bool all = true;
    for (auto& [job, facts] : ended) {
      const SlurmJobFacts* record = with_id(accounted, job->job_id);
      if (record != nullptr && is_final_state(record->state)) {
        facts = *record;
      } else {
        all = false;
      }
    }
    if (all) source = "sacct";
  }
  for (auto& [job, facts] : ended) finished(*job, facts, source, reports);
}

void SlurmLauncher::settle_unlisted(const std::vector<Job*>& unlisted,
                                    std::vector<JobReport>& reports) {
  if (unlisted.empty()) return;
  const std::vector<SlurmJobFacts> recorded = finished_records(unlisted, false);
  const std::string record_source = records_.accounting ? "sacct" : "jobcomp";
  for (Job* job : unlisted) {
    const SlurmJobFacts* facts = with_id(recorded, job->job_id);
    if (facts != nullptr && is_final_state(facts->state)) {
      finished(*job, *facts, record_source, reports);
    } else if (++job->unlisted_sweeps >= kSlurmUnlistedSweepsMax) {
      SlurmJobFacts unknown;
      unknown.job_id = job->job_id;
      unknown.state = "UNKNOWN";
      finished(*job, unknown, "none", reports);
    }
  }
}

// Reads what the log gained since the last sweep: progress, and the signs that end a job early.
void SlurmLauncher::read_log_growth(Job& job, std::int64_t now) {
  const std::optional<std::int64_t> size = file_size(job.log_file);
  if (size && *size > job.log_read_bytes) {
    std::ifstream in(job.log_file, std::ios::binary);
    in.seekg(job.log_read_bytes);
    std::string bytes(
        static_cast<std::size_t>(std::min(*size - job.log_read_bytes, kSlurmLogReadBytesMax)),
        '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<std::size_t>(in.gcount()));
    job.log_read_bytes += static_cast<std::int64_t>(bytes.size());
    job.last_progress_unix_ns = now;
    // Only whole lines are weighed; the rest waits for its newline.
    const std::string text = job.log_partial_line + bytes;
    const std::size_t last_newline = text.rfind('\n');
    job.log_partial_line = last_newline == std::string::npos ? text : text.substr(last_newline + 1);
    if (job.log_partial_line.size() > kLineBytesMax) job.log_partial_line.clear();
    if (last_newline != std::string::npos && !job.cancelled_at_unix_ns) {
      const MegatronLog piece =
          read_megatron_log(std::string_view(text).substr(0, last_newline + 1));
      const std::optional<FailureSign> sign = live_abort_sign(piece, job.program_started);
      job.program_started = job.program_started || piece.first_program_lines.at(0) > 0;
      if (sign == FailureSign::kCollectiveTimeout) {
        request_cancel(job, "hang");
      } else if (sign) {
        request_cancel(job, "early-abort");
      }
    }
  }
  if (options_.log_silence_s > 0.0 && !job.cancelled_at_unix_ns &&
      now - job.last_progress_unix_ns >= seconds_to_ns(options_.log_silence_s)) {
    request_cancel(job, "hang");
  }
}

void SlurmLauncher::started(Job& job, const SlurmJobFacts& facts, std::vector<JobReport>& reports) {
  job.started = true;
  JobReport report_started;
  report_started.kind = JobReport::Kind::kStarted;
  report_started.run_id = job.spec.run_id;
  report_started.at_unix_ns = facts.start_unix_s * kNsPerS;
  report_started.nodes = facts.nodes;
  job.last_progress_unix_ns = std::max(report_started.at_unix_ns, job.last_progress_unix_ns);
  reports.push_back(report_started);
}

void SlurmLauncher::finished(Job& job, const SlurmJobFacts& facts, const std::string& source,
                             std::vector<JobReport>& reports) {
  if (job.finished) return;
  // A job that ran between two sweeps is reported started first.
  if (!job.started && facts.ran()) started(job, facts, reports);
  job.finished = true;
  JobReport report_finished;
  report_finished.kind = JobReport::Kind::kFinished;
  report_finished.run_id = job.spec.run_id;
  report_finished.at_unix_ns = facts.end_unix_s > 0            ? facts.end_unix_s * kNsPerS
                               : job.last_progress_unix_ns > 0 ? job.last_progress_unix_ns
                                                               : scheduler_.now_unix_ns();
  report_finished.final_state = facts.state;
  report_finished.facts_source = source;
  report_finished.log_path = reported_path(job.log_file);
  report_finished.cancel_reason = job.cancel_reason;
  // A log cut short by a full disk (where attune reads it) says nothing of the recipe.
  report_finished.launcher_error = full_disk_note(job.log_file).value_or("");
  reports.push_back(report_finished);
}

void SlurmLauncher::report(const JobReport& job_report) {
  if (listener_) listener_(job_report);
}

std::optional<std::int64_t> SlurmLauncher::last_progress_unix_ns(RunId run_id) const {
  auto found = active_.find(run_id);
  if (found == active_.end() || found->second->finished || !found->second->started) {
    return std::nullopt;
  }
  return found->second->last_progress_unix_ns;
}

double SlurmLauncher::expected_gpu_hours(const LaunchSpec& spec) const {
  return options_.expected_seconds_per_step * spec.steps * spec.gpus / 3600.0;
}

Result<std::string> SlurmLauncher::read_log(const std::string& log_path) const {
  return read_text_file((fs::path(root_) / log_path).string());
}

Result<std::string> SlurmLauncher::read_log_so_far(RunId run_id) const {
  auto found = active_.find(run_id);
  if (found == active_.end())
    return make_error("run " + std::to_string(run_id) + " is not running");
  return read_text_file(found->second->log_file);
}

}  // namespace attune
