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
  return {size, 2 * size, 4 * size, 8 * size};
}

}  // namespace attune
