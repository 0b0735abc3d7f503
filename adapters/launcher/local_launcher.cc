#include "adapters/launcher/local_launcher.h"

#include "adapters/launcher/disk_space.h"
#include "adapters/launcher/job_journal.h"
#include "core/text_file.h"
#include "events/recipe.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

extern char** environ;

namespace attune {
namespace {

// Every job's process carries its name and its log's absolute path, so that a resume can find a
// job it spawned but did not get to record. The name alone is not enough: another ledger's
// campaign may run a job of the same name on this machine at the same time.
constexpr std::string_view kJobNameVariable = "ATTUNE_JOB_NAME";
constexpr std::string_view kJobLogVariable = "ATTUNE_JOB_LOG";

namespace fs = std::filesystem;

constexpr std::int64_t kNsPerMs = 1'000'000;

// Replaces each known {name}; anything else in braces (a shell's ${VAR}) stays as written.
std::string render_template(const std::string& job_template,
                            const std::map<std::string, std::string>& values) {
  std::string out;
  std::size_t at = 0;
  while (at < job_template.size()) {
    const std::size_t open = job_template.find('{', at);
    if (open == std::string::npos) break;
    const std::size_t close = job_template.find('}', open);
    if (close == std::string::npos) break;
    out += job_template.substr(at, open - at);
    auto found = values.find(job_template.substr(open + 1, close - open - 1));
    if (found != values.end()) {
      out += shell_quote_argument(found->second);
      at = close + 1;
    } else {
      out += '{';
      at = open + 1;
    }
  }
  return out + job_template.substr(at);
}

struct FileFacts {
  std::int64_t size_bytes = 0;
  std::int64_t modified_unix_ns = 0;
};

std::optional<FileFacts> stat_file(const std::string& path) {
  struct stat facts {};
  if (::stat(path.c_str(), &facts) != 0) return std::nullopt;
  return FileFacts{
      static_cast<std::int64_t>(facts.st_size),
      static_cast<std::int64_t>(facts.st_mtim.tv_sec) * 1'000'000'000 + facts.st_mtim.tv_nsec};
}

// The job's leader still runs: not a zombie (whose parent may never reap it), and still the leader
// of its group (a reused pid rarely is).
bool group_leader_alive(int pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return ::getpgid(pid) == pid;  // no /proc: existence is all we know
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  char state = 0;
  int parent = 0, group = 0;
  fields >> state >> parent >> group;
  return state != 'Z' && group == pid;
}

// The process group leader started for `job_name` with its log at `log_path` (its environment
// names both), for a job whose spawn the launcher recorded the intent of but not the pid; 0 when
// none runs.
int find_job_process(const std::string& job_name, const std::string& log_path) {
  const std::string wanted_name = std::string(kJobNameVariable) + "=" + job_name;
  const std::string wanted_log = std::string(kJobLogVariable) + "=" + log_path;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string variable;
    bool named = false, logged = false;
    while (std::getline(in, variable, '\0')) {
      named = named || variable == wanted_name;
      logged = logged || variable == wanted_log;
    }
    if (!named || !logged) continue;
    const int pid = std::stoi(name);
    if (group_leader_alive(pid)) return pid;
  }
  return 0;
}

// Whether waitpid can report the process's exit (it is our child), without reaping it.
bool is_our_child(int pid) {
  siginfo_t info{};
  return pid > 0 &&
         ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

// The job's environment: the launcher's, with the recipe's variables replacing any of the same
// name, and the job's name and log (which find_job_process looks for) set last.
std::vector<std::string> job_environment(const Recipe& recipe, const std::string& job_name,
                                         const std::string& log_file) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (name == kJobNameVariable || name == kJobLogVariable) continue;  // ours, set below
    if (!recipe.env.contains(name)) environment.push_back(text);
  }
  for (const auto& [name, value] : recipe.env) environment.push_back(name + "=" + value);
  environment.push_back(std::string(kJobNameVariable) + "=" + job_name);
  environment.push_back(std::string(kJobLogVariable) + "=" + log_file);
  return environment;
}

}  // namespace

struct LocalLauncher::Job {
  LaunchSpec spec;
  std::string job_id;
  int pid = 0;  // the process group's leader; 0 when the spawn failed
  std::int64_t started_at_unix_ns = 0;
  std::string log_path;  // relative to root_
  std::int64_t log_size_bytes = 0;
  std::int64_t last_progress_unix_ns = 0;
  bool our_child = false;  // waitpid can tell its exit status
  std::optional<std::int64_t> cancelled_at_unix_ns;
  std::string cancel_reason;
  bool killed = false;
  std::string spawn_failure;
  std::string launcher_error;  // the launcher's own I/O failed: nothing is known of the recipe
  bool finished = false;
};

