#include "adapters/tuner/micro_batch.h"

#include <charconv>
#include <string>

#include "gate/config_check.h"

namespace attune {

std::vector<int> free_micro_batch_sizes(const Policy& policy, const Recipe& baseline) {
  const auto given = baseline.flags.find("--micro-batch-size");
  if (given == baseline.flags.end()) return {};
  int size = 0;
  const std::string& text = given->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), size);
  if (error != std::errc() || end != text.data() + text.size() || size <= 0) return {};
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
