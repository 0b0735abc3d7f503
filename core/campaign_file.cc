#include "core/campaign_file.h"

#include "core/text_file.h"

#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "events/event_store.h"
#include "events/sha256.h"
#include "gate/toml_names.h"

namespace attune {
namespace {

constexpr std::uint32_t kGpusMax = 1u << 20;
constexpr std::uint32_t kStepsPerRunMax = 100000;
constexpr std::uint32_t kConcurrencyMax = 256;

// Campaign files, recipes and policies are small: a bigger file is refused before it is read.
constexpr std::size_t kCampaignInputBytesMax = std::size_t{1} << 20;

Result<std::string> read_file(const std::string& path, const std::string& what) {
  Result<std::string> text = read_text_file(path, kCampaignInputBytesMax);
  if (!text.ok()) return make_error(text.error() + " (" + what + ")");
  return text;
}

// Reads typed keys from one TOML table, reporting the first problem with file, line and key.
class TableReader {
 public:
  TableReader(const toml::table* table, std::string file, std::string section, int line)
      : table_(table), file_(std::move(file)), section_(std::move(section)), line_(line) {}

  bool present(std::string_view key) const { return table_ && table_->contains(key); }

  std::optional<Error> text(std::string_view key, std::string& out, bool required) {
    const toml::node* node = find(key);
    if (!node) return required ? std::optional<Error>(missing(key, "a string")) : std::nullopt;
    if (auto value = node->value<std::string>()) {
      if (value->empty()) return wrong(*node, key, "a non-empty string", "an empty string");
      out = *value;
      return std::nullopt;
    }
    return wrong(*node, key, "a string", toml_type_name(*node));
  }

  std::optional<Error> count(std::string_view key, std::uint32_t& out, bool required,
                             std::uint32_t min, std::uint32_t max) {
    const toml::node* node = find(key);
    if (!node) return required ? std::optional<Error>(missing(key, "an integer")) : std::nullopt;
    auto value = node->value_exact<std::int64_t>();
    if (!value) return wrong(*node, key, "an integer", toml_type_name(*node));
    if (*value < min || *value > max) {
      return wrong(*node, key,
                   "an integer from " + std::to_string(min) + " to " + std::to_string(max),
                   std::to_string(*value));
    }
    out = static_cast<std::uint32_t>(*value);
    return std::nullopt;
  }

  std::optional<Error> seed(std::string_view key, std::uint64_t& out) {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    auto value = node->value_exact<std::int64_t>();
    if (!value || *value < 0) {
      return wrong(*node, key, "a non-negative integer",
                   value ? std::to_string(*value) : toml_type_name(*node));
    }
    out = static_cast<std::uint64_t>(*value);
    return std::nullopt;
  }

  std::optional<Error> fraction(std::string_view key, double& out, double min, double max) {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    auto value = node->value<double>();
    if (!value) return wrong(*node, key, "a number", toml_type_name(*node));
    if (!(*value >= min && *value <= max)) {
      std::ostringstream range;
      range << "a number from " << min << " to " << max;
      std::ostringstream found;
      found << *value;
      return wrong(*node, key, range.str(), found.str());
    }
    out = *value;
    return std::nullopt;
  }

  std::optional<Error> flag(std::string_view key, bool& out) {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    auto value = node->value_exact<bool>();
    if (!value) return wrong(*node, key, "true or false", toml_type_name(*node));
    out = *value;
    return std::nullopt;
  }

  std::optional<Error> texts(std::string_view key, std::vector<std::string>& out) {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    const toml::array* array = node->as_array();
    if (!array) return wrong(*node, key, "an array of strings", toml_type_name(*node));
    out.clear();
    for (const toml::node& item : *array) {
      auto value = item.value<std::string>();
      if (!value || value->empty()) {
        return wrong(item, key, "an array of non-empty strings", toml_type_name(item));
      }
      out.push_back(*value);
    }
    return std::nullopt;
  }

  // A table of strings, e.g. script_env = { DATA = "/data", NNODES = "2" }.
  std::optional<Error> text_table(std::string_view key, std::map<std::string, std::string>& out) {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    const toml::table* table = node->as_table();
    if (!table) return wrong(*node, key, "a table of strings", toml_type_name(*node));
    out.clear();
    for (const auto& [name, item] : *table) {
      auto value = item.value<std::string>();
      if (!value) return wrong(item, key, "string values", toml_type_name(item));
      out[std::string(name.str())] = *value;
    }
    return std::nullopt;
  }