LocalLauncher::LocalLauncher(Scheduler& scheduler, std::string root, std::string jobs_dir,
                             LocalLauncherOptions options)
    : scheduler_(scheduler),
      root_(std::move(root)),
      jobs_dir_(std::move(jobs_dir)),
      options_(std::move(options)) {}

LocalLauncher::~LocalLauncher() = default;

std::string LocalLauncher::absolute(const std::string& relative) const {
  return (fs::path(root_) / relative).string();
}

Status LocalLauncher::append_record(const nlohmann::json& line) const {
  return append_journal_submission(absolute((fs::path(jobs_dir_) / "jobs.jsonl").string()), line);
}

Result<std::unique_ptr<LocalLauncher>> LocalLauncher::open(Scheduler& scheduler, std::string root,
                                                           std::string jobs_dir,
                                                           LocalLauncherOptions options) {
  std::error_code ec;
  const fs::path folder = fs::path(root) / jobs_dir;
  fs::create_directories(folder / "logs", ec);
  if (!ec) fs::create_directories(folder / "recipes", ec);
  if (ec) return make_error(folder.string() + ": cannot create the local launcher's folder");
  if (options.job_template.empty()) return make_error("the local launcher needs a job template");
  std::unique_ptr<LocalLauncher> launcher(
      new LocalLauncher(scheduler, std::move(root), jobs_dir, std::move(options)));
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
    job->pid = json.value("pid", 0);
    job->started_at_unix_ns = json.value("started_at_unix_ns", std::int64_t{0});
    job->log_path = json.value("log_path", "");
    job->cancelled_at_unix_ns = entry.cancelled_at_unix_ns;
    job->cancel_reason = entry.cancel_reason;
    launcher->known_[name] = std::move(job);
  }
  return launcher;
}

Status LocalLauncher::submit(const LaunchSpec& spec) {
  if (known_.contains(spec.job_name)) {
    return make_error("job " + spec.job_name + " was already submitted to the local launcher");
  }
  auto job = std::make_unique<Job>();
  job->spec = spec;
  job->log_path = (fs::path(jobs_dir_) / "logs" / (spec.job_name + ".log")).string();
  const int log_fd =
      ::open(absolute(job->log_path).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (log_fd < 0) return make_error(absolute(job->log_path) + ": cannot create the job's log");
  ::close(log_fd);
  // The intent first: a crash after the spawn and before its record leaves a job that a resume
  // finds by its name (adopts) instead of starting it twice.
  Status intended = append_record({{"job_name", spec.job_name},
                                   {"job_id", "local-pending"},
                                   {"run_id", spec.run_id},
                                   {"pid", 0},
                                   {"started_at_unix_ns", scheduler_.now_unix_ns()},
                                   {"log_path", job->log_path}});
  if (!intended.ok()) return intended;
  spawn(*job);
  nlohmann::json line = {{"job_name", spec.job_name},
                         {"job_id", job->job_id},
                         {"pid", job->pid},
                         {"started_at_unix_ns", job->started_at_unix_ns}};
  Status recorded = append_record(line);
  if (!recorded.ok()) {
    // Unrecorded, the job could not be found after a crash: it must not run.
    if (job->pid > 0) {
      ::kill(-job->pid, SIGKILL);
      ::waitpid(job->pid, nullptr, 0);
    }
    return recorded;
  }
  Job& placed = *job;
  known_[spec.job_name] = std::move(job);
  active_[spec.run_id] = &placed;

  JobReport submitted;
  submitted.kind = JobReport::Kind::kSubmitted;
  submitted.run_id = spec.run_id;
  submitted.launcher_job_id = placed.job_id;
  submitted.at_unix_ns = placed.started_at_unix_ns;
  JobReport started;
  started.kind = JobReport::Kind::kStarted;
  started.run_id = spec.run_id;
  started.at_unix_ns = placed.started_at_unix_ns;
  started.nodes = {"localhost"};
  const RunId run_id = spec.run_id;
  std::weak_ptr<int> alive = alive_;
  scheduler_.schedule_at(scheduler_.now_unix_ns(), [this, alive, submitted, started, run_id] {
    if (alive.expired()) return;
    report(submitted);
    report(started);
    Job& job = *active_.at(run_id);
    if (!job.spawn_failure.empty()) finish(job, job.started_at_unix_ns, "FAILED");
  });
  if (placed.spawn_failure.empty()) ensure_polling();
  return Ok{};
}

// Starts the job's process group; a failure is written to the job's log and kept in the job.
void LocalLauncher::spawn(Job& job) {
  const LaunchSpec& spec = job.spec;
  job.started_at_unix_ns = scheduler_.now_unix_ns();
  job.last_progress_unix_ns = job.started_at_unix_ns;
  const std::string log_file = fs::absolute(absolute(job.log_path)).string();
  const std::string recipe_file =
      fs::absolute(absolute((fs::path(jobs_dir_) / "recipes" / (spec.job_name + ".recipe"))))
          .string();
  auto fail = [&](const std::string& reason) {
    job.spawn_failure = reason;
    job.job_id = "local-unspawned";
    std::ofstream(log_file, std::ios::app) << "attune local launcher: " << reason << "\n";
  };
  auto recipe = parse_recipe(spec.recipe, spec.job_name);
  if (!recipe.ok()) return fail("the recipe does not parse: " + recipe.error());
  {
    std::ofstream out(recipe_file, std::ios::binary | std::ios::trunc);
    out << spec.recipe;
    out.flush();
    if (!out) {
      job.launcher_error = recipe_file + ": cannot write the recipe file";
      return fail(job.launcher_error);
    }
  }
  const std::string command =
      render_template(options_.job_template, {{"recipe_file", recipe_file},
                                              {"log", log_file},
                                              {"steps", std::to_string(spec.steps)},
                                              {"run_id", std::to_string(spec.run_id)},
                                              {"job_name", spec.job_name},
                                              {"nodes", "localhost"}});
  std::vector<std::string> environment = job_environment(recipe.value(), spec.job_name, log_file);
  std::vector<char*> envp;
  for (std::string& text : environment) envp.push_back(text.data());
  envp.push_back(nullptr);
  std::string shell = "/bin/sh", dash_c = "-c", command_text = command;
  char* argv[] = {shell.data(), dash_c.data(), command_text.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (options_.job_template.find('>') == std::string::npos) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(), O_WRONLY | O_APPEND,
                                     0);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);  // its own group, so cancel reaches every process
  pid_t pid = 0;
  const int error = posix_spawn(&pid, shell.c_str(), &actions, &attributes, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    job.launcher_error = "cannot spawn /bin/sh: " + std::string(std::strerror(error));
    return fail(job.launcher_error);
  }
  job.pid = pid;
  job.our_child = true;
  job.job_id = "local-" + std::to_string(pid);
}

