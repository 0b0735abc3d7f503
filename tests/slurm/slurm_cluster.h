// The Slurm cluster the tests run against: one per test binary, started by a gtest Environment
// through slurm_cluster.sh (munged, slurmctld, four slurmd as node1..node4 with eight fake GPUs
// each, on loopback, under a scratch folder) and stopped by PID when the binary ends. When it
// cannot start, every test fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attune::slurm_test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command line with SLURM_CONF set to the test cluster; stdout captured.
CommandResult shell(const std::string& command_line);

class Cluster {
 public:
  bool ready() const { return ready_; }
  const std::string& start_error() const { return start_error_; }
  const std::string& dir() const { return dir_; }
  std::string conf() const { return dir_ + "/etc/slurm.conf"; }
  std::string jobcomp_file() const { return dir_ + "/log/jobcomp.txt"; }
  // A folder of squeue/sbatch/... wrappers that count their calls in `counts_dir()/NAME`.
  const std::string& wrappers_dir() const { return wrappers_dir_; }
  const std::string& counts_dir() const { return counts_dir_; }
  std::uint64_t calls(const std::string& command) const;
  void reset_calls() const;

  // A crashed node: its slurmd killed, and the controller told at once (it would notice only
  // after SlurmdTimeout and a ping cycle, about 30 s).
  bool fail_node(const std::string& node) const;
  // The node back in service.
  bool restore_node(const std::string& node) const;
  // Every job cancelled and gone, every node idle again.
  bool settle() const;

  void start();
  void stop();

 private:
  bool ready_ = false;
  std::string start_error_;
  std::string dir_;
  std::string wrappers_dir_;
  std::string counts_dir_;
  int port_ = 0;
};

Cluster& cluster();

}  // namespace attune::slurm_test
