// Floating-point operation counts of one training step.
//
// megatron_flops_per_step() is Megatron-LM's num_floating_point_operations (megatron_lm.md §3):
// the model FLOPs behind the "throughput per GPU (TFLOP/s/GPU)" of a Megatron log. mfu_flops_per_
// token() is the paper's MFU numerator: 6 x (dense parameters without the input embedding +
// active expert parameters) + the causal attention matrix multiplications. Pure functions.
#pragma once

#include "adapters/model/model_spec.h"

namespace attune::sim {

// Megatron's count for a global batch of `global_batch_size` sequences of `seq_length` tokens,
// with the vocabulary padded for `tp` and `mtp_layers` MTP depths.
double megatron_flops_per_step(const ModelSpec& model, int seq_length, int global_batch_size,
                               int tp, int mtp_layers);

// The paper's MFU FLOPs per token (MTP depths excluded).
double mfu_flops_per_token(const ModelSpec& model, int seq_length, int tp);

}  // namespace attune::sim
