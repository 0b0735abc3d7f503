// FrameworkSource: read-only access to a checkout of the training framework (e.g. the Megatron-LM
// inside the training image), confined to that directory.
//
// Owns the confinement rule of the LLM tuner's source tools: a path is resolved against the
// root, symlinks and ".." resolved (std::filesystem::weakly_canonical), and anything that lands
// outside the root is refused. Reads are cut to kReadLinesMax lines, searches to kSearchHitsMax
// hits over at most kSearchFilesMax files; symlinks are not followed while searching. Each read
// reports its location "relative/path.py:first-last", which the ledger keeps (the paper's rule
// 3). Stateless after construction; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "events/result.h"

namespace attune::llm {

inline constexpr std::uint32_t kReadLinesMax = 400;
inline constexpr std::uint32_t kSearchHitsMax = 60;
inline constexpr std::uint32_t kSearchFilesMax = 50'000;
inline constexpr std::uintmax_t kSearchFileBytesMax = 4 * 1024 * 1024;

struct SourceExcerpt {
  std::string text;      // "  120| line" per line
  std::string location;  // "megatron/training/arguments.py:120-180"
};

class FrameworkSource {
 public:
  // `root` must name a directory; errors name it.
  static Result<FrameworkSource> open(const std::string& root);

  const std::filesystem::path& root() const { return root_; }

  // The canonical path of `path` (relative to the root, or absolute) when it lies inside the
  // root; nullopt when it lies outside.
  std::optional<std::filesystem::path> confine(std::string_view path) const;

  // Lines first..last (1-based, inclusive; last clamped to the file's end and to kReadLinesMax
  // lines). REQUIRES: `path` inside the root (confine()); errors: unreadable file, bad range.
  Result<SourceExcerpt> read(const std::filesystem::path& path, std::uint32_t first_line,
                             std::uint32_t last_line) const;

  // Lines that contain `pattern` (plain text, case-sensitive) in the files under `under`, as
  // "path:line: text", sorted by path. REQUIRES: `under` inside the root.
  Result<std::string> search(std::string_view pattern, const std::filesystem::path& under) const;

  // `path` relative to the root, for messages and locations.
  std::string relative(const std::filesystem::path& path) const;

 private:
  explicit FrameworkSource(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;  // canonical
};

}  // namespace attune::llm
