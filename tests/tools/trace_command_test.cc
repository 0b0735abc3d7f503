// `attune trace breakdown` as a user runs it: the per-stage diagnosis on a corpus trace folder and
// on the traces of a simulated profiled run, HTA's tables under HTA's column names with the
// numbers of the reference (tests/adapters/data/hta_golden), one-line errors naming the bad file,
// and the help text.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include "tests/tools/shell_command.h"

namespace attune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kCorpus = "/work/shared/data/kineto-traces/";

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `BINARY ARGS` from the build's bin folder with stdout and stderr captured separately.
Outcome run(const std::string& binary, const std::string& args) {
  const testing_support::CommandOutcome run =
      testing_support::run_shell(std::string(ATTUNE_BIN_DIR) + "/" + binary + " " + args);
  return Outcome{run.exit_code, run.out, run.err};
}

Outcome attune(const std::string& args) { return run("attune", args); }

int lines_of(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class TraceCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attune-trace-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(TraceCommand, DiagnosesACorpusFolderPerStage) {
  const Outcome text = attune("trace breakdown " + kCorpus + "trace_filter");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "slowest stage:")) << text.out;
  EXPECT_TRUE(contains(text.out, "largest exposed cost:")) << text.out;
  EXPECT_EQ(lines_of(text.out), 4) << text.out;  // header, two stages, the verdict
  std::istringstream lines(text.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;

  const Outcome out = attune("trace breakdown " + kCorpus + "trace_filter --json");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const json diagnosis = json::parse(out.out);
  ASSERT_EQ(diagnosis["stages"].size(), 2u);
  for (const json& stage : diagnosis["stages"]) {
    const json& mean = stage["mean"];
    double parts = mean["compute_ms"].get<double>() + mean["host_bound_ms"].get<double>() +
                   mean["idle_ms"].get<double>();
    for (const auto& [kind, ms] : mean["exposed_comm_ms"].items()) parts += ms.get<double>();
    // The parts add up to the step (µs sums shown in ms).
    EXPECT_NEAR(parts, mean["step_ms"].get<double>(), 1e-6 * mean["step_ms"].get<double>());
    EXPECT_FALSE(stage["steps"].empty());
  }
  EXPECT_TRUE(contains(diagnosis["largest_cost"].get<std::string>(), "on stage"));
}

// GLM-4.5 on 128 B200 (PP8, experts spread over two nodes): one trace per pipeline stage, and
// the diagnosis names one of them with the stage's exposed expert all-to-all.
TEST_F(TraceCommand, DiagnosesASimulatedProfiledRun) {
  const Outcome job =
      run("attune-sim-job",
          "--model glm-4.5 --gpu b200 --gpus 128 --seq 4096 --gbs 2048 --steps 1 --recipe " +
              std::string(ATTUNE_SOURCE_DIR) +
              "/adapters/model/data/recipes/glm-4.5-b200x128.sh --log " + path("job.log") +
              " --trace-dir " + path("traces"));
  ASSERT_EQ(job.exit_code, 0) << job.err;
  const Outcome out = attune("trace breakdown " + path("traces") + " --json");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.err, "");  // every stage traced, ranks as written: no warning
  const json diagnosis = json::parse(out.out);
  ASSERT_EQ(diagnosis["stages"].size(), 8u);
  for (std::size_t s = 0; s < 8; ++s) {
    EXPECT_EQ(diagnosis["stages"][s]["stage"], s);
    EXPECT_EQ(diagnosis["stages"][s]["rank"], 16 * s);
    EXPECT_EQ(diagnosis["stages"][s]["steps"].size(), 3u);  // the profiled steps
    EXPECT_GT(diagnosis["stages"][s]["mean"]["exposed_comm_ms"]["ep_a2a"].get<double>(), 0);
    EXPECT_GT(diagnosis["stages"][s]["mean"]["exposed_comm_ms"]["pp_p2p"].get<double>(), 0);
  }
  EXPECT_TRUE(contains(diagnosis["largest_cost"].get<std::string>(), "ep_a2a on stage"))
      << diagnosis["largest_cost"];
}

