#include "cuda/launch_rank.h"

#include <charconv>
#include <string_view>
#include <system_error>
#include <utility>

namespace attune::gpu {

LaunchRank launch_rank(const std::function<const char*(const char*)>& lookup) {
  static constexpr std::pair<const char*, const char*> kVariables[] = {
      {"RANK", "WORLD_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMI_RANK", "PMI_SIZE"},
  };
  const auto parse = [](const char* text, int& value) {
    if (text == nullptr || *text == '\0') return false;
    const std::string_view view(text);
    const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
    return error == std::errc() && end == view.data() + view.size() && value >= 0;
  };
  for (const auto& [rank_name, size_name] : kVariables) {
    LaunchRank launch;
    if (!parse(lookup(rank_name), launch.rank)) continue;
    launch.from_environment = true;
    if (!parse(lookup(size_name), launch.world_size) || launch.world_size <= launch.rank) {
      launch.world_size = launch.rank + 1;
    }
    return launch;
  }
  return LaunchRank{};
}

}  // namespace attune::gpu
