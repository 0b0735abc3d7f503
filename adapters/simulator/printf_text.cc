#include "adapters/simulator/printf_text.h"

#include <cassert>
#include <cstdarg>
#include <cstdio>

namespace attune::sim {

std::string format(const char* pattern, ...) {
  va_list args;
  va_start(args, pattern);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, pattern, copy);
  va_end(copy);
  assert(n >= 0);
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), pattern, args);
  va_end(args);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace attune::sim
