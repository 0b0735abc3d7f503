// Drives the built NCCL profiler plugin as NCCL would, without NCCL: dlopen the library, take its
// ncclProfiler_v5 table, and feed it synthetic descriptors.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda/nccl_profiler_api.h"
#include "tests/cuda/trace_reading.h"

namespace attune::gpu {
namespace {

namespace api = nccl_api;
using nlohmann::json;

class NcclProfilerPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("attune-nccl-plugin-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    ::setenv("ATTUNE_NCCL_TRACE_DIR", dir_.c_str(), 1);
    ::unsetenv("ATTUNE_NCCL_TRACE_GZIP");
    ::unsetenv("RANK");
    ::unsetenv("SLURM_PROCID");
    ::unsetenv("OMPI_COMM_WORLD_RANK");
    ::unsetenv("PMI_RANK");
    // A fresh copy of the plugin per test: dlclose of the last reference unloads it, and its
    // state (the pool, the logs) goes with it.
    library_ = ::dlopen(ATTUNE_NCCL_PROFILER_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << ::dlerror();
    v5_ = static_cast<api::ProfilerV5*>(::dlsym(library_, "ncclProfiler_v5"));
    v4_ = static_cast<api::ProfilerV4*>(::dlsym(library_, "ncclProfiler_v4"));
    ASSERT_NE(v5_, nullptr);
    ASSERT_NE(v4_, nullptr);
  }

  void TearDown() override {
    if (library_ != nullptr) ::dlclose(library_);
    std::filesystem::remove_all(dir_);
  }

  json read_trace(const std::string& name, std::string* text_out = nullptr) {
    const std::string text = testing::read_file((dir_ / name).string());
    if (text_out != nullptr) *text_out = text;
    return json::parse(text);
  }

  static std::vector<json> rows(const json& trace, const std::string& category) {
    std::vector<json> out;
    for (const json& e : trace["traceEvents"]) {
      if (e.value("cat", "") == category && e.value("ph", "") == "X") out.push_back(e);
    }
    return out;
  }

  std::filesystem::path dir_;
  void* library_ = nullptr;
  api::ProfilerV5* v5_ = nullptr;
  api::ProfilerV4* v4_ = nullptr;
};

api::EventDescrV5 coll(std::uint64_t seq, const char* func, std::size_t count,
                       std::uint8_t channels) {
  api::EventDescrV5 d{};
  d.type = api::kColl;
  d.rank = 1;
  d.coll.seq_number = seq;
  d.coll.func = func;
  d.coll.count = count;
  d.coll.datatype = "ncclBfloat16";
  d.coll.n_channels = channels;
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  return d;
}

api::EventDescrV5 kernel_channel(void* parent, std::uint8_t channel, std::uint64_t timer) {
  api::EventDescrV5 d{};
  d.type = api::kKernelCh;
  d.parent_obj = parent;
  d.kernel_ch.channel_id = channel;
  d.kernel_ch.p_timer = timer;
  return d;
}

TEST_F(NcclProfilerPlugin, RecordsCollectivesWithGpuTimesFromKernelChannels) {
  EXPECT_STREQ(v5_->name, "attune");
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&ctx, 0xabcdef, &mask, "tp", 1, 2, 1, nullptr), api::kSuccess);
  EXPECT_EQ(mask, api::kColl | api::kP2p | api::kKernelCh);

  api::EventDescrV5 all_reduce = coll(7, "AllReduce", 1 << 20, 2);
  void* op = nullptr;
  ASSERT_EQ(v5_->start_event(ctx, &op, &all_reduce), api::kSuccess);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(v5_->stop_event(op), api::kSuccess);  // enqueued; the kernel runs later

