// The correctness gate from the command line: `attune gate converge` runs layer 2 (the
// convergence check) on two loss-curve files. Exit 0 when the candidate passes, 1 when it fails,
// 2 on bad input (an unreadable or malformed file, an invalid threshold).
#include <CLI/CLI.hpp>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/text_file.h"
#include "gate/convergence.h"
#include "gate/loss_curve_file.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

struct ConvergeOptions {
  std::string baseline_path;
  std::string candidate_path;
  ConvergenceThresholds thresholds;
  std::int64_t expected_steps = 0;
  bool json = false;
};

// 6 significant digits, locale-independent ("0.95", "1e-05", "nan", "inf").
std::string number_text(double value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::general, 6);
  return std::string(buffer.data(), result.ptr);
}

// A measured figure for the table: NaN is a flat curve's correlation, which is undefined.
std::string measured_text(double value) {
  return std::isnan(value) ? "undefined" : number_text(value);
}

// An error naming the option when `value` is NaN or outside [min, max], or [min, max) when
// `max_excluded`.
std::optional<std::string> option_error(const char* option, double value, double min, double max,
                                        bool max_excluded) {
  const bool inside = value >= min && (max_excluded ? value < max : value <= max);
  if (inside) return std::nullopt;
  return std::string(option) + " must be in [" + number_text(min) + ", " + number_text(max) +
         (max_excluded ? ")" : "]") + ", got " + number_text(value);
}

// Reads the whole file and parses it; errors name the file (and the line, for a parse error).
Result<std::vector<double>> read_loss_curve(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text.ok()) return make_error(text.error());
  return parse_loss_curve(text.value(), path);
}

std::string padded(const std::string& text, std::size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

void print_text(const ConvergenceResult& result) {
  constexpr std::size_t kNameWidth = 22;
  constexpr std::size_t kNumberWidth = 12;
  constexpr std::size_t kVerdictWidth = 8;
  std::cout << "convergence: " << (result.passed ? "PASS" : "FAIL") << "\n";
  std::cout << padded("check", kNameWidth) << padded("measured", kNumberWidth)
            << padded("threshold", kNumberWidth) << padded("verdict", kVerdictWidth) << "detail\n";
  for (const ConvergenceCheckResult& check : result.checks) {
    std::cout << padded(check.name, kNameWidth)
              << padded(measured_text(check.measured), kNumberWidth)
              << padded(measured_text(check.threshold), kNumberWidth)
              << padded(check.passed ? "pass" : "FAIL", kVerdictWidth) << check.detail << "\n";
  }
  std::cout << "reason: " << result.reason << "\n";
}

nlohmann::json number_json(double value) {
  if (!std::isfinite(value)) return nullptr;  // JSON has no NaN
  return value;
}

void print_json(const ConvergenceResult& result) {
  nlohmann::json checks = nlohmann::json::array();
  for (const ConvergenceCheckResult& check : result.checks) {
    checks.push_back({{"name", check.name},
                      {"measured", number_json(check.measured)},
                      {"threshold", number_json(check.threshold)},
                      {"passed", check.passed},
                      {"detail", check.detail}});
  }
  const nlohmann::json out = {{"passed", result.passed},
                              {"checks", checks},
                              {"failed_checks", result.failed_checks},
                              {"reason", result.reason}};
  write_json_output(out);
}

int run_converge(ConvergeOptions options) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const ConvergenceThresholds& t = options.thresholds;
  for (const std::optional<std::string>& error :
       {option_error("--skip-first", t.skip_first_fraction, 0.0, 1.0, true),
        option_error("--final-tol", t.final_loss_tolerance, 0.0, kInf, true),
        option_error("--correlation-min", t.correlation_min, -1.0, 1.0, false),
        option_error("--steps-within-min", t.steps_within_min_fraction, 0.0, 1.0, false),
        option_error("--outliers-max", t.outliers_max_fraction, 0.0, 1.0, false)}) {
    if (error) return fail(*error);
  }
  if (options.expected_steps < 0) {
    return fail("--expected-steps must be 0 or more, got " +
                std::to_string(options.expected_steps));
  }
  options.thresholds.expected_steps = static_cast<std::size_t>(options.expected_steps);
  if (Status valid = validate_thresholds(options.thresholds); !valid.ok()) {
    return fail("invalid thresholds: " + valid.error());
  }
  Result<std::vector<double>> baseline = read_loss_curve(options.baseline_path);
  if (!baseline.ok()) return fail(baseline.error());
  Result<std::vector<double>> candidate = read_loss_curve(options.candidate_path);
  if (!candidate.ok()) return fail(candidate.error());

  const ConvergenceResult result =
      compare_loss_curves(baseline.value(), candidate.value(), options.thresholds);
  if (options.json) {
    print_json(result);
  } else {
    print_text(result);
  }
  return result.passed ? kExitOk : kExitNo;
}

}  // namespace

void add_gate_commands(CLI::App& app, int& exit_code) {
  CLI::App* gate = app.add_subcommand("gate", "The correctness gate a recipe must pass to ship");
  gate->require_subcommand(1);

  auto options = std::make_shared<ConvergeOptions>();
  CLI::App* converge = gate->add_subcommand(
      "converge",
      "Layer 2: compare a candidate's loss curve with the baseline's (Megatron-Bridge "
      "validate_convergence semantics; NaN, infinities and missing steps fail). Each FILE is a "
      "JSON array of numbers or one loss per line. Exit 0 pass, 1 fail, 2 bad input.");
  converge->add_option("--baseline", options->baseline_path, "Baseline loss curve FILE")
      ->required();
  converge->add_option("--candidate", options->candidate_path, "Candidate loss curve FILE")
      ->required();
  ConvergenceThresholds& t = options->thresholds;
  converge
      ->add_option("--skip-first", t.skip_first_fraction,
                   "Leading fraction of steps ignored, 0 <= F < 1 (floor of the count)")
      ->capture_default_str();
  converge
      ->add_option("--final-tol", t.final_loss_tolerance,
                   "Relative tolerance of the final loss, F >= 0")
      ->capture_default_str();
  converge
      ->add_option("--correlation-min", t.correlation_min,
                   "Minimum Pearson correlation of the losses, -1 <= F <= 1")
      ->capture_default_str();
  converge
      ->add_option(
          "--steps-within-min", t.steps_within_min_fraction,
          "Minimum fraction of compared steps within their per-step tolerance, 0 <= F <= 1")
      ->capture_default_str();
  converge
      ->add_option("--outliers-max", t.outliers_max_fraction,
                   "Maximum fraction of compared steps that are 3-sigma outliers, 0 <= F <= 1")
      ->capture_default_str();
  converge
      ->add_option("--expected-steps", options->expected_steps,
                   "Required number of steps in both curves (0: not checked)")
      ->capture_default_str();
  converge->add_flag("--json", options->json, "Machine-readable output");
  converge->callback([options, &exit_code] { exit_code = run_converge(*options); });
  add_gate_check_command(*gate, exit_code);
}

}  // namespace attune::cli
