#include "cuda/launch_rank.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace attune::gpu {
namespace {

TEST(LaunchRank, ReadsTheLaunchersVariablesInOrder) {
  std::map<std::string, std::string> env;
  const auto lookup = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_FALSE(launch_rank(lookup).from_environment);
  env = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}};
  LaunchRank launch = launch_rank(lookup);
  EXPECT_TRUE(launch.from_environment);
  EXPECT_EQ(launch.rank, 5);
  EXPECT_EQ(launch.world_size, 16);
  // torchrun's wins; a missing WORLD_SIZE becomes rank + 1
  env = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"RANK", "2"}};
  launch = launch_rank(lookup);
  EXPECT_EQ(launch.rank, 2);
  EXPECT_EQ(launch.world_size, 3);
  env = {{"OMPI_COMM_WORLD_RANK", "x1"}, {"PMI_RANK", "7"}, {"PMI_SIZE", "8"}};
  launch = launch_rank(lookup);
  EXPECT_EQ(launch.rank, 7);
  EXPECT_EQ(launch.world_size, 8);
}

}  // namespace
}  // namespace attune::gpu
