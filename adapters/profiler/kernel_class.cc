#include "adapters/profiler/kernel_class.h"

#include <array>

namespace attune::profiler {
namespace {

bool starts(std::string_view text, std::string_view prefix) { return text.starts_with(prefix); }

bool has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// HTA's `(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)`.
bool is_communication(std::string_view name, std::string_view first_line) {
  return starts(name, "nccl") || starts(name, "hip") || starts(name, "hccl") ||
         has(first_line, "ncclKernel");
}

// HTA's `(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)`.
bool is_memory(std::string_view name) {
  return starts(name, "Memcpy") || starts(name, "hipMemcpy") || starts(name, "Memset") ||
         starts(name, "hipMemset") || starts(name, "dma");
}

// The complement of HTA's computation pattern: names that are never computation.
bool is_excluded_from_computation(std::string_view name, std::string_view first_line) {
  constexpr std::array<std::string_view, 10> kPrefixes = {
      "nccl",        "Stream Wait Event",
      "runFunction", "hip",
      "job_exe",     "packet",
      "pe_exe",      "cpum_exe_subgraph",
      "hccl",        "collective_subgraph_execution"};
  for (std::string_view prefix : kPrefixes) {
    if (starts(name, prefix)) return true;
  }
  if (has(first_line, "Memcpy") || has(first_line, "Memset") || has(first_line, "dma") ||
      has(first_line, "Sync")) {
    return true;
  }
  // `cuda.*LaunchKernel`: "cuda", then anything on the first line, then "LaunchKernel".
  return starts(name, "cuda") && first_line.find("LaunchKernel", 4) != std::string_view::npos;
}

}  // namespace

const char* kernel_class_name(KernelClass kernel_class) {
  switch (kernel_class) {
    case KernelClass::kComputation:
      return "COMPUTATION";
    case KernelClass::kCommunication:
      return "COMMUNICATION";
    case KernelClass::kMemory:
      return "MEMORY";
    case KernelClass::kOther:
      return "OTHER";
  }
  return "OTHER";
}

KernelClass classify_kernel(std::string_view name) {
  // Python's `.` does not match a newline, so the `.*` terms only see the first line.
  const std::string_view first_line = name.substr(0, name.find('\n'));
  if (is_communication(name, first_line)) return KernelClass::kCommunication;
  if (is_memory(name)) return KernelClass::kMemory;
  if (!is_excluded_from_computation(name, first_line)) return KernelClass::kComputation;
  return KernelClass::kOther;
}

bool moves_data_between_gpus(std::string_view name) {
  const std::string_view first_line = name.substr(0, name.find('\n'));
  const bool deep_ep = has(first_line, "deep_ep::") || has(first_line, "dpsk::ep::");
  return (deep_ep && !has(first_line, "get_dispatch_layout")) || has(first_line, "nvshmem") ||
         has(first_line, "multimem");
}

const char* comm_kind_name(CommKind kind) {
  switch (kind) {
    case CommKind::kNone:
      return "";
    case CommKind::kTp:
      return "tp";
    case CommKind::kEpA2a:
      return "ep_a2a";
    case CommKind::kPpP2p:
      return "pp_p2p";
    case CommKind::kDp:
      return "dp";
    case CommKind::kCp:
      return "cp";
    case CommKind::kUnknown:
      return "unknown";
  }
  return "unknown";
}

CommKind comm_kind_of_group(std::string_view d) {
  // Most specific first: Megatron's expert groups contain the words of the dense ones.
  if (has(d, "PIPELINE")) return CommKind::kPpP2p;
  if (has(d, "EXPERT_DATA")) return CommKind::kDp;
  if (has(d, "EXPERT_TENSOR_AND_MODEL") || has(d, "EXPERT_MODEL")) return CommKind::kEpA2a;
  if (has(d, "EXPERT_TENSOR")) return CommKind::kTp;
  // Groups spanning two kinds (TENSOR_AND_CONTEXT, TENSOR_AND_DATA, MODEL_PARALLEL) tell nothing.
  if (has(d, "_AND_") || starts(d, "MODEL_PARALLEL")) return CommKind::kUnknown;
  if (has(d, "CONTEXT_PARALLEL")) return CommKind::kCp;
  if (has(d, "TENSOR_MODEL_PARALLEL")) return CommKind::kTp;
  if (has(d, "DATA_PARALLEL")) return CommKind::kDp;
  // The tied embedding's gradient all-reduce between the first and the last stage.
  if (has(d, "EMBEDDING")) return CommKind::kDp;
  return CommKind::kUnknown;
}

CommKind comm_kind_of_kernel(std::string_view kernel_name, std::string_view collective_name) {
  if (has(kernel_name, "deep_ep") || has(kernel_name, "dpsk::ep::") ||
      has(kernel_name, "AllToAll") || has(collective_name, "all_to_all") ||
      has(collective_name, "alltoall")) {
    return CommKind::kEpA2a;
  }
  return CommKind::kUnknown;
}

}  // namespace attune::profiler
