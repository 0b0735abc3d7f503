#include "adapters/world/printf_text.h"

#include <cstdarg>
#include <cstdio>

#include "events/assert.h"

namespace attune::sim {

std::string format(const char* pattern, ...) {
  va_list args;
  va_start(args, pattern);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, pattern, copy);
  va_end(copy);
  ATTUNE_ASSERT(n >= 0, "snprintf formats");
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), pattern, args);
  va_end(args);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace attune::sim
