#include "cuda/hardware_toml.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "adapters/model/presets.h"

namespace attune::gpu {
namespace {

// Throughput on the simulator's curve, for a fit to recover.
GemmMeasurement on_curve(std::int64_t m, std::int64_t n, std::int64_t k, double peak,
                         double efficiency, double half_dim) {
  const auto side = [half_dim](std::int64_t s) {
    return static_cast<double>(s) / (static_cast<double>(s) + half_dim);
  };
  return GemmMeasurement{m, n, k, peak * efficiency * side(m) * side(n) * side(k)};
}

std::vector<GemmMeasurement> shapes(double peak, double efficiency, double half_dim) {
  return {on_curve(8192, 8192, 8192, peak, efficiency, half_dim),
          on_curve(4096, 12288, 4096, peak, efficiency, half_dim),
          on_curve(1024, 4096, 4096, peak, efficiency, half_dim),
          on_curve(256, 4096, 1024, peak, efficiency, half_dim),
          on_curve(128, 1024, 512, peak, efficiency, half_dim)};
}

TEST(FitGemmCurve, RecoversTheCurveItWasSampledFrom) {
  const std::vector<GemmMeasurement> measured = shapes(989, 0.7, 64);
  const GemmFit fit = fit_gemm_curve(measured, 989);
  EXPECT_NEAR(fit.efficiency, 0.7, 1e-3);
  EXPECT_NEAR(fit.half_efficiency_dim, 64, 0.5);
  EXPECT_LT(fit.rms_relative_error, 1e-3);
  EXPECT_NEAR(fit_gemm_efficiency(shapes(1979, 0.55, 64), 1979, 64), 0.55, 1e-6);
}

TEST(FitGemmCurve, ClampsTheEfficiencyToWhatTheParserAccepts) {
  // Faster than the stated peak (a wrong base preset): the efficiency stops at 1.
  const GemmFit fit = fit_gemm_curve(shapes(500, 1.0, 0), 100);
  EXPECT_LE(fit.efficiency, 1.0);
  EXPECT_GE(fit.efficiency, 0.01);
}

TEST(HardwareToml, TheSimulatorReadsWhatTheProbeWrites) {
  const Result<sim::HardwareSpec> base = sim::load_hardware("h200");
  ASSERT_TRUE(base.ok()) << base.error();
  ProbeMeasurements measured;
  measured.device_name = "NVIDIA H200";
  measured.compute_capability = 9.0;
  measured.gpus = 8;
  measured.memory_total_gib = 139.8;
  measured.sm_count = 132;
  measured.bf16 = shapes(base->bf16_dense_tflops, 0.66, 80);
  measured.fp8 = shapes(base->fp8_dense_tflops, 0.58, 80);
  measured.hbm_copy_gb_per_s = 0.85 * base->hbm_bandwidth_gb_per_s;
  measured.all_reduce_bus_gb_per_s = 0.75 * base->nvlink_bandwidth_gb_per_s;
  const sim::HardwareSpec calibrated = calibrate_hardware(*base, measured, "my-h200");

  const std::string text = hardware_toml(calibrated, "Measured by attune-gpu-probe\non 8 GPUs");
  EXPECT_TRUE(text.starts_with("# Measured by attune-gpu-probe\n# on 8 GPUs\n"));
  const Result<sim::HardwareSpec> parsed = sim::parse_hardware_toml(text, "probe.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.error() << "\n" << text;
  EXPECT_EQ(parsed->name, "my-h200");
  EXPECT_NE(parsed->description.find("NVIDIA H200"), std::string::npos);
  EXPECT_DOUBLE_EQ(parsed->compute_capability, 9.0);
  EXPECT_NEAR(parsed->hbm_capacity_gib, 139.8, 1e-9);
  EXPECT_EQ(parsed->sm_count, 132);
  EXPECT_NEAR(parsed->gemm_bf16_efficiency, 0.66, 2e-3);
  EXPECT_NEAR(parsed->gemm_half_efficiency_dim, 80, 0.5);
  EXPECT_NEAR(parsed->gemm_fp8_efficiency, 0.58, 2e-3);
  EXPECT_NEAR(parsed->hbm_efficiency, 0.85, 1e-5);
  EXPECT_NEAR(parsed->nvlink_collective_efficiency, 0.75, 1e-5);
  // What the probe does not measure stays as the preset has it.
  EXPECT_DOUBLE_EQ(parsed->bf16_dense_tflops, base->bf16_dense_tflops);
  EXPECT_DOUBLE_EQ(parsed->scale_out_bandwidth_gb_per_s, base->scale_out_bandwidth_gb_per_s);
  EXPECT_EQ(parsed->nvlink_domain_gpus, base->nvlink_domain_gpus);
  EXPECT_DOUBLE_EQ(parsed->cpu_adam_params_per_s, base->cpu_adam_params_per_s);
}

TEST(HardwareToml, EveryPresetSurvivesARoundTrip) {
  for (const std::string& name : sim::hardware_preset_names()) {
    const Result<sim::HardwareSpec> preset = sim::load_hardware(name);
    ASSERT_TRUE(preset.ok()) << preset.error();
    const Result<sim::HardwareSpec> again =
        sim::parse_hardware_toml(hardware_toml(*preset, name), name);
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_NEAR(again->gemm_bf16_efficiency, preset->gemm_bf16_efficiency, 1e-6) << name;
    EXPECT_NEAR(again->hbm_bandwidth_gb_per_s, preset->hbm_bandwidth_gb_per_s, 1e-6) << name;
    EXPECT_EQ(again->description, preset->description) << name;
    // The communication kernels' SM shares, which the overlap model reads.
    EXPECT_EQ(again->sm_count, preset->sm_count) << name;
    EXPECT_DOUBLE_EQ(again->nccl_comm_sms, preset->nccl_comm_sms) << name;
    EXPECT_DOUBLE_EQ(again->deepep_comm_sms, preset->deepep_comm_sms) << name;
  }
}

}  // namespace
}  // namespace attune::gpu
