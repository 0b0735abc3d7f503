#include "events/split.h"

namespace attune {

std::vector<std::string_view> split_fields(std::string_view text, char separator) {
  std::vector<std::string_view> fields;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    fields.push_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return fields;
    begin = end + 1;
  }
}

}  // namespace attune
