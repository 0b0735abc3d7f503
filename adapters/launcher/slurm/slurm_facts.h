// SlurmFacts: what Slurm says about jobs and nodes, read from the text its commands print.
//
// Pure parsers, one per source: `squeue --json` (the sweep of every job slurmctld still lists;
// Slurm 22.05 prints every job whatever the filters, so the caller picks its own), the
// job-completion log of jobcomp/filetxt (one `Key=Value ...` line per finished job), `sacct -P`
// (where the cluster keeps accounting), `scontrol show config` (which of those the cluster has)
// and `sinfo -N` (the nodes and their states). Times are Unix seconds; the text forms without a
// zone (jobcomp, sacct) are the cluster's local time, read in this process's zone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/result.h"

namespace attune {

struct SlurmJobFacts {
  std::string job_id;
  std::string name;
  std::string state;  // PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, NODE_FAIL, ...
  std::string reason;
  std::int64_t submit_unix_s = 0;
  std::int64_t start_unix_s = 0;   // admission; Slurm sets it on a cancelled pending job too
  std::int64_t end_unix_s = 0;     // release; meaningful once the state is final
  std::vector<std::string> nodes;  // the allocation; empty for a job that never ran

  bool ran() const { return !nodes.empty(); }

  friend bool operator==(const SlurmJobFacts&, const SlurmJobFacts&) = default;
};

// A state after which the job holds no node and never runs again (COMPLETING is not one).
bool is_final_state(std::string_view state);
// The job holds or held its nodes: RUNNING, COMPLETING, SUSPENDED, STOPPED.
bool is_running_state(std::string_view state);

// Every job of a `squeue --json` document (OpenAPI v0.0.38 and later shapes).
Result<std::vector<SlurmJobFacts>> parse_squeue_json(std::string_view text);

// Every well-formed line of a jobcomp/filetxt file; other lines are skipped.
std::vector<SlurmJobFacts> parse_jobcomp_text(std::string_view text);

// The fields sacct prints for `sacct -X -P -n -o JobID,JobName,State,Submit,Start,End,NodeList`.
inline constexpr std::string_view kSacctFormat = "JobID,JobName,State,Submit,Start,End,NodeList";
std::vector<SlurmJobFacts> parse_sacct_text(std::string_view text);

// "node[1-3,7],gpu-a[01-02]" -> node1 node2 node3 node7 gpu-a01 gpu-a02. An error for unbalanced
// brackets, a bad range, or more than kHostlistNamesMax names.
inline constexpr std::size_t kHostlistNamesMax = 65536;
Result<std::vector<std::string>> expand_hostlist(std::string_view list);

// "2026-11-29T11:37:18" in local time; nullopt for "Unknown", "None", "" and malformed text.
std::optional<std::int64_t> parse_slurm_time(std::string_view text);

// Which records of finished jobs a cluster keeps, from `scontrol show config`.
struct SlurmRecords {
  bool accounting = false;   // AccountingStorageType is not accounting_storage/none: sacct works
  std::string jobcomp_file;  // JobCompLoc, when JobCompType is jobcomp/filetxt
};
SlurmRecords parse_scontrol_config(std::string_view text);

// The nodes that can take a job now, from `sinfo -h -N -o "%N %T"`: not down, drained, failing,
// not responding or powered off. Each node once, in order.
std::vector<std::string> parse_usable_nodes(std::string_view text);

}  // namespace attune
