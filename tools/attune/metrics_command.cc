// `attune metrics LOG`: what a Megatron-LM training log amounts to: the window throughput and the
// figures around it, or the failure class and the line that decided it. Exit 0 for a
// measurement, 1 for a failure class or no complete window, 2 for bad input.
#include <CLI/CLI.hpp>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "adapters/metrics/failure_class.h"
#include "adapters/metrics/measurement.h"
#include "adapters/metrics/megatron_log.h"
#include "adapters/metrics/run_reading.h"
#include "tools/attune/cli.h"

namespace attune::cli {
namespace {

constexpr std::size_t kReadChunkBytes = 64 * 1024;
constexpr std::size_t kMessageWidth = 96;  // a log line cut to fit 100 columns

struct MetricsOptions {
  std::vector<std::string> log_paths;
  std::string window = "4:13";
  std::uint64_t seq_length = 0;
  std::uint64_t gpus = 0;
  std::string final_state;
  bool silent = false;
  bool json = false;
  CLI::Option* seq_option = nullptr;
  CLI::Option* gpus_option = nullptr;
};

std::string fixed(double value, int decimals) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::fixed, decimals);
  return std::string(buffer.data(), result.ptr);
}

// 6 significant digits: losses as Megatron would show them, without its exponent.
std::string general(double value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::general, 6);
  return std::string(buffer.data(), result.ptr);
}

// `FIRST:LAST`, 1-based iterations, FIRST <= LAST.
Result<StepWindow> parse_window(const std::string& text) {
  const Error error = make_error(
      "--window must be FIRST:LAST, 1-based iterations with FIRST <= "
      "LAST, got '" +
      text + "'");
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return error;
  StepWindow window;
  const char* begin = text.data();
  const char* middle = begin + colon;
  const char* end = begin + text.size();
  const auto first = std::from_chars(begin, middle, window.first);
  const auto last = std::from_chars(middle + 1, end, window.last);
  if (first.ec != std::errc{} || first.ptr != middle || last.ec != std::errc{} || last.ptr != end ||
      window.first < 1 || window.first > window.last) {
    return error;
  }
  return window;
}

// Streams the files through one reader in chunks, so memory does not grow with the log's size.
// A job's .out and .err are one log in two files.
Result<MegatronLog> read_log_files(const std::vector<std::string>& paths) {
  MegatronLogReader reader;
  std::vector<char> buffer(kReadChunkBytes);
  for (const std::string& path : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      return make_error("cannot read " + path + ": it is a directory");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return make_error("cannot open " + path + ": " + std::generic_category().message(errno));
    }
    reader.start_file(path);
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      reader.feed(std::string_view(buffer.data(), static_cast<std::size_t>(in.gcount())));
    }
    if (in.bad()) return make_error("cannot read " + path);
  }
  return reader.finish();
}

nlohmann::json number_json(double value) {
  if (!std::isfinite(value)) return nullptr;  // JSON has no NaN
  return value;
}

nlohmann::json numbers_json(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double value : values) out.push_back(number_json(value));
  return out;
}

const char* grouping_name(MemoryGrouping grouping) {
  return grouping == MemoryGrouping::kStage ? "stage" : "rank";
}

nlohmann::json evidence_json(const Evidence& evidence) {
  return {{"class", to_string(evidence.failure_class)},
          {"suspected", evidence.suspected},
          {"why", evidence.why},
          {"cause", to_string(evidence.cause)},
          {"file", evidence.file.empty() ? nullptr : nlohmann::json(evidence.file)},
          {"line", evidence.line_number ? nlohmann::json(evidence.line_number) : nullptr},
          {"message", evidence.message}};
}

// The deciding evidence, the ranked alternatives and Slurm's per-node task reports.
nlohmann::json failure_json(const Failure& failure) {
  nlohmann::json alternatives = nlohmann::json::array();
  for (const Evidence& evidence : failure.alternatives) {
    alternatives.push_back(evidence_json(evidence));
  }
  nlohmann::json deciding =
      evidence_json(Evidence{failure.failure_class, failure.suspected, failure.message,
                             failure.file, failure.line_number, failure.why, failure.cause});
  return {{"class", to_string(failure.failure_class)},
          {"cause", to_string(failure.cause)},
          {"suspected", failure.suspected},
          {"text", failure_class_text(failure)},
          {"deciding", deciding},
          {"alternatives", alternatives},
          {"failing_nodes", failure.failing_nodes},
          {"failing_tasks", failure.failing_tasks}};
}