Result<bool> LocalLauncher::reattach(const LaunchSpec& spec) {
  auto found = known_.find(spec.job_name);
  if (found == known_.end()) return false;
  Job& job = *found->second;
  if (job.finished) return true;  // already reported in this launcher's life
  if (job.pid == 0 && job.spawn_failure.empty()) {
    // Only the intent was recorded: adopt the process if the spawn happened, else start over.
    job.pid = find_job_process(spec.job_name, fs::absolute(absolute(job.log_path)).string());
    const std::optional<FileFacts> log = stat_file(absolute(job.log_path));
    if (job.pid == 0 && (!log || log->size_bytes == 0)) {
      known_.erase(found);
      return false;
    }
    if (job.pid > 0) job.job_id = "local-" + std::to_string(job.pid);
  }
  job.spec = spec;
  active_[spec.run_id] = &job;
  const std::optional<FileFacts> log = stat_file(absolute(job.log_path));
  job.log_size_bytes = log ? log->size_bytes : 0;
  job.last_progress_unix_ns =
      log ? std::max(log->modified_unix_ns, job.started_at_unix_ns) : job.started_at_unix_ns;
  job.our_child = is_our_child(job.pid);
  const bool running = job.our_child || group_leader_alive(job.pid);
  JobReport submitted;
  submitted.kind = JobReport::Kind::kSubmitted;
  submitted.run_id = spec.run_id;
  submitted.launcher_job_id = job.job_id;
  submitted.at_unix_ns = job.started_at_unix_ns;
  JobReport started = submitted;
  started.kind = JobReport::Kind::kStarted;
  started.launcher_job_id.clear();
  started.nodes = {"localhost"};
  const RunId run_id = spec.run_id;
  std::weak_ptr<int> alive = alive_;
  scheduler_.schedule_at(scheduler_.now_unix_ns(),
                         [this, alive, submitted, started, run_id, running] {
                           if (alive.expired()) return;
                           report(submitted);
                           report(started);
                           Job& reattached = *active_.at(run_id);
                           if (running) return;
                           // Gone while no launcher watched it: its exit status is lost; it ended
                           // when it last wrote.
                           finish(reattached, reattached.last_progress_unix_ns,
                                  reattached.cancelled_at_unix_ns ? "CANCELLED" : "UNKNOWN");
                         });
  if (running) ensure_polling();
  return true;
}