  std::optional<Error> unknown_keys(const std::set<std::string_view>& known) const {
    if (!table_) return std::nullopt;
    for (const auto& [key, node] : *table_) {
      if (!known.contains(key.str())) {
        return make_error(file_ + ":" + std::to_string(node.source().begin.line) + ": " +
                          qualified(key.str()) + ": unknown key (expected one of " + join(known) +
                          ")");
      }
    }
    return std::nullopt;
  }

  const toml::node* find(std::string_view key) const { return table_ ? table_->get(key) : nullptr; }

  Error wrong(const toml::node& node, std::string_view key, const std::string& expected,
              const std::string& found) const {
    return make_error(file_ + ":" + std::to_string(node.source().begin.line) + ": " +
                      qualified(key) + ": expected " + expected + ", found " + found);
  }

  Error missing(std::string_view key, const std::string& expected) const {
    return make_error(file_ + ":" + std::to_string(line_) + ": " + qualified(key) +
                      ": missing, expected " + expected);
  }

 private:
  std::string qualified(std::string_view key) const {
    return section_.empty() ? std::string(key) : "[" + section_ + "] " + std::string(key);
  }

  static std::string join(const std::set<std::string_view>& keys) {
    std::string out;
    for (std::string_view key : keys) {
      if (!out.empty()) out += ", ";
      out += key;
    }
    return out;
  }

  const toml::table* table_;
  std::string file_;
  std::string section_;
  int line_;
};

#define ATTUNE_TRY(expr)           \
  do {                             \
    if (auto failure_ = (expr)) {  \
      return std::move(*failure_); \
    }                              \
  } while (false)

std::string resolve_relative(const std::string& campaign_path, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(campaign_path).parent_path() / p).lexically_normal().string();
}

}  // namespace

Result<CampaignSpec> parse_campaign_file(const std::string& path) {
  Result<std::string> bytes = read_file(path, "the campaign file");
  if (!bytes.ok()) return make_error(bytes.error());
  return parse_campaign_text(bytes.value(), path);
}

