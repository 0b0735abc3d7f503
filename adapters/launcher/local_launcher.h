// LocalLauncher: the Launcher port on this machine, each job a local process group, in real time.
//
// A job runs its job template through `/bin/sh -c`, in its own process group, with the recipe's
// environment variables added to the launcher's environment. The template's placeholders:
//   {recipe_file}  a file holding the recipe's canonical text
//   {log}          the job's log; stdout and stderr are appended there unless the template
//                  redirects ('>' anywhere in it)
//   {steps} {run_id} {job_name}
//   {nodes}        always "localhost"
// Paths are absolute and shell-quoted where needed. For example:
//   attune-sim-job --model m --gpu h100 ... --recipe {recipe_file} --steps {steps} --log {log}
//       --realtime --step-ms 50
//
// Reports come back on the scheduler's thread: submitted and started (the spawn time is the
// admission) right after submit(), finished when a sweep of the jobs (one every
// kLocalPollIntervalMs, only while some job runs) sees the process exit: COMPLETED for exit 0,
// FAILED otherwise, CANCELLED after cancel() (SIGTERM to the group, SIGKILL after
// kLocalCancelGraceMs). A job that cannot be spawned finishes FAILED at once, the reason in its
// log. The same sweep stats each log: last_progress_unix_ns() is the sweep that last saw it grow.
//
// jobs.jsonl under the launcher's folder records each job (name, pid, start time), so that after
// a crash reattach() finds a job by its deterministic name: a live process is watched again; a
// process that is gone is reported finished "UNKNOWN" at the time its log last grew (a process
// that is not our child yields no exit status). Destroying the launcher leaves its jobs running.
//
// REQUIRES: the scheduler outlives the launcher; all calls on the scheduler's thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/ports.h"
#include "core/scheduler.h"

namespace attune {

inline constexpr std::int64_t kLocalPollIntervalMs = 100;
inline constexpr std::int64_t kLocalCancelGraceMs = 5'000;

struct LocalLauncherOptions {
  std::string job_template;                // the shell command line, with placeholders
  double expected_seconds_per_step = 0.0;  // the admission estimate's pace
};

class LocalLauncher final : public Launcher {
 public:
  // `root/jobs_dir` holds jobs.jsonl, logs/ and recipes/; the paths the launcher reports are
  // relative to `root` (the ledger's folder), like the simulated launcher's.
  static Result<std::unique_ptr<LocalLauncher>> open(Scheduler& scheduler, std::string root,
                                                     std::string jobs_dir,
                                                     LocalLauncherOptions options);
  ~LocalLauncher() override;

  std::string name() const override { return "local"; }
  void set_listener(Listener listener) override { listener_ = std::move(listener); }
  Status submit(const LaunchSpec& spec) override;
  void cancel(RunId run_id, const std::string& reason) override;
  Result<bool> reattach(const LaunchSpec& spec) override;
  std::optional<std::int64_t> last_progress_unix_ns(RunId run_id) const override;
  // expected_seconds_per_step × steps × GPUs, in hours.
  double expected_gpu_hours(const LaunchSpec& spec) const override;
  Result<std::string> read_log(const std::string& log_path) const override;
  Result<std::string> read_log_so_far(RunId run_id) const override;

  struct Job;

 private:
  LocalLauncher(Scheduler& scheduler, std::string root, std::string jobs_dir,
                LocalLauncherOptions options);
  std::string absolute(const std::string& relative) const;
  Status append_record(const nlohmann::json& line) const;
  void spawn(Job& job);
  void ensure_polling();
  void poll();
  void finish(Job& job, std::int64_t at_unix_ns, const std::string& final_state);
  void report(const JobReport& report);

  Scheduler& scheduler_;
  std::string root_;
  std::string jobs_dir_;  // relative to root_
  LocalLauncherOptions options_;
  Listener listener_;
  std::map<std::string, std::unique_ptr<Job>> known_;  // by job name, from jobs.jsonl
  std::map<RunId, Job*> active_;
  bool poll_pending_ = false;
  // Scheduled callbacks hold a weak reference: the scheduler cannot cancel them, and one may
  // fire after the launcher is gone.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace attune