void LocalLauncher::cancel(RunId run_id, const std::string& reason) {
  auto found = active_.find(run_id);
  if (found == active_.end() || found->second->finished || found->second->cancelled_at_unix_ns) {
    return;
  }
  Job& job = *found->second;
  const std::int64_t now = scheduler_.now_unix_ns();
  job.cancelled_at_unix_ns = now;
  job.cancel_reason = reason;
  (void)append_journal_cancellation(absolute((fs::path(jobs_dir_) / "jobs.jsonl").string()),
                                    job.spec.job_name, now, reason);
  if (job.pid > 0) ::kill(-job.pid, SIGTERM);
  ensure_polling();
}

void LocalLauncher::ensure_polling() {
  if (poll_pending_) return;
  poll_pending_ = true;
  std::weak_ptr<int> alive = alive_;
  scheduler_.schedule_after(kLocalPollIntervalMs * kNsPerMs, [this, alive] {
    if (alive.expired()) return;
    poll_pending_ = false;
    poll();
  });
}

// One sweep over the running jobs: log growth, overdue kills, exits.
void LocalLauncher::poll() {
  const std::int64_t now = scheduler_.now_unix_ns();
  std::vector<std::pair<Job*, std::string>> ended;
  bool still_running = false;
  for (const auto& [run_id, job] : active_) {
    if (job->finished || job->pid <= 0) continue;
    if (const std::optional<FileFacts> log = stat_file(absolute(job->log_path));
        log && log->size_bytes > job->log_size_bytes) {
      job->log_size_bytes = log->size_bytes;
      job->last_progress_unix_ns = now;
    }
    if (job->cancelled_at_unix_ns && !job->killed &&
        now >= *job->cancelled_at_unix_ns + kLocalCancelGraceMs * kNsPerMs) {
      ::kill(-job->pid, SIGKILL);
      job->killed = true;
    }
    std::string state;
    if (job->our_child) {
      int status = 0;
      const pid_t reaped = ::waitpid(job->pid, &status, WNOHANG);
      if (reaped == job->pid) {
        const bool success = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        state = success ? "COMPLETED" : "FAILED";
      } else if (reaped < 0) {
        job->our_child = false;  // reaped elsewhere: only its existence is left to watch
      }
    }
    if (state.empty() && !job->our_child && !group_leader_alive(job->pid)) state = "UNKNOWN";
    if (state.empty()) {
      still_running = true;
      continue;
    }
    ended.emplace_back(job, job->cancelled_at_unix_ns ? "CANCELLED" : state);
  }
  if (still_running) ensure_polling();
  // Reported after the sweep: a listener may submit or cancel, changing active_.
  for (auto& [job, state] : ended) finish(*job, now, state);
}

void LocalLauncher::finish(Job& job, std::int64_t at_unix_ns, const std::string& final_state) {
  if (job.finished) return;
  job.finished = true;
  JobReport finished;
  finished.kind = JobReport::Kind::kFinished;
  finished.run_id = job.spec.run_id;
  finished.at_unix_ns = at_unix_ns;
  finished.final_state = final_state;
  finished.facts_source = "local";
  finished.log_path = job.log_path;
  finished.cancel_reason = job.cancel_reason;
  finished.launcher_error = job.launcher_error;
  if (finished.launcher_error.empty()) {
    finished.launcher_error = full_disk_note(absolute(job.log_path)).value_or("");
  }
  report(finished);
}

void LocalLauncher::report(const JobReport& job_report) {
  if (listener_) listener_(job_report);
}

std::optional<std::int64_t> LocalLauncher::last_progress_unix_ns(RunId run_id) const {
  auto found = active_.find(run_id);
  if (found == active_.end() || found->second->finished) return std::nullopt;
  return found->second->last_progress_unix_ns;
}

double LocalLauncher::expected_gpu_hours(const LaunchSpec& spec) const {
  return options_.expected_seconds_per_step * spec.steps * spec.gpus / 3600.0;
}

Result<std::string> LocalLauncher::read_log(const std::string& log_path) const {
  return read_text_file(absolute(log_path));
}

Result<std::string> LocalLauncher::read_log_so_far(RunId run_id) const {
  auto found = active_.find(run_id);
  if (found == active_.end())
    return make_error("run " + std::to_string(run_id) + " is not running");
  return read_text_file(absolute(found->second->log_path));
}

}  // namespace attune
