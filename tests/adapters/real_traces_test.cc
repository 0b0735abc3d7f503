// Real Kineto traces, published by others, against answers checked by hand
// (tests/data/real-world/traces/expected/*.json): one step per ProfilerStep even when the GPU
// annotates it too, with the CPU annotation's time; a trace without ProfilerStep taken whole,
// with a warning; DeepEP, NVSHMEM and multimem kernels as communication in the diagnosis (not in
// HTA's tables); and --hta refusing where HolisticTraceAnalysis stops on an assertion.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "adapters/profiler/hta_metrics.h"
#include "adapters/profiler/kernel_class.h"
#include "adapters/profiler/stage_diagnosis.h"
#include "adapters/profiler/trace_directory.h"

namespace attune::profiler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kTraces = fs::path(ATTUNE_SOURCE_DIR) / "tests/data/real-world/traces";
// Fractional timestamps are rounded to whole microseconds, as HTA does: a step may lose up to 1 µs
// at each end.
constexpr double kRoundingMs = 0.002;

json answer(const std::string& name) {
  std::ifstream in(kTraces / "expected" / (name + ".json"));
  return json::parse(in);
}

// The answer's folder: next to the answers, or the shared data folder the answer names.
std::string folder_of(const json& a) {
  const fs::path first = a.at("files").at(0).get<std::string>();
  return (first.is_absolute() ? first : kTraces / first).parent_path().string();
}

TEST(RealTraces, OneStepPerProfilerStepWithTheCpuAnnotationsTime) {
  for (const auto& entry : fs::directory_iterator(kTraces / "expected")) {
    const std::string name = entry.path().stem().string();
    const json a = answer(name);
    Result<TraceDirectory> directory = read_trace_directory(folder_of(a));
    ASSERT_TRUE(directory.ok()) << name << ": " << directory.error();
    Result<Diagnosis> diagnosis = diagnose_stages(*directory);
    ASSERT_TRUE(diagnosis.ok()) << name << ": " << diagnosis.error();
    for (const StageDiagnosis& stage : diagnosis->stages) {
      const std::string file = fs::path(stage.path).filename().string();
      const json& steps = a.at("profiler_steps").at(file);
      if (steps.empty()) {
        ASSERT_EQ(stage.steps.size(), 1U) << name;
        EXPECT_EQ(stage.steps[0].name, "trace") << name;
        const bool warned = std::any_of(
            diagnosis->warnings.begin(), diagnosis->warnings.end(),
            [](const std::string& w) { return w.find("no ProfilerStep") != std::string::npos; });
        EXPECT_TRUE(warned) << name;
        continue;
      }
      ASSERT_EQ(stage.steps.size(), steps.size()) << name << " " << file;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        EXPECT_EQ(stage.steps[i].name, steps[i].at("name").get<std::string>()) << name;
        EXPECT_NEAR(stage.steps[i].step_ms, steps[i].at("step_time_ms").get<double>(), kRoundingMs)
            << name << " " << stage.steps[i].name;
      }
    }
  }
}

TEST(RealTraces, DeepEpsExposedAllToAllIsNamedOnDeepSeekV3sTrace) {
  Result<TraceDirectory> directory =
      read_trace_directory((kTraces / "deepseek-v3-train-dualpipe").string());
  ASSERT_TRUE(directory.ok()) << directory.error();
  Result<Diagnosis> diagnosis = diagnose_stages(*directory);
  ASSERT_TRUE(diagnosis.ok()) << diagnosis.error();
  const StepBreakdown& mean = diagnosis->stages.at(0).mean;
  const double ep_ms = mean.exposed_comm_ms[static_cast<int>(CommKind::kEpA2a)];
  EXPECT_GT(ep_ms, 1.5);
  EXPECT_GT(ep_ms, mean.host_bound_ms);
  EXPECT_EQ(diagnosis->largest_cost, "ep_a2a on stage 0");
  // HTA's own tables still count DeepEP as computation, as HTA does.
  const HtaReport hta = analyze_hta(*directory);
  ASSERT_EQ(hta.temporal.size(), 1U);
  EXPECT_EQ(hta.temporal[0].non_compute_us, 15);
}

TEST(RealTraces, KernelsThatMoveDataOutsideNcclAreCommunication) {
  const char* moving[] = {
      "void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*, float*)",
      "void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*)",
      "void dpsk::ep::internode::notify_dispatch<false, 8>(int const*)",
      "void dpsk::ep::internode::cached_notify<false>(int, int)",
      "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*)",
      "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*)",
      "void nvshmemi_proxy_progress_kernel()",
  };
  for (const char* name : moving) {
    EXPECT_TRUE(moves_data_between_gpus(name)) << name;
    EXPECT_EQ(classify_kernel(name), KernelClass::kComputation) << "HTA's class: " << name;
  }
  const char* local[] = {
      "void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*, int*)",
      "nvjet_tst_192x192_64x3_2x1_v_bz_coopA_NTN",
      "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>(Flash_fwd_params)",
  };
  for (const char* name : local) EXPECT_FALSE(moves_data_between_gpus(name)) << name;
}

TEST(RealTraces, HtaModeStopsWhereHtaStops) {
  const json a = answer("tracelens-h100-qwen15-05b");
  Result<TraceDirectory> directory = read_trace_directory(folder_of(a));
  ASSERT_TRUE(directory.ok()) << directory.error();
  const HtaReport report = analyze_hta(*directory);
  EXPECT_NE(report.refusal.find("negative"), std::string::npos) << report.refusal;
  EXPECT_NE(report.refusal.find("non-compute -17 us"), std::string::npos) << report.refusal;
}

TEST(RealTraces, HtaModeWarnsWhenNothingIsFiltered) {
  Result<TraceDirectory> directory =
      read_trace_directory((kTraces / "tracelens-b200-eager-vllm").string());
  ASSERT_TRUE(directory.ok()) << directory.error();
  const HtaReport report = analyze_hta(*directory);
  EXPECT_TRUE(report.refusal.empty()) << report.refusal;
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_NE(report.warnings[0].find("no ProfilerStep"), std::string::npos) << report.warnings[0];
}

}  // namespace
}  // namespace attune::profiler
