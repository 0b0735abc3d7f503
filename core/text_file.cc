#include "core/text_file.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <new>
#include <system_error>

namespace attune {

namespace {

std::string size_error(const std::string& path, std::size_t max_bytes) {
  return path + ": larger than " + std::to_string(max_bytes) +
         " bytes, more than such a file may hold";
}

}  // namespace

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return make_error("cannot read " + path + ": it is a directory");
  }
  if (std::filesystem::is_regular_file(path, ec)) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes) return make_error(size_error(path, max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error("cannot open " + path + ": " + std::generic_category().message(errno));
  }
  try {
    std::string text;
    char chunk[1 << 16];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
      const auto got = static_cast<std::size_t>(in.gcount());
      if (text.size() + got > max_bytes) return make_error(size_error(path, max_bytes));
      text.append(chunk, got);
    }
    if (in.bad()) return make_error("cannot read " + path);
    return text;
  } catch (const std::bad_alloc&) {
    return make_error("cannot read " + path + ": not enough memory");
  }
}

}  // namespace attune
