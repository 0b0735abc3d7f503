// `attune gate check`: layer 1 of the correctness gate from the command line. It runs the
// configuration check of a candidate recipe against its baseline under a policy file, and, given
// the two runs' logs, compares the arguments blocks Megatron-LM printed at start-up. Exit 0 when
// the candidate is allowed, 1 when it is refused, 2 on bad input (an unreadable or malformed file).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/text_file.h"
#include "events/recipe.h"
#include "gate/config_check.h"
#include "gate/policy.h"
#include "gate/resolved_args.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

struct CheckOptions {
  std::string policy_path;
  std::string baseline_path;
  std::string candidate_path;
  std::string resolved_baseline_path;
  std::string resolved_candidate_path;
  bool json = false;
};

Result<Recipe> read_recipe(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text.ok()) return make_error(text.error());
  return parse_recipe(text.value(), path);
}

Result<ResolvedArgs> read_resolved(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text.ok()) return make_error(text.error());
  return parse_resolved_args(text.value(), path);
}

std::string shown(bool present, const std::string& value) {
  if (!present) return "absent";
  return value.empty() ? "''" : value;
}

std::string shown(const std::optional<std::string>& value) {
  return shown(value.has_value(), value.value_or(""));
}

nlohmann::json value_json(bool present, const std::string& value) {
  if (!present) return nullptr;
  return value;
}

nlohmann::json value_json(const std::optional<std::string>& value) {
  return value_json(value.has_value(), value.value_or(""));
}

nlohmann::json refusal_json(const ConfigRefusal& refusal) {
  return {{"setting", refusal.setting},
          {"class", refusal.objective_class ? nlohmann::json(to_string(*refusal.objective_class))
                                            : nlohmann::json(nullptr)},
          {"rule", to_string(refusal.rule)},
          {"message", refusal.message}};
}

// Prints rows as columns separated by two spaces; the last column is not padded.
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

void print_text(const Policy& policy, const ConfigCheckResult& config,
                const std::optional<ResolvedComparison>& resolved, bool allowed) {
  std::cout << "policy: " << policy.name << " (model " << policy.model << ", sha256 " << policy.hash
            << ")\n";
  if (config.changes.empty()) {
    std::cout << "no setting differs from the baseline\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"setting", "kind", "before", "after", "class", "verdict", "rule"}};
    for (const CheckedChange& c : config.changes) {
      rows.push_back(
          {c.change.name, to_string(c.change.kind), shown(c.change.before_present, c.change.before),
           shown(c.change.after_present, c.change.after), to_string(c.change.objective_class),
           to_string(c.verdict), to_string(c.rule)});
    }
    print_table(rows);
  }
  std::cout << "configuration: " << (config.allowed ? "allowed" : "REFUSED") << "\n";
  for (const ConfigRefusal& refusal : config.refusals) {
    std::cout << "  refused: " << refusal.message << "\n";
  }
  if (resolved) {
    std::cout << "resolved arguments: " << (resolved->passed ? "pass" : "FAIL") << " ("
              << resolved->differences.size() << " difference"
              << (resolved->differences.size() == 1 ? "" : "s") << "; environment "
              << (resolved->env_compared ? "compared" : "not recorded") << ")\n";
    if (!resolved->differences.empty()) {
      std::vector<std::vector<std::string>> rows = {
          {"setting", "kind", "before", "after", "class", "verdict", "rule", "implied by"}};
      for (const ResolvedDifference& d : resolved->differences) {
        std::string implied;
        for (const std::string& flag : d.implied_by) implied += (implied.empty() ? "" : ",") + flag;
        rows.push_back({d.name, to_string(d.kind), shown(d.before), shown(d.after),
                        to_string(d.objective_class), to_string(d.verdict), to_string(d.rule),
                        implied.empty() ? "-" : implied});
      }
      print_table(rows);
    }
    for (const ConfigRefusal& failure : resolved->failures) {
      std::cout << "  failed: " << failure.message << "\n";
    }
  }
  std::cout << "result: " << (allowed ? "allowed" : "REFUSED") << "\n";
}

