#include "events/assert.h"

#include <cstdio>
#include <cstdlib>

namespace attune {

void assertion_failed(const char* condition, std::string_view what, const char* file,
                      int line) noexcept {
  std::fprintf(stderr, "attune: invariant broken at %s:%d: %s (%.*s)\n", file, line, condition,
               static_cast<int>(what.size()), what.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace attune