namespace {

// The TOML of a campaign file and its path, for the readers of its sections.
struct CampaignToml {
  const toml::table& root;
  const std::string& path;
};

// Section `name` of the file: `out` is its table, or null when it is absent and not required.
std::optional<Error> section_of(const CampaignToml& file, std::string_view name, bool required,
                                const toml::table*& out) {
  const std::string& path = file.path;
  const toml::node* node = file.root.get(name);
  if (!node) {
    if (required) {
      return make_error(path + ":1: [" + std::string(name) + "]: missing, expected a table");
    }
    out = nullptr;
    return std::nullopt;
  }
  out = node->as_table();
  if (!out) {
    return make_error(path + ":" + std::to_string(node->source().begin.line) + ": " +
                      std::string(name) + ": expected a table");
  }
  return std::nullopt;
}

// The cluster: model, hardware, GPU count, launcher and, for the simulated cluster, its stack.
std::optional<Error> read_cluster(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* cluster = nullptr;
  ATTUNE_TRY(section_of(file, "cluster", true, cluster));
  TableReader c(cluster, path, "cluster", 1);
  ATTUNE_TRY(c.unknown_keys({"model", "hardware", "gpus", "launcher", "stack"}));
  ATTUNE_TRY(c.text("model", spec.model, true));
  ATTUNE_TRY(c.text("hardware", spec.hardware, true));
  ATTUNE_TRY(c.count("gpus", spec.gpus, true, 1, kGpusMax));
  ATTUNE_TRY(c.text("launcher", spec.launcher, false));
  if (spec.launcher != "sim" && spec.launcher != "local" && spec.launcher != "slurm") {
    return c.wrong(*c.find("launcher"), "launcher", "one of sim, local, slurm",
                   "'" + spec.launcher + "'");
  }
  ATTUNE_TRY(c.text("stack", spec.stack, false));
  if (!spec.stack.empty() && spec.launcher != "sim") {
    return c.wrong(*c.find("stack"), "stack", "no stack: it describes the simulated cluster",
                   "a stack with launcher '" + spec.launcher + "'");
  }
  if (spec.stack.ends_with(".toml") || spec.stack.find('/') != std::string::npos) {
    spec.stack = resolve_relative(path, spec.stack);
  }
  return std::nullopt;
}

// The workload: sequence length, global batch, precision and data.
std::optional<Error> read_workload(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* workload = nullptr;
  ATTUNE_TRY(section_of(file, "workload", true, workload));
  TableReader w(workload, path, "workload", 1);
  ATTUNE_TRY(w.unknown_keys({"seq_length", "global_batch", "precision", "data"}));
  ATTUNE_TRY(w.count("seq_length", spec.seq_length, true, 1, 1u << 24));
  ATTUNE_TRY(w.count("global_batch", spec.global_batch, true, 1, 1u << 24));
  ATTUNE_TRY(w.text("precision", spec.precision, false));
  if (spec.precision != "bf16" && spec.precision != "fp8") {
    return w.wrong(*w.find("precision"), "precision", "bf16 or fp8", "'" + spec.precision + "'");
  }
  ATTUNE_TRY(w.text("data", spec.data, false));
  return std::nullopt;
}

// The baseline: an inline recipe, a recipe file, or a launch script to read it from.
std::optional<Error> read_baseline(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* baseline = nullptr;
  ATTUNE_TRY(section_of(file, "baseline", true, baseline));
  TableReader b(baseline, path, "baseline", 1);
  ATTUNE_TRY(b.unknown_keys({"recipe", "recipe_file", "script", "script_args", "script_env",
                             "script_files", "script_cwd", "script_timeout_seconds",
                             "allow_unsandboxed"}));
  const int given = (b.present("recipe") ? 1 : 0) + (b.present("recipe_file") ? 1 : 0) +
                    (b.present("script") ? 1 : 0);
  if (given != 1) {
    return make_error(path + ":" + std::to_string(baseline->source().begin.line) +
                      ": [baseline]: expected exactly one of recipe, recipe_file or script");
  }
  if (b.present("script")) {
    ATTUNE_TRY(b.text("script", spec.script.path, true));
    spec.script.path = resolve_relative(path, spec.script.path);
    ATTUNE_TRY(b.texts("script_args", spec.script.args));
    ATTUNE_TRY(b.text_table("script_env", spec.script.env));
    ATTUNE_TRY(b.texts("script_files", spec.script.files));
    for (std::string& companion : spec.script.files) {
      companion = resolve_relative(path, companion);
    }
    ATTUNE_TRY(b.text("script_cwd", spec.script.cwd, false));
    ATTUNE_TRY(b.fraction("script_timeout_seconds", spec.script.timeout_seconds, 1.0, 600.0));
    ATTUNE_TRY(b.flag("allow_unsandboxed", spec.script.allow_unsandboxed));
    spec.baseline_source = spec.script.path;
  } else if (b.present("recipe")) {
    std::string recipe_text;
    ATTUNE_TRY(b.text("recipe", recipe_text, true));
    const int first_line = b.find("recipe")->source().begin.line;
    Result<Recipe> recipe = parse_recipe(
        recipe_text, path + " [baseline] recipe (from line " + std::to_string(first_line) + ")");
    if (!recipe.ok()) return make_error(recipe.error());
    spec.baseline = std::move(recipe).value();
    spec.baseline_source = "inline";
    spec.baseline_shape.order = recipe_order(recipe_text);
  } else {
    std::string recipe_path;
    ATTUNE_TRY(b.text("recipe_file", recipe_path, true));
    recipe_path = resolve_relative(path, recipe_path);
    Result<std::string> recipe_text = read_file(recipe_path, "the baseline recipe file");
    if (!recipe_text.ok()) return make_error(recipe_text.error());
    Result<Recipe> recipe = parse_recipe(recipe_text.value(), recipe_path);
    if (!recipe.ok()) return make_error(recipe.error());
    spec.baseline = std::move(recipe).value();
    spec.baseline_source = recipe_path;
    spec.baseline_shape.order = recipe_order(recipe_text.value());
  }
  return std::nullopt;
}

// The policy file, read whole (its hash is recorded when a campaign opens).
std::optional<Error> read_policy(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* policy = nullptr;
  ATTUNE_TRY(section_of(file, "policy", false, policy));
  TableReader p(policy, path, "policy", 1);
  ATTUNE_TRY(p.unknown_keys({"file"}));
  if (p.present("file")) {
    ATTUNE_TRY(p.text("file", spec.policy_path, true));
    spec.policy_path = resolve_relative(path, spec.policy_path);
    Result<std::string> policy_bytes = read_file(spec.policy_path, "the policy file");
    if (!policy_bytes.ok()) return make_error(policy_bytes.error());
    spec.policy_bytes = std::move(policy_bytes).value();
    spec.policy_name = std::filesystem::path(spec.policy_path).stem().string();
  }
  return std::nullopt;
}

// The budget: GPU-hours (a number or "auto") and the checks it reserves.
std::optional<Error> read_budget(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* budget = nullptr;
  ATTUNE_TRY(section_of(file, "budget", true, budget));
  TableReader g(budget, path, "budget", 1);
  ATTUNE_TRY(g.unknown_keys({"gpu_hours", "reserve_checks"}));
  const toml::node* hours = g.find("gpu_hours");
  if (!hours) return g.missing("gpu_hours", "a number of GPU-hours or \"auto\"");
  if (auto word = hours->value<std::string>()) {
    if (*word != "auto") {
      return g.wrong(*hours, "gpu_hours", "a number of GPU-hours or \"auto\"", "'" + *word + "'");
    }
    spec.budget_auto = true;
  } else if (auto number = hours->value<double>()) {
    if (!(*number > 0.0 && *number < 1e9)) {
      return g.wrong(*hours, "gpu_hours", "a positive number of GPU-hours or \"auto\"",
                     std::to_string(*number));
    }
    spec.budget_auto = false;
    spec.budget_gpu_hours = *number;
  } else {
    return g.wrong(*hours, "gpu_hours", "a number of GPU-hours or \"auto\"", "another type");
  }
  ATTUNE_TRY(g.count("reserve_checks", spec.reserve_checks, false, 1, 3));
  return std::nullopt;
}

// The runs: concurrency, steps and measurement window, check steps, hang timeout, calibration.
std::optional<Error> read_run(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* run = nullptr;
  ATTUNE_TRY(section_of(file, "run", false, run));
  TableReader r(run, path, "run", 1);
  ATTUNE_TRY(r.unknown_keys({"concurrency", "steps", "window_first_step", "window_last_step",
                             "check_steps", "hang_timeout_minutes", "calibration_runs"}));
  ATTUNE_TRY(r.count("concurrency", spec.concurrency, false, 1, kConcurrencyMax));
  ATTUNE_TRY(r.count("steps", spec.steps_per_run, false, 2, kStepsPerRunMax));
  ATTUNE_TRY(r.count("window_first_step", spec.window_first_step, false, 1, kStepsPerRunMax));
  ATTUNE_TRY(r.count("window_last_step", spec.window_last_step, false, 1, kStepsPerRunMax));
  ATTUNE_TRY(r.count("check_steps", spec.check_steps, false, 2, kStepsPerRunMax));
  ATTUNE_TRY(r.count("hang_timeout_minutes", spec.hang_timeout_minutes, false, 1, 24 * 60));
  ATTUNE_TRY(r.count("calibration_runs", spec.calibration_runs, false, 2, 100));
  if (spec.window_first_step > spec.window_last_step ||
      spec.window_last_step > spec.steps_per_run) {
    return make_error(path + ":" + std::to_string(run ? run->source().begin.line : 1) +
                      ": [run] window: expected 1 <= window_first_step <= window_last_step <= "
                      "steps, found " +
                      std::to_string(spec.window_first_step) + ".." +
                      std::to_string(spec.window_last_step) + " of " +
                      std::to_string(spec.steps_per_run));
  }
  return std::nullopt;
}

// The noise band and the price of a GPU-hour.
std::optional<Error> read_band_and_cost(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* band = nullptr;
  ATTUNE_TRY(section_of(file, "band", false, band));
  TableReader n(band, path, "band", 1);
  ATTUNE_TRY(n.unknown_keys({"floor", "k"}));
  ATTUNE_TRY(n.fraction("floor", spec.band_floor_fraction, 0.0, 1.0));
  ATTUNE_TRY(n.fraction("k", spec.band_k, 0.0, 100.0));

  const toml::table* cost = nullptr;
  ATTUNE_TRY(section_of(file, "cost", false, cost));
  TableReader price(cost, path, "cost", 1);
  ATTUNE_TRY(price.unknown_keys({"usd_per_gpu_hour"}));
  ATTUNE_TRY(price.fraction("usd_per_gpu_hour", spec.usd_per_gpu_hour, 0.0, 1e6));
  return std::nullopt;
}

// The tuner and its own options, kept as TOML for it to read.
std::optional<Error> read_tuner(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* tuner = nullptr;
  ATTUNE_TRY(section_of(file, "tuner", false, tuner));
  TableReader t(tuner, path, "tuner", 1);
  ATTUNE_TRY(t.text("name", spec.tuner, false));
  ATTUNE_TRY(t.text("learned_rules", spec.learned_rules_path, false));
  // The LLM tuner reads (and checks) its own keys; the others take none.
  ATTUNE_TRY(t.flag("simulated_rules", spec.simulated_rules));
  if (spec.tuner != "llm") {
    ATTUNE_TRY(t.unknown_keys({"name", "learned_rules", "simulated_rules"}));
  }
  if (!spec.learned_rules_path.empty() && spec.learned_rules_path != "none") {
    spec.learned_rules_path = resolve_relative(path, spec.learned_rules_path);
  }
  if (tuner) {
    std::ostringstream options;
    options << *tuner;
    spec.tuner_options_toml = options.str();
  }
  return std::nullopt;
}

// The local and Slurm launchers' settings (required for the launcher the cluster names).
std::optional<Error> read_launchers(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* local = nullptr;
  ATTUNE_TRY(section_of(file, "local", spec.launcher == "local", local));
  TableReader j(local, path, "local", 1);
  ATTUNE_TRY(j.unknown_keys({"job", "seconds_per_step"}));
  ATTUNE_TRY(j.text("job", spec.job_template, spec.launcher == "local"));
  ATTUNE_TRY(j.fraction("seconds_per_step", spec.expected_seconds_per_step, 0.0, 1e6));

  const toml::table* slurm = nullptr;
  ATTUNE_TRY(section_of(file, "slurm", spec.launcher == "slurm", slurm));
  TableReader u(slurm, path, "slurm", slurm ? static_cast<int>(slurm->source().begin.line) : 1);
  ATTUNE_TRY(u.unknown_keys({"template", "partition", "gpus_per_node", "sbatch_args",
                             "poll_seconds", "start_limit_seconds", "log_silence_seconds",
                             "seconds_per_step", "bin_dir", "work_dir"}));
  ATTUNE_TRY(u.text("template", spec.slurm.template_path, spec.launcher == "slurm"));
  ATTUNE_TRY(u.text("partition", spec.slurm.partition, false));
  ATTUNE_TRY(u.count("gpus_per_node", spec.slurm.gpus_per_node, false, 1, 1024));
  ATTUNE_TRY(u.texts("sbatch_args", spec.slurm.sbatch_args));
  ATTUNE_TRY(u.fraction("poll_seconds", spec.slurm.poll_seconds, 0.05, 3600.0));
  ATTUNE_TRY(u.fraction("start_limit_seconds", spec.slurm.start_limit_seconds, 1.0, 30.0 * 86400));
  ATTUNE_TRY(u.fraction("log_silence_seconds", spec.slurm.log_silence_seconds, 0.0, 7.0 * 86400));
  ATTUNE_TRY(u.text("bin_dir", spec.slurm.bin_dir, false));
  ATTUNE_TRY(u.text("work_dir", spec.slurm.work_dir, false));
  if (spec.launcher == "slurm") {
    ATTUNE_TRY(u.fraction("seconds_per_step", spec.expected_seconds_per_step, 0.0, 1e6));
    spec.slurm.template_path = resolve_relative(path, spec.slurm.template_path);
    Result<std::string> job_template = read_file(spec.slurm.template_path, "the Slurm template");
    if (!job_template.ok()) return make_error(job_template.error());
    spec.job_template = std::move(job_template).value();
    if (!spec.slurm.bin_dir.empty())
      spec.slurm.bin_dir = resolve_relative(path, spec.slurm.bin_dir);
    if (!spec.slurm.work_dir.empty()) {
      spec.slurm.work_dir = resolve_relative(path, spec.slurm.work_dir);
    }
  }
  return std::nullopt;
}

// The tuner's seed and the simulated world's.
std::optional<Error> read_seeds(const CampaignToml& file, CampaignSpec& spec) {
  const std::string& path = file.path;
  const toml::table* seeds = nullptr;
  ATTUNE_TRY(section_of(file, "seeds", false, seeds));
  TableReader s(seeds, path, "seeds", 1);
  ATTUNE_TRY(s.unknown_keys({"seed", "reality"}));
  ATTUNE_TRY(s.seed("seed", spec.seed));
  ATTUNE_TRY(s.seed("reality", spec.reality_seed));
  return std::nullopt;
}

}  // namespace

