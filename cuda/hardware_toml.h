// The hardware description the GPU probe writes: a simulator hardware preset (the TOML format of
// adapters/model/data/hardware, read by sim::parse_hardware_toml) calibrated to what the
// probe measured on the user's machine. The probe starts from the preset of the same GPU (peaks,
// links and the host side come from the spec sheet) and replaces what it measures: device
// memory, the GEMM efficiency curve (fitted to the measured bf16 and fp8 throughput at the
// model's shapes), the achieved HBM fraction and, with more than one GPU, the NVLink collective
// efficiency.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/hardware_spec.h"

namespace attune::gpu {

// One timed GEMM: C[m×n] = A[m×k]·B[k×n].
struct GemmMeasurement {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  double tflops = 0;  // achieved, dense (2·m·n·k per GEMM)
};

// The simulator's GEMM curve: achieved = peak · efficiency · Π side/(side + half_dim).
struct GemmFit {
  double efficiency = 0;
  double half_efficiency_dim = 0;
  double rms_relative_error = 0;  // of the fitted curve against the measurements
};

constexpr double kHalfEfficiencyDimMax = 1024;

// Least-squares fit (on the relative error) of the curve to `measurements`, with half_dim on a
// 1-wide grid in [0, kHalfEfficiencyDimMax] and the efficiency clamped to [0.01, 1].
// REQUIRES: measurements is not empty; peak_tflops > 0.
GemmFit fit_gemm_curve(std::span<const GemmMeasurement> measurements, double peak_tflops);

// The efficiency of fp8 GEMMs on a curve whose half dimension is already known (from bf16).
// REQUIRES: measurements is not empty; peak_tflops > 0.
double fit_gemm_efficiency(std::span<const GemmMeasurement> measurements, double peak_tflops,
                           double half_efficiency_dim);

struct ProbeMeasurements {
  std::string device_name;        // "NVIDIA H200"
  double compute_capability = 0;  // 9.0
  int gpus = 1;
  int sm_count = 0;  // streaming multiprocessors; 0: the preset's
  double memory_total_gib = 0;
  std::vector<GemmMeasurement> bf16;
  std::vector<GemmMeasurement> fp8;  // empty where the device has no fp8 tensor cores
  double hbm_copy_gb_per_s = 0;      // device-to-device copy, bytes read + written per second
  std::optional<double> all_reduce_bus_gb_per_s;  // NCCL all-reduce bus bandwidth, >1 GPU
};

// `base` with the measured fields replaced. `name` names the result.
sim::HardwareSpec calibrate_hardware(const sim::HardwareSpec& base,
                                     const ProbeMeasurements& measured, std::string_view name);

// The TOML text, every key the parser reads, in the presets' layout. `comment` (possibly several
// lines) goes at the top as '#' lines.
std::string hardware_toml(const sim::HardwareSpec& hw, std::string_view comment);

}  // namespace attune::gpu
