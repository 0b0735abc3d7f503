// run_timed: one command run to its end or to a time limit, with the tails of its output.
//
// The command starts in a process group of its own, stdin on /dev/null, with exactly the
// environment given (nothing of the caller's). When it exits, whatever it left running in
// its group is killed; when the time limit passes first, the whole group is killed and the
// outcome says so. REQUIRES: nothing else in the process reaps children it did not spawn.
#pragma once

#include <string>
#include <vector>

#include "events/result.h"

namespace attune::script {

// The most of a command's stdout and of its stderr that is kept: enough for their last lines.
inline constexpr std::size_t kOutputTailBytesMax = 16 * 1024;
// How often the time limit is checked while the command runs quietly.
inline constexpr int kTimedPollIntervalMs = 20;

struct TimedCommand {
  std::string program;            // the path that is executed
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "NAME=value": the whole environment
  std::string cwd;                // empty: the caller's
  double timeout_seconds = 20;
};

struct TimedOutcome {
  bool timed_out = false;
  int exit_status = 0;      // the exit code, or 128 + the signal that ended it
  std::string stdout_tail;  // the last kOutputTailBytesMax bytes of stdout
  std::string stderr_tail;  // ... and of stderr
};

// An error only when the command cannot be started at all.
Result<TimedOutcome> run_timed(const TimedCommand& command);

// The last non-empty line of `text`, without control characters, at most `length_max` bytes.
std::string last_line(const std::string& text, std::size_t length_max = 300);

}  // namespace attune::script
