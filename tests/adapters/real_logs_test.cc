// Real job logs, published by others, against answers checked by hand
// (tests/data/real-world/logs/expected/*.json; MANIFEST-logs-traces.md says where each came from).
// Each log is read the way `attune metrics` reads it, its files in order as one log, and
// classified from the log alone (no final state): the class, whether infra is only suspected, the
// deciding line, the failing node, the iteration lines, the arguments block and peak memory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/metrics/failure_class.h"
#include "adapters/metrics/megatron_log.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kLogs = fs::path(ATTUNE_SOURCE_DIR) / "tests/data/real-world/logs";
// Logs collected after the reader was built, their answers written before it first read them (the
// first-read score is in kHeldOutMisses' comment; the reader has since learned from them).
const fs::path kHeldOut = fs::path(ATTUNE_SOURCE_DIR) / "tests/data/real-world/logs-heldout";
// A deciding line within this many lines of the answer's is the same error report (the line of
// code above an AssertionError, the second line of an NCCL error, the job's line after the step's).
constexpr std::uint64_t kSameReportLines = 6;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Case {
  std::string name;
  json answer;
  std::vector<fs::path> files;
};

std::vector<Case> cases(const fs::path& logs) {
  std::vector<Case> out;
  for (const auto& entry : fs::directory_iterator(logs / "expected")) {
    Case c;
    c.name = entry.path().stem().string();
    c.answer = json::parse(slurp(entry.path()));
    for (const auto& file : c.answer.at("files")) {
      const fs::path path = file.get<std::string>();
      c.files.push_back(path.is_absolute() ? path : logs / path);
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  return out;
}

MegatronLog read_files(const std::vector<fs::path>& files) {
  MegatronLogReader reader;
  for (const fs::path& file : files) {
    reader.start_file(file.string());
    reader.feed(slurp(file));
  }
  return reader.finish();
}

// The lines of `file` that hold `needle`, 1-based.
std::vector<std::uint64_t> lines_holding(const fs::path& file, const std::string& needle) {
  std::vector<std::uint64_t> out;
  std::istringstream text(slurp(file));
  std::uint64_t number = 0;
  for (std::string line; std::getline(text, line);) {
    ++number;
    if (line.find(needle) != std::string::npos) out.push_back(number);
  }
  return out;
}

// What is wrong with the reading of one log, one clause per wrong field; empty when all agree.
std::string disagreements(const Case& c) {
  const json& a = c.answer;
  std::string wrong;
  const MegatronLog log = read_files(c.files);
  const std::optional<Failure> failure = classify_failure(log, JobOutcome{});
  const bool fails = a.at("outcome").is_string() && a.at("outcome") != "completed";
  if (fails != failure.has_value()) {
    return "outcome " + a.at("outcome").dump() + " read as " +
           (failure ? failure_class_text(*failure) + ": " + failure->message : "no failure");
  }
  if (failure) {
    if (to_string(failure->failure_class) != a.at("outcome").get<std::string>() ||
        failure->suspected != a.value("infra_suspected", false)) {
      wrong += " class " + failure_class_text(*failure) + ";";
    }
    // The cause the deciding evidence names, checked by hand from the deciding line.
    if (a.contains("cause") && to_string(failure->cause) != a.at("cause").get<std::string>()) {
      wrong += std::string(" cause ") + to_string(failure->cause) + ";";
    }
    bool near = false;
    for (const fs::path& file : c.files) {
      if (file.string() != failure->file) continue;
      for (std::uint64_t line : lines_holding(file, a.at("deciding_line").get<std::string>())) {
        near = near || (line + kSameReportLines >= failure->line_number &&
                        failure->line_number + kSameReportLines >= line);
      }
    }
    if (!near) wrong += " decided by line " + std::to_string(failure->line_number) + ";";
    if (a.contains("failing_node") && a.at("failing_node").is_string() &&
        failure->failing_nodes != std::vector<std::string>{a.at("failing_node")}) {
      wrong += " failing nodes " + json(failure->failing_nodes).dump() + ";";
    }
  }
  if (log.iterations.size() != a.value("iterations_logged", 0U)) {
    wrong += " " + std::to_string(log.iterations.size()) + " iterations;";
  }
  const json throughput = a.value("throughput", json::object());
  const json elapsed = throughput.is_object()
                           ? throughput.value("elapsed_ms_per_iteration", json::array())
                           : json::array();
  for (std::size_t i = 0; i < elapsed.size() && i < log.iterations.size(); ++i) {
    if (std::abs(log.iterations[i].elapsed_ms_per_iteration - elapsed[i].get<double>()) > 1e-6) {
      wrong += " elapsed time of line " + std::to_string(i) + ";";
      break;
    }
  }
  if (a.contains("num_args_in_arguments_block") &&
      a.at("num_args_in_arguments_block").is_number() &&
      log.arguments.values.size() != a.at("num_args_in_arguments_block").get<std::size_t>()) {
    wrong += " " + std::to_string(log.arguments.values.size()) + " arguments;";
  }
  if (a.contains("peak_memory_mb") && a.at("peak_memory_mb").is_object()) {
    double reserved = 0.0;
    for (const RankMemory& memory : log.memory) {
      reserved = std::max(reserved, memory.max_reserved_mb);
    }
    if (reserved != a.at("peak_memory_mb").at("max_reserved").get<double>()) {
      wrong += " peak reserved " + std::to_string(reserved) + " MB;";
    }
  }
  return wrong;
}

// A field the reader knowingly misses on one log: the start of its clause in disagreements(), and
// why. Every other field of that log is still checked.
struct KnownMiss {
  std::vector<std::string> clauses;
  std::string why;
};

const std::map<std::string, KnownMiss> kKnownMisses = {
    {"issue-epfLLM-Megatron-LLM-33",
     {{"outcome"}, "the excerpt cuts the one line where the loss turns NaN (`... | gr`)"}},
    {"stark-md-v100-ckpt-nospace",
     {{"failing nodes"}, "the node is named only in a wrapper's own banner (`host=DGX2-1`)"}},
};

// The clauses of `wrong` (" clause;" each, or one "outcome ..." line) not in `known`.
std::string unknown_clauses(const std::string& wrong, const std::vector<std::string>& known) {
  std::string rest;
  std::size_t start = 0;
  while (start < wrong.size()) {
    std::size_t end = wrong.find(';', start);
    if (end == std::string::npos) end = wrong.size();
    const std::string clause = wrong.substr(start, end - start);
    const std::string trimmed = clause.substr(clause.find_first_not_of(' ') == std::string::npos
                                                  ? clause.size()
                                                  : clause.find_first_not_of(' '));
    bool expected = false;
    for (const std::string& prefix : known) {
      expected = expected || trimmed.starts_with(prefix) ||
                 (prefix != "outcome" && trimmed.find(prefix) != std::string::npos);
    }
    if (!expected && !trimmed.empty()) rest += " " + trimmed + ";";
    start = end + 1;
  }
  return rest;
}

// Reads every log of `logs` and checks it against its answer; prints the score.
void expect_answers(const fs::path& logs, std::size_t at_least,
                    const std::map<std::string, KnownMiss>& known_misses) {
  const std::vector<Case> all = cases(logs);
  ASSERT_GE(all.size(), at_least) << "the corpus is in " << logs;
  std::size_t agreed = 0;
  for (const Case& c : all) {
    bool present = true;
    for (const fs::path& file : c.files) present = present && fs::exists(file);
    if (!present) {
      ADD_FAILURE() << c.name << ": a file is missing";
      continue;
    }
    const std::string wrong = disagreements(c);
    agreed += wrong.empty() ? 1 : 0;
    if (const auto known = known_misses.find(c.name); known != known_misses.end()) {
      EXPECT_FALSE(wrong.empty()) << c.name << " now agrees: drop it from the known misses";
      EXPECT_EQ(unknown_clauses(wrong, known->second.clauses), "") << c.name;
      continue;
    }
    EXPECT_EQ(wrong, "") << c.name;
  }
  std::cout << logs.filename().string() << ": " << agreed << " of " << all.size()
            << " logs read as their answers (" << known_misses.size() << " known misses)\n";
}

// Held-out logs the reader misses, each with the reason.
// First read (before any change made for them): the outcome right on 12 of 16, every checked field
// on 7 of 16. The reader was then taught what those misses showed (a completed run's startup
// errors, EIO, InfiniBand verbs failures, NCCL's named launch mistakes, 2021's argument column,
// hosts NCCL and Megatron name), so these are no longer out-of-sample.
// Four logs added later (Megatron-LM 4343, Megatron-Bridge 665, NeMo 13140, Pai-Megatron-Patch
// 366), first read before any change made for them: the class and cause right on 2 of 4 (a CUDA
// IPC RuntimeError, crash; the older NaN check, non-finite-value); no failure seen in the other
// two (Open MPI's "An error occurred in MPI_Init_thread", PyTorch's "watchdog got stuck"). The
// reader was then taught both.
// Four Summit stderr files added after that (sajal-vt/Megatron-DeepSpeed-Summit), first read
// before any change: class and cause right on 4 of 4 (one answer first said infra and was
// corrected by hand: the file holds the out-of-memory lines the reader found); the deciding line
// right on 3 of 4: Spectrum MPI's "Error: SMPI environment generator script not found" opening
// a stderr-only file decided instead of the assertion. A bare "Error:" outside a traceback is no
// longer an exception line.
const std::map<std::string, KnownMiss> kHeldOutMisses = {
    {"issue-NVIDIA-Megatron-LM-792",
     {{"class"},
      "ncclSystemError names a failed system call and is read as infra; the answer calls it only "
      "suspected (the issue blames odd data-parallel sizes)"}},
    {"lkk-gaudi-llama-multirun",
     {{"failing nodes", "iterations", "elapsed time"},
      "five launches appended to one log: the reader keeps the latest line of each iteration (a "
      "restart), the answer counts every line; the host is named only by mpirun"}},
};

TEST(RealLogs, EveryPublishedLogReadsAsItsHandCheckedAnswer) {
  expect_answers(kLogs, 34, kKnownMisses);
}

TEST(RealLogs, HeldOutLogsReadAsTheirHandCheckedAnswers) {
  expect_answers(kHeldOut, 24, kHeldOutMisses);
}

}  // namespace
}  // namespace attune
