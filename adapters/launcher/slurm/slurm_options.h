// SlurmLauncherOptions: how the Slurm launcher submits and watches a campaign's jobs (the
// campaign file's [slurm] section), and their record beside the launcher's jobs, so that
// `attune campaign resume` watches the jobs the way `campaign run` started them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "events/result.h"

namespace attune {

struct SlurmLauncherOptions {
  std::string job_template;  // the sbatch script with placeholders (see sbatch_script.h)
  std::string partition;     // empty: the cluster's default partition
  std::uint32_t gpus_per_node = 8;
  std::vector<std::string> sbatch_args;  // more sbatch options, e.g. --account=llm --qos=high
  double poll_interval_s = 10.0;         // one squeue sweep per interval, whatever the job count
  // A job still pending this long after its submission is cancelled and recorded.
  double start_limit_s = 24.0 * 3600.0;
  // A running job whose log has not grown for this long is cancelled as a hang; 0 leaves hangs
  // to the campaign's hang_timeout_minutes.
  double log_silence_s = 0.0;
  double expected_seconds_per_step = 0.0;  // the admission estimate's pace
  std::string bin_dir;                     // where sbatch, squeue, ... are; empty: PATH
  // Batch scripts and logs, on a file system the compute nodes share; empty: the launcher's own
  // folder under the ledger.
  std::string work_dir;
  double command_timeout_s = 60.0;  // one Slurm command, then it is killed
};

// The options' problems, one line; Ok when they can run.
Status check_slurm_options(const SlurmLauncherOptions& options);

Status save_slurm_options(const std::string& path, const SlurmLauncherOptions& options);
Result<SlurmLauncherOptions> load_slurm_options(const std::string& path);

}  // namespace attune