  // The kernel starts after the enqueue, on two channels. The GPU clock is in Unix time, as the
  // globaltimer is.
  const std::uint64_t gpu_t0 =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  void* ch[2] = {nullptr, nullptr};
  for (std::uint8_t c = 0; c < 2; ++c) {
    api::EventDescrV5 d = kernel_channel(op, c, gpu_t0 + 1'000 * c);
    ASSERT_EQ(v5_->start_event(ctx, &ch[c], &d), api::kSuccess);
    ASSERT_NE(ch[c], nullptr);
  }
  for (std::uint8_t c = 0; c < 2; ++c) {
    api::EventStateArgs args{};
    args.kernel_ch_p_timer = gpu_t0 + 50'000 + 2'000 * c;
    EXPECT_EQ(v5_->record_event_state(ch[c], api::kKernelChStop, &args), api::kSuccess);
    EXPECT_EQ(v5_->stop_event(ch[c]), api::kSuccess);
  }

  // A send that never gets kernel events (NCCL skips them under graph capture, for one).
  api::EventDescrV5 send{};
  send.type = api::kP2p;
  send.p2p.func = "Send";
  send.p2p.datatype = "ncclFloat32";
  send.p2p.count = 256;
  send.p2p.peer = 0;
  send.p2p.n_channels = 1;
  void* send_handle = nullptr;
  ASSERT_EQ(v5_->start_event(ctx, &send_handle, &send), api::kSuccess);
  EXPECT_EQ(v5_->stop_event(send_handle), api::kSuccess);

  // Events the plugin did not ask for get no handle; calls with none are harmless.
  api::EventDescrV5 proxy{};
  proxy.type = api::kProxyOp;
  void* proxy_handle = &proxy;
  EXPECT_EQ(v5_->start_event(ctx, &proxy_handle, &proxy), api::kSuccess);
  EXPECT_EQ(proxy_handle, nullptr);
  EXPECT_EQ(v5_->stop_event(nullptr), api::kSuccess);
  EXPECT_EQ(v5_->record_event_state(nullptr, api::kKernelChStop, nullptr), api::kSuccess);

  ASSERT_EQ(v5_->finalize(ctx), api::kSuccess);

  std::string text;
  const json trace = read_trace("rank-1.json", &text);
  EXPECT_EQ(testing::hta_rank(text), 1);
  EXPECT_TRUE(testing::times_have_three_decimals(text));
  EXPECT_EQ(trace["distributedInfo"]["world_size"], 2);
  EXPECT_EQ(trace["distributedInfo"]["pg_config"][0]["pg_name"], "tp");
  EXPECT_EQ(trace["attune"]["nccl_ops"], 2);
  EXPECT_EQ(trace["attune"]["nccl_ops_untimed"], 1);
  EXPECT_EQ(trace["attune"]["nccl_ops_dropped"], 0);

  const std::vector<json> kernels = rows(trace, "kernel");
  ASSERT_EQ(kernels.size(), 1u);
  const json& k = kernels[0];
  EXPECT_EQ(k["name"],
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_TRUE(testing::hta_communication(k["name"]));
  // From the first channel's start to the last channel's stop: 52 µs.
  EXPECT_DOUBLE_EQ(k["dur"].get<double>(), 52.0);
  EXPECT_GE(k["args"]["stream"].get<int>(), 0);
  EXPECT_GE(k["args"]["correlation"].get<int>(), 0);
  EXPECT_EQ(k["args"]["Collective name"], "allreduce");
  EXPECT_EQ(k["args"]["dtype"], "BFloat16");
  EXPECT_EQ(k["args"]["In msg nelems"], 1 << 20);
  EXPECT_EQ(k["args"]["Group size"], 2);
  EXPECT_EQ(k["args"]["Process Group Name"], "tp");
  EXPECT_EQ(k["args"]["Comm Id"], "0x0000000000abcdef");
  EXPECT_EQ(k["args"]["Seq"], 7);
  EXPECT_EQ(k["args"]["Algorithm"], "RING");
  EXPECT_EQ(k["args"]["Protocol"], "LL");
  EXPECT_EQ(k["args"]["Channels"], 2);
  EXPECT_EQ(k["args"]["Bytes"], 2 << 20);

  // Every operation has its host row, joined to its kernel by the correlation id.
  const std::vector<json> host = rows(trace, "cpu_op");
  ASSERT_EQ(host.size(), 2u);
  EXPECT_EQ(host[0]["name"], "ncclAllReduce");
  EXPECT_EQ(host[0]["args"]["correlation"], k["args"]["correlation"]);
  EXPECT_LE(host[0]["ts"].get<double>(), k["ts"].get<double>());
  EXPECT_EQ(host[1]["name"], "ncclSend");
  EXPECT_EQ(host[1]["args"]["Peer"], 0);
  EXPECT_EQ(host[1]["args"]["Collective name"], "send");
}

TEST_F(NcclProfilerPlugin, MovesAFarGpuClockOntoTheHostClock) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&ctx, 1, &mask, "", 1, 1, 0, nullptr), api::kSuccess);
  api::EventDescrV5 d = coll(0, "AllGather", 8, 1);
  void* op = nullptr;
  ASSERT_EQ(v5_->start_event(ctx, &op, &d), api::kSuccess);
  ASSERT_EQ(v5_->stop_event(op), api::kSuccess);
  api::EventDescrV5 c = kernel_channel(op, 0, 5'000);  // a GPU clock that started at boot
  void* ch = nullptr;
  ASSERT_EQ(v5_->start_event(ctx, &ch, &c), api::kSuccess);
  api::EventStateArgs args{};
  args.kernel_ch_p_timer = 9'000;
  ASSERT_EQ(v5_->record_event_state(ch, api::kKernelChStop, &args), api::kSuccess);
  ASSERT_EQ(v5_->stop_event(ch), api::kSuccess);
  ASSERT_EQ(v5_->finalize(ctx), api::kSuccess);

  const json trace = read_trace("rank-0.json");
  const std::vector<json> kernels = rows(trace, "kernel");
  const std::vector<json> host = rows(trace, "cpu_op");
  ASSERT_EQ(kernels.size(), 1u);
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(kernels[0]["name"],
            "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_DOUBLE_EQ(kernels[0]["dur"].get<double>(), 4.0);
  // The kernel starts where its enqueue ended.
  EXPECT_NEAR(kernels[0]["ts"].get<double>(),
              host[0]["ts"].get<double>() + host[0]["dur"].get<double>(), 0.0015);
  EXPECT_EQ(kernels[0]["args"]["Process Group Name"], "0x0000000000000001");
  EXPECT_EQ(kernels[0]["args"]["Out msg nelems"], 8);
}

TEST_F(NcclProfilerPlugin, VersionFourWritesGzipPerLaunchRank) {
  ::setenv("ATTUNE_NCCL_TRACE_GZIP", "1", 1);
  ::setenv("RANK", "6", 1);
  ::setenv("WORLD_SIZE", "8", 1);
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(v4_->init(&ctx, &mask, "dp", 0x42, 2, 4, 3, nullptr), api::kSuccess);
  EXPECT_EQ(mask, api::kColl | api::kP2p | api::kKernelCh);
  api::EventDescrV4 d{};
  d.type = static_cast<std::uint8_t>(api::kColl);
  d.coll.func = "ReduceScatter";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 100;
  d.coll.n_channels = 1;
  void* op = nullptr;
  ASSERT_EQ(v4_->start_event(ctx, &op, &d), api::kSuccess);
  ASSERT_EQ(v4_->stop_event(op), api::kSuccess);
  ASSERT_EQ(v4_->finalize(ctx), api::kSuccess);
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");

  std::string text;
  const json trace = read_trace("rank-6.json.gz", &text);
  EXPECT_EQ(testing::hta_rank(text), 6);
  EXPECT_EQ(trace["distributedInfo"]["world_size"], 8);
  const std::vector<json> host = rows(trace, "cpu_op");
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host[0]["args"]["Collective name"], "reduce_scatter");
  EXPECT_EQ(host[0]["args"]["In msg nelems"], 400);
  EXPECT_EQ(host[0]["args"]["Comm Rank"], 3);
}

TEST_F(NcclProfilerPlugin, AFullPoolDropsOperationsAndCountsThem) {
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&ctx, 9, &mask, "big", 1, 2, 0, nullptr), api::kSuccess);
  // Operations that are enqueued but whose kernels never report stay in flight.
  constexpr int kOps = 1100;
  int handles = 0;
  for (int i = 0; i < kOps; ++i) {
    api::EventDescrV5 d = coll(static_cast<std::uint64_t>(i), "AllReduce", 1, 1);
    void* op = nullptr;
    ASSERT_EQ(v5_->start_event(ctx, &op, &d), api::kSuccess);
    if (op != nullptr) ++handles;
  }
  EXPECT_LT(handles, kOps);
  ASSERT_EQ(v5_->finalize(ctx), api::kSuccess);
  const json trace = read_trace("rank-0.json");
  EXPECT_EQ(trace["attune"]["nccl_ops"], handles);
  EXPECT_EQ(trace["attune"]["nccl_ops_dropped"], kOps - handles);
}

}  // namespace
}  // namespace attune::gpu
