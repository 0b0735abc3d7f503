// The campaign file: what a user writes to start a campaign (TOML), parsed and validated.
//
// parse_campaign_file() reads the file and every file it names (recipe file, policy file), and
// reports the first problem as one line naming the file, the line, the key and what was
// expected. The result is plain data; opening the campaign in the ledger is the control plane's
// job (CampaignOpened is built from it by campaign_opened()).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/runnable_recipe.h"
#include "events/event.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune {

struct CampaignSpec {
  std::string path;  // the campaign file as given
  std::string name;
  std::string model;     // preset name or path of a model TOML file
  std::string hardware;  // preset name or path of a hardware TOML file
  std::uint32_t gpus = 0;
  std::string launcher = "sim";
  // [cluster] stack: the simulated cluster's software stack, a preset name (megatron-bridge,
  // slime) or the path of a stack TOML file; empty: megatron-bridge. Only with launcher "sim".
  std::string stack;

  std::uint32_t seq_length = 0;
  std::uint32_t global_batch = 0;
  std::string precision = "bf16";
  std::string data = "synthetic";

  Recipe baseline;
  std::string baseline_source;  // "inline" or the recipe file's path
  ScriptShape baseline_shape;   // the launcher and the order the baseline was given in
  // [baseline] script: a launch script that bash runs in a sandbox to find the training program's
  // arguments (the command line resolves it into `baseline`; until then the recipe is empty).
  struct Script {
    std::string path;  // empty: the baseline is a recipe or recipe_file
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::vector<std::string> files;  // companions it sources or runs, shown at their own paths
    std::string cwd;                 // the folder it runs in; empty: its own
    double timeout_seconds = 20;
    bool allow_unsandboxed = false;  // consent to run it without a sandbox where none can be made
  } script;

  std::string policy_name = "default";
  std::string policy_path;   // empty for the built-in default policy
  std::string policy_bytes;  // the policy file's contents ("" for the default)

  bool budget_auto = true;
  double budget_gpu_hours = 0.0;
  std::uint32_t reserve_checks = 3;

  std::uint32_t concurrency = 3;
  std::uint32_t steps_per_run = 14;
  std::uint32_t window_first_step = 4;
  std::uint32_t window_last_step = 13;
  std::uint32_t check_steps = 20;
  std::uint32_t hang_timeout_minutes = 30;
  std::uint32_t calibration_runs = 5;
  double band_floor_fraction = 0.03;
  double band_k = 3.0;

  // The launcher's job template: [local] job (a command line), or the text of the [slurm]
  // template file (an sbatch script); and the pace of admission estimates ([local] or [slurm]
  // seconds_per_step).
  std::string job_template;
  double expected_seconds_per_step = 1.0;

  // [slurm]: how the Slurm launcher submits and watches jobs (paths resolved against the
  // campaign file's folder).
  struct Slurm {
    std::string template_path;  // template: the user's sbatch launch template
    std::string partition;
    std::uint32_t gpus_per_node = 8;
    std::vector<std::string> sbatch_args;        // more sbatch options, e.g. ["--account=llm"]
    double poll_seconds = 10.0;                  // one squeue sweep per interval
    double start_limit_seconds = 24.0 * 3600.0;  // a job pending longer is cancelled
    double log_silence_seconds = 0.0;  // a log silent longer is a hang; 0: hang_timeout_minutes
    std::string bin_dir;               // where sbatch, squeue, ... are; empty: PATH
    std::string work_dir;              // scripts and logs; empty: beside the ledger
  };
  Slurm slurm;

  std::string tuner = "expert";
  std::string tuner_options_toml;  // the [tuner] table as TOML text, for the tuner to read
  // [tuner] learned_rules: the learned-rules catalog later campaigns read (JSON lines); empty:
  // the per-user default ($XDG_DATA_HOME or ~/.local/share, then attune/learned_rules.jsonl);
  // "none": neither read nor written.
  std::string learned_rules_path;
  // [tuner] simulated_rules: a campaign on a real cluster also reads the rules learned in the
  // simulated world (by default it does not).
  bool simulated_rules = false;

  std::uint64_t seed = 1;
  std::uint64_t reality_seed = 0;

  // [cost] usd_per_gpu_hour: what one GPU-hour costs; 0 (the default) prints no dollar figures.
  double usd_per_gpu_hour = 0.0;

  std::string file_hash;  // hex SHA-256 of the campaign file's bytes
};

Result<CampaignSpec> parse_campaign_file(const std::string& path);
Result<CampaignSpec> parse_campaign_text(std::string_view text, const std::string& path);

// Campaign names are 1-48 characters of [A-Za-z0-9._-].
bool is_valid_campaign_name(std::string_view name);

// The campaign id is deterministic: the name, then 8 hex digits of the file hash and the seed.
std::string campaign_id_for(const CampaignSpec& spec);

CampaignOpened campaign_opened(const CampaignSpec& spec);

}  // namespace attune
