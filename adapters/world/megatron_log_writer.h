// The text a Megatron-LM training job writes, for a simulated run, in the exact formats of
// shared/reference/megatron_lm.md §2, so that attune's metrics reader (adapters/metrics) and
// its resolved-arguments check (gate/resolved_args.h) read it as they read a real job's log:
//  - start-up: "using world size: ...", the effective arguments block (every argument Megatron
//    prints, the recipe's values over ArgCatalog's defaults, the model and workload, and the
//    silent rewrites of validate_args), the parameter counts per pipeline rank, and
//    "[before the start of training step] datetime: ...";
//  - one iteration line per log interval (averages over the interval, as Megatron computes them),
//    and the memory report of every data-parallel-rank-0 process after the first two logs;
//  - "[after training is done] datetime: ..." on success;
//  - on failure the real error text: Megatron's AssertionError traceback for an invalid layout,
//    PyTorch's CUDA out-of-memory error, NVSHMEM's initialisation failure, NCCL's network error
//    or Slurm's node failure, Megatron's NaN check, then torchrun's ChildFailedError.
//
// Incremental: a caller appends the pieces in the order of the run's timeline, one step at a
// time, so a real-time job can write its log as it goes. Each piece carries the timestamp the
// caller gives. Owns copies of what it needs; not thread-safe (REQUIRES: external
// synchronization).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "adapters/model/layout.h"
#include "adapters/model/workload.h"
#include "adapters/world/world.h"
#include "events/recipe.h"

namespace attune::sim {

constexpr int kArgumentDotsColumn = 48;  // Megatron pads a dest with (48 - length) dots

// The effective arguments of the run as (dest, Python str of the value), sorted as Megatron
// prints them. `log_interval` and `train_iters` are the values the job runs with.
std::vector<std::pair<std::string, std::string>> effective_arguments(const Workload& workload,
                                                                     const Recipe& recipe,
                                                                     const ResolvedLayout& resolved,
                                                                     std::uint32_t train_iters,
                                                                     std::uint32_t log_interval);

// The Megatron-LM flags that describe the workload's model and sequence, as a launch script
// passes them: what effective_arguments reads from the model rather than from the recipe. A
// setting equal to Megatron's default (the kv channels of hidden/heads, the dense width 4h or its
// SwiGLU form, a vocabulary divisor of 128) is left out, so Megatron derives it as it would.
std::vector<std::string> model_flags(const Workload& workload);

// One line of the arguments block, without its newline: two spaces, the dest, a space,
// (48 - length) dots, a space and the value.
std::string argument_line(const std::string& dest, const std::string& value);

// Megatron's timestamp: "YYYY-mm-dd HH:MM:SS.ffffff" (UTC).
std::string megatron_datetime(std::int64_t unix_ns);

class MegatronLogWriter {
 public:
  // `run` must come from World::simulate of `workload` and `recipe`. `gpus_per_node` maps ranks
  // to nodes and devices in error messages.
  MegatronLogWriter(const Workload& workload, const Recipe& recipe, const SimulatedRun& run,
                    int gpus_per_node);

  // The log interval the job runs with: the recipe's --log-interval, else 1 (the run generator
  // of every attune launcher sets it, so that each step is measured).
  std::uint32_t log_interval() const { return log_interval_; }

  // "using world size ..." and the arguments block: what validate_args prints. Empty for a run
  // that Megatron refuses at start-up (the assertion fires before the block is printed).
  std::string arguments_text() const;
  // Parameter counts and "[before the start of training step] ...", at the end of start-up.
  std::string training_start_text(std::int64_t now_unix_ns) const;
  // What the job prints at the end of step `step` (1-based, in order): the iteration line when
  // the step ends a log interval (or is the first), then the memory report after the first two
  // logs. REQUIRES: step <= the run's completed steps; called once per step, in order.
  std::string step_text(std::uint32_t step, std::int64_t now_unix_ns);
  // "[after training is done] ...". REQUIRES: the run completed.
  std::string completion_text(std::int64_t now_unix_ns) const;
  // The error text of a failed run (empty for a completed run or a hang).
  std::string failure_text(std::int64_t now_unix_ns) const;

 private:
  std::string out_of_memory_text(std::int64_t now_unix_ns) const;
  std::vector<std::string> out_of_memory_frames(bool at_setup) const;
  std::string crash_text(std::int64_t now_unix_ns) const;
  std::string infrastructure_text(std::int64_t now_unix_ns) const;
  std::string iteration_line(std::uint32_t step, std::int64_t now_unix_ns) const;
  std::string memory_report(std::uint32_t step) const;
  std::string traceback(int rank, const std::vector<std::string>& frames,
                        const std::string& error) const;
  std::string child_failed(int rank, int exit_code, std::int64_t now_unix_ns) const;
  std::string node_of_rank(int rank) const;

  Workload workload_;
  Recipe recipe_;
  SimulatedRun run_;
  int gpus_per_node_ = 8;
  bool resolved_ok_ = false;
  ResolvedLayout resolved_;
  std::uint32_t log_interval_ = 1;
  double tflop_per_gpu_per_step_ = 0;  // Megatron's model FLOPs of a step, per GPU, in TFLOP
  // Accumulators of the current log interval, as training_log keeps them.
  std::uint32_t interval_first_step_ = 1;
  std::uint32_t logs_printed_ = 0;
};

}  // namespace attune::sim
