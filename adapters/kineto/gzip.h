// gzip for the traces attune writes: one helper for every writer (the simulated world, the CUPTI
// tracer, the NCCL profiler plugin). Deterministic: the same text gives the same bytes (no file
// name, no time in the header). Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace attune::kineto {

std::string gzip_text(std::string_view text);

}  // namespace attune::kineto
