// MegatronLog: what one Megatron-LM training log says, read line by line.
//
// Owns the parsing of the log formats of Megatron-LM (shared/reference/megatron_lm.md §2): the
// per-iteration lines, the memory reports, the arguments block, and the fatal and diagnostic
// strings that failure_class.h weighs. Pure: the caller reads the file and feeds its bytes, in
// pieces split anywhere; nothing here touches a file, a clock or a thread.
//
// Launcher prefixes are read and removed before a line is parsed, in any order and up to
// kPrefixesMax per line: `[rank3]:` (PyTorch), `[default7]:` (torchrun's role and local rank),
// `12: ` (srun -l, possibly space-padded) and timestamps (`2026-08-22T15:31:07.123Z `,
// `[2026-08-22 15:31:07,123] `). The ranks they name are the line's source.
//
// Iteration lines. Only the last global rank prints them, but a log may hold several sources:
// per iteration the line from the highest source is kept (sources compare by their ranks,
// outermost prefix first; an unprefixed line is the lowest), so an iteration is never counted
// twice; from one source a later line replaces an earlier one (a restart in the same log). A
// line is taken when it is whole: every segment from the header to `number of nan iterations`
// is ` key: value ` closed by '|', the fields Megatron always prints are there and numeric, none
// of Megatron's own fields repeats, and no second header hides in the line (older forms and cut
// lines below). Anything else (an unterminated last line, two ranks' output glued together) is
// counted in iteration_lines_rejected and dropped. Unknown keys (forks, the MoE string) are
// skipped.
//
// Lines split by srun. srun -l labels every piece it forwards, and a line the task wrote in two
// writes may come out as two labelled lines (`0: [default0]:... | res`, `0: erved: 42498.00`).
// Where a task's lines carry torchrun's or PyTorch's own prefix (`[default0]:`, `[rank0]:`), a
// later line of that task without it, and not opening with another bracket, continues the line
// before: the reader holds each task's last line until its next one shows which it is.
//
// Failure signs are kept with their file, line and source. Lines logged at warning or info level
// (`[rank24]:W0527 00:19:08.340000 50695 codecache.py:1052] ...`, `[W527 ...]`) are no signs,
// tracebacks inside them included. After a traceback, the first unindented line of the same
// source is its exception: it is a program error unless it only echoes a distributed failure.
//
// Older iteration lines (before 2021) print neither `consumed samples` nor `global batch size`;
// they are read all the same, with a global batch size of 0 (not printed). So are 2019's lines
// (` learning rate 2.020E-06 | lm loss 9.44 |`, no counters) and NeMo 2's (`train_step_timing in
// s: 27.01`). A newline-terminated line cut inside a segment (a pasted excerpt) is read for the
// segments it closed, if they hold the elapsed time; it is marked cut.
//
// Memory: the reader keeps one record per iteration (up to kIterationsKeptMax), one peak per
// reporting rank (up to kReportingRanksMax), the last arguments block (up to kArgumentLinesMax
// lines) and the first line of each failure sign; every other line is dropped once read. A line
// longer than kLineBytesMax is cut to that length and read as unterminated.
//
// Thread-safety: none; one reader per log (REQUIRES: external synchronization).
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"

namespace attune {

constexpr std::size_t kPrefixesMax = 4;
constexpr std::size_t kLineBytesMax = 64 * 1024;
constexpr std::size_t kIterationsKeptMax = 200'000;
constexpr std::size_t kReportingRanksMax = 65'536;
constexpr std::size_t kArgumentLinesMax = 4096;
constexpr std::size_t kSignLineBytesMax = 1024;
constexpr std::size_t kHeldTasksMax = 4096;           // srun tasks whose split lines are rejoined
constexpr std::size_t kHeldLineBytesMax = 16 * 1024;  // longer lines are read as they come
constexpr std::uint32_t kTracebackIdleLinesMax = 8;   // then a traceback without exception ends

// The ranks a line's launcher prefixes name, outermost first: `3: [default7]:` is {3, 7}, an
// unprefixed line is {}. Compared lexicographically, so {} is the lowest source.
struct LineSource {
  std::array<std::uint32_t, kPrefixesMax> ranks{};
  std::uint8_t depth = 0;

  friend std::strong_ordering operator<=>(const LineSource& a, const LineSource& b);
  friend bool operator==(const LineSource& a, const LineSource& b) { return (a <=> b) == 0; }
};

struct NamedValue {
  std::string name;
  double value = 0.0;

