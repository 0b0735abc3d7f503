#include "tests/slurm/slurm_cluster.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/tools/shell_command.h"

namespace attune::slurm_test {
namespace {

namespace fs = std::filesystem;

constexpr int kSettleTriesMax = 150;  // × 200 ms
const char* const kWrapped[] = {"sbatch", "squeue", "scancel", "sinfo", "sacct", "scontrol"};

std::string script() { return std::string(ATTUNE_SOURCE_DIR) + "/tests/slurm/slurm_cluster.sh"; }

class ClusterEnvironment : public ::testing::Environment {
 public:
  // A cluster that cannot start fails every test that needs it (each asserts it is ready),
  // rather than skipping them.
  void SetUp() override { cluster().start(); }
  void TearDown() override { cluster().stop(); }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ClusterEnvironment);

}  // namespace

Cluster& cluster() {
  static Cluster instance;
  return instance;
}

CommandResult shell(const std::string& command_line) {
  const testing_support::CommandOutcome run =
      testing_support::run_shell("SLURM_CONF=" + cluster().conf() + " " + command_line);
  CommandResult result;
  result.exit_code = run.exit_code;
  result.out = run.out;
  return result;
}

void Cluster::start() {
  dir_ = (fs::temp_directory_path() / ("attune-slurm-" + std::to_string(::getpid()))).string();
  // Distinct ports per test process, so that two test binaries can run side by side, and all
  // below Linux's default range of ephemeral ports (32768-60999), which outgoing connections take
  // at random. The script passes over a block that is in use.
  port_ = 10000 + static_cast<int>(::getpid() % 2600) * 8;
  const CommandResult started =
      shell("bash " + script() + " start " + dir_ + " " + std::to_string(port_) + " 2>&1");
  if (started.exit_code != 0) {
    start_error_ = started.out;
    return;
  }
  wrappers_dir_ = dir_ + "/wrappers";
  counts_dir_ = dir_ + "/counts";
  fs::create_directories(wrappers_dir_);
  fs::create_directories(counts_dir_);
  for (const char* command : kWrapped) {
    const std::string path = wrappers_dir_ + "/" + command;
    std::string real = shell(std::string("command -v ") + command).out;
    while (!real.empty() && (real.back() == '\n' || real.back() == ' ')) real.pop_back();
    std::ofstream(path) << "#!/bin/sh\necho >>" << counts_dir_ << "/" << command << "\nexec "
                        << (real.empty() ? std::string(command) : real) << " \"$@\"\n";
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  }
  ::setenv("SLURM_CONF", conf().c_str(), 1);
  ready_ = true;
}

void Cluster::stop() {
  if (dir_.empty()) return;
  (void)shell("bash " + script() + " stop " + dir_ + " >/dev/null 2>&1");
  std::error_code ec;
  fs::remove_all(dir_, ec);
  ready_ = false;
}

std::uint64_t Cluster::calls(const std::string& command) const {
  std::ifstream in(counts_dir_ + "/" + command);
  std::uint64_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

void Cluster::reset_calls() const {
  for (const char* command : kWrapped) {
    std::error_code ec;
    fs::remove(counts_dir_ + "/" + command, ec);
  }
}

bool Cluster::fail_node(const std::string& node) const {
  return shell("bash " + script() + " kill-node " + dir_ + " " + node).exit_code == 0 &&
         shell("scontrol update nodename=" + node + " state=down reason=attune-test").exit_code ==
             0;
}

bool Cluster::restore_node(const std::string& node) const {
  if (shell("bash " + script() + " start-node " + dir_ + " " + node).exit_code != 0) return false;
  for (int i = 0; i < kSettleTriesMax; ++i) {
    (void)shell("scontrol update nodename=" + node + " state=resume >/dev/null 2>&1");
    const CommandResult state = shell("sinfo -h -N -n " + node + " -o %T");
    if (state.out.rfind("idle", 0) == 0 || state.out.rfind("mixed", 0) == 0 ||
        state.out.rfind("allocated", 0) == 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

bool Cluster::settle() const {
  (void)shell("scancel --partition=debug >/dev/null 2>&1");
  for (int i = 0; i < kSettleTriesMax; ++i) {
    const CommandResult queued = shell("squeue -h -t PD,R,CG,S -o %i");
    const CommandResult idle = shell("sinfo -h -t idle -o %D | awk '{n += $1} END {print n + 0}'");
    if (queued.exit_code == 0 && queued.out.empty() && std::atoi(idle.out.c_str()) == 4) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

}  // namespace attune::slurm_test
