// printf-style formatting into a std::string, for the writers that must reproduce the exact
// number formats of Megatron-LM's Python logs and of Kineto's traces.
#pragma once

#include <string>

namespace attune::sim {

__attribute__((format(printf, 1, 2))) std::string format(const char* pattern, ...);

}  // namespace attune::sim
