// JobJournal: a launcher's durable record of the jobs it was asked to run (jobs.jsonl), one JSON
// object per line, each fsynced before the launcher acts on it. After a crash the launcher reads
// it back to find a job it submitted but the ledger never recorded. A torn last line (a write
// the crash cut short) describes a submission that never returned, and is dropped.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "events/result.h"

namespace attune {

// Appends `line` and fsyncs the file.
Status append_journal_line(const std::string& path, const nlohmann::json& line);

// Every line of the journal, in order; a missing file is an empty journal. Each object has a
// "job_name"; any other malformed line is an error naming the file and the line.
Result<std::vector<nlohmann::json>> read_journal(const std::string& path);

// The whole text of a file (a job's log).
Result<std::string> read_text_file(const std::string& path);

}  // namespace attune