Result<CampaignSpec> parse_campaign_text(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return make_error(path + ":" + std::to_string(e.source().begin.line) +
                      ": invalid TOML: " + std::string(e.description()));
  }
  CampaignSpec spec;
  spec.path = path;
  spec.file_hash = to_hex(sha256(text));

  TableReader top(&root, path, "", 1);
  ATTUNE_TRY(top.unknown_keys({"name", "cluster", "workload", "baseline", "policy", "budget", "run",
                               "band", "tuner", "seeds", "local", "slurm", "cost"}));
  ATTUNE_TRY(top.text("name", spec.name, true));
  if (!is_valid_campaign_name(spec.name)) {
    return top.wrong(*root.get("name"), "name", "1-48 characters of [A-Za-z0-9._-]",
                     "'" + spec.name + "'");
  }

  const CampaignToml file{root, path};
  ATTUNE_TRY(read_cluster(file, spec));
  ATTUNE_TRY(read_workload(file, spec));
  ATTUNE_TRY(read_baseline(file, spec));
  ATTUNE_TRY(read_policy(file, spec));
  ATTUNE_TRY(read_budget(file, spec));
  ATTUNE_TRY(read_run(file, spec));
  ATTUNE_TRY(read_band_and_cost(file, spec));
  ATTUNE_TRY(read_tuner(file, spec));
  ATTUNE_TRY(read_launchers(file, spec));
  ATTUNE_TRY(read_seeds(file, spec));
  return spec;
}

