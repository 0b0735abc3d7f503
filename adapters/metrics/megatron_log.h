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
// line is taken only when it is whole: every segment from the header to `number of nan
// iterations` is ` key: value ` closed by '|', the fields Megatron always prints are there and
// numeric, none of Megatron's own fields repeats, and no second header hides in the line.
// Anything else (a truncated last line, two ranks' output glued together) is counted in
// iteration_lines_rejected and dropped. Unknown keys (forks, the MoE string) are skipped.
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

namespace attune {

constexpr std::size_t kPrefixesMax = 4;
constexpr std::size_t kLineBytesMax = 64 * 1024;
constexpr std::size_t kIterationsKeptMax = 200'000;
constexpr std::size_t kReportingRanksMax = 65'536;
constexpr std::size_t kArgumentLinesMax = 4096;
constexpr std::size_t kSignLineBytesMax = 1024;

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
  // An error that names its own cause: AssertionError, ValueError, a Megatron NaN/Inf check, an
  // illegal memory access, ... (not one that only echoes a distributed failure).
  kProgramError,
  // NCCL network/system errors, a peer that vanished, a node failure, an uncorrectable ECC error.
  kInfrastructure,
  kCollectiveTimeout,  // the NCCL watchdog caught a collective timeout; a Slurm time limit
  // A traceback, or an error that echoes a failure elsewhere (DistBackendError without a network
  // cause, ChildFailedError, ncclUnhandledCudaError, an uncaught C++ exception).
  kErrorEcho,
};
constexpr std::size_t kFailureSignCount = 5;

struct SignLine {
  std::uint64_t line_number = 0;  // 1-based
  std::string text;               // the whole line, cut to kSignLineBytesMax bytes

  friend bool operator==(const SignLine&, const SignLine&) = default;
};

struct MegatronLog {
  std::vector<IterationLine> iterations;  // ascending by iteration, one per iteration
  std::vector<RankMemory> memory;         // ascending by rank
  ArgumentsBlock arguments;               // the last block printed; empty when none
  std::array<std::optional<SignLine>, kFailureSignCount> first_signs;  // indexed by FailureSign
  std::uint64_t lines_read = 0;
  std::uint64_t iteration_lines_rejected = 0;  // truncated or garbled iteration lines
  std::uint64_t iterations_dropped = 0;        // new iterations beyond kIterationsKeptMax

  const std::optional<SignLine>& first_sign(FailureSign sign) const {
    return first_signs[static_cast<std::size_t>(sign)];
  }
};

class MegatronLogReader {
 public:
  // Reads the next bytes of the log; a line may be split across calls anywhere.
  void feed(std::string_view bytes);

  // Reads a last line that has no newline, then hands over what the log says. An unterminated
  // line may be cut: it counts only in forms that show their own end (an iteration line's
  // closing '|', a memory figure's two decimals, a fatal string), never as an argument line.
  // REQUIRES: called once; the reader is spent afterwards.
  MegatronLog finish();

 private:
  void read_line(std::string_view line, bool terminated);
  void read_iteration_line(std::string_view line, LineSource source);
  void read_memory_line(std::string_view line);
  void read_arguments_line(std::string_view content, LineSource source, bool terminated);
  void read_signs(std::string_view line, std::string_view content);

  std::string pending_;  // the current line's bytes so far (at most kLineBytesMax)
  bool pending_cut_ = false;
  bool finished_ = false;
  std::map<std::uint64_t, IterationLine> iterations_;
  std::map<std::uint32_t, RankMemory> memory_;
  bool arguments_open_ = false;
  LineSource arguments_source_;
  MegatronLog log_;
};

// Reads a whole log held in memory.
MegatronLog read_megatron_log(std::string_view text);

}  // namespace attune
