#include "cuda/hardware_toml.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "events/assert.h"

namespace attune::gpu {
namespace {

// Efficiencies the parser accepts are within [0.01, 1].
constexpr double kEfficiencyMin = 0.01;
constexpr double kEfficiencyMax = 1.0;

double shape_factor(const GemmMeasurement& g, double half_dim) {
  const auto side = [half_dim](std::int64_t s) {
    const double d = static_cast<double>(s);
    return d / (d + half_dim);
  };
  return side(g.m) * side(g.n) * side(g.k);
}

// The efficiency minimising Σ (predicted/measured − 1)² for a fixed half dimension, and that sum.
std::pair<double, double> best_efficiency(std::span<const GemmMeasurement> measurements,
                                          double peak_tflops, double half_dim) {
  // predicted_i = e·x_i with x_i = peak·f_i; minimise Σ (e·x_i/y_i − 1)² → e = Σ(x/y) / Σ(x/y)².
  double sum = 0;
  double sum_squares = 0;
  for (const GemmMeasurement& g : measurements) {
    const double ratio = peak_tflops * shape_factor(g, half_dim) / g.tflops;
    sum += ratio;
    sum_squares += ratio * ratio;
  }
  const double efficiency = std::clamp(sum / sum_squares, kEfficiencyMin, kEfficiencyMax);
  double error = 0;
  for (const GemmMeasurement& g : measurements) {
    const double relative = efficiency * peak_tflops * shape_factor(g, half_dim) / g.tflops - 1;
    error += relative * relative;
  }
  return {efficiency, error};
}

std::string number(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  std::string out = text;
  // TOML needs a float where the parser reads one; "%.6g" of 1e8 is "1e+08", valid TOML.
  if (out.find_first_of(".eEn") == std::string::npos) out += ".0";
  return out;
}

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

GemmFit fit_gemm_curve(std::span<const GemmMeasurement> measurements, double peak_tflops) {
  ATTUNE_ASSERT(!measurements.empty(), "a hardware file needs a measurement");
  ATTUNE_ASSERT(peak_tflops > 0, "a measured peak is positive");
  GemmFit best;
  double best_error = -1;
  for (int half_dim = 0; half_dim <= static_cast<int>(kHalfEfficiencyDimMax); ++half_dim) {
    const auto [efficiency, error] = best_efficiency(measurements, peak_tflops, half_dim);
    if (best_error < 0 || error < best_error) {
      best_error = error;
      best.efficiency = efficiency;
      best.half_efficiency_dim = half_dim;
    }
  }
  best.rms_relative_error = std::sqrt(best_error / static_cast<double>(measurements.size()));
  return best;
}

double fit_gemm_efficiency(std::span<const GemmMeasurement> measurements, double peak_tflops,
                           double half_efficiency_dim) {
  ATTUNE_ASSERT(!measurements.empty(), "a hardware file needs a measurement");
  ATTUNE_ASSERT(peak_tflops > 0, "a measured peak is positive");
  return best_efficiency(measurements, peak_tflops, half_efficiency_dim).first;
}

sim::HardwareSpec calibrate_hardware(const sim::HardwareSpec& base,
                                     const ProbeMeasurements& measured, std::string_view name) {
  sim::HardwareSpec hw = base;
  hw.name = std::string(name);
  hw.description = measured.device_name + ", measured by attune-gpu-probe (" +
                   std::to_string(measured.gpus) + (measured.gpus == 1 ? " GPU" : " GPUs") +
                   "; unmeasured fields from the " + base.name + " preset)";
  if (measured.compute_capability > 0) hw.compute_capability = measured.compute_capability;
  if (measured.memory_total_gib > 0) hw.hbm_capacity_gib = measured.memory_total_gib;
  if (measured.sm_count > 0) hw.sm_count = measured.sm_count;
  if (!measured.bf16.empty()) {
    const GemmFit fit = fit_gemm_curve(measured.bf16, hw.bf16_dense_tflops);
    hw.gemm_bf16_efficiency = fit.efficiency;
    hw.gemm_half_efficiency_dim = fit.half_efficiency_dim;
  }
  if (!measured.fp8.empty()) {
    hw.gemm_fp8_efficiency =
        fit_gemm_efficiency(measured.fp8, hw.fp8_dense_tflops, hw.gemm_half_efficiency_dim);
  }
  if (measured.hbm_copy_gb_per_s > 0) {
    hw.hbm_efficiency = std::clamp(measured.hbm_copy_gb_per_s / hw.hbm_bandwidth_gb_per_s,
                                   kEfficiencyMin, kEfficiencyMax);
  }
  if (measured.all_reduce_bus_gb_per_s && *measured.all_reduce_bus_gb_per_s > 0) {
    hw.nvlink_collective_efficiency =
        std::clamp(*measured.all_reduce_bus_gb_per_s / hw.nvlink_bandwidth_gb_per_s, kEfficiencyMin,
                   kEfficiencyMax);
  }
  return hw;
}

std::string hardware_toml(const sim::HardwareSpec& hw, std::string_view comment) {
  std::string out;
  std::size_t at = 0;
  while (at < comment.size()) {
    std::size_t end = comment.find('\n', at);
    if (end == std::string_view::npos) end = comment.size();
    out += "# " + std::string(comment.substr(at, end - at)) + "\n";
    at = end + 1;
  }
  const auto line = [&out](std::string_view key, const std::string& value) {
    out += std::string(key) + " = " + value + "\n";
  };
  char capability[32];
  std::snprintf(capability, sizeof capability, "%.1f", hw.compute_capability);
  line("name", quoted(hw.name));
  line("description", quoted(hw.description));
  line("compute_capability", capability);
  out += "\n[compute]\n";
  line("bf16_dense_tflops", number(hw.bf16_dense_tflops));
  line("fp8_dense_tflops", number(hw.fp8_dense_tflops));
  line("gemm_bf16_efficiency", number(hw.gemm_bf16_efficiency));
  line("gemm_fp8_efficiency", number(hw.gemm_fp8_efficiency));
  line("gemm_half_efficiency_dim", number(hw.gemm_half_efficiency_dim));
  line("attention_forward_efficiency", number(hw.attention_forward_efficiency));
  line("attention_backward_efficiency", number(hw.attention_backward_efficiency));
  line("attention_half_efficiency_tokens", number(hw.attention_half_efficiency_tokens));
  line("sm_count", std::to_string(hw.sm_count));
  out += "\n[comm_sms]\n";
  line("nccl", number(hw.nccl_comm_sms));
  line("userbuffers", number(hw.userbuffers_comm_sms));
  line("deepep", number(hw.deepep_comm_sms));
  line("hybridep", number(hw.hybridep_comm_sms));
  out += "\n[memory]\n";
  line("capacity_gib", number(hw.hbm_capacity_gib));
  line("bandwidth_gb_per_s", number(hw.hbm_bandwidth_gb_per_s));
  line("efficiency", number(hw.hbm_efficiency));
  line("reserved_gib", number(hw.memory_reserved_gib));
  out += "\n[nvlink]\n";
  line("bandwidth_gb_per_s", number(hw.nvlink_bandwidth_gb_per_s));
  line("domain_gpus", std::to_string(hw.nvlink_domain_gpus));
  line("collective_efficiency", number(hw.nvlink_collective_efficiency));
  line("all_to_all_efficiency", number(hw.nvlink_all_to_all_efficiency));
  line("latency_us", number(hw.nvlink_latency_us));
  out += "\n[scale_out]\n";
  line("bandwidth_gb_per_s", number(hw.scale_out_bandwidth_gb_per_s));
  line("efficiency", number(hw.scale_out_efficiency));
  line("latency_us", number(hw.scale_out_latency_us));
  out += "\n[host]\n";
  line("link_bandwidth_gb_per_s", number(hw.host_link_bandwidth_gb_per_s));
  line("op_us", number(hw.host_op_us));
  line("cpu_adam_params_per_s", number(hw.cpu_adam_params_per_s));
  return out;
}

}  // namespace attune::gpu