  friend bool operator==(const NamedValue&, const NamedValue&) = default;
};

// One iteration line (§2.1). Timing and losses are averages over the line's log interval;
// learning rate, loss scale and grad norm are the current iteration's.
struct IterationLine {
  std::uint64_t iteration = 0;  // 1-based, as printed
  std::uint64_t train_iters = 0;
  std::uint64_t consumed_samples = 0;
  double elapsed_ms_per_iteration = 0.0;
  std::optional<double> throughput_tflops_per_gpu;  // only with --log-throughput
  std::optional<double> learning_rate;
  std::uint64_t global_batch_size = 0;
  // Absent when Megatron printed none: it prints a loss only when its average is >= 0, so a NaN
  // average, or an interval whose iterations were all skipped, leaves it out.
  std::optional<double> lm_loss;
  std::vector<NamedValue> other_losses;  // MoE and MTP losses (`load_balancing_loss`, ...)
  double loss_scale = 0.0;
  std::optional<double> grad_norm;       // absent when the current iteration was skipped
  std::uint32_t skipped_iterations = 0;  // Megatron's counters, reset at each log interval
  std::uint32_t nan_iterations = 0;
  LineSource source;
  std::uint32_t file = 0;         // index into MegatronLog::files
  std::uint64_t line_number = 0;  // 1-based, within its file
  bool cut = false;               // cut short inside a segment: the fields after the cut are absent

  friend bool operator==(const IterationLine&, const IterationLine&) = default;
};

// The largest figures one rank reported in its `[Rank N] ... memory (MB)` lines (MB = 2^20 B).
struct RankMemory {
  std::uint32_t rank = 0;
  double max_allocated_mb = 0.0;
  double max_reserved_mb = 0.0;
  std::uint32_t reports = 0;

  friend bool operator==(const RankMemory&, const RankMemory&) = default;
};

// The effective arguments block (rank 0, after validate_args' rewrites).
struct ArgumentsBlock {
  std::vector<std::string> lines;  // `  name ..... value`, as printed, launcher prefix removed
  std::map<std::string, std::string> values;  // name -> value text (Python's str of the value)
  bool complete = false;                      // its end line was read

  // The value of `name` as an unsigned integer; nullopt when absent or not one ("None").
  std::optional<std::uint64_t> unsigned_value(std::string_view name) const;

  friend bool operator==(const ArgumentsBlock&, const ArgumentsBlock&) = default;
};

// Kinds of fatal and diagnostic lines, the strongest evidence of a root cause first.
enum class FailureSign : std::uint8_t {
  kOutOfMemory,  // CUDA out of memory, from PyTorch, NCCL or cuBLAS
  // The hardware or the node reports a fault: a critical Xid, an uncorrectable ECC error, Slurm's
  // node failure. It outranks the program errors it causes (an illegal memory access).
  kHardwareFault,
  // An error that names its own cause: AssertionError, ValueError, a Megatron NaN/Inf check, an
  // illegal memory access, ... (not one that only echoes a distributed failure).
  kProgramError,
  // NCCL network/system errors, a NET plugin that cannot start, a stale file handle, a full disk,
  // a preemption.
  kInfrastructure,
  kCollectiveTimeout,  // the NCCL watchdog caught a collective timeout; a Slurm time limit
  // An NCCL error without a named cause (unhandled CUDA error, invalid usage, a peer that
  // vanished): a recipe can cause it and so can a node, and the log alone cannot tell which.
  kSuspectedInfrastructure,
  // A traceback, or an error that echoes a failure elsewhere (DistBackendError without a network
  // cause, ChildFailedError, an uncaught C++ exception, SystemExit).
  kErrorEcho,
};
constexpr std::size_t kFailureSignCount = 7;
constexpr std::size_t kSignsPerKindMax = 64;  // signs kept per kind, in reading order
constexpr std::size_t kNodesKeptMax = 4096;

struct SignLine {
  std::uint64_t line_number = 0;  // 1-based, within its file
  std::string text;               // the whole line, cut to kSignLineBytesMax bytes
  FailureSign sign = FailureSign::kErrorEcho;
  FailureCause cause = FailureCause::kUnknown;  // what its mark names (events/event.h)
  std::uint32_t file = 0;                       // index into MegatronLog::files
  LineSource source;
  std::string host;  // pdsh's host label of the line, when it had one
  // It came before its file's first line of the training program: the batch script's preamble
  // (a tool's error, a module that failed to load) rather than the training's own output.
  bool preamble = false;
  // Training went on after it: at least two iterations were logged after it in its file, or a
  // line that shows the training got through (`successfully saved checkpoint`, `[after training
  // is done]`), or it is in the preamble and the log shows iterations. It did not end the job.
  bool superseded = false;

  friend bool operator==(const SignLine&, const SignLine&) = default;
};

// What the launcher said of one node's tasks: Slurm's `srun: error: HOST: tasks 32-35: Exited
// with exit code 1` (failed) or `... : Killed` (stopped by srun after another task failed), and
// torchrun's failure table (`host : HOST`, `rank : R`: failed).
struct NodeTasks {
  std::vector<std::uint32_t> failed;  // ascending
  std::vector<std::uint32_t> killed;  // ascending