void print_json(const Policy& policy, const ConfigCheckResult& config,
                const std::optional<ResolvedComparison>& resolved, bool allowed) {
  nlohmann::json changes = nlohmann::json::array();
  for (const CheckedChange& c : config.changes) {
    changes.push_back({{"setting", c.change.name},
                       {"kind", to_string(c.change.kind)},
                       {"before", value_json(c.change.before_present, c.change.before)},
                       {"after", value_json(c.change.after_present, c.change.after)},
                       {"class", to_string(c.change.objective_class)},
                       {"verdict", to_string(c.verdict)},
                       {"rule", to_string(c.rule)},
                       {"message", c.message}});
  }
  nlohmann::json refusals = nlohmann::json::array();
  for (const ConfigRefusal& refusal : config.refusals) refusals.push_back(refusal_json(refusal));
  nlohmann::json resolved_json = nullptr;
  if (resolved) {
    nlohmann::json differences = nlohmann::json::array();
    for (const ResolvedDifference& d : resolved->differences) {
      differences.push_back(
          {{"setting", d.name},
           {"kind", to_string(d.kind)},
           {"flag", d.flag.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.flag)},
           {"before", value_json(d.before)},
           {"after", value_json(d.after)},
           {"class", to_string(d.objective_class)},
           {"verdict", to_string(d.verdict)},
           {"rule", to_string(d.rule)},
           {"implied_by", d.implied_by},
           {"message", d.message}});
    }
    nlohmann::json failures = nlohmann::json::array();
    for (const ConfigRefusal& failure : resolved->failures)
      failures.push_back(refusal_json(failure));
    resolved_json = {{"passed", resolved->passed},
                     {"env_compared", resolved->env_compared},
                     {"differences", differences},
                     {"failures", failures}};
  }
  const nlohmann::json out = {{"allowed", allowed},
                              {"policy",
                               {{"name", policy.name},
                                {"model", policy.model},
                                {"hash", policy.hash},
                                {"source", policy.source}}},
                              {"configuration_allowed", config.allowed},
                              {"changes", changes},
                              {"refusals", refusals},
                              {"resolved", resolved_json}};
  // Recipe and log text may hold invalid UTF-8; replace it rather than fail the report.
  write_json_output(std::move(out));
}

int run_check(const CheckOptions& options) {
  if (options.resolved_baseline_path.empty() != options.resolved_candidate_path.empty()) {
    return fail("--resolved-baseline and --resolved-candidate go together: give both or neither");
  }
  Result<std::string> policy_text = read_text_file(options.policy_path);
  if (!policy_text.ok()) return fail(policy_text.error());
  Result<Policy> policy = parse_policy(policy_text.value(), options.policy_path);
  if (!policy.ok()) return fail(policy.error());
  Result<Recipe> baseline = read_recipe(options.baseline_path);
  if (!baseline.ok()) return fail(baseline.error());
  Result<Recipe> candidate = read_recipe(options.candidate_path);
  if (!candidate.ok()) return fail(candidate.error());

  std::optional<ResolvedComparison> resolved;
  if (!options.resolved_baseline_path.empty()) {
    Result<ResolvedArgs> baseline_args = read_resolved(options.resolved_baseline_path);
    if (!baseline_args.ok()) return fail(baseline_args.error());
    Result<ResolvedArgs> candidate_args = read_resolved(options.resolved_candidate_path);
    if (!candidate_args.ok()) return fail(candidate_args.error());
    // The logs do not print the environment, so the environment is not compared here.
    resolved = compare_resolved(
        policy.value(), ResolvedRun{std::move(baseline_args).value(), baseline.value(), {}},
        ResolvedRun{std::move(candidate_args).value(), candidate.value(), {}});
  }

  const ConfigCheckResult config =
      check_config(policy.value(), baseline.value(), candidate.value());
  const bool allowed = config.allowed && (!resolved || resolved->passed);
  if (options.json) {
    print_json(policy.value(), config, resolved, allowed);
  } else {
    print_text(policy.value(), config, resolved, allowed);
  }
  return allowed ? kExitOk : kExitNo;
}

}  // namespace

void add_gate_check_command(CLI::App& gate, int& exit_code) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* check = gate.add_subcommand(
      "check",
      "Layer 1: the configuration check of a candidate recipe against its baseline under a "
      "per-model policy, and optionally of the arguments the two runs printed at start-up. "
      "Exit 0 allowed, 1 refused, 2 bad input.");
  check->add_option("--policy", options->policy_path, "Policy FILE (TOML, gate/policies/*.toml)")
      ->required();
  check->add_option("--baseline", options->baseline_path, "Baseline RECIPE file")->required();
  check->add_option("--candidate", options->candidate_path, "Candidate RECIPE file")->required();
  check->add_option("--resolved-baseline", options->resolved_baseline_path,
                    "LOG of the baseline's run, holding Megatron-LM's arguments block");
  check->add_option("--resolved-candidate", options->resolved_candidate_path,
                    "LOG of the candidate's check run, holding Megatron-LM's arguments block");
  check->add_flag("--json", options->json, "Machine-readable output");
  check->callback([options, &exit_code] { exit_code = run_check(*options); });
}

}  // namespace attune::cli
