#include "cuda/nccl_names.h"

#include <cctype>

namespace attune::gpu {
namespace {

struct Datatype {
  std::string_view nccl;    // NCCL's name without the "nccl" prefix, lower case
  std::string_view suffix;  // in kernel names
  std::string_view kineto;  // Kineto's dtype
  int bytes;
};

// NCCL's datatypes, with the aliases NCCL prints (ncclInt ~ ncclInt32, ncclHalf ~ ncclFloat16).
constexpr Datatype kDatatypes[] = {
    {"int8", "i8", "Char", 1},
    {"char", "i8", "Char", 1},
    {"uint8", "u8", "Byte", 1},
    {"int32", "i32", "Int", 4},
    {"int", "i32", "Int", 4},
    {"uint32", "u32", "UInt32", 4},
    {"int64", "i64", "Long", 8},
    {"uint64", "u64", "UInt64", 8},
    {"float16", "f16", "Half", 2},
    {"half", "f16", "Half", 2},
    {"float32", "f32", "Float", 4},
    {"float", "f32", "Float", 4},
    {"float64", "f64", "Double", 8},
    {"double", "f64", "Double", 8},
    {"bfloat16", "bf16", "BFloat16", 2},
    {"float8e4m3", "f8e4m3", "Float8_e4m3fn", 1},
    {"float8e5m2", "f8e5m2", "Float8_e5m2", 1},
};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const Datatype* find_datatype(std::string_view datatype) {
  std::string key = lower(datatype);
  if (key.starts_with("nccl")) key.erase(0, 4);
  for (const Datatype& d : kDatatypes) {
    if (d.nccl == key) return &d;
  }
  return nullptr;
}

bool is(std::string_view func, std::string_view name) { return lower(func) == lower(name); }

}  // namespace

int nccl_datatype_bytes(std::string_view datatype) {
  const Datatype* d = find_datatype(datatype);
  return d == nullptr ? 0 : d->bytes;
}

std::string kineto_dtype(std::string_view datatype) {
  const Datatype* d = find_datatype(datatype);
  return d == nullptr ? std::string(datatype) : std::string(d->kineto);
}

std::string kineto_collective(std::string_view func) {
  if (is(func, "AllReduce")) return "allreduce";
  if (is(func, "AllGather")) return "allgather";
  if (is(func, "ReduceScatter")) return "reduce_scatter";
  if (is(func, "Broadcast")) return "broadcast";
  if (is(func, "Reduce")) return "reduce";
  if (is(func, "AllToAll")) return "all_to_all";
  if (is(func, "Send")) return "send";
  if (is(func, "Recv")) return "recv";
  return lower(func);
}

bool nccl_is_point_to_point(std::string_view func) {
  return is(func, "Send") || is(func, "Recv") || is(func, "SendRecv");
}

std::string nccl_kernel_name(std::string_view func, std::string_view datatype,
                             std::string_view algorithm, std::string_view protocol) {
  static constexpr std::string_view kArguments = "(ncclDevKernelArgsStorage<4096ul>)";
  if (nccl_is_point_to_point(func) || is(func, "AllToAll")) {
    return "ncclDevKernel_SendRecv" + std::string(kArguments);
  }
  const std::string algo = algorithm.empty() ? "RING" : std::string(algorithm);
  const std::string proto = protocol.empty() ? "LL" : std::string(protocol);
  std::string name = "ncclDevKernel_" + std::string(func) + "_";
  if (is(func, "AllReduce") || is(func, "ReduceScatter") || is(func, "Reduce")) {
    const Datatype* d = find_datatype(datatype);
    name += "Sum_" + (d == nullptr ? lower(datatype) : std::string(d->suffix)) + "_";
  }
  return name + algo + "_" + proto + std::string(kArguments);
}

MessageElements nccl_message_elements(std::string_view func, std::int64_t count, int nranks) {
  const std::int64_t ranks = nranks > 0 ? nranks : 1;
  if (is(func, "AllGather")) return {count, count * ranks};
  if (is(func, "ReduceScatter")) return {count * ranks, count};
  return {count, count};
}

}  // namespace attune::gpu
