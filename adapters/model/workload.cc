#include "adapters/model/workload.h"

namespace attune::sim {

std::string_view precision_name(Precision precision) {
  return precision == Precision::kFp8 ? "fp8" : "bf16";
}

std::optional<Precision> parse_precision(std::string_view text) {
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp8") return Precision::kFp8;
  return std::nullopt;
}

}  // namespace attune::sim
