#include "core/text_file.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace attune {

Result<std::string> read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return make_error("cannot read " + path + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error("cannot open " + path + ": " + std::generic_category().message(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error("cannot read " + path);
  return text.str();
}

}  // namespace attune
