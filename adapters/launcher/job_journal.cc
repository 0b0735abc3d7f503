#include "adapters/launcher/job_journal.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "events/whole_file.h"

namespace attune {

namespace {

// One line, whole: a torn last line left by a crash is cut first, so the record never joins it.
Status append_journal_line(const std::string& path, const nlohmann::json& line) {
  Result<std::uint64_t> appended = append_whole_lines(path, line.dump() + "\n");
  if (!appended.ok()) return make_error(path + ": cannot write the launcher's job record");
  return Ok{};
}

// The type every field a launcher records must have. A line that breaks it is an error naming the
// field, never an exception later.
const char* field_type_error(const std::string& key, const nlohmann::json& value) {
  if (key == "job_name" || key == "job_id" || key == "log_path" || key == "log_file" ||
      key == "reason") {
    return value.is_string() ? nullptr : "a string";
  }
  if (key == "run_id" || key == "run_seed") {
    return value.is_number_unsigned() ? nullptr : "an unsigned integer";
  }
  if (key == "pid" || key == "started_at_unix_ns" || key == "submitted_at_unix_ns" ||
      key == "cancelled_at_unix_ns") {
    return value.is_number_integer() ? nullptr : "an integer";
  }
  if (key == "nodes") {
    if (!value.is_array()) return "an array of strings";
    for (const auto& node : value) {
      if (!node.is_string()) return "an array of strings";
    }
  }
  return nullptr;
}

}  // namespace

Status append_journal_submission(const std::string& path, const nlohmann::json& submission) {
  return append_journal_line(path, submission);
}

Status append_journal_cancellation(const std::string& path, const std::string& job_name,
                                   std::int64_t at_unix_ns, const std::string& reason) {
  return append_journal_line(
      path, {{"job_name", job_name}, {"cancelled_at_unix_ns", at_unix_ns}, {"reason", reason}});
}

Result<std::vector<JournalEntry>> read_journal(const std::string& path) {
  std::vector<JournalEntry> entries;
  std::ifstream in(path);
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    auto json = nlohmann::json::parse(line, nullptr, false);
    const std::string where = path + ":" + std::to_string(line_number);
    if (json.is_discarded() || !json.is_object() || !json.contains("job_name")) {
      if (in.peek() == EOF) break;
      return make_error(where + ": expected a JSON object with job_name");
    }
    for (const auto& [key, value] : json.items()) {
      if (const char* expected = field_type_error(key, value)) {
        return make_error(where + ": '" + key + "' must be " + expected);
      }
    }
    if (json.contains("cancelled_at_unix_ns")) {
      const std::string name = json["job_name"].get<std::string>();
      auto found = std::find_if(entries.rbegin(), entries.rend(), [&](const JournalEntry& entry) {
        return entry.submission["job_name"] == name;
      });
      if (found == entries.rend()) {
        return make_error(path + ":" + std::to_string(line_number) + ": cancels unknown job " +
                          name);
      }
      found->cancelled_at_unix_ns = json["cancelled_at_unix_ns"].get<std::int64_t>();
      found->cancel_reason = json.value("reason", "");
      continue;
    }
    // A later submission line of the same job completes it (an intent, then its spawn).
    const std::string name = json["job_name"].get<std::string>();
    auto same = std::find_if(entries.begin(), entries.end(), [&](const JournalEntry& entry) {
      return entry.submission["job_name"] == name;
    });
    if (same != entries.end()) {
      same->submission.update(json);
      continue;
    }
    entries.push_back(JournalEntry{std::move(json), std::nullopt, ""});
  }
  return entries;
}

}  // namespace attune
