#include "adapters/tuner/llm/framework_source.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace attune::llm {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kHitLineBytesMax = 240;

bool is_within(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

}  // namespace

Result<FrameworkSource> FrameworkSource::open(const std::string& root) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(root, ec);
  if (ec || !fs::is_directory(canonical, ec)) {
    return make_error("framework_source '" + root + "' is not a directory");
  }
  return FrameworkSource(canonical);
}

std::optional<fs::path> FrameworkSource::confine(std::string_view path) const {
  const fs::path given(path);
  const fs::path joined = given.is_absolute() ? given : root_ / given;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(joined, ec);
  if (ec) return std::nullopt;
  if (!is_within(canonical, root_)) return std::nullopt;
  return canonical;
}

std::string FrameworkSource::relative(const fs::path& path) const {
  const fs::path rel = path.lexically_relative(root_);
  return rel.empty() || rel == "." ? std::string(".") : rel.generic_string();
}

Result<SourceExcerpt> FrameworkSource::read(const fs::path& path, std::uint32_t first_line,
                                            std::uint32_t last_line) const {
  const std::string name = relative(path);
  if (first_line == 0 || last_line < first_line) {
    return make_error("expected 1 <= first_line <= last_line, got " + std::to_string(first_line) +
                      ".." + std::to_string(last_line));
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return make_error(name + " is not a file");
  std::ifstream in(path);
  if (!in) return make_error("cannot read " + name);
  last_line = std::min(last_line, first_line + kReadLinesMax - 1);
  std::ostringstream text;
  std::string line;
  std::uint32_t number = 0;
  std::uint32_t last_read = 0;
  while (number < last_line && std::getline(in, line)) {
    ++number;
    if (number < first_line) continue;
    text << number << "| " << line << "\n";
    last_read = number;
  }
  if (last_read == 0) {
    return make_error(name + " has " + std::to_string(number) + " lines; line " +
                      std::to_string(first_line) + " is past its end");
  }
  return SourceExcerpt{text.str(),
                       name + ":" + std::to_string(first_line) + "-" + std::to_string(last_read)};
}

Result<std::string> FrameworkSource::search(std::string_view pattern, const fs::path& under) const {
  if (pattern.empty()) return make_error("the pattern is empty");
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_regular_file(under, ec)) {
    files.push_back(under);
  } else if (fs::is_directory(under, ec)) {
    // Symlinks are not followed: the walk stays inside the root.
    fs::recursive_directory_iterator it(under, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (files.size() >= kSearchFilesMax) break;
      if (it->is_symlink(ec)) continue;
      if (it->is_directory(ec) && it->path().filename().string().starts_with(".")) {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec) || it->file_size(ec) > kSearchFileBytesMax) continue;
      files.push_back(it->path());
    }
  } else {
    return make_error(relative(under) + " does not exist");
  }
  std::sort(files.begin(), files.end());
  std::ostringstream out;
  std::uint32_t hits = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::string line;
    std::uint32_t number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.find(pattern) == std::string::npos) continue;
      if (hits == kSearchHitsMax) {
        out << "(more hits; narrow the pattern or the path_prefix)\n";
        return out.str();
      }
      ++hits;
      if (line.size() > kHitLineBytesMax) line = line.substr(0, kHitLineBytesMax) + "...";
      out << relative(file) << ":" << number << ": " << line << "\n";
    }
  }
  if (hits == 0) return std::string("no match for '" + std::string(pattern) + "'\n");
  return out.str();
}

}  // namespace attune::llm
