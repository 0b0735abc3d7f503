// Peak device memory of each pipeline rank (perf_model.md §4.2-4.3): bf16 weights, the fp32 (or
// bf16) gradient buffer, optimizer state sharded by the distributed optimizer (6 + 12/d bytes per
// parameter, experts sharded over expert data parallelism, a fraction moved to the host by CPU
// offload), activations per microbatch from the Korthikanti formulas adjusted for flash attention,
// sequence parallelism, FP8 and recomputation, times the microbatches in flight on that rank under
// (interleaved) 1F1B, plus logits, communication buffers, workspaces and fragmentation headroom.
// Pure functions, thread-safe.
#pragma once

#include "adapters/model/cost_factors.h"
#include "adapters/model/layout.h"
#include "adapters/model/prediction.h"
#include "adapters/model/workload.h"

namespace attune::sim {

// Parameters one GPU of a pipeline rank holds: dense ones (attention, dense MLPs, shared experts,
// routers, embedding and output layer) sharded over TP, routed experts sharded over EP x ETP.
struct StageParams {
  double dense = 0;
  double expert = 0;
  double linear = 0;  // the part in decoder and MTP layers (what FP8 GEMMs cast), dense + expert
};
StageParams stage_params(const Workload& workload, const ResolvedLayout& resolved, int rank);

// Saved activation bytes of one decoder layer for one microbatch on one GPU, by layer kind.
struct LayerActivationBytes {
  double dense_layer = 0;
  double moe_layer = 0;
  double mtp_extra = 0;         // an MTP depth beyond its transformer layer
  double recomputed_layer = 0;  // what a fully recomputed layer keeps (its input)
};
LayerActivationBytes layer_activation_bytes(const Workload& workload,
                                            const ResolvedLayout& resolved);

// Layers of a stage of `stage_layers` whose activations --cpu-offloading-num-layers sends to host
// memory (Megatron allows it without a pipeline and requires fewer than the model's layers).
int activation_offload_layers(const Layout& layout, int stage_layers);

// The mean saved activation bytes of one of `stage`'s decoder layers for one microbatch.
double mean_decoder_layer_bytes(const Workload& workload, const ResolvedLayout& resolved,
                                const StageLayers& stage);

// Microbatches (as model chunks) whose activations pipeline rank `rank` holds at its peak.
double chunks_in_flight(const ResolvedLayout& resolved, int rank);

StageMemory estimate_stage_memory(const Workload& workload, const ResolvedLayout& resolved,
                                  int rank, const CostFactors& factors = CostFactors{});

}  // namespace attune::sim
