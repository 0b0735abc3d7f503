#include "adapters/model/hardware_spec.h"

#include "adapters/model/toml_fields.h"

namespace attune::sim {

Result<HardwareSpec> parse_hardware_toml(std::string_view text, std::string_view source) {
  HardwareSpec hw;
  TomlFields f(text, source);
  f.read("name", hw.name, true);
  f.read("description", hw.description, false);
  f.read("compute_capability", hw.compute_capability, true, 7.0, 20.0);

  f.read("compute.bf16_dense_tflops", hw.bf16_dense_tflops, true, 1.0);
  f.read("compute.fp8_dense_tflops", hw.fp8_dense_tflops, true, 1.0);
  f.read("compute.gemm_bf16_efficiency", hw.gemm_bf16_efficiency, true, 0.01, 1.0);
  f.read("compute.gemm_fp8_efficiency", hw.gemm_fp8_efficiency, true, 0.01, 1.0);
  f.read("compute.gemm_half_efficiency_dim", hw.gemm_half_efficiency_dim, true, 0.0);
  f.read("compute.attention_forward_efficiency", hw.attention_forward_efficiency, true, 0.01, 1.0);
  f.read("compute.attention_backward_efficiency", hw.attention_backward_efficiency, true, 0.01,
         1.0);
  f.read("compute.attention_half_efficiency_tokens", hw.attention_half_efficiency_tokens, true,
         0.0);

  f.read("compute.sm_count", hw.sm_count, false, 1);
  f.read("comm_sms.nccl", hw.nccl_comm_sms, false, 0.0);
  f.read("comm_sms.userbuffers", hw.userbuffers_comm_sms, false, 0.0);
  f.read("comm_sms.deepep", hw.deepep_comm_sms, false, 0.0);
  f.read("comm_sms.hybridep", hw.hybridep_comm_sms, false, 0.0);

  f.read("memory.capacity_gib", hw.hbm_capacity_gib, true, 1.0);
  f.read("memory.bandwidth_gb_per_s", hw.hbm_bandwidth_gb_per_s, true, 1.0);
  f.read("memory.efficiency", hw.hbm_efficiency, true, 0.01, 1.0);
  f.read("memory.reserved_gib", hw.memory_reserved_gib, true, 0.0);

  f.read("nvlink.bandwidth_gb_per_s", hw.nvlink_bandwidth_gb_per_s, true, 1.0);
  f.read("nvlink.domain_gpus", hw.nvlink_domain_gpus, true, 1);
  f.read("nvlink.collective_efficiency", hw.nvlink_collective_efficiency, true, 0.01, 1.0);
  f.read("nvlink.all_to_all_efficiency", hw.nvlink_all_to_all_efficiency, true, 0.01, 1.0);
  f.read("nvlink.latency_us", hw.nvlink_latency_us, true, 0.0);

  f.read("scale_out.bandwidth_gb_per_s", hw.scale_out_bandwidth_gb_per_s, true, 0.1);
  f.read("scale_out.efficiency", hw.scale_out_efficiency, true, 0.01, 1.0);
  f.read("scale_out.latency_us", hw.scale_out_latency_us, true, 0.0);

  f.read("host.link_bandwidth_gb_per_s", hw.host_link_bandwidth_gb_per_s, true, 0.1);
  f.read("host.op_us", hw.host_op_us, true, 0.0);
  f.read("host.cpu_adam_params_per_s", hw.cpu_adam_params_per_s, true, 1.0);

  if (hw.fp8_dense_tflops < hw.bf16_dense_tflops) {
    f.fail_at("compute.fp8_dense_tflops", "must be at least compute.bf16_dense_tflops");
  }
  for (const double sms :
       {hw.nccl_comm_sms, hw.userbuffers_comm_sms, hw.deepep_comm_sms, hw.hybridep_comm_sms}) {
    if (sms >= hw.sm_count) f.fail_at("compute.sm_count", "must exceed every comm_sms entry");
  }
  Status status = f.finish();
  if (!status.ok()) return make_error(status.error());
  return hw;
}

}  // namespace attune::sim
