#include "adapters/launcher/slurm/slurm_options.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/text_file.h"

namespace attune {

Status check_slurm_options(const SlurmLauncherOptions& options) {
  if (options.job_template.empty()) return make_error("the Slurm launcher needs a job template");
  if (options.gpus_per_node == 0) return make_error("gpus_per_node must be at least 1");
  if (!(options.poll_interval_s > 0.0)) return make_error("the poll interval must be positive");
  if (!(options.start_limit_s > 0.0)) return make_error("the start limit must be positive");
  if (!(options.log_silence_s >= 0.0)) return make_error("the log silence limit must be >= 0");
  if (!(options.command_timeout_s > 0.0)) return make_error("the command timeout must be positive");
  return Ok{};
}

Status save_slurm_options(const std::string& path, const SlurmLauncherOptions& options) {
  const nlohmann::json json = {{"job_template", options.job_template},
                               {"partition", options.partition},
                               {"gpus_per_node", options.gpus_per_node},
                               {"sbatch_args", options.sbatch_args},
                               {"poll_interval_s", options.poll_interval_s},
                               {"start_limit_s", options.start_limit_s},
                               {"log_silence_s", options.log_silence_s},
                               {"expected_seconds_per_step", options.expected_seconds_per_step},
                               {"bin_dir", options.bin_dir},
                               {"work_dir", options.work_dir},
                               {"command_timeout_s", options.command_timeout_s}};
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json.dump(2) << "\n";
  out.flush();
  if (!out) return make_error(path + ": cannot write the Slurm launcher's options");
  return Ok{};
}

Result<SlurmLauncherOptions> load_slurm_options(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return make_error(text.error());
  const auto json = nlohmann::json::parse(text.value(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return make_error(path + ": expected the Slurm launcher's options as a JSON object");
  }
  SlurmLauncherOptions options;
  try {
    options.job_template = json.at("job_template").get<std::string>();
    options.partition = json.value("partition", "");
    options.gpus_per_node = json.value("gpus_per_node", options.gpus_per_node);
    options.sbatch_args = json.value("sbatch_args", std::vector<std::string>{});
    options.poll_interval_s = json.value("poll_interval_s", options.poll_interval_s);
    options.start_limit_s = json.value("start_limit_s", options.start_limit_s);
    options.log_silence_s = json.value("log_silence_s", options.log_silence_s);
    options.expected_seconds_per_step =
        json.value("expected_seconds_per_step", options.expected_seconds_per_step);
    options.bin_dir = json.value("bin_dir", "");
    options.work_dir = json.value("work_dir", "");
    options.command_timeout_s = json.value("command_timeout_s", options.command_timeout_s);
  } catch (const nlohmann::json::exception& e) {
    return make_error(path + ": " + e.what());
  }
  Status checked = check_slurm_options(options);
  if (!checked.ok()) return make_error(path + ": " + checked.error());
  return options;
}

}  // namespace attune
