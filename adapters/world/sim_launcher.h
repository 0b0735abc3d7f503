// SimLauncher: the Launcher port on the simulated cluster, in the scheduler's time.
//
// Each submitted job gets a node allocation from the simulated world (avoiding nodes busy with
// other jobs, and the nodes the launch asks to exclude, in the order asked, as far as enough
// others remain), runs as the world decides (hidden
// efficiency factors, noise, slow nodes, failures, hangs), and writes a real Megatron-format log
// (and Kineto traces when profiled) under the cluster's folder. Reports come back through the
// scheduler: submitted now, started when admitted, finished when the job ends or is cancelled;
// a hanging job never finishes by itself.
//
// The cluster keeps its own durable record of submitted jobs (jobs.jsonl, like a scheduler's
// state), keyed by the deterministic job name, so after a crash reattach() finds a job that was
// submitted but never recorded in the ledger. REQUIRES: world and scheduler outlive it; all
// calls on the scheduler's thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "adapters/world/world.h"
#include "core/ports.h"
#include "core/scheduler.h"

namespace attune {

// Virtual seconds from submission to cluster admission when nodes are free.
inline constexpr double kSimSchedulingDelaySeconds = 5.0;

class SimLauncher final : public Launcher {
 public:
  // `root/cluster_dir` holds jobs.jsonl, logs/ and traces/; the paths the launcher reports are
  // relative to `root` (the ledger's folder), so the ledger does not depend on where it lies.
  // `seed` mixes into every run's seed.
  static Result<std::unique_ptr<SimLauncher>> open(const sim::World& world, Scheduler& scheduler,
                                                   std::string root, std::string cluster_dir,
                                                   std::uint64_t seed);
  ~SimLauncher() override;

  std::string name() const override { return "sim"; }
  void set_listener(Listener listener) override { listener_ = std::move(listener); }
  Status submit(const LaunchSpec& spec) override;
  void cancel(RunId run_id, const std::string& reason) override;
  Result<bool> reattach(const LaunchSpec& spec) override;
  std::optional<std::int64_t> last_progress_unix_ns(RunId run_id) const override;
  double expected_gpu_hours(const LaunchSpec& spec) const override;
  Result<std::string> read_log(const std::string& log_path) const override;
  Result<std::string> read_log_so_far(RunId run_id) const override;

  struct Job;

 private:
  SimLauncher(const sim::World& world, Scheduler& scheduler, std::string root,
              std::string cluster_dir, std::uint64_t seed);
  std::string absolute(const std::string& relative) const;
  Status record(const Job& job);
  void schedule(RunId run_id);
  void finish(RunId run_id, std::int64_t at_unix_ns, const std::string& final_state,
              const std::string& cancel_reason);
  void report(const JobReport& report);

  const sim::World& world_;
  Scheduler& scheduler_;
  std::string root_;
  std::string cluster_dir_;  // relative to root_
  std::uint64_t seed_;
  Listener listener_;
  std::map<std::string, std::unique_ptr<Job>> known_;  // by job name, from jobs.jsonl
  std::map<RunId, Job*> active_;
};

}  // namespace attune
