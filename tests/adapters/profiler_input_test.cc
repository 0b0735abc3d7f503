// Bad input gets a one-line error or a warning, never a crash: truncated gzip, malformed JSON,
// no GPU events, a missing rank, an empty directory, folders of the corpus that are not traces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "adapters/profiler/hta_metrics.h"
#include "adapters/profiler/stage_diagnosis.h"
#include "adapters/profiler/trace_directory.h"

namespace attune::profiler {
namespace {

const std::string kCorpus = "/work/shared/data/kineto-traces/";

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("attune_profiler_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool one_line(const std::string& text) { return text.find('\n') == std::string::npos; }

TEST(ProfilerInput, EmptyDirectoryIsAnError) {
  const Result<TraceDirectory> d = read_trace_directory(fresh_dir("empty"));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("no trace files"), std::string::npos) << d.error();
}

TEST(ProfilerInput, TruncatedGzipIsAnError) {
  const std::string dir = fresh_dir("truncated");
  const std::string bytes = read(kCorpus + "trace_filter/sampled_rank-0.json.gz");
  write(dir + "/rank-0.json.gz", bytes.substr(0, bytes.size() / 2));
  const Result<TraceDirectory> d = read_trace_directory(dir);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("truncated gzip"), std::string::npos) << d.error();
  EXPECT_TRUE(one_line(d.error()));
}

TEST(ProfilerInput, MalformedJsonIsAnError) {
  for (const std::string text :
       {"{\"traceEvents\": [{\"ts\": 1, ", "[1, 2]", "{\"a\": 1}", "nope"}) {
    const Result<RankTrace> t = parse_trace_text(text, "x.json");
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_TRUE(one_line(t.error())) << t.error();
  }
}

TEST(ProfilerInput, OneBadFileAmongGoodOnesIsAWarning) {
  const std::string dir = fresh_dir("one_bad");
  std::filesystem::copy(kCorpus + "trace_filter/sampled_rank-0.json.gz", dir);
  write(dir + "/rank-1.json", "{\"traceEvents\": [");
  const Result<TraceDirectory> d = read_trace_directory(dir);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->ranks.size(), 1u);
  ASSERT_FALSE(d->warnings.empty());
  EXPECT_NE(d->warnings[0].find("skipped"), std::string::npos);
}

TEST(ProfilerInput, NoGpuEventsIsAWarningThenAnError) {
  const Result<TraceDirectory> d = read_trace_directory(kCorpus + "cpu_only");
  ASSERT_TRUE(d.ok()) << d.error();
  const HtaReport report = analyze_hta(*d);
  EXPECT_TRUE(report.temporal.empty());
  EXPECT_FALSE(report.warnings.empty());
  EXPECT_FALSE(diagnose_stages(*d).ok());
}

TEST(ProfilerInput, MissingRankIsAWarning) {
  const std::string dir = fresh_dir("gap");
  const std::string text = "{\"distributedInfo\": {\"rank\": R}, \"traceEvents\": []}";
  for (const char* rank : {"0", "2"}) {
    std::string t = text;
    t.replace(t.find('R'), 1, rank);
    write(dir + "/rank-" + rank + ".json", t);
  }
  const Result<TraceDirectory> d = read_trace_directory(dir);
  ASSERT_TRUE(d.ok()) << d.error();
  bool warned = false;
  for (const std::string& w : d->warnings)
    warned |= w.find("rank 1 is missing") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(ProfilerInput, CompactRankReadsAsZeroLikeHta) {
  const Result<RankTrace> t =
      parse_trace_text("{\"distributedInfo\":{\"rank\":3},\"traceEvents\":[]}", "c.json");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->rank, 0);
  EXPECT_EQ(t->distributed_rank, 3);
}

TEST(ProfilerInput, NsRoundingAndStreamCoercion) {
  const Result<RankTrace> t = parse_trace_text(
      R"({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 10.5, "dur": 2.2,
         "args": {"stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "ts": 9, "dur": 1,
         "args": {"stream": "0x0", "correlation": 1}},
        {"ph": "X", "cat": "Trace", "name": "t", "ts": 1, "dur": 100},
        {"ph": "M", "name": "process_name", "ts": 0}]})",
      "r.json");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(t->ns_rounded);
  ASSERT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->events[0].ts_us, 11);   // ceil(10.5)
  EXPECT_EQ(t->events[0].dur_us, 1);   // floor(12.7) - 11
  EXPECT_EQ(t->events[1].stream, -1);  // "0x0" is not a number to pandas
  EXPECT_EQ(t->row_count, 2u);
}

TEST(ProfilerInput, CorpusFoldersThatAreNotTracesAreReported) {
  // memory_analysis holds a .raw.gz memory timeline: not a Kineto trace.
  const Result<TraceDirectory> memory = read_trace_directory(kCorpus + "memory_analysis");
  EXPECT_FALSE(memory.ok());
  // rank_unavailable and distributed_info_unavailable: no rank, taken as 0 with a warning.
  for (const char* folder : {"rank_unavailable", "distributed_info_unavailable"}) {
    const Result<TraceDirectory> d = read_trace_directory(kCorpus + folder);
    ASSERT_TRUE(d.ok()) << d.error();
    EXPECT_EQ(d->ranks.front().rank, 0);
    EXPECT_FALSE(d->warnings.empty()) << folder;
  }
}

}  // namespace
}  // namespace attune::profiler

namespace attune::profiler {
namespace {

// Timestamps no profiler writes (1e308 us) would print as inf or nan; they are refused.
TEST(ProfilerInput, ImplausibleTimestampsAreRefusedWithTheirEvent) {
  for (const char* field :
       {R"("ts": 1e308, "dur": 2)", R"("ts": 10, "dur": 1e300)", R"("ts": -1e200, "dur": 2)"}) {
    const Result<RankTrace> t = parse_trace_text(
        std::string(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, )"
                    R"("dur": 1, "args": {"stream": 7}}, {"ph": "X", "cat": "kernel", )"
                    R"("name": "k", )") +
            field + R"(, "args": {"stream": 7}}]})",
        "r.json");
    ASSERT_FALSE(t.ok()) << field;
    EXPECT_EQ(t.error(),
              "r.json: traceEvents[1] has a ts or dur that is not a plausible time in microseconds")
        << field;
  }
}

}  // namespace
}  // namespace attune::profiler
