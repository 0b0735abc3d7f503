// The performance and memory model of Megatron-style training: a pure, fast estimator of one
// recipe's step time, throughput, MFU and per-stage peak memory on a workload, from first
// principles (perf_model.md §4): GEMMs at a size-dependent efficiency, flash attention, memory-
// bound work, tensor/context/expert/pipeline/data-parallel communication with their overlaps, the
// (interleaved) 1F1B bubble, recomputation, the optimizer step (on GPU or offloaded to the CPU) and
// kernel-launch overhead. The same formulas for every model; hardware efficiencies come from the
// hardware preset.
//
// The step: (m + (p-1)/v) microbatches at the pace of the slowest pipeline rank, plus the exposed
// data-parallel traffic and the optimizer step of the rank that finishes last. Hardware facts and
// achieved efficiencies come from the HardwareSpec; how the software stack overlaps and issues
// work is a set of named constants in performance_model.cc.
//
// Pure functions, thread-safe; a prediction takes a few microseconds.
#pragma once

#include "adapters/model/cost_factors.h"
#include "adapters/model/layout.h"
#include "adapters/model/prediction.h"
#include "adapters/model/workload.h"
#include "events/recipe.h"

namespace attune::sim {

// Decodes and validates the recipe (flags it does not set take Megatron's defaults), then
// predicts. An invalid recipe gives valid = false and Megatron's assertion message.
Prediction predict(const Workload& workload, const Recipe& recipe,
                   const CostFactors& factors = CostFactors{});

// The same for a layout already resolved against `workload` (what the sweep calls).
Prediction predict_resolved(const Workload& workload, const ResolvedLayout& resolved,
                            const CostFactors& factors = CostFactors{});

}  // namespace attune::sim
