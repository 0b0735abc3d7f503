// Megatron-LM's process groups of one rank, as a PyTorch profiler trace names them: which ranks
// share a tensor-, context-, data-, pipeline- or expert-parallel group with it, the group_desc
// Megatron gives each (TENSOR_MODEL_PARALLEL_GROUP, ...), and PyTorch's pg_name, the group's
// position in creation order. Ranks follow Megatron's default orders: tp-cp-dp-pp for dense
// layers and tp-ep-dp-pp for experts, the pipeline rank varying slowest.
//
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attune::sim {

struct RankGrid {
  int world = 1, tp = 1, cp = 1, dp = 1, pp = 1, etp = 1, ep = 1, edp = 1;
  int stage_size() const { return world / pp; }
};

enum class GroupKind : std::uint8_t {
  kDataParallel,
  kDataParallelWithCp,
  kContextParallel,
  kModelParallel,
  kTensorParallel,
  kPipelineParallel,
  kExpertParallel,
  kExpertTensorParallel,
  kExpertTensorAndModelParallel,
  kExpertDataParallel,
};

// Every kind, in the order Megatron's initialize_model_parallel creates them.
const std::vector<GroupKind>& group_creation_order();

// Megatron's group_desc: "TENSOR_MODEL_PARALLEL_GROUP", ...
const char* group_desc(GroupKind kind);

struct ProcessGroup {
  std::string name;        // PyTorch's pg_name: "0" for the default group, then creation order
  std::string desc;        // Megatron's group_desc, or "default_pg"
  std::vector<int> ranks;  // ascending
};

// The members of `rank`'s group of `kind`, ascending. REQUIRES: tp*cp*dp == etp*ep*edp ==
// world/pp and 0 <= rank < world.
std::vector<int> group_members(const RankGrid& grid, GroupKind kind, int rank);

// Every group `rank` belongs to, by kind, named in creation order: Megatron creates every group
// of a kind, on every rank, before the next kind, after the default group "0".
std::map<GroupKind, ProcessGroup> process_groups(const RankGrid& grid, int rank);

}  // namespace attune::sim
