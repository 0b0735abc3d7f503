// The global rank and world size a launcher gave a process, for the GPU-side tools that name their
// trace files by rank (rank-<R>.json): the one thing they read from the environment.
#pragma once

#include <functional>

namespace attune::gpu {

// The global rank and world size a launcher gave the process: RANK/WORLD_SIZE (torchrun),
// SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE, in
// that order. `lookup` reads a variable (nullptr when unset), e.g. std::getenv.
struct LaunchRank {
  int rank = 0;
  int world_size = 1;
  bool from_environment = false;  // false: no variable was set, rank 0 of 1
};
LaunchRank launch_rank(const std::function<const char*(const char*)>& lookup);

}  // namespace attune::gpu
