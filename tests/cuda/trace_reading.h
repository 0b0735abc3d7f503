// Reading back what the GPU-side tools write, for the tests: a file (gunzipped when it ends in
// .gz), the rank HTA would see, and a check of the timestamp format.
#pragma once

#include <zlib.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace attune::gpu::testing {

inline std::string read_file(const std::string& path) {
  if (path.ends_with(".gz")) {
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr) return "";
    std::string text;
    char buffer[1 << 16];
    int got = 0;
    while ((got = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, got);
    gzclose(file);
    return text;
  }
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// HTA reads lines until one matches "rank":\s+(\d+); no match means rank 0 (-1 here).
inline int hta_rank(const std::string& text) {
  static const std::regex kRank(R"re("rank":\s+(\d+))re");
  std::istringstream lines(text);
  std::string line;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, match, kRank)) return std::stoi(match[1]);
  }
  return -1;
}

// Every "ts"/"dur" value is written as Kineto writes it: µs with exactly three decimals.
inline bool times_have_three_decimals(const std::string& text) {
  static const std::regex kTime(R"re("(ts|dur)": ([^,\n}]*))re");
  static const std::regex kValue(R"re(-?[0-9]+\.[0-9]{3})re");
  int found = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kTime);
       it != std::sregex_iterator(); ++it) {
    if (!std::regex_match((*it)[2].str(), kValue)) return false;
    ++found;
  }
  return found > 0;
}

// HTA's communication kernels (trace_anchors.md §1.3).
inline bool hta_communication(const std::string& name) {
  static const std::regex kCommunication("(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)");
  return std::regex_search(name, kCommunication, std::regex_constants::match_continuous);
}

}  // namespace attune::gpu::testing
