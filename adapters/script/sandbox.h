// The bubblewrap sandbox a launch script runs in: its command line, and what may be placed in it.
//
// Inside, the script sees a throwaway machine: no network; its own PID, IPC, UTS (hostname) and
// mount namespaces; no capabilities; the host's /usr, /bin, /sbin and /lib* read-only; a fresh
// /proc and /dev; a writable /etc holding the host's /etc entries read-only; and everything else
// (/, /tmp, /home/user, the folders of the invocation) on one tmpfs of at most
// kSandboxTmpfsBytesMax that vanishes with the sandbox. The host files the script needs are bound
// at the paths it expects: read-only unless a mount says writable (the stubs' record folder).
// bwrap dies with its parent, and the sandbox with bwrap.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "events/result.h"

namespace attune::script {

// The tmpfs under everything the script may write.
inline constexpr std::uint64_t kSandboxTmpfsBytesMax = 512ull * 1024 * 1024;
inline constexpr std::string_view kSandboxHome = "/home/user";
// Where a run's own folders (stubs, records, scratch) appear inside.
inline constexpr std::string_view kSandboxRunDir = "/.attune";

struct SandboxMount {
  std::string host_path;
  std::string inside_path;
  bool writable = false;
};

struct SandboxPlan {
  std::string hostname;
  std::vector<SandboxMount> mounts;      // bound in this order, their parent folders made first
  std::vector<std::string> directories;  // empty folders made inside, after the mounts
  std::string cwd;                       // made if missing
  std::vector<std::string> command;      // what runs inside: its argv, argv[0] a path
};

// The path of the bwrap binary, or an error saying that bubblewrap is not installed.
Result<std::string> find_bwrap();

// Whether something can be placed at `inside_path`: absolute, without "." or "..", not in the
// host's read-only folders (/usr, /bin, /sbin, /lib*, an existing folder of /etc), not in /proc,
// /dev or kSandboxRunDir.
Status check_inside_path(const std::string& inside_path);

// The whole bwrap command line for `plan`, argv[0] being `bwrap_path`. Reads the listing of the
// host's /etc. REQUIRES: every path of `plan` passed check_inside_path.
std::vector<std::string> bwrap_argv(const std::string& bwrap_path, const SandboxPlan& plan);

}  // namespace attune::script
