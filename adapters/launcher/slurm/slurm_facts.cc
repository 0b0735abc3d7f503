#include "adapters/launcher/slurm/slurm_facts.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "events/split.h"

namespace attune {
namespace {

// A state's first word, upper case ("CANCELLED by 0" and "CANCELLED+" are CANCELLED).
std::string state_word(std::string_view text) {
  const std::size_t start = text.find_first_not_of(" \t");
  if (start == std::string_view::npos) return {};
  text.remove_prefix(start);
  text = text.substr(0, text.find_first_of(" \t+"));
  std::string word(text);
  std::transform(word.begin(), word.end(), word.begin(), [](char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
  });
  return word;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  for (std::string_view line : split_fields(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) lines.emplace_back(line);
  }
  return lines;
}

// A node list as Slurm prints it; "(null)", "None assigned" and "" are no nodes.
std::vector<std::string> nodes_of(std::string_view list) {
  if (list.empty() || list == "(null)" || list.find(' ') != std::string_view::npos) return {};
  auto nodes = expand_hostlist(list);
  return nodes.ok() ? std::move(nodes).value() : std::vector<std::string>{};
}

// A time in a squeue document: a number (v0.0.38) or {"set": bool, "number": n} (later).
std::int64_t json_time(const nlohmann::json& job, const char* key) {
  const auto found = job.find(key);
  if (found == job.end()) return 0;
  if (found->is_number()) return found->get<std::int64_t>();
  if (found->is_object() && found->value("set", true) && found->contains("number") &&
      (*found)["number"].is_number()) {
    return (*found)["number"].get<std::int64_t>();
  }
  return 0;
}

std::string json_text(const nlohmann::json& job, const char* key) {
  const auto found = job.find(key);
  if (found == job.end()) return {};
  if (found->is_string()) return found->get<std::string>();
  if (found->is_number_integer()) return std::to_string(found->get<std::int64_t>());
  // Later versions print a state as a list of flags, the base state first.
  if (found->is_array() && !found->empty() && (*found)[0].is_string()) {
    return (*found)[0].get<std::string>();
  }
  return {};
}

bool is_range_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Status expand_one(std::string_view name, std::vector<std::string>& out) {
  const std::size_t open = name.find('[');
  if (open == std::string_view::npos) {
    if (name.find(']') != std::string_view::npos) return make_error("unbalanced ']'");
    if (out.size() >= kHostlistNamesMax) return make_error("too many names");
    out.emplace_back(name);
    return Ok{};
  }
  const std::size_t close = name.find(']', open);
  if (close == std::string_view::npos) return make_error("unbalanced '['");
  const std::string_view prefix = name.substr(0, open);
  const std::string_view rest = name.substr(close + 1);
  for (const std::string_view piece : split_fields(name.substr(open + 1, close - open - 1), ',')) {
    const std::string range(piece);
    const std::size_t dash = range.find('-');
    const std::string first = range.substr(0, dash);
    const std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
    if (!is_range_digits(first) || !is_range_digits(last) || first.size() > 9 || last.size() > 9) {
      return make_error("bad range '" + range + "'");
    }
    const long from = std::stol(first);
    const long to = std::stol(last);
    if (to < from || static_cast<std::size_t>(to - from) >= kHostlistNamesMax) {
      return make_error("bad range '" + range + "'");
    }
    for (long number = from; number <= to; ++number) {
      std::string digits = std::to_string(number);
      if (digits.size() < first.size()) digits.insert(0, first.size() - digits.size(), '0');
      Status expanded = expand_one(std::string(prefix) + digits + std::string(rest), out);
      if (!expanded.ok()) return expanded;
    }
  }
  return Ok{};
}

}  // namespace

bool is_final_state(std::string_view state) {
  static const std::set<std::string, std::less<>> kFinal = {
      "COMPLETED", "FAILED",    "CANCELLED",     "TIMEOUT",      "NODE_FAIL", "BOOT_FAIL",
      "DEADLINE",  "PREEMPTED", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"};
  return kFinal.contains(state_word(state));
}

bool is_running_state(std::string_view state) {
  const std::string word = state_word(state);
  return word == "RUNNING" || word == "COMPLETING" || word == "SUSPENDED" || word == "STOPPED";
}

Result<std::vector<SlurmJobFacts>> parse_squeue_json(std::string_view text) {
  const auto document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) {
    return make_error("squeue --json printed no JSON document");
  }
  const auto jobs = document.find("jobs");
  if (jobs == document.end() || !jobs->is_array()) {
    return make_error("squeue --json printed no \"jobs\" list");
  }
  std::vector<SlurmJobFacts> facts;
  facts.reserve(jobs->size());
  for (const nlohmann::json& job : *jobs) {
    if (!job.is_object()) continue;
    SlurmJobFacts one;
    one.job_id = json_text(job, "job_id");
    if (one.job_id.empty()) continue;
    one.name = json_text(job, "name");
    one.state = state_word(json_text(job, "job_state"));
    one.reason = json_text(job, "state_reason");
    one.submit_unix_s = json_time(job, "submit_time");
    one.start_unix_s = json_time(job, "start_time");
    one.end_unix_s = json_time(job, "end_time");
    const auto resources = job.find("job_resources");
    if (resources != job.end() && resources->is_object()) {
      const auto allocated = resources->find("allocated_nodes");
      if (allocated != resources->end() && allocated->is_array()) {
        for (const nlohmann::json& node : *allocated) {
          if (node.is_object() && node.contains("nodename") && node["nodename"].is_string()) {
            one.nodes.push_back(node["nodename"].get<std::string>());
          }
        }
      }
    }
    if (one.nodes.empty()) one.nodes = nodes_of(json_text(job, "nodes"));
    facts.push_back(std::move(one));
  }
  return facts;
}

std::vector<SlurmJobFacts> parse_jobcomp_text(std::string_view text) {
  std::vector<SlurmJobFacts> facts;
  for (const std::string& line : lines_of(text)) {
    std::map<std::string, std::string> fields;
    for (const std::string_view word : split_fields(line, ' ')) {
      const std::size_t equals = word.find('=');
      if (equals == std::string::npos || equals == 0) continue;
      fields.emplace(word.substr(0, equals), word.substr(equals + 1));
    }
    if (!fields.contains("JobId") || !fields.contains("JobState")) continue;
    SlurmJobFacts one;
    one.job_id = fields["JobId"];
    one.name = fields["Name"];
    one.state = state_word(fields["JobState"]);
    one.submit_unix_s = parse_slurm_time(fields["SubmitTime"]).value_or(0);
    one.start_unix_s = parse_slurm_time(fields["StartTime"]).value_or(0);
    one.end_unix_s = parse_slurm_time(fields["EndTime"]).value_or(0);
    one.nodes = nodes_of(fields["NodeList"]);
    facts.push_back(std::move(one));
  }
  return facts;
}

std::vector<SlurmJobFacts> parse_sacct_text(std::string_view text) {
  std::vector<SlurmJobFacts> facts;
  for (const std::string& line : lines_of(text)) {
    const std::vector<std::string_view> fields = split_fields(line, '|');
    if (fields.size() < 7 || fields[0].empty()) continue;
    SlurmJobFacts one;
    one.job_id = fields[0];
    one.name = fields[1];
    one.state = state_word(fields[2]);
    one.submit_unix_s = parse_slurm_time(fields[3]).value_or(0);
    one.start_unix_s = parse_slurm_time(fields[4]).value_or(0);
    one.end_unix_s = parse_slurm_time(fields[5]).value_or(0);
    one.nodes = nodes_of(fields[6]);
    facts.push_back(std::move(one));
  }
  return facts;
}

Result<std::vector<std::string>> expand_hostlist(std::string_view list) {
  // "'<list>': <what>", appended: GCC 12 warns falsely (-Wrestrict) on "'" + std::string.
  const auto error = [&list](std::string_view what) {
    std::string out(1, '\'');
    out += list;
    out += "': ";
    out += what;
    return make_error(std::move(out));
  };
  std::vector<std::string> names;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t at = 0; at <= list.size(); ++at) {
    const char c = at < list.size() ? list[at] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) return error("unbalanced ']'");
    if (c != ',' || depth != 0) continue;
    const std::string_view name = list.substr(start, at - start);
    start = at + 1;
    if (name.empty()) continue;
    Status expanded = expand_one(name, names);
    if (!expanded.ok()) return error(expanded.error());
  }
  if (depth != 0) return error("unbalanced '['");
  return names;
}

