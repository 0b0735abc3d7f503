// A directory of Kineto trace files, one per traced rank, read the way HTA's TraceAnalysis reads
// its `trace_dir` (trace_anchors.md §1.1): the files directly inside it whose names end in
// `.json` or `.gz`, a rank per file, a later file with the same rank replacing an earlier one
// (files are taken in name order, so the result does not depend on the file system).
//
// Files are read in parallel, one thread per file, at most hardware_concurrency threads; each
// thread holds one file's text at a time and keeps only its compact records.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/profiler/trace_file.h"
#include "events/result.h"

namespace attune::profiler {

struct TraceDirectory {
  std::string path;
  std::vector<RankTrace> ranks;       // sorted by rank, one per rank
  std::vector<std::string> warnings;  // one line each: skipped files, replaced ranks, gaps
};

// Errors: the directory is missing or unreadable, holds no trace file, or no file in it could be
// read (the first file's error is given). A file that cannot be read while others can becomes a
// warning. `threads_max` 0 means hardware_concurrency.
Result<TraceDirectory> read_trace_directory(const std::string& path, unsigned threads_max = 0);

// The rank a traced process really had: distributedInfo.rank when present, else HTA's rank.
int true_rank(const RankTrace& trace);

// A traced rank's pipeline stage and the pipeline's depth, from the pipeline group in its
// distributedInfo that holds it; nullopt when the trace names no such group.
struct PipelinePosition {
  int stage = 0;
  int stages = 1;
};
std::optional<PipelinePosition> pipeline_position(const RankTrace& trace);

}  // namespace attune::profiler
