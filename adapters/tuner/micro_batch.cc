#include "adapters/tuner/micro_batch.h"

#include <string>

#include "adapters/model/recipe_values.h"
#include "gate/config_check.h"

namespace attune {

std::vector<int> free_micro_batch_sizes(const Policy& policy, const Recipe& baseline) {
  const double given = sim::recipe_number(baseline, "--micro-batch-size", 0);
  const int size = static_cast<int>(given);
  if (size <= 0 || size != given) return {};
  Recipe doubled = baseline;
  if (!set_flag(doubled, "--micro-batch-size", std::to_string(2 * size)).ok() ||
      !check_config(policy, baseline, doubled).allowed) {
    return {};
  }
  std::vector<int> sizes;
  for (int divisor = 8; divisor > 1; divisor /= 2) {
    if (size % divisor == 0) sizes.push_back(size / divisor);
  }
  for (int factor = 1; factor <= 16; factor *= 2) sizes.push_back(size * factor);
  return sizes;
}

}  // namespace attune