TEST_F(TraceCommand, HtaJsonHasHtasColumnsAndTheReferenceNumbers) {
  const Outcome out = attune("trace breakdown " + kCorpus + "trace_filter --hta --json");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const json tables = json::parse(out.out);
  std::ifstream in(std::string(ATTUNE_SOURCE_DIR) +
                   "/tests/adapters/data/hta_golden/trace_filter.json");
  ASSERT_TRUE(in);
  const json golden = json::parse(in);

  // Every table, row by row, column by column: the same names and the same numbers.
  const auto same_rows = [](const json& expected, const json& actual, const std::string& table) {
    ASSERT_EQ(expected.size(), actual.size()) << table;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      for (const auto& [column, value] : expected[i].items()) {
        ASSERT_TRUE(actual[i].contains(column)) << table << " lacks " << column;
        if (value.is_number()) {
          EXPECT_EQ(value.get<double>(), actual[i][column].get<double>())
              << table << " row " << i << " " << column;
        } else {
          EXPECT_EQ(value, actual[i][column]) << table << " row " << i << " " << column;
        }
      }
    }
  };
  same_rows(golden["temporal_breakdown"], tables["temporal_breakdown"], "temporal_breakdown");
  same_rows(golden["comm_comp_overlap"], tables["comm_comp_overlap"], "comm_comp_overlap");
  same_rows(golden["kernel_type"], tables["kernel_type_breakdown"]["kernel_type"],
            "kernel_type_breakdown");
  same_rows(golden["idle_time_breakdown"], tables["idle_time_breakdown"], "idle_time_breakdown");

  // HTA's columns, all eight of the temporal table.
  for (const char* column :
       {"rank", "idle_time(us)", "compute_time(us)", "non_compute_time(us)", "kernel_time(us)",
        "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"}) {
    EXPECT_TRUE(tables["temporal_breakdown"][0].contains(column)) << column;
  }
  const json& kernel = tables["kernel_type_breakdown"]["kernel"][0];
  for (const char* column :
       {"kernel_type", "name", "rank", "sum (us)", "max (us)", "min (us)", "mean (us)", "stddev"}) {
    EXPECT_TRUE(kernel.contains(column)) << column;
  }

  // Without --json: HTA's tables as text.
  const Outcome text = attune("trace breakdown " + kCorpus + "trace_filter --hta");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "temporal breakdown")) << text.out;
  EXPECT_TRUE(contains(text.out, "idle time by stream")) << text.out;
}

TEST_F(TraceCommand, MissingDirectoryIsAOneLineError) {
  const Outcome out = attune("trace breakdown " + path("nowhere"));
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(lines_of(out.err), 1) << out.err;
  EXPECT_TRUE(contains(out.err, path("nowhere"))) << out.err;
}

TEST_F(TraceCommand, EmptyDirectoryIsAOneLineError) {
  fs::create_directories(path("empty"));
  const Outcome out = attune("trace breakdown " + path("empty") + " --hta");
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(lines_of(out.err), 1) << out.err;
  EXPECT_TRUE(contains(out.err, "no trace files")) << out.err;
}

TEST_F(TraceCommand, MalformedFileIsAOneLineErrorNamingIt) {
  fs::create_directories(path("bad"));
  std::ofstream(path("bad/rank-0.json")) << "{\"traceEvents\": [{\"ts\": 1, \"dur\": ";
  for (const char* flags : {"", " --hta", " --hta --json"}) {
    const Outcome out = attune("trace breakdown " + path("bad") + flags);
    EXPECT_EQ(out.exit_code, 2) << flags;
    EXPECT_EQ(out.out, "") << flags;
    EXPECT_EQ(lines_of(out.err), 1) << out.err;
    EXPECT_TRUE(contains(out.err, path("bad/rank-0.json"))) << out.err;
    EXPECT_TRUE(contains(out.err, "malformed JSON")) << out.err;
  }
  // A cut gzip file is named too.
  fs::remove(path("bad/rank-0.json"));
  std::ifstream gz(kCorpus + "trace_filter/sampled_rank-1.json.gz", std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(gz), {});
  std::ofstream(path("bad/rank-1.json.gz"), std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  const Outcome cut = attune("trace breakdown " + path("bad"));
  EXPECT_EQ(cut.exit_code, 2);
  EXPECT_EQ(lines_of(cut.err), 1) << cut.err;
  EXPECT_TRUE(contains(cut.err, path("bad/rank-1.json.gz"))) << cut.err;
  EXPECT_TRUE(contains(cut.err, "truncated gzip")) << cut.err;
}

TEST_F(TraceCommand, HelpNamesTheModesAndTheExitCodes) {
  const Outcome out = attune("trace breakdown --help");
  EXPECT_EQ(out.exit_code, 0);
  // The help wraps at 100 columns: phrases are looked for with each line break and its indent
  // read as one space.
  std::string text;
  for (const char c : out.out) {
    const bool space = c == ' ' || c == '\n';
    if (!space || text.empty() || text.back() != ' ') text += space ? ' ' : c;
  }
  for (const char* part : {"DIR", "--hta", "--json", "HolisticTraceAnalysis", "slowest stage",
                           "temporal_breakdown", "Exit"}) {
    EXPECT_TRUE(contains(text, part)) << part << "\n" << out.out;
  }
  const Outcome none = attune("trace breakdown");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_TRUE(contains(none.err, "DIR")) << none.err;
}

}  // namespace
}  // namespace attune