void print_json(const RunReading& reading, const MegatronLog& log, const StepWindow& window) {
  const Measurement* m = reading.measurement ? &*reading.measurement : nullptr;
  const std::uint64_t interval = m ? m->settings.log_interval : log_interval_of(log);
  const IterationSeries series = m ? m->series : iteration_series_of(log, interval);
  const PeakMemory memory = m ? m->peak_memory : peak_memory_of(log);

  nlohmann::json peaks = nlohmann::json::object();
  for (const MemoryPeak& peak : memory.peaks) {
    peaks[std::to_string(peak.index)] = peak.max_reserved_gib;
  }
  nlohmann::json args = nlohmann::json::object();
  for (const auto& [name, value] : log.arguments.values) args[name] = value;
  const Failure* failure = reading.failure ? &*reading.failure : nullptr;

  nlohmann::json out = {
      {"schema_version", 2},
      {"outcome", to_string(reading.kind)},
      {"tokens_per_s_per_gpu", m ? number_json(m->tokens_per_s_per_gpu) : nullptr},
      {"window", {{"first", window.first}, {"last", window.last}}},
      {"seq_length", m ? nlohmann::json(m->settings.seq_length) : nullptr},
      {"gpus", m ? nlohmann::json(m->settings.gpus) : nullptr},
      {"log_interval", interval},
      {"iterations", series.iterations},
      {"step_times_ms", numbers_json(series.step_times_ms)},
      {"window_step_times_ms", m ? numbers_json(m->window_step_times_ms) : nullptr},
      {"window_rsd", m ? number_json(m->window_rsd) : nullptr},
      {"peak_memory_gib_by_stage", peaks},
      {"peak_memory_grouping", grouping_name(memory.grouping)},
      {"loss_curve", numbers_json(series.loss_curve)},
      {"nan_iterations", series.nan_iterations},
      {"skipped_iterations", series.skipped_iterations},
      {"failure_class", failure ? nlohmann::json(to_string(failure->failure_class)) : nullptr},
      {"failure_message", failure ? nlohmann::json(failure->message) : nullptr},
      {"failure_line",
       failure && failure->line_number ? nlohmann::json(failure->line_number) : nullptr},
      {"failure", failure ? failure_json(*failure) : nullptr},
      {"reason", reading.reason.empty() ? nullptr : nlohmann::json(reading.reason)},
      {"args", args},
  };
  write_json_output(std::move(out));
}

void print_measurement(const Measurement& m, const ArgumentsBlock& arguments) {
  const MeasureSettings& s = m.settings;
  double mean_ms = 0.0;
  for (double ms : m.window_step_times_ms) mean_ms += ms;
  mean_ms /= static_cast<double>(m.window_step_times_ms.size());
  std::cout << "measured: " << fixed(m.tokens_per_s_per_gpu, 1) << " tokens/s/GPU over iterations "
            << s.window.first << "-" << s.window.last << " (seq " << s.seq_length << ", " << s.gpus
            << " GPUs, log interval " << s.log_interval << ")\n";
  std::cout << "step time in the window: mean " << fixed(mean_ms, 1) << " ms, rsd "
            << fixed(100.0 * m.window_rsd, 2) << " %\n";
  std::cout << "peak memory, max reserved (GiB):";
  if (m.peak_memory.peaks.empty()) std::cout << " not reported";
  for (const MemoryPeak& peak : m.peak_memory.peaks) {
    std::cout << " " << grouping_name(m.peak_memory.grouping) << " " << peak.index << ": "
              << fixed(peak.max_reserved_gib, 2)
              << (&peak == &m.peak_memory.peaks.back() ? "" : ",");
  }
  std::cout << "\n";
  const IterationSeries& series = m.series;
  std::cout << "lm loss: " << series.loss_curve.size() << " values";
  if (!series.loss_curve.empty()) {
    std::cout << ", " << general(series.loss_curve.front()) << " at iteration "
              << series.iterations.front() << ", " << general(series.loss_curve.back())
              << " at iteration " << series.iterations.back();
  }
  std::cout << "; nan iterations " << series.nan_iterations << ", skipped "
            << series.skipped_iterations << "\n";
  std::cout << "arguments: " << arguments.values.size()
            << (arguments.complete ? " (block complete)" : " (block incomplete or absent)") << "\n";
}

