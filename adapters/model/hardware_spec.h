// An accelerator and its node as the performance and memory model sees it: peak dense FLOP/s per
// precision, HBM capacity and bandwidth, NVLink bandwidth per GPU and the size of the NVLink
// domain, scale-out bandwidth per GPU, the host link, and the fractions of those peaks that
// Megatron-style training achieves on it (efficiency curves, launch overhead, CPU optimizer rate).
//
// Plain data read from a TOML file (a preset under adapters/model/data/hardware or a user's
// file; presets.h loads both). Bandwidths are per GPU and per direction, in GB/s (1e9 B/s).
#pragma once

#include <string>
#include <string_view>

#include "events/result.h"

namespace attune::sim {

struct HardwareSpec {
  std::string name;
  std::string description;
  double compute_capability = 0;  // 9.0 Hopper, 10.0 Blackwell

  double bf16_dense_tflops = 0;
  double fp8_dense_tflops = 0;
  // Fraction of peak a large GEMM reaches, and the matrix dimension at which each short side of
  // a GEMM halves its efficiency (a GEMM with sides M, N, K runs at
  // efficiency * M/(M+d) * N/(N+d) * K/(K+d)).
  double gemm_bf16_efficiency = 0;
  double gemm_fp8_efficiency = 0;
  double gemm_half_efficiency_dim = 0;
  // Flash attention, forward and backward, as a fraction of the BF16 peak on long sequences,
  // and the key length at which it halves.
  double attention_forward_efficiency = 0;
  double attention_backward_efficiency = 0;
  double attention_half_efficiency_tokens = 0;
  // Streaming multiprocessors, and how many of them each communication library's kernels hold
  // while they run beside compute. Overlapped communication is not free: the compute it overlaps
  // loses that share of the GPU for as long as the communication runs. Files without these
  // fields (older files, the GPU probe's output) get the H100's values below.
  int sm_count = 132;
  double nccl_comm_sms = 16;         // NCCL collectives, all-to-all and send/receive
  double userbuffers_comm_sms = 12;  // Transformer Engine userbuffers (--tp-comm-overlap)
  double deepep_comm_sms = 20;       // DeepEP normal (training) kernels
  double hybridep_comm_sms = 16;     // HybridEP

  double hbm_capacity_gib = 0;  // usable device memory
  double hbm_bandwidth_gb_per_s = 0;
  double hbm_efficiency = 0;       // fraction of HBM bandwidth memory-bound kernels reach
  double memory_reserved_gib = 0;  // CUDA context, NCCL and library workspaces

  double nvlink_bandwidth_gb_per_s = 0;
  int nvlink_domain_gpus = 0;  // GPUs that reach each other over NVLink (a node, or a rack)
  double nvlink_collective_efficiency = 0;  // all-gather / reduce-scatter / all-reduce bus bw
  double nvlink_all_to_all_efficiency = 0;  // NCCL all-to-all
  double nvlink_latency_us = 0;

  double scale_out_bandwidth_gb_per_s = 0;
  double scale_out_efficiency = 0;
  double scale_out_latency_us = 0;

  double host_link_bandwidth_gb_per_s = 0;  // PCIe or chip-to-chip link to the CPU
  double host_op_us = 0;  // CPU time per eager operation: a kernel launch and its bookkeeping
  double cpu_adam_params_per_s = 0;  // CPU optimizer throughput per GPU's share of cores
};

// Parses a hardware description; errors are one line naming the file, line and key.
Result<HardwareSpec> parse_hardware_toml(std::string_view text, std::string_view source);

}  // namespace attune::sim
