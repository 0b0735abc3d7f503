// Names of NCCL operations as they appear in traces. NCCL's profiler plugin hands the plugin
// strings ("AllReduce", "ncclBfloat16", "RING", "LL"); a PyTorch trace shows the device kernel
// that ran (ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)) and
// Kineto's collective arguments (Collective name "allreduce", dtype "BFloat16"). These functions
// translate the former into the latter, so the analyzer classifies plugin traces exactly as it
// classifies PyTorch's.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attune::gpu {

// Size of one element of an NCCL datatype ("ncclBfloat16" or "bfloat16" → 2); 0 when unknown.
int nccl_datatype_bytes(std::string_view datatype);

// Kineto's dtype name: "ncclBfloat16" → "BFloat16", "ncclFloat32" → "Float"; unknown → as given.
std::string kineto_dtype(std::string_view datatype);

// Kineto's "Collective name": "AllReduce" → "allreduce", "ReduceScatter" → "reduce_scatter",
// "Send" → "send", ...; unknown → lower case of the input.
std::string kineto_collective(std::string_view func);

// Whether `func` is a point-to-point operation (Send, Recv) rather than a collective.
bool nccl_is_point_to_point(std::string_view func);

// The device kernel NCCL runs for an operation, with its argument list:
//   reductions (AllReduce, ReduceScatter, Reduce):
//     ncclDevKernel_<Func>_Sum_<type>_<ALGO>_<PROTO>(ncclDevKernelArgsStorage<4096ul>)
//   data movement (AllGather, Broadcast): ncclDevKernel_<Func>_<ALGO>_<PROTO>(...)
//   point-to-point: ncclDevKernel_SendRecv(...)
// The profiler interface does not say which reduction an operation uses; NCCL's kernel names
// carry it, and Sum (what training reduces with) is written. An empty algorithm or protocol is
// written as RING / LL. Every name matches the communication regex (^nccl.*)|(.*ncclKernel.*).
std::string nccl_kernel_name(std::string_view func, std::string_view datatype,
                             std::string_view algorithm, std::string_view protocol);

// Elements in and out of an operation of `count` elements (NCCL's count argument) in a
// communicator of `nranks` ranks, as Kineto's "In msg nelems"/"Out msg nelems": an all-gather
// gathers count per rank, a reduce-scatter scatters count per rank.
struct MessageElements {
  std::int64_t in = 0;
  std::int64_t out = 0;
};
MessageElements nccl_message_elements(std::string_view func, std::int64_t count, int nranks);

}  // namespace attune::gpu
