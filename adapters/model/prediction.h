// What the performance and memory model predicts for one recipe on one workload: validity (with
// Megatron's assertion message when the launch would fail at start-up), step time, throughput,
// MFU, per-stage peak memory, whether it fits, a breakdown of the step, and per-stage,
// per-microbatch timings from which a simulated job writes per-stage traces.
#pragma once

#include <string>
#include <vector>

namespace attune::sim {

// Time one microbatch spends in one direction (forward, backward, or recomputation) on one
// pipeline rank, over all its model chunks. Compute terms are kernel time; the *_s communication
// terms are the exposed part, the *_hidden_s terms the part overlapped with compute; host_s is
// time the GPU waits for the CPU to launch work.
struct PhaseTimes {
  double gemm_s = 0;
  double attention_s = 0;
  double elementwise_s = 0;
  double tp_comm_s = 0;
  double cp_comm_s = 0;
  double ep_a2a_s = 0;
  double tp_comm_hidden_s = 0;
  double cp_comm_hidden_s = 0;
  double ep_a2a_hidden_s = 0;
  double host_s = 0;

  double compute_s() const { return gemm_s + attention_s + elementwise_s; }
  double total_s() const { return compute_s() + tp_comm_s + cp_comm_s + ep_a2a_s + host_s; }
};

// Peak device memory of one pipeline rank, GiB.
struct StageMemory {
  double weights_gib = 0;
  double gradients_gib = 0;
  double optimizer_gib = 0;
  double activations_gib = 0;  // saved activations of the microbatches in flight
  double transient_gib = 0;    // logits, recomputation working set, communication buffers
  double reserved_gib = 0;     // CUDA context, library workspaces
  double peak_gib = 0;         // the sum, with allocator fragmentation headroom
};

struct StageTiming {
  int pipeline_rank = 0;
  int decoder_layers = 0;  // transformer layers on this rank, all chunks
  int mtp_layers = 0;
  bool embedding = false;
  bool loss = false;
  PhaseTimes forward;       // one microbatch
  PhaseTimes backward;      // one microbatch, without recomputation
  PhaseTimes recompute;     // one microbatch's repeated forward work during backward
  double pp_p2p_s = 0;      // exposed send/receive per microbatch
  double microbatch_s = 0;  // forward + backward + recompute + pp_p2p
  double dp_comm_s = 0;     // exposed per step
  double dp_comm_hidden_s = 0;
  double optimizer_s = 0;  // per step
  StageMemory memory;
};

// Seconds per step on the critical pipeline rank; the terms add up to the step time.
struct Breakdown {
  double compute_s = 0;  // gemm_s + attention_s + elementwise_s
  double gemm_s = 0;
  double attention_s = 0;
  double elementwise_s = 0;
  double tp_comm_s = 0;  // exposed communication, by kind
  double cp_comm_s = 0;
  double ep_a2a_s = 0;
  double pp_p2p_s = 0;
  double dp_comm_s = 0;
  double bubble_s = 0;  // pipeline fill and drain
  double recompute_s = 0;
  double optimizer_s = 0;
  double host_s = 0;
  // The training loop's own time on the cluster's stack (stack_profile.h): around every
  // microbatch and between steps, with the GPU idle. No recipe setting changes it.
  double loop_s = 0;

  double total_s() const {
    return compute_s + tp_comm_s + cp_comm_s + ep_a2a_s + pp_p2p_s + dp_comm_s + bubble_s +
           recompute_s + optimizer_s + host_s + loop_s;
  }
};

struct Prediction {
  bool valid = false;
  std::string error;  // Megatron's assertion message when !valid

  std::string layout;  // e.g. "TP2 PP8 VP4 CP1 DP8 EP16 ETP1 MBS1 ..."
  int dp = 0;
  int edp = 0;
  int vp = 0;
  int microbatches = 0;

  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;                      // the paper's definition, over the dense peak at precision
  double megatron_tflops_per_gpu = 0;  // what Megatron's log prints as throughput per GPU

  std::vector<double> peak_memory_gib_by_stage;
  double peak_memory_gib = 0;
  double memory_capacity_gib = 0;
  bool fits_in_memory = false;

  Breakdown breakdown;
  int critical_stage = 0;  // the pipeline rank whose microbatch time sets the pace
  std::vector<StageTiming> stages;
  // What the recipe asks for that does not happen on this model and hardware, and why.
  std::vector<std::string> notes;
};

}  // namespace attune::sim
