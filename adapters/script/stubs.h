// The stub programs: stand-ins, first on PATH, for the programs a launch script calls.
//
// resolve_launch_script() lets real bash run the user's script; what bash finds for python, the
// launchers, the Slurm and MPI wrappers and the cluster tools are these small bash scripts,
// written into a fresh folder for each run:
//   python, python3, python3.X  record the call (argv and `env -0`), print nothing, exit 0;
//                               `-m torch.distributed.run|launch` behaves like torchrun
//   torchrun, deepspeed         record their own command line, skip their options, then run
//                               `python3 PROGRAM ARGS` (so the program's call is recorded too)
//   mpirun, mpiexec             the same, after applying `-x VAR=VALUE`, with rank 0 of -np
//   srun, numactl, shifter, singularity/apptainer exec, ray job submit, ds_ssh
//                               skip their options and run the rest (srun as task 0)
//   sbatch                      runs the batch script (a file, --wrap or stdin) at once
//   nvidia-smi, hostname, scontrol, date, shuf
//                               print what a node of 8 H100s would, at 2026-01-01 00:00:00 UTC
//   sleep, pip, module, conda, ray start/stop, pkill, killall, pytest   do nothing
//   wget, curl, ssh, scp, git clone/fetch/pull/push                     fail
// A launcher exports ATTUNE_STUB_LAUNCHER (the name of its record) to what it runs, so that the
// program's record names the launcher that started it.
//
// The record folder holds one file per call, call-000001, call-000002, ... in the order of the
// calls, each a list of NUL-terminated fields:
//   KIND LAUNCHER CWD COMMAND_AT ARGC ARGV[0] ... ARGV[ARGC-1] and then the environment (env -0)
// KIND is "python" or "launcher"; LAUNCHER the record of the launcher that started the process,
// "" if none; COMMAND_AT the index in ARGV of the python program (0 for -c, -m or stdin) or of
// the command a launcher runs; ARGV[0] the name the stub was called by.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attune::script {

// A runaway loop of calls stops being recorded here (the time limit ends it).
inline constexpr int kStubCallsMax = 4096;
// The variables the stubs themselves read or set; none of them belongs to the script.
inline constexpr std::string_view kStubVariablePrefix = "ATTUNE_STUB_";
inline constexpr std::string_view kStubRecordsVariable = "ATTUNE_STUB_RECORDS";
// The moment `date` reports: 2026-01-01 00:00:00 UTC.
inline constexpr long long kStubDateUnixSeconds = 1'767'225'600;

struct StubSettings {
  // The folders as the script sees them (inside the sandbox, or on this machine).
  std::string stub_dir;
  std::string records_dir;  // the stubs' records; ATTUNE_STUB_RECORDS overrides it
  std::string scratch_dir;  // sbatch keeps a batch script from stdin here
  std::string hostname;     // what `hostname` prints
};

// Every stub program: (file name, text of an executable bash script).
std::vector<std::pair<std::string, std::string>> stub_programs(const StubSettings& settings);

}  // namespace attune::script