// `text`, cut to `width` bytes with "..." where it is longer.
std::string cut(const std::string& text, std::size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

std::string where_text(const std::string& file, std::uint64_t line) {
  if (line == 0) return "";
  const std::string name = std::filesystem::path(file).filename().string();
  return (name.empty() ? "line " : name + " line ") + std::to_string(line);
}

// Fits 100 columns: long lines of the log are cut, the JSON output has them whole.
void print_failure(const Failure& failure) {
  std::cout << "failed: " << failure_class_text(failure) << " (" << failure.why;
  if (failure.cause != FailureCause::kUnknown) std::cout << "; cause " << to_string(failure.cause);
  std::cout << ")\n";
  if (failure.line_number > 0) {
    std::cout << "decided by " << where_text(failure.file, failure.line_number) << ":\n  "
              << cut(failure.message, kMessageWidth) << "\n";
  } else {
    std::cout << "decided by: " << cut(failure.message, kMessageWidth) << "\n";
  }
  if (!failure.failing_nodes.empty()) {
    std::string nodes;
    for (const std::string& node : failure.failing_nodes)
      nodes += (nodes.empty() ? "" : ", ") + node;
    std::cout << "failed tasks on: " << cut(nodes, kMessageWidth) << "\n";
  }
  if (failure.alternatives.empty()) return;
  std::cout << "other evidence, strongest first:\n";
  for (const Evidence& evidence : failure.alternatives) {
    std::string head = failure_class_text(evidence) + ", " + evidence.why;
    const std::string where = where_text(evidence.file, evidence.line_number);
    if (!where.empty()) head += ", " + where;
    std::cout << "  " << cut(head, kMessageWidth) << "\n    "
              << cut(evidence.message, kMessageWidth - 2) << "\n";
  }
}

int run_metrics(const MetricsOptions& options) {
  Result<StepWindow> window = parse_window(options.window);
  if (!window.ok()) return fail(window.error());
  Result<MegatronLog> log = read_log_files(options.log_paths);
  if (!log.ok()) return fail(log.error());

  MeasureRequest request;
  request.window = window.value();
  if (options.seq_option->count() > 0) request.seq_length = options.seq_length;
  if (options.gpus_option->count() > 0) request.gpus = options.gpus;
  const RunReading reading =
      read_run(log.value(), JobOutcome{options.final_state, options.silent}, request);

  if (reading.kind == ReadingKind::kBadRequest) {
    std::string hint;
    if (!request.seq_length && !log->arguments.unsigned_value("seq_length")) {
      hint = " (pass --seq)";
    } else if (!request.gpus && !log->arguments.unsigned_value("world_size")) {
      hint = " (pass --gpus)";
    }
    return fail(reading.reason + hint);
  }
  if (options.json) {
    print_json(reading, log.value(), window.value());
  } else if (reading.kind == ReadingKind::kMeasured) {
    print_measurement(*reading.measurement, log->arguments);
  } else if (reading.kind == ReadingKind::kFailed) {
    print_failure(*reading.failure);
  } else {
    std::cout << "no measurement: " << reading.reason << "\n";
  }
  return reading.kind == ReadingKind::kMeasured ? kExitOk : kExitNo;
}

}  // namespace

void add_metrics_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<MetricsOptions>();
  CLI::App* metrics = app.add_subcommand(
      "metrics",
      "Read a Megatron-LM training log: the window throughput (aggregate tokens/s/GPU), per-step "
      "times, their rsd, peak memory per pipeline stage, the loss curve and the arguments block, "
      "or the failure class (oom, hang, crash, infra) and the cause it names (out-of-memory, "
      "network, time-limit, ...) with the evidence that decided it and the rest, ranked. Exit 0 "
      "measured, 1 failed or no complete window, 2 bad input.");
  metrics
      ->add_option("LOG", options->log_paths,
                   "The training log (stdout/stderr of the job); a job's .out and .err may be "
                   "given together, one log in two files")
      ->required();
  metrics
      ->add_option("--window", options->window,
                   "Measurement window FIRST:LAST, 1-based iterations as Megatron prints them, "
                   "inclusive")
      ->capture_default_str();
  options->seq_option = metrics->add_option(
      "--seq", options->seq_length, "Sequence length (default: seq_length in the arguments block)");
  options->gpus_option = metrics->add_option(
      "--gpus", options->gpus, "GPU count (default: world_size in the arguments block)");
  metrics->add_option("--final-state", options->final_state,
                      "The job's final state (COMPLETED, FAILED, OUT_OF_MEMORY, NODE_FAIL, "
                      "TIMEOUT, CANCELLED, ...)");
  metrics->add_flag("--silent", options->silent,
                    "The log went silent for longer than the hang timeout");
  metrics->add_flag("--json", options->json,
                    "Machine-readable output; step_times_ms and loss_curve are per logged "
                    "iteration (see iterations), NaN as null");
  metrics->callback([options, &exit_code] { exit_code = run_metrics(*options); });
}

}  // namespace attune::cli
