// The fixed part of a training launch that a recipe does not choose: which model, on which
// accelerator, how many GPUs, sequence length, global batch and precision. A campaign holds these
// constant; the performance model predicts one recipe at a time against them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "adapters/model/hardware_spec.h"
#include "adapters/model/model_spec.h"

namespace attune::sim {

enum class Precision : std::uint8_t {
  kBf16,  // bf16 weights and GEMMs
  kFp8,   // bf16 weights, FP8 GEMMs (Transformer Engine)
};

std::string_view precision_name(Precision precision);
// "bf16" or "fp8"; nullopt otherwise.
std::optional<Precision> parse_precision(std::string_view text);

struct Workload {
  ModelSpec model;
  HardwareSpec hardware;
  int gpus = 0;
  int seq_length = 0;
  int global_batch_size = 0;  // sequences per step
  Precision precision = Precision::kBf16;
};

}  // namespace attune::sim