  friend bool operator==(const NodeTasks&, const NodeTasks&) = default;
};

struct MegatronLog {
  std::vector<IterationLine> iterations;  // ascending by iteration, one per iteration
  std::vector<RankMemory> memory;         // ascending by rank
  ArgumentsBlock arguments;               // the last block printed; empty when none
  std::array<std::optional<SignLine>, kFailureSignCount> first_signs;  // indexed by FailureSign
  std::vector<SignLine> signs;             // every kind's first kSignsPerKindMax, in reading order
  std::map<std::string, NodeTasks> nodes;  // by host name, from srun's task reports
  std::vector<std::string> files;          // the files read, in order ("" for one unnamed text)
  // Per file: the line of the training program's first line (a launcher-labelled line or one of
  // Megatron's start-up lines); 0 when the file has none.
  std::vector<std::uint64_t> first_program_lines;
  std::uint64_t lines_read = 0;
  std::uint64_t lines_rejoined = 0;            // pieces of lines split by srun, put back together
  std::uint64_t iteration_lines_rejected = 0;  // truncated or garbled iteration lines
  std::uint64_t iterations_dropped = 0;        // new iterations beyond kIterationsKeptMax

  const std::optional<SignLine>& first_sign(FailureSign sign) const {
    return first_signs[static_cast<std::size_t>(sign)];
  }
};

class MegatronLogReader {
 public:
  // Starts the next file of the same job (a job's .out, then its .err): the line in progress
  // ends, and line numbers start again at 1. Without a call, the bytes are one unnamed file.
  void start_file(std::string name);

  // Reads the next bytes of the log; a line may be split across calls anywhere.
  void feed(std::string_view bytes);

  // Reads a last line that has no newline, then hands over what the log says. An unterminated
  // line may be cut: it counts only in forms that show their own end (an iteration line's
  // closing '|', a memory figure's two decimals, a fatal string), never as an argument line.
  // REQUIRES: called once; the reader is spent afterwards.
  MegatronLog finish();

 private:
  // A line of srun -l output held until the next line of its task shows whether srun split it.
  struct HeldLine {
    std::string text;
    std::uint64_t line_number = 0;
    bool terminated = true;
  };
  struct TaskStream {
    std::string inner_prefix;  // `[default0]:` or `[rank0]:` when the task's lines carry one
    std::optional<HeldLine> held;
  };

  void end_file();
  void read_line(std::string_view line, bool terminated);
  void flush_held(TaskStream& stream);
  void process_line(std::string_view line, std::uint64_t line_number, bool terminated);
  void read_iteration_line(std::string_view line, LineSource source, std::uint64_t line_number,
                           bool terminated);
  void read_memory_line(std::string_view line, bool terminated);
  void read_arguments_line(std::string_view content, LineSource source, bool terminated);
  void read_signs(std::string_view line, std::string_view content, LineSource source,
                  std::uint64_t line_number);
  void read_node_report(std::string_view content);
  void read_torchrun_failure(std::string_view text);
  void add_sign(FailureSign sign, FailureCause cause, std::string_view line, LineSource source,
                std::uint64_t line_number);

  std::string pending_;  // the current line's bytes so far (at most kLineBytesMax)
  bool pending_cut_ = false;
  bool finished_ = false;
  bool file_started_ = false;
  std::uint64_t file_line_ = 0;                // lines read in the current file
  std::map<std::uint32_t, TaskStream> tasks_;  // by srun label, at most kHeldTasksMax
  // Per file: the first line of the training program (0: none yet), and the line numbers of the
  // last two accepted iteration lines (0: none).
  std::vector<std::uint64_t> first_program_line_;
  std::vector<std::array<std::uint64_t, 2>> last_iteration_lines_;
  // Per file: the last line that shows the training got through (`[after training is done]`,
  // `successfully saved checkpoint`); 0: none.
  std::vector<std::uint64_t> last_completion_line_;
  // Open tracebacks by source: the next line of the source at the header's indentation that
  // names an exception is its exception.
  struct OpenTraceback {
    std::size_t indent = 0;
    std::uint32_t idle_lines = 0;  // lines at the header's indentation that named no exception
    bool after_exception = false;  // its exception was read; only a chain may follow
    bool chained = false;          // "During handling of the above exception ..." was read
    bool root_seen = false;        // the chain's first exception was read
  };
  enum class ExceptionRole : std::uint8_t { kNone, kException, kChainedEcho };
  ExceptionRole follow_traceback(std::string_view text, std::size_t indent, LineSource source);
  std::map<LineSource, OpenTraceback> in_traceback_;
  std::array<std::uint32_t, kFailureSignCount> signs_kept_{};
  std::size_t signs_with_host_ = 0;  // signs before this index have had their host set
  std::string torchrun_host_;        // the host of the failure table entry being read
  std::map<std::uint64_t, IterationLine> iterations_;
  std::map<std::uint32_t, RankMemory> memory_;
  bool arguments_open_ = false;
  LineSource arguments_source_;
  MegatronLog log_;
};

// Reads a whole log held in memory.
MegatronLog read_megatron_log(std::string_view text);

}  // namespace attune
