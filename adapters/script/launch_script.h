// Reading a real launch script (Megatron-LM, DeepSpeed, Slurm batch scripts) the way bash runs it.
//
// Shell is not parsed here. Real bash runs the user's script, in a bubblewrap sandbox (see
// adapters/script/sandbox.h) with stub programs first on PATH (adapters/script/stubs.h): python
// records its argv and environment and exits printing nothing; torchrun, deepspeed, mpirun and
// `python -m torch.distributed.run` record their own command line and hand the program to
// python; srun, sbatch, numactl and the like run what they wrap; nvidia-smi, hostname, scontrol
// and date answer like a node of 8 H100s at a pinned moment; the network fails. What the script
// finally runs is then read from the records:
//   program, args  the training program's call: a python call of a .py program, preferring one
//                  that a launcher started, then the most --flag arguments, then the last
//   env            the variables in its environment that the script (or what it sourced, or a
//                  launcher's -x) set or changed; not PATH, HOME, bash's own (PWD, OLDPWD, SHLVL,
//                  _), the stubs' SLURM_PROCID/LOCALID/NODEID/JOB_ID and OMPI_COMM_WORLD_*, nor a
//                  variable of ScriptInput::env that still holds the value given
//   launcher       the launcher's command line before the program, "" when none started it
// The script runs with `env -i` plus PATH (the stubs, then the system's folders),
// HOME=/home/user and ScriptInput::env; stdin is /dev/null, so a script that reads it sees the end
// at once. Nothing it writes survives the run. A run past the time limit is killed, its whole
// process group (or the sandbox) with it.
//
// Not emulated: what the real launchers add (torch.distributed.launch's --local_rank, the
// workers' RANK/WORLD_SIZE), sbatch's --export, an asynchronous job. Where no sandbox can be
// made (no bubblewrap; user namespaces forbidden, as on many login nodes), the script runs only
// with the caller's explicit consent, on this machine, in a temporary folder: paths there are
// mapped back in the answer, but the script can reach the network and write outside that folder.
//
// Thread-safety: each call is independent; it spawns processes and reaps only its own.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "events/result.h"

namespace attune::script {

struct ScriptInput {
  std::string path;                        // the launch script on this machine
  std::vector<std::string> args;           // $1 $2 ...
  std::map<std::string, std::string> env;  // the script's environment beyond PATH and HOME
  std::string invocation_cwd;              // the working folder inside; empty: the script's folder
  std::string invocation_script_path;      // where the script appears inside; empty: `path`
  // (file on this machine, its path inside): sourced companions, wrappers such as entry.sh.
  std::vector<std::pair<std::string, std::string>> files;
  // (path inside, content): files the script expects to find. A path ending in '/' is an empty
  // folder; a content starting with "#!" is an executable.
  std::vector<std::pair<std::string, std::string>> empty_files_inside;
  std::string hostname = "node001";
  double timeout_seconds = 20;
  bool allow_unsandboxed = false;  // the user's explicit consent where no sandbox can be made
};

struct ResolvedScript {
  std::string program;                     // basename, e.g. "pretrain_gpt.py"
  std::string program_path;                // as given on the command line
  std::vector<std::string> args;           // every argv element after the program
  std::map<std::string, std::string> env;  // what the script set or changed (see above)
  std::string launcher;                    // "torchrun --nproc_per_node 8 --nnodes 1 ..." or ""
  std::vector<std::string> warnings;       // what could not be resolved
  bool sandboxed = false;
  int script_exit_status = 0;
};

// Companion files (as given on a command line or in a campaign file) at their own absolute
// paths inside the sandbox, as ScriptInput::files.
std::vector<std::pair<std::string, std::string>> companions_at_their_paths(
    const std::vector<std::string>& paths);

// The longest a script may run; the limits of a sandbox's disk are in sandbox.h.
inline constexpr double kScriptTimeoutSecondsMax = 600;
// Warnings beyond this many are summed up in one.
inline constexpr std::size_t kWarningsMax = 20;

// Whether a bubblewrap sandbox can be made here; if not, why not (in `why_not`, if given).
bool sandbox_available(std::string* why_not);

// Runs the script and reads its training program. Errors, one line naming the script: bad input
// (a missing file, an invalid path or hostname), no sandbox and no consent, a script that ends
// before reaching a training program ("<path>: bash exited 2 before reaching a training program:
// <its last stderr line>"), one still running at the time limit.
Result<ResolvedScript> resolve_launch_script(const ScriptInput& input);

// How the script runs: sandboxed, or on this machine (see above).
enum class Isolation { kSandbox, kUnsandboxed };

// resolve_launch_script with the isolation chosen by the caller (allow_unsandboxed is not
// consulted): for tests, and for a caller that already asked the user.
Result<ResolvedScript> resolve_launch_script_with(const ScriptInput& input, Isolation isolation);

// {"program", "program_path", "args", "env", "launcher", "warnings", "sandboxed",
// "script_exit_status"}, indented by 2.
std::string resolved_script_json(const ResolvedScript& resolved);

}  // namespace attune::script
