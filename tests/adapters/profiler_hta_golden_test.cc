// The analyzer's HTA-compatible tables against an independent reference (data/hta_reference.py,
// written from trace_anchors.md §1) on every corpus trace folder HTA reads, exactly; and against
// the values HTA's own test suite asserts for the corpus' MTIA trace.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "adapters/profiler/hta_metrics.h"
#include "adapters/profiler/trace_directory.h"

namespace attune::profiler {
namespace {

const std::string kCorpus = "/work/shared/data/kineto-traces/";

double value(const nlohmann::json& j) { return j.is_null() ? std::nan("") : j.get<double>(); }

void expect_same(double expected, double actual, const std::string& what) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what;
  } else {
    EXPECT_EQ(expected, actual) << what;
  }
}

class HtaGolden : public testing::TestWithParam<std::string> {};

TEST_P(HtaGolden, MatchesTheReferenceExactly) {
  const std::string folder = GetParam();
  std::string golden_name = folder;
  for (char& c : golden_name) c = c == '/' ? '_' : c;
  std::ifstream in(std::string(ATTUNE_SOURCE_DIR) + "/tests/adapters/data/hta_golden/" +
                   golden_name + ".json");
  ASSERT_TRUE(in) << golden_name;
  const nlohmann::json golden = nlohmann::json::parse(in);
  Result<TraceDirectory> directory = read_trace_directory(kCorpus + folder);
  ASSERT_TRUE(directory.ok()) << directory.error();
  const HtaReport report = analyze_hta(*directory);

  ASSERT_EQ(report.temporal.size(), golden["temporal_breakdown"].size());
  for (std::size_t i = 0; i < report.temporal.size(); ++i) {
    const auto& g = golden["temporal_breakdown"][i];
    const TemporalRow& r = report.temporal[i];
    EXPECT_EQ(g["rank"].get<int>(), r.rank);
    expect_same(value(g["idle_time(us)"]), r.idle_us, folder + " idle");
    expect_same(value(g["compute_time(us)"]), r.compute_us, folder + " compute");
    expect_same(value(g["non_compute_time(us)"]), r.non_compute_us, folder + " non_compute");
    expect_same(value(g["kernel_time(us)"]), r.kernel_us, folder + " kernel_time");
    expect_same(value(g["idle_time_pctg"]), r.idle_pctg, folder + " idle%");
    expect_same(value(g["compute_time_pctg"]), r.compute_pctg, folder + " compute%");
    expect_same(value(g["non_compute_time_pctg"]), r.non_compute_pctg, folder + " non_compute%");
    // The three parts add up to the window.
    EXPECT_EQ(r.idle_us + r.compute_us + r.non_compute_us, r.kernel_us);
  }
  ASSERT_EQ(report.overlap.size(), golden["comm_comp_overlap"].size());
  for (std::size_t i = 0; i < report.overlap.size(); ++i) {
    expect_same(value(golden["comm_comp_overlap"][i]["comp_comm_overlap_pctg"]),
                report.overlap[i].overlap_pctg, folder + " overlap");
  }
  ASSERT_EQ(report.kernel_types.size(), golden["kernel_type"].size());
  for (std::size_t i = 0; i < report.kernel_types.size(); ++i) {
    const auto& g = golden["kernel_type"][i];
    EXPECT_EQ(g["kernel_type"].get<std::string>(), report.kernel_types[i].kernel_type) << folder;
    expect_same(value(g["sum"]), report.kernel_types[i].sum_us, folder + " type sum");
    expect_same(value(g["percentage"]), report.kernel_types[i].percentage, folder + " type %");
  }
  ASSERT_EQ(report.idle.size(), golden["idle_time_breakdown"].size()) << folder;
  for (std::size_t i = 0; i < report.idle.size(); ++i) {
    const auto& g = golden["idle_time_breakdown"][i];
    EXPECT_EQ(g["stream"].get<std::int64_t>(), report.idle[i].stream) << folder;
    EXPECT_EQ(g["idle_category"].get<std::string>(), report.idle[i].idle_category) << folder;
    expect_same(value(g["idle_time"]), report.idle[i].idle_us, folder + " idle time");
    expect_same(value(g["idle_time_ratio"]), report.idle[i].idle_ratio, folder + " idle ratio");
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, HtaGolden,
                         testing::Values("trace_filter", "timeline_analysis", "ns_resolution_trace",
                                         "nccl_parser_config", "negative_queue_length_values_check",
                                         "trace_diff/control", "trace_diff/test", "amd_trace",
                                         "critical_path/alexnet", "critical_path/simple_add",
                                         "critical_path/cuda_event_sync",
                                         "critical_path/cuda_event_sync_multi_stream",
                                         "triton_example", "cupti_profiler", "mtia_inference_trace",
                                         "mtia_trace_single_rank", "df_index_resolver"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

// HTA's own tests (tests/test_trace_analysis.py, test_mtia_temporal_breakdown,
// test_get_mtia_kernel_breakdown and test_get_mtia_idle_time_breakdown) on the corpus'
// mtia_trace_single_rank. The temporal breakdown leaves out the dma_request rows that carry their
// queue only in tid; the kernel-type and idle-time breakdowns count them (stream 801).
TEST(HtaOwnTests, MtiaKernelAndIdleBreakdown) {
  Result<TraceDirectory> directory = read_trace_directory(kCorpus + "mtia_trace_single_rank");
  ASSERT_TRUE(directory.ok()) << directory.error();
  const HtaReport report = analyze_hta(*directory);
  ASSERT_EQ(report.temporal.size(), 1u);
  EXPECT_EQ(report.temporal[0].kernel_us, 13328071);
  EXPECT_EQ(report.temporal[0].idle_us, 5649476);
  EXPECT_EQ(report.temporal[0].compute_us, 7305597);
  EXPECT_EQ(report.temporal[0].non_compute_us, 372998);
  // HTA asserts round(100 * x / kernel_time, 3) within 0.01.
  EXPECT_NEAR(report.temporal[0].idle_pctg, 5649476.0 * 100 / 13328071, 0.01);
  EXPECT_NEAR(report.temporal[0].compute_pctg, 7305597.0 * 100 / 13328071, 0.01);
  EXPECT_NEAR(report.temporal[0].non_compute_pctg, 372998.0 * 100 / 13328071, 0.01);
  ASSERT_FALSE(report.kernel_types.empty());
  EXPECT_EQ(report.kernel_types[0].kernel_type, "COMPUTATION");
  EXPECT_EQ(report.kernel_types[0].sum_us, 7304578);
  ASSERT_GT(report.kernels.size(), 11u);
  EXPECT_EQ(report.kernels[0].kernel_type, "COMPUTATION");
  EXPECT_EQ(report.kernels[0].sum_us, 77283);
  EXPECT_EQ(report.kernels[11].kernel_type, "MEMORY");
  std::set<std::int64_t> streams;
  double ratio_sum = 0;
  for (const IdleRow& row : report.idle) {
    streams.insert(row.stream);
    ratio_sum += row.idle_ratio;
  }
  EXPECT_EQ(streams, (std::set<std::int64_t>{1, 102, 801}));
  EXPECT_NEAR(ratio_sum, 3.0, 1e-9);
  bool host_wait_seen = false;
  for (const IdleRow& row : report.idle) {
    if (row.stream != 1 || row.idle_category != "host_wait") continue;
    host_wait_seen = true;
    EXPECT_EQ(row.idle_us, 417937);
    EXPECT_EQ(row.idle_ratio, 0.07);
  }
  EXPECT_TRUE(host_wait_seen);
}

}  // namespace
}  // namespace attune::profiler
