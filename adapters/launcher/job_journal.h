// JobJournal: a launcher's durable record of the jobs it was asked to run (jobs.jsonl), one JSON
// object per line, each fsynced before the launcher acts on it. After a crash the launcher reads
// it back to find a job it submitted but the ledger never recorded. A torn last line (a write
// the crash cut short) describes a submission that never returned, and is dropped.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "events/result.h"

namespace attune {

// A submission as the launcher recorded it, with its cancellation when one was recorded.
struct JournalEntry {
  nlohmann::json submission;  // the launcher's own fields, with "job_name"
  std::optional<std::int64_t> cancelled_at_unix_ns;
  std::string cancel_reason;
};

// Appends a submission (a JSON object with "job_name") and fsyncs the file.
Status append_journal_submission(const std::string& path, const nlohmann::json& submission);
// Appends the cancellation of a recorded job and fsyncs the file.
Status append_journal_cancellation(const std::string& path, const std::string& job_name,
                                   std::int64_t at_unix_ns, const std::string& reason);

// Every submission, in order, with its cancellation folded in; a missing file is an empty
// journal. Lines of the same job merge, the later fields winning (a launcher records its intent
// before it acts, then what it did). A malformed line, a known field of the wrong type, or a
// cancellation of an unknown job, is an error naming the file and the line.
Result<std::vector<JournalEntry>> read_journal(const std::string& path);

}  // namespace attune
