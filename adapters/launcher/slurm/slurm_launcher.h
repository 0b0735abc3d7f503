// SlurmLauncher: the Launcher port on a Slurm cluster. Each run is one batch job made from the
// user's launch template (sbatch_script.h), watched by one `squeue --json` sweep per interval for
// all of the campaign's jobs in flight, on the scheduler's timers.
//
// Submission: `sbatch --parsable` with the run's deterministic job name, --output/--error to the
// run's log (appended), --no-requeue, --nodes (GPUs / gpus_per_node), the partition, the extra
// sbatch options and --exclude. Calibration runs and infrastructure retries ask to avoid nodes;
// the launcher excludes them while the cluster keeps enough usable nodes for the job (one `sinfo`
// per submission that excludes nodes), dropping the last ones asked for otherwise. jobs.jsonl
// (job_journal.h) records each job id before anything else happens to it.
//
// The sweep (one every poll interval while jobs are in flight; the only per-interval query, so
// hundreds of runs and dozens in flight cost the scheduler one query): a job listed running
// reports started at Slurm's start time with its node list; a job listed in a final state
// reports finished at Slurm's end time with that state. Queue time is therefore never charged.
// Each running job's log is read as it grows: its growth is last_progress_unix_ns(); a fatal
// sign in it (out of memory, a program error, an infrastructure error) cancels the job as
// "early-abort", an NCCL collective timeout as "hang"; a log silent for log_silence_s cancels it
// as "hang". A job still pending start_limit_s after submission is cancelled ("not-started") and
// finishes CANCELLED without ever starting.
//
// Facts of finished jobs come from the scheduler's own record, named in facts_source: "sacct"
// where the cluster keeps accounting (one sacct call for the jobs a sweep saw end); otherwise
// "squeue" while slurmctld still lists the job, then "jobcomp" (the job-completion log of
// jobcomp/filetxt) once it does not. A job that none of them knows for kSlurmUnlistedSweepsMax
// sweeps finishes "UNKNOWN" ("none") at the time its log last grew.
//
// After a crash, reattach() finds a job by its name: in the journal, else in squeue's listing,
// else in the records of finished jobs, and watches it again; a job the cluster never saw is
// reported as not found, to be submitted. Destroying the launcher leaves its jobs running.
//
// REQUIRES: the scheduler outlives the launcher; all calls on the scheduler's thread. Slurm
// commands run synchronously on that thread, each bounded by command_timeout_s.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/launcher/slurm/slurm_command.h"
#include "adapters/launcher/slurm/slurm_facts.h"
#include "adapters/launcher/slurm/slurm_options.h"
#include "core/ports.h"
#include "core/scheduler.h"

namespace attune {

inline constexpr std::uint32_t kSlurmUnlistedSweepsMax = 3;
inline constexpr std::int64_t kSlurmLogReadBytesMax = 8 * 1024 * 1024;  // per job per sweep
inline constexpr int kSacctLookBackDays = 30;  // how far back a job is looked up by name

class SlurmLauncher final : public Launcher {
 public:
  // `root/jobs_dir` holds jobs.jsonl; scripts, recipes and logs go to options.work_dir, or there
  // when it is empty. Reported log paths are relative to `root` when they lie under it. Asks the
  // cluster (`scontrol show config`) which records of finished jobs it keeps: an error when the
  // cluster does not answer.
  static Result<std::unique_ptr<SlurmLauncher>> open(Scheduler& scheduler, std::string root,
                                                     std::string jobs_dir,
                                                     SlurmLauncherOptions options);
  ~SlurmLauncher() override;

  std::string name() const override { return "slurm"; }
  void set_listener(Listener listener) override { listener_ = std::move(listener); }
  Status submit(const LaunchSpec& spec) override;
  void cancel(RunId run_id, const std::string& reason) override;
  Result<bool> reattach(const LaunchSpec& spec) override;
  std::optional<std::int64_t> last_progress_unix_ns(RunId run_id) const override;
  // expected_seconds_per_step × steps × GPUs, in hours.
  double expected_gpu_hours(const LaunchSpec& spec) const override;
  Result<std::string> read_log(const std::string& log_path) const override;
  Result<std::string> read_log_so_far(RunId run_id) const override;

  // What the cluster keeps about finished jobs, as found when the launcher opened.
  const SlurmRecords& records() const { return records_; }
  // How many squeue sweeps this launcher ran.
  std::uint64_t sweeps() const { return sweeps_; }

  struct Job;

 private:
  SlurmLauncher(Scheduler& scheduler, std::string root, std::string jobs_dir,
                SlurmLauncherOptions options);
  std::string command(const std::string& name) const;
  Result<CommandOutput> run(std::vector<std::string> argv) const;
  std::string journal_path() const;
  std::string work_path(const std::string& folder, const std::string& file) const;
  std::string reported_path(const std::string& absolute_path) const;
  std::vector<std::string> exclusions(const std::vector<std::string>& asked,
                                      std::uint32_t nodes_needed) const;
  // Writes the job's recipe and batch script under the work folder; returns the script's path.
  Result<std::string> write_job_files(const LaunchSpec& spec, const Recipe& recipe,
                                      const std::string& log_file, std::uint32_t nodes) const;
  // sbatch's command line for the job's script, `excluded` nodes kept out.
  std::vector<std::string> sbatch_argv(const LaunchSpec& spec, const std::string& log_file,
                                       std::uint32_t nodes,
                                       const std::vector<std::string>& excluded,
                                       const std::string& script_file) const;
  // After sbatch: the report that the job was submitted, and polling.
  void announce_submitted(const Job& job);
  Result<std::vector<SlurmJobFacts>> listing();
  std::vector<SlurmJobFacts> finished_records(const std::vector<Job*>& jobs, bool by_name);
  void ensure_polling();
  void poll();
  // Jobs squeue lists as ended: their accounting records where there are some (the source named
  // in the report), then their reports.
  void finish_ended(std::vector<std::pair<Job*, SlurmJobFacts>>& ended,
                    std::vector<JobReport>& reports);
  // Jobs squeue no longer lists: finished by their records, or unknown after enough sweeps.
  void settle_unlisted(const std::vector<Job*>& unlisted, std::vector<JobReport>& reports);
  void read_log_growth(Job& job, std::int64_t now);
  void request_cancel(Job& job, const std::string& reason);
  void started(Job& job, const SlurmJobFacts& facts, std::vector<JobReport>& reports);
  void finished(Job& job, const SlurmJobFacts& facts, const std::string& source,
                std::vector<JobReport>& reports);
  void report(const JobReport& report);

  Scheduler& scheduler_;
  std::string root_;
  std::string jobs_dir_;  // relative to root_
  std::string work_dir_;  // absolute
  SlurmLauncherOptions options_;
  SlurmRecords records_;
  Listener listener_;
  std::map<std::string, std::unique_ptr<Job>> known_;  // by job name, from jobs.jsonl
  std::map<RunId, Job*> active_;
  bool poll_pending_ = false;
  std::uint64_t sweeps_ = 0;
  // The last listing, reused by reattach() calls within one poll interval.
  std::optional<std::vector<SlurmJobFacts>> cached_listing_;
  std::int64_t cached_listing_at_unix_ns_ = 0;
  // Scheduled callbacks hold a weak reference: the scheduler cannot cancel them, and one may
  // fire after the launcher is gone.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace attune
