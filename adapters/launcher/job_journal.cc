#include "adapters/launcher/job_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace attune {

Status append_journal_line(const std::string& path, const nlohmann::json& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return make_error(path + ": cannot open the launcher's job record");
  const std::string text = line.dump() + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced) return make_error(path + ": cannot write the launcher's job record");
  return Ok{};
}

Result<std::vector<nlohmann::json>> read_journal(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    auto json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_discarded() || !json.is_object() || !json.contains("job_name")) {
      if (in.peek() == EOF) break;
      return make_error(path + ":" + std::to_string(line_number) +
                        ": expected a JSON object with job_name");
    }
    lines.push_back(std::move(json));
  }
  return lines;
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": no such file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace attune
