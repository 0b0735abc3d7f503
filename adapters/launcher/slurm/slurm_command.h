// SlurmCommand: runs one Slurm client command (sbatch, squeue, scancel, sinfo, sacct, scontrol)
// and hands back its exit status and output.
//
// Each run is a child process with stdin from /dev/null and stdout and stderr captured, bounded
// in time and in output: a client that blocks (slurmctld down: squeue retries for a long time)
// is killed at the deadline, and output beyond kCommandOutputBytesMax is dropped. The caller's
// thread waits for it; the launcher keeps the number of runs per interval constant.
//
// Thread-safe (no shared state); each call spawns its own process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "events/result.h"

namespace attune {

inline constexpr std::size_t kCommandOutputBytesMax = 256u * 1024 * 1024;

struct CommandOutput {
  int exit_code = -1;  // -1 when killed at the deadline or by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH when it has no '/') with the process's environment. An Error
// only when the process cannot be started at all.
Result<CommandOutput> run_command(const std::vector<std::string>& argv, std::int64_t timeout_ms);

// The first line of a command's stderr (or its stdout), for one-line error messages.
std::string first_line_of(const CommandOutput& output);

}  // namespace attune