std::optional<std::int64_t> parse_slurm_time(std::string_view text) {
  std::tm parts{};
  char tail = 0;
  const std::string copy(text);
  if (std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &parts.tm_year, &parts.tm_mon,
                  &parts.tm_mday, &parts.tm_hour, &parts.tm_min, &parts.tm_sec, &tail) != 6) {
    return std::nullopt;
  }
  parts.tm_year -= 1900;
  parts.tm_mon -= 1;
  parts.tm_isdst = -1;
  const std::time_t seconds = std::mktime(&parts);
  if (seconds == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<std::int64_t>(seconds);
}

SlurmRecords parse_scontrol_config(std::string_view text) {
  SlurmRecords records;
  std::string jobcomp_type;
  std::string jobcomp_location;
  for (const std::string& line : lines_of(text)) {
    const std::size_t equals = line.find('=');
    if (equals == std::string::npos) continue;
    const std::size_t key_end = line.find_last_not_of(' ', equals - 1);
    const std::size_t value_start = line.find_first_not_of(' ', equals + 1);
    const std::string key = line.substr(0, key_end + 1);
    const std::string value = value_start == std::string::npos ? "" : line.substr(value_start);
    if (key == "AccountingStorageType") {
      records.accounting = !value.empty() && value != "accounting_storage/none";
    } else if (key == "JobCompType") {
      jobcomp_type = value;
    } else if (key == "JobCompLoc") {
      jobcomp_location = value;
    }
  }
  if (jobcomp_type == "jobcomp/filetxt" && !jobcomp_location.empty()) {
    records.jobcomp_file = jobcomp_location;
  }
  return records;
}

std::vector<std::string> parse_usable_nodes(std::string_view text) {
  static const std::vector<std::string_view> kUnusable = {"DOWN",   "DRAIN",     "FAIL",  "INVAL",
                                                          "FUTURE", "UNKNOWN",   "MAINT", "REBOOT",
                                                          "POWER",  "NO_RESPOND"};
  std::vector<std::string> usable;
  std::set<std::string> seen;
  for (const std::string& line : lines_of(text)) {
    std::istringstream words(line);
    std::string node, state;
    if (!(words >> node >> state)) continue;
    std::transform(state.begin(), state.end(), state.begin(), [](char c) {
      return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    });
    // A trailing '*' is a node that does not respond; '~', '#', '!', '%' are power states.
    const bool flagged = state.find_first_of("*~#!%$@^") != std::string::npos;
    const bool bad = flagged || std::any_of(kUnusable.begin(), kUnusable.end(), [&](auto word) {
                       return state.find(word) != std::string::npos;
                     });
    if (!bad && seen.insert(node).second) usable.push_back(node);
  }
  return usable;
}

}  // namespace attune
