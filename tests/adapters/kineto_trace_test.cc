#include "adapters/kineto/kineto_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "tests/cuda/trace_reading.h"

namespace attune::kineto {
namespace {

using nlohmann::json;

constexpr std::int64_t kStartNs = 1'700'000'000'123'456'789;

// One step of a small job: an annotation, a GEMM launch and its kernel, a memcpy, an NCCL kernel.
TraceRecords one_step() {
  TraceRecords r;
  r.rank = 3;
  r.world_size = 8;
  r.trace_name = "test";
  r.devices.push_back(TraceDevice{0, "NVIDIA H200", 150'000'000'000, 9, 0, 132});
  r.process_groups.push_back(TraceProcessGroup{"tp", "TENSOR_MODEL_PARALLEL_GROUP", 2, {2, 3}});
  r.host.push_back(HostRow{"user_annotation", "ProfilerStep#4", 11, 11, kStartNs,
                           kStartNs + 9'000'000, -1, -1, std::nullopt});
  r.host.push_back(HostRow{"cuda_runtime", "cudaLaunchKernel", 11, 11, kStartNs + 1'000,
                           kStartNs + 5'500, 42, 211, std::nullopt});
  r.host.push_back(HostRow{"cuda_runtime", "cudaMemcpyAsync", 11, 11, kStartNs + 6'000,
                           kStartNs + 7'000, 43, 41, std::nullopt});
  GpuRow gemm;
  gemm.name = "sm90_xmma_gemm_bf16bf16_bf16f32";
  gemm.stream = 7;
  gemm.correlation = 42;
  gemm.start_ns = kStartNs + 10'000;
  gemm.end_ns = kStartNs + 2'010'001;
  gemm.grid[0] = 132;
  gemm.grid[1] = gemm.grid[2] = 1;
  gemm.block[0] = 384;
  gemm.block[1] = gemm.block[2] = 1;
  r.gpu.push_back(gemm);
  GpuRow copy;
  copy.kind = GpuRowKind::kMemcpy;
  copy.name = "Memcpy HtoD (Pinned -> Device)";
  copy.stream = 7;
  copy.correlation = 43;
  copy.start_ns = kStartNs + 2'020'000;
  copy.end_ns = kStartNs + 2'030'000;
  copy.bytes = 1 << 20;
  r.gpu.push_back(copy);
  GpuRow nccl;
  nccl.name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  nccl.stream = 20;
  nccl.correlation = 44;
  nccl.start_ns = kStartNs + 2'100'000;
  nccl.end_ns = kStartNs + 3'100'000;
  CollectiveArgs args;
  args.collective = "allreduce";
  args.in_nelems = args.out_nelems = 4096;
  args.group_size = 2;
  args.dtype = "BFloat16";
  args.group_name = "tp";
  args.group_description = "TENSOR_MODEL_PARALLEL_GROUP";
  args.group_ranks = {2, 3};
  nccl.collective = args;
  r.gpu.push_back(nccl);
  GpuRow sync;
  sync.kind = GpuRowKind::kSync;
  sync.name = "Context Sync";
  sync.start_ns = kStartNs + 3'200'000;
  sync.end_ns = kStartNs + 3'300'000;
  sync.correlation = 45;
  r.gpu.push_back(sync);
  r.counters = {{"dropped", 0}};
  return r;
}

TEST(KinetoMicroseconds, WritesThreeDecimalsOfNanoseconds) {
  EXPECT_EQ(kineto_microseconds(0), "0.000");
  EXPECT_EQ(kineto_microseconds(1), "0.001");
  EXPECT_EQ(kineto_microseconds(123'456'789), "123456.789");
  EXPECT_EQ(kineto_microseconds(-1'500), "-1.500");
}

TEST(TraceFileName, NamesRankFiles) {
  EXPECT_EQ(trace_file_name(5, false), "rank-5.json");
  EXPECT_EQ(trace_file_name(0, true), "rank-0.json.gz");
}

TEST(KinetoTraceJson, ParsesAndFollowsKinetoConventions) {
  const std::string text = kineto_trace_json(one_step());
  const json trace = json::parse(text);
  EXPECT_EQ(gpu::testing::hta_rank(text), 3);
  EXPECT_NE(text.find("\"rank\": 3,"), std::string::npos);
  EXPECT_TRUE(gpu::testing::times_have_three_decimals(text));
  EXPECT_EQ(trace["distributedInfo"]["world_size"], 8);
  EXPECT_EQ(trace["distributedInfo"]["pg_config"][0]["pg_desc"], "TENSOR_MODEL_PARALLEL_GROUP");
  EXPECT_EQ(trace["baseTimeNanoseconds"], 1'700'000'000'000'000'000);
  EXPECT_EQ(trace["deviceProperties"][0]["computeMajor"], 9);
  EXPECT_EQ(trace["attune"]["dropped"], 0);

  std::map<std::string, json> by_name;
  int flows = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") by_name[e["name"]] = e;
    if (e["cat"] == "ac2g") ++flows;
  }
  EXPECT_EQ(flows, 4);  // two launches with a GPU row each: a start and an end
  const json& step = by_name.at("ProfilerStep#4");
  EXPECT_EQ(step["cat"], "user_annotation");
  // Relative to the base: 0.123456789 s after it.
  EXPECT_DOUBLE_EQ(step["ts"].get<double>(), 123456.789);
  EXPECT_DOUBLE_EQ(step["dur"].get<double>(), 9000.0);

  const json& launch = by_name.at("cudaLaunchKernel");
  EXPECT_EQ(launch["cat"], "cuda_runtime");
  EXPECT_EQ(launch["args"]["correlation"], 42);
  EXPECT_EQ(launch["args"]["cbid"], 211);
  EXPECT_FALSE(launch["args"].contains("stream"));

  const json& gemm = by_name.at("sm90_xmma_gemm_bf16bf16_bf16f32");
  EXPECT_EQ(gemm["cat"], "kernel");
  EXPECT_EQ(gemm["args"]["stream"], 7);
  EXPECT_EQ(gemm["args"]["correlation"], 42);
  EXPECT_EQ(gemm["tid"], 7);
  EXPECT_EQ(gemm["pid"], 0);
  EXPECT_DOUBLE_EQ(gemm["dur"].get<double>(), 2000.001);
  EXPECT_EQ(gemm["args"]["grid"], json::array({132, 1, 1}));

  const json& copy = by_name.at("Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(copy["cat"], "gpu_memcpy");
  EXPECT_EQ(copy["args"]["bytes"], 1 << 20);

  const std::string nccl_name =
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  const json& nccl = by_name.at(nccl_name);
  EXPECT_TRUE(gpu::testing::hta_communication(nccl_name));
  EXPECT_FALSE(gpu::testing::hta_communication("sm90_xmma_gemm_bf16bf16_bf16f32"));
  EXPECT_EQ(nccl["args"]["Collective name"], "allreduce");
  EXPECT_EQ(nccl["args"]["Process Group Description"], "TENSOR_MODEL_PARALLEL_GROUP");
  EXPECT_EQ(nccl["args"]["Process Group Ranks"], "[2, 3]");
  EXPECT_EQ(nccl["args"]["In msg nelems"], 4096);

  const json& sync = by_name.at("Context Sync");
  EXPECT_EQ(sync["cat"], "cuda_sync");
  EXPECT_EQ(sync["args"]["stream"], 4294967295LL);
}

TEST(KinetoTraceJson, EscapesNames) {
  TraceRecords r;
  r.host.push_back(HostRow{"cpu_op", "a \"quoted\"\\name\n", 1, 1, 0, 1, -1, -1, std::nullopt});
  const json trace = json::parse(kineto_trace_json(r));
  EXPECT_EQ(trace["traceEvents"][0]["name"], "a \"quoted\"\\name\n");
}

TEST(KinetoTraceJson, EmptyRecordsStillParse) {
  const json trace = json::parse(kineto_trace_json(TraceRecords{}));
  EXPECT_TRUE(trace["traceEvents"].empty());
  EXPECT_EQ(trace["distributedInfo"]["rank"], 0);
}

TEST(WriteTraceFile, WritesPlainAndGzipFiles) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("attune-trace-format-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const TraceRecords records = one_step();
  for (const bool gzip : {false, true}) {
    const Result<std::string> path = write_trace_file((dir / "sub").string(), records, gzip);
    ASSERT_TRUE(path.ok()) << path.error();
    EXPECT_EQ(std::filesystem::path(*path).filename(), trace_file_name(3, gzip));
    EXPECT_FALSE(std::filesystem::exists(*path + ".partial"));
    EXPECT_EQ(gpu::testing::read_file(*path), kineto_trace_json(records));
  }
  std::filesystem::remove_all(dir);
}

TEST(WriteTraceFile, ReportsAnUnwritableDirectory) {
  const Result<std::string> path = write_trace_file("/proc/attune-no-such-dir", one_step(), false);
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.error().find("/proc/attune-no-such-dir"), std::string::npos);
}

}  // namespace
}  // namespace attune::kineto
