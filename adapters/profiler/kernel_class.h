// How the analyzer classifies GPU operations: HTA's kernel types (trace_anchors.md §1.3), told
// from the name alone, and the kind of a collective (tensor parallel, expert all-to-all, pipeline
// send/receive, data parallel, context parallel), told from Kineto's process-group arguments, the
// rank's process groups and the kernel's name.
//
// Pure functions; thread-safe. Depends on the standard library only (the fuzz target compiles
// this file on its own).
#pragma once

#include <cstdint>
#include <string_view>

namespace attune::profiler {

enum class KernelClass : std::uint8_t { kComputation, kCommunication, kMemory, kOther };

// "COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER": HTA's names.
const char* kernel_class_name(KernelClass kernel_class);

// HTA's classification by name, checked in HTA's order: communication, memory, computation,
// else other. Python's `re.match` semantics: anchored at the start, `.` stops at a newline.
KernelClass classify_kernel(std::string_view name);

// Kernels that move data between GPUs outside NCCL, which HTA counts as computation: DeepEP's
// dispatch, combine and notify kernels (`deep_ep::`, `dpsk::ep::`; not its local
// get_dispatch_layout), NVSHMEM's kernels and PyTorch's symmetric-memory (multimem) collectives.
// The tuner's own diagnosis counts them as communication; HTA's tables do not.
bool moves_data_between_gpus(std::string_view name);

enum class CommKind : std::uint8_t { kNone, kTp, kEpA2a, kPpP2p, kDp, kCp, kUnknown };
constexpr int kCommKindCount = 7;

// "tp", "ep_a2a", "pp_p2p", "dp", "cp", "unknown" (and "" for kNone).
const char* comm_kind_name(CommKind kind);

// The kind of a Megatron-LM process group from its description (pg_desc, Kineto's "Process Group
// Description"), e.g. TENSOR_MODEL_PARALLEL_GROUP -> kTp; kUnknown when the description names a
// group that mixes kinds (MODEL_PARALLEL_GROUP) or none Megatron creates (default_pg, undefined).
CommKind comm_kind_of_group(std::string_view description);

// The kind of a communication kernel told from its name and Kineto's "Collective name" alone
// (all-to-all, DeepEP dispatch/combine/notify); kUnknown when the name fits several kinds (an
// all-reduce may be tensor or data parallel, a SendRecv a pipeline transfer or an all-to-all).
CommKind comm_kind_of_kernel(std::string_view kernel_name, std::string_view collective_name);

}  // namespace attune::profiler