bool is_valid_campaign_name(std::string_view name) {
  return !name.empty() && name.size() <= 48 && is_valid_campaign_id(name);
}

std::string campaign_id_for(const CampaignSpec& spec) {
  const std::string material = spec.file_hash + "/" + std::to_string(spec.seed);
  return spec.name + "-" + to_hex(sha256(material)).substr(0, 8);
}

CampaignOpened campaign_opened(const CampaignSpec& spec) {
  CampaignOpened opened;
  opened.name = spec.name;
  opened.model = spec.model;
  opened.hardware = spec.hardware;
  opened.gpu_count = spec.gpus;
  opened.seq_length = spec.seq_length;
  opened.global_batch = spec.global_batch;
  opened.precision = spec.precision;
  opened.data = spec.data;
  opened.baseline_recipe = canonical_text(spec.baseline);
  opened.baseline_recipe_hash = recipe_hash(spec.baseline);
  opened.policy_name = spec.policy_name;
  opened.policy_hash = to_hex(sha256(spec.policy_bytes));
  opened.budget_auto = spec.budget_auto;
  opened.budget_gpu_hours = spec.budget_gpu_hours;
  opened.reserve_checks = spec.reserve_checks;
  opened.concurrency = spec.concurrency;
  opened.steps_per_run = spec.steps_per_run;
  opened.window_first_step = spec.window_first_step;
  opened.window_last_step = spec.window_last_step;
  opened.check_steps = spec.check_steps;
  opened.hang_timeout_minutes = spec.hang_timeout_minutes;
  opened.band_floor_fraction = spec.band_floor_fraction;
  opened.band_k = spec.band_k;
  opened.calibration_runs = spec.calibration_runs;
  opened.tuner = spec.tuner;
  opened.tuner_options = spec.tuner_options_toml;
  opened.seed = spec.seed;
  opened.reality_seed = spec.reality_seed;
  opened.campaign_file_hash = spec.file_hash;
  opened.launcher = spec.launcher;
  opened.sim_stack = spec.stack;
  opened.policy_path = spec.policy_path;
  opened.job_template = spec.job_template;
  opened.expected_seconds_per_step = spec.expected_seconds_per_step;
  opened.usd_per_gpu_hour = spec.usd_per_gpu_hour;
  return opened;
}

}  // namespace attune
