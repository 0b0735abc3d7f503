// The stubs' records of one run of a launch script, and what is read from them: which call is
// the training program, what environment the script gave it, which launcher started it.
//
// The record format is in adapters/script/stubs.h. Everything here but read_call_records is pure.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "events/result.h"

namespace attune::script {

// The variables that are not the script's doing: what every environment has (PATH, HOME), what
// bash sets itself, and what the stubs set for the task they pretend to be.
inline constexpr const char* kNotTheScriptsVariables[] = {
    "PATH", "HOME",         "PWD",           "OLDPWD",       "SHLVL",
    "_",    "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_JOB_ID"};
inline constexpr const char* kNotTheScriptsPrefixes[] = {"OMPI_COMM_WORLD_", "ATTUNE_STUB_"};

struct CallRecord {
  std::string id;           // the record's file name, "call-000003"
  std::string kind;         // "python" or "launcher"
  std::string launcher_id;  // the launcher's record that started this process; "" if none
  std::string cwd;
  std::size_t command_at = 0;  // python: the program's index in argv (0: -c, -m, stdin)
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};

// Every record in `records_dir`, in call order. A record cut short (the run was killed while it
// was written) is left out.
Result<std::vector<CallRecord>> read_call_records(const std::string& records_dir);

// The python program a python call ran, as given on its command line; "" for -c, -m and stdin.
std::string python_program(const CallRecord& call);

// The index in `calls` of the training program's call: of the python calls of a .py program,
// the one a launcher started, then the one with the most --flag arguments, then the last. A
// script's helpers (a data-config generator, a results collector) are .py programs too, but
// run before or after the training, with fewer flags and no launcher.
std::optional<std::size_t> training_call(const std::vector<CallRecord>& calls);

// What the script set or changed in the environment that `call` got: every variable but
// kNotTheScriptsVariables/Prefixes and those of `given_env` still holding the given value.
std::map<std::string, std::string> script_set_env(
    const CallRecord& call, const std::map<std::string, std::string>& given_env);

// The command line of the launcher that started `call`, up to its program: "torchrun
// --nproc_per_node 8 ...", "mpirun -np 16 ... python". "" when no launcher started it.
std::string launcher_line(const std::vector<CallRecord>& calls, const CallRecord& call);

// `call`'s command line on one line, each word shell-quoted where needed.
std::string command_line(const CallRecord& call);

}  // namespace attune::script
