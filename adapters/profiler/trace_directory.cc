#include "adapters/profiler/trace_directory.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

namespace attune::profiler {
namespace {

bool is_trace_file_name(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".gz");
}

// Ranks missing from a set of traced ranks: a pipeline stage with no trace when the traces name
// their pipeline groups, else a gap between the lowest and the highest traced rank.
std::vector<std::string> gap_warnings(const std::vector<RankTrace>& ranks) {
  std::vector<std::string> warnings;
  std::set<int> stages_seen;
  int stages = 0;
  for (const RankTrace& trace : ranks) {
    if (const std::optional<PipelinePosition> position = pipeline_position(trace)) {
      stages_seen.insert(position->stage);
      stages = std::max(stages, position->stages);
    }
  }
  if (stages > 0) {
    for (int stage = 0; stage < stages; ++stage) {
      if (!stages_seen.count(stage)) {
        warnings.push_back("pipeline stage " + std::to_string(stage) + " of " +
                           std::to_string(stages) + " has no trace");
      }
    }
    return warnings;
  }
  std::set<int> traced;
  for (const RankTrace& trace : ranks) traced.insert(true_rank(trace));
  if (traced.size() < 2) return warnings;
  for (int rank = *traced.begin() + 1; rank < *traced.rbegin(); ++rank) {
    if (!traced.count(rank)) {
      warnings.push_back("rank " + std::to_string(rank) + " is missing (ranks " +
                         std::to_string(*traced.begin()) + " to " +
                         std::to_string(*traced.rbegin()) + " are traced)");
    }
  }
  return warnings;
}

}  // namespace

int true_rank(const RankTrace& trace) {
  return trace.distributed_rank >= 0 ? trace.distributed_rank : trace.rank;
}

std::optional<PipelinePosition> pipeline_position(const RankTrace& trace) {
  const int rank = true_rank(trace);
  for (const ProcessGroupInfo& group : trace.process_groups) {
    if (comm_kind_of_group(group.desc) != CommKind::kPpP2p) continue;
    const auto at = std::find(group.ranks.begin(), group.ranks.end(), rank);
    if (at == group.ranks.end()) continue;
    return PipelinePosition{static_cast<int>(at - group.ranks.begin()),
                            static_cast<int>(group.ranks.size())};
  }
  return std::nullopt;
}

Result<TraceDirectory> read_trace_directory(const std::string& path, unsigned threads_max) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    return make_error(path + ": not a directory");
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    if (entry.is_regular_file() && is_trace_file_name(entry.path().filename().string())) {
      files.push_back(entry.path().string());
    }
  }
  if (error) return make_error(path + ": cannot list: " + error.message());
  if (files.empty()) return make_error(path + ": no trace files (*.json, *.json.gz) in it");
  std::sort(files.begin(), files.end());

  std::vector<std::optional<Result<RankTrace>>> results(files.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&]() {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      results[i].emplace(read_trace_file(files[i]));
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = static_cast<unsigned>(
      std::min<std::size_t>(files.size(), threads_max == 0 ? hardware : threads_max));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();

  TraceDirectory directory;
  directory.path = path;
  std::map<int, std::size_t> slot_of_rank;
  std::optional<std::string> first_error;
  for (auto& result : results) {
    if (!result->ok()) {
      if (!first_error) first_error = result->error();
      directory.warnings.push_back("skipped " + result->error());
      continue;
    }
    RankTrace trace = std::move(*result).value();
    if (trace.rank_found && trace.distributed_rank >= 0 && trace.distributed_rank != trace.rank) {
      directory.warnings.push_back(trace.path + ": rank read as " + std::to_string(trace.rank) +
                                   ", distributedInfo.rank is " +
                                   std::to_string(trace.distributed_rank));
    } else if (!trace.rank_found && trace.distributed_rank > 0) {
      directory.warnings.push_back(
          trace.path + ": rank read as 0, as HTA does, because distributedInfo.rank (" +
          std::to_string(trace.distributed_rank) + ") is written without a space after the colon");
    } else if (!trace.rank_found) {
      directory.warnings.push_back(trace.path + ": no rank in the trace; taken as rank 0");
    }
    const auto [slot, inserted] = slot_of_rank.emplace(trace.rank, directory.ranks.size());
    if (inserted) {
      directory.ranks.push_back(std::move(trace));
    } else {
      directory.warnings.push_back(trace.path + ": rank " + std::to_string(trace.rank) +
                                   " again; it replaces " + directory.ranks[slot->second].path);
      directory.ranks[slot->second] = std::move(trace);
    }
  }
  if (directory.ranks.empty()) return make_error(*first_error);
  std::sort(directory.ranks.begin(), directory.ranks.end(),
            [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  for (std::string& warning : gap_warnings(directory.ranks)) {
    directory.warnings.push_back(std::move(warning));
  }
  return directory;
}

}  // namespace attune::profiler
