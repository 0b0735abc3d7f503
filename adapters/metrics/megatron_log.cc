#include "adapters/metrics/megatron_log.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <span>
#include <system_error>
#include <utility>

#include "events/assert.h"

namespace attune {

namespace {

// `------------------------ arguments ------------------------`: a title between runs of dashes
// (their length has changed across Megatron-LM's versions).
bool is_dashed_title(std::string_view line, std::string_view title) {
  const std::size_t first = line.find_first_not_of('-');
  const std::size_t last = line.find_last_not_of('-');
  if (first == 0 || first == std::string_view::npos || last + 1 == line.size()) return false;
  return line.substr(first, last - first + 1) == " " + std::string(title) + " ";
}
constexpr std::size_t kUnsignedDigitsMax = 19;  // fits std::uint64_t
constexpr std::size_t kSrunLabelDigitsMax = 7;

// Marks of each failure sign, matched anywhere in a line. From megatron_lm.md §2.3, plus the
// Slurm and NCCL messages that name a node failure, a preemption, a time limit or a dead link.
// A mark of a failure sign, and the cause it names.
struct Mark {
  std::string_view text;
  FailureCause cause;
};

constexpr Mark kOutOfMemoryMarks[] = {
    {"OutOfMemoryError", FailureCause::kOutOfMemory},
    {"CUDA out of memory", FailureCause::kOutOfMemory},
    {"CUDA error: out of memory", FailureCause::kOutOfMemory},
    {"'out of memory'", FailureCause::kOutOfMemory},  // NCCL: Cuda failure 2 'out of memory'
    {"CUBLAS_STATUS_ALLOC_FAILED", FailureCause::kOutOfMemory},
};
constexpr Mark kHardwareFaultMarks[] = {
    {"Critical Xid Error", FailureCause::kGpuFault},
    {"NVRM: Xid", FailureCause::kGpuFault},
    {"uncorrectable ECC error", FailureCause::kGpuFault},
    {"fallen off the bus", FailureCause::kGpuFault},
    {"DUE TO NODE FAILURE", FailureCause::kNodeFailure},
    {"Node failure on", FailureCause::kNodeFailure},
};
constexpr Mark kInfrastructureMarks[] = {
    {"ncclSystemError", FailureCause::kSystem},
    {"ncclInternalError", FailureCause::kSystem},
    {"unhandled system error", FailureCause::kSystem},
    {"NET/IB : Got completion from peer", FailureCause::kNetwork},
    {"Failed to initialize any NET plugin", FailureCause::kNetwork},
    // An InfiniBand verbs call failed in NCCL's network layer.
    {"NCCL WARN Call to ibv_", FailureCause::kNetwork},
    {"Input/output error", FailureCause::kStorage},  // EIO from the filesystem
    // torch.save: the storage refused the write.
    {"PytorchStreamWriter failed writing file", FailureCause::kStorage},
    {"Could not find NET with id", FailureCause::kNetwork},
    {"Stale file handle", FailureCause::kStorage},
    {"No space left on device", FailureCause::kStorage},
    {"Disk quota exceeded", FailureCause::kStorage},
    {"DUE TO PREEMPTION", FailureCause::kPreemption},
};
constexpr Mark kCollectiveTimeoutMarks[] = {
    {"Watchdog caught collective operation timeout", FailureCause::kCollectiveTimeout},
    {"DUE TO TIME LIMIT", FailureCause::kTimeLimit},
    // PyTorch's heartbeat monitor: the NCCL watchdog itself is blocked (a CUDA or NCCL call that
    // never returns) and the process is taken down.
    {"ProcessGroupNCCL's watchdog got stuck", FailureCause::kNoProgress},
};
// Slurm's word on the whole job: true whatever the training did before it.
constexpr std::string_view kJobLevelMarks[] = {
    "DUE TO TIME LIMIT",
    "DUE TO NODE FAILURE",
    "DUE TO PREEMPTION",
};
constexpr Mark kProgramErrorMarks[] = {
    // Megatron's rerun state machine: NaN/Inf/spiky loss or grad norm.
    {"Unexpected result", FailureCause::kNonFiniteValue},
    // Megatron's older check: "Rank 3: found NaN in local grad norm in backwards pass".
    {"found NaN in local", FailureCause::kNonFiniteValue},
    {"illegal memory access", FailureCause::kIllegalMemoryAccess},
    {"Duplicate GPU detected", FailureCause::kDuplicateGpu},  // NCCL: two ranks on one GPU
    // Open MPI's banner for an MPI call that failed under MPI_ERRORS_ARE_FATAL (MPI_Init_thread
    // at start-up): the job aborts, for a reason the banner does not name.
    {"An error occurred in MPI_", FailureCause::kUnknown},
    // NVSHMEM (DeepEP's transport) could not start: no transport reaches the peers, such as
    // IBGDA across nodes on a network without it. A setting of the job, not a passing fault.
    // NVSHMEM's start-up stops at the first step that fails and says which (its init.cu): a
    // B300 fabric without DCT queue pairs ends on "setup connections failed" and never prints
    // "initialization failed".
    {"nvshmem initialization failed", FailureCause::kTransportStart},
    {"nvshmem setup connections failed", FailureCause::kTransportStart},
    {"nvshmem detect topo failed", FailureCause::kTransportStart},
    {"Unable to initialize any transports", FailureCause::kTransportStart},
};
// A peer that vanished may have crashed for a reason of its own that this log does not show.
constexpr std::string_view kSuspectedInfrastructureMarks[] = {
    "ncclRemoteError",
    "remote process exiting prematurely",
    "closed by remote peer",
    "Connection reset by peer",
    "Connection closed by peer",
    "ncclUnhandledCudaError",
    "unhandled cuda error",
    "ncclInvalidUsage",
    "NCCL error in:",
};
constexpr std::string_view kErrorEchoMarks[] = {
    "Traceback (most recent call last):",
    "ChildFailedError",
    "terminate called after throwing",
};
// An exception line that contains one of these only reports a failure elsewhere, or a stop.
constexpr std::string_view kEchoExceptionMarks[] = {
    "DistBackendError", "DistStoreError",    "DistNetworkError",
    "ChildFailedError", "SignalException",   "NCCL",
    "ProcessGroup",     "Watchdog",          "c10d",
    "SystemExit",       "KeyboardInterrupt",
};

bool contains_any(std::string_view text, std::span<const std::string_view> marks) {
  return std::any_of(marks.begin(), marks.end(), [text](std::string_view mark) {
    return text.find(mark) != std::string_view::npos;
  });
}

// The first of `marks` that `text` contains; nullptr when none.
const Mark* first_mark(std::string_view text, std::span<const Mark> marks) {
  const auto found = std::find_if(marks.begin(), marks.end(), [text](const Mark& mark) {
    return text.find(mark.text) != std::string_view::npos;
  });
  return found == marks.end() ? nullptr : &*found;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_identifier_char(char c) { return is_alpha(c) || is_digit(c); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string_view trim_left(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  return text;
}

// The digits at the front of `text` (at most `max` of them); empty when none.
std::string_view leading_digits(std::string_view text, std::size_t max = kUnsignedDigitsMax) {
  std::size_t count = 0;
  while (count < text.size() && count <= max && is_digit(text[count])) ++count;
  if (count > max) return {};
  return text.substr(0, count);
}

bool parse_unsigned(std::string_view text, std::uint64_t& value) {
  if (text.empty() || text.size() > kUnsignedDigitsMax) return false;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, value);
  return result.ec == std::errc{} && result.ptr == end;
}

bool parse_unsigned32(std::string_view text, std::uint32_t& value) {
  std::uint64_t wide = 0;
  if (!parse_unsigned(text, wide) || wide > UINT32_MAX) return false;
  value = static_cast<std::uint32_t>(wide);
  return true;
}

// A whole token as a double: decimal or exponent notation, or nan/inf in any case (Python
// writes `NAN` and `INF` for `{:.6E}`).
bool parse_double(std::string_view text, double& value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, value, std::chars_format::general);
  return result.ec == std::errc{} && result.ptr == end;
}

bool parse_finite(std::string_view text, double& value) {
  return parse_double(text, value) && std::isfinite(value);
}

// `%.2f` of a non-negative number: digits, '.', exactly two digits.
bool parse_two_decimals(std::string_view text, double& value) {
  const std::size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || text.size() != dot + 3) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i != dot && !is_digit(text[i])) return false;
  }
  return parse_finite(text, value);
}

// ---- launcher prefixes -------------------------------------------------------------------------

// `[rank3]:`, `[default7]:`: a bracketed name ending in digits, then ':'.
bool take_bracket_rank(std::string_view& text, std::uint32_t& rank) {
  if (text.empty() || text.front() != '[') return false;
  std::size_t i = 1;
  while (i < text.size() && is_alpha(text[i])) ++i;
  const std::string_view digits = leading_digits(text.substr(i), 9);
  if (digits.empty()) return false;
  i += digits.size();
  if (text.substr(i, 2) != "]:") return false;
  if (!parse_unsigned32(digits, rank)) return false;
  text.remove_prefix(i + 2);
  return true;
}

// `12: ` as srun -l writes it, possibly padded with spaces on the left.
bool take_srun_label(std::string_view& text, std::uint32_t& rank) {
  std::size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string_view digits = leading_digits(text.substr(i), kSrunLabelDigitsMax);
  if (digits.empty()) return false;
  i += digits.size();
  if (text.substr(i, 2) != ": ") return false;
  if (!parse_unsigned32(digits, rank)) return false;
  text.remove_prefix(i + 2);
  return true;
}

// `N` digits exactly at `text[i]`, advancing `i`.
bool skip_digits(std::string_view text, std::size_t& i, std::size_t count) {
  for (std::size_t k = 0; k < count; ++k, ++i) {
    if (i >= text.size() || !is_digit(text[i])) return false;
  }
  return true;
}

bool skip_char(std::string_view text, std::size_t& i, std::string_view choices) {
  if (i >= text.size() || choices.find(text[i]) == std::string_view::npos) return false;
  ++i;
  return true;
}

// `2026-08-22T15:31:07.123456Z ` or `[2026-08-22 15:31:07,123] `: a date, a time, optional
// fraction and zone, optionally bracketed, then an optional space.
bool take_timestamp(std::string_view& text) {
  std::size_t i = 0;
  const bool bracketed = !text.empty() && text.front() == '[';
  if (bracketed) ++i;
  if (!(skip_digits(text, i, 4) && skip_char(text, i, "-") && skip_digits(text, i, 2) &&
        skip_char(text, i, "-") && skip_digits(text, i, 2) && skip_char(text, i, "T ") &&
        skip_digits(text, i, 2) && skip_char(text, i, ":") && skip_digits(text, i, 2) &&
        skip_char(text, i, ":") && skip_digits(text, i, 2))) {
    return false;
  }
  if (skip_char(text, i, ".,")) {
    const std::size_t start = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    if (i == start) return false;
  }
  if (!skip_char(text, i, "Z") && i < text.size() && (text[i] == '+' || text[i] == '-')) {
    ++i;
    if (!skip_digits(text, i, 2)) return false;
    skip_char(text, i, ":");
    if (!skip_digits(text, i, 2)) return false;
  }
  if (bracketed && !skip_char(text, i, "]")) return false;
  skip_char(text, i, " ");
  text.remove_prefix(i);
  return true;
}

// `192.168.205.202: `, `localhost: `, `node-03: `: pdsh's host label (DeepSpeed's multi-node
// launcher), only at a line's front. A host name here has a digit or is localhost, so that an
// exception's `RuntimeError: ` is never taken for one.
bool take_host_label(std::string_view& text) {
  std::size_t i = 0;
  bool digit = false;
  while (i < text.size() && (is_digit(text[i]) || (text[i] >= 'a' && text[i] <= 'z') ||
                             text[i] == '.' || text[i] == '-' || text[i] == '_')) {
    digit = digit || is_digit(text[i]);
    ++i;
  }
  if (i == 0 || text.substr(i, 2) != ": ") return false;
  if (!digit && text.substr(0, i) != "localhost") return false;
  if (std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), is_digit)) {
    return false;  // srun's task label
  }
  text.remove_prefix(i + 2);
  return true;
}

struct Stripped {
  std::string_view content;
  LineSource source;
  bool labelled = false;  // a launcher labelled the line: it comes from the training program
  std::string_view host;  // pdsh's host label, when there is one
};

Stripped strip_prefixes(std::string_view line) {
  Stripped out;
  out.content = line;
  out.labelled = take_host_label(out.content);
  if (out.labelled) out.host = line.substr(0, line.size() - out.content.size() - 2);
  for (std::size_t taken = 0; taken < kPrefixesMax; ++taken) {
    std::uint32_t rank = 0;
    if (take_bracket_rank(out.content, rank) || take_srun_label(out.content, rank)) {
      out.source.ranks[out.source.depth++] = rank;
      out.labelled = true;
    } else if (!take_timestamp(out.content)) {
      break;
    }
  }
  return out;
}

// ---- iteration lines ---------------------------------------------------------------------------

struct IterationHeader {
  std::size_t begin = 0;  // where "iteration" starts
  std::size_t end = 0;    // just past the closing '|'
  std::uint64_t iteration = 0;
  std::uint64_t train_iters = 0;
};

// ` iteration {:8d}/{:8d} |` at or after `from`.
std::optional<IterationHeader> find_header(std::string_view text, std::size_t from) {
  constexpr std::string_view kWord = "iteration ";
  for (std::size_t at = text.find(kWord, from); at != std::string_view::npos;
       at = text.find(kWord, at + 1)) {
    if (at > 0 && text[at - 1] != ' ') continue;
    std::size_t i = at + kWord.size();
    while (i < text.size() && text[i] == ' ') ++i;
    const std::string_view iteration = leading_digits(text.substr(i));
    i += iteration.size();
    if (iteration.empty() || i >= text.size() || text[i] != '/') continue;
    ++i;
    while (i < text.size() && text[i] == ' ') ++i;
    const std::string_view total = leading_digits(text.substr(i));
    i += total.size();
    if (total.empty() || text.substr(i, 2) != " |") continue;
    IterationHeader header{at, i + 2, 0, 0};
    if (!parse_unsigned(iteration, header.iteration) ||
        !parse_unsigned(total, header.train_iters)) {
      continue;
    }
    return header;
  }
  return std::nullopt;
}

struct Segment {
  std::string_view key;
  std::string_view value;
  bool colon = true;  // `key: value`; false for 2019's `key value`
};

// The ` key: value |` segments after the header, up to and including `number of nan iterations`
// (what a fork prints after it is not read). A 2019 line writes some as ` key value |`. False when
// a segment is malformed. An unclosed tail is not a segment: it sets `cut`.
bool split_segments(std::string_view body, std::vector<Segment>& segments, bool& cut) {
  while (true) {
    const std::size_t bar = body.find('|');
    if (bar == std::string_view::npos) {
      cut = !trim(body).empty();
      return true;
    }
    const std::string_view piece = body.substr(0, bar);
    body.remove_prefix(bar + 1);
    if (piece.size() < 4 || piece.front() != ' ' || piece.back() != ' ') return false;
    const std::string_view inner = piece.substr(1, piece.size() - 2);
    if (inner.front() == ' ') return false;
    Segment segment;
    const std::size_t colon = inner.find(": ");
    if (colon != std::string_view::npos && colon > 0) {
      segment.key = inner.substr(0, colon);
      segment.value = trim(inner.substr(colon + 2));
    } else {
      const std::size_t space = inner.rfind(' ');
      if (space == std::string_view::npos || space == 0 || !is_alpha(inner.front())) return false;
      segment.key = inner.substr(0, space);
      segment.value = inner.substr(space + 1);
      segment.colon = false;
    }
    if (segment.value.empty()) return false;
    segments.push_back(segment);
    if (segment.key == "number of nan iterations") return true;
  }
}

// One Megatron-LM field into `line`; false when its value is not what the field holds. `seen`
// collects the fields read.
bool read_field(const Segment& segment, IterationLine& line, std::vector<std::string_view>& seen) {
  const std::string_view key = segment.key;
  const std::string_view value = segment.value;
  seen.push_back(key);
  double number = 0.0;
  if (key == "consumed samples") return parse_unsigned(value, line.consumed_samples);
  if (key == "elapsed time per iteration (ms)") {
    return parse_finite(value, line.elapsed_ms_per_iteration) && line.elapsed_ms_per_iteration >= 0;
  }
  if (key == "global batch size") return parse_unsigned(value, line.global_batch_size);
  if (key == "loss scale") return parse_finite(value, line.loss_scale);
  if (key == "number of skipped iterations")
    return parse_unsigned32(value, line.skipped_iterations);
  if (key == "number of nan iterations") return parse_unsigned32(value, line.nan_iterations);
  if (key == "throughput per GPU (TFLOP/s/GPU)") {
    if (!parse_finite(value, number)) return false;
    line.throughput_tflops_per_gpu = number;
  } else if (key == "learning rate") {
    if (!parse_finite(value, number)) return false;
    line.learning_rate = number;
  } else if (key == "grad norm") {
    if (!parse_double(value, number)) return false;
    line.grad_norm = number;
  } else if (key.ends_with("loss")) {
    if (!parse_double(value, number)) return false;
    if (key == "lm loss") {
      line.lm_loss = number;
    } else {
      line.other_losses.push_back({std::string(key), number});
    }
  } else {
    seen.pop_back();  // a fork's or the MoE string's own key: skipped
  }
  return true;
}

bool is_megatron_field(std::string_view key) {
  constexpr std::string_view kFields[] = {"consumed samples",
                                          "elapsed time per iteration (ms)",
                                          "throughput per GPU (TFLOP/s/GPU)",
                                          "learning rate",
                                          "global batch size",
                                          "lm loss",
                                          "loss scale",
                                          "grad norm",
                                          "number of skipped iterations",
                                          "number of nan iterations"};
  return std::find(std::begin(kFields), std::end(kFields), key) != std::end(kFields);
}

bool has(const std::vector<std::string_view>& seen, std::string_view key) {
  return std::find(seen.begin(), seen.end(), key) != seen.end();
}

// NeMo 2's line for a Megatron-core model: `lr: ... | global_batch_size: 512 | ... |
// reduced_train_loss: 10.22 | train_step_timing in s: 27.01 | consumed_samples: 4608 | ...`.
bool read_nemo_segments(const std::vector<Segment>& segments, IterationLine& line) {
  bool has_elapsed = false;
  double number = 0.0;
  for (const Segment& segment : segments) {
    if (!segment.colon) return false;
    if (segment.key == "train_step_timing in s") {
      if (!parse_finite(segment.value, number) || number < 0 || has_elapsed) return false;
      line.elapsed_ms_per_iteration = number * 1000.0;
      has_elapsed = true;
    } else if (segment.key == "global_batch_size") {
      if (!parse_unsigned(segment.value, line.global_batch_size)) return false;
    } else if (segment.key == "consumed_samples") {
      if (!parse_unsigned(segment.value, line.consumed_samples)) return false;
    } else if (segment.key == "reduced_train_loss") {
      if (!parse_double(segment.value, number)) return false;
      line.lm_loss = number;
    } else if (segment.key == "lr") {
      if (!parse_finite(segment.value, number)) return false;
      line.learning_rate = number;
    }
  }
  return has_elapsed;
}

// The segments after the header, into `line`, in the form of Megatron-LM since 2020 (every field
// as ` key: value |`, up to `number of nan iterations`; consumed samples and the global batch size
// since 2021), of 2019 (` key value |` but for the elapsed time, no counters) or of NeMo 2. False
// when a segment is malformed or repeated, or a field the form always prints is missing, unless
// a newline-terminated line was cut inside a segment after its elapsed time.
bool parse_segments(std::string_view body, bool terminated, IterationLine& line) {
  std::vector<Segment> segments;
  bool cut = false;
  if (!split_segments(body, segments, cut) || segments.empty()) return false;
  const bool nemo = std::any_of(segments.begin(), segments.end(), [](const Segment& segment) {
    return segment.key == "train_step_timing in s";
  });
  if (nemo) return read_nemo_segments(segments, line);
  std::vector<std::string_view> seen;
  bool bare = false;   // a 2019 ` key value ` segment
  bool named = false;  // a `key: value` segment other than the elapsed time
  for (const Segment& segment : segments) {
    // Megatron prints each of its own fields once; a fork's or the MoE string's extra key may
    // repeat, and the first one counts.
    if (has(seen, segment.key)) {
      if (is_megatron_field(segment.key)) return false;
      continue;
    }
    if (!read_field(segment, line, seen)) return false;
    bare = bare || !segment.colon;
    named = named || (segment.colon && segment.key != "elapsed time per iteration (ms)");
  }
  if (bare) return !named && has(seen, "elapsed time per iteration (ms)");
  // A line cut short where it was written, then ended by a newline (a pasted excerpt, a process
  // killed while printing): its closed segments are whole, and it counts if they hold the time.
  if (cut && terminated && !has(seen, "number of nan iterations")) {
    line.cut = true;
    return has(seen, "elapsed time per iteration (ms)");
  }
  return has(seen, "consumed samples") == has(seen, "global batch size") &&
         has(seen, "elapsed time per iteration (ms)") && has(seen, "loss scale") &&
         has(seen, "number of skipped iterations") && has(seen, "number of nan iterations");
}

// ---- memory report -----------------------------------------------------------------------------

// Consumes `literal` at the front of `text`.
bool take(std::string_view& text, std::string_view literal) {
  if (!text.starts_with(literal)) return false;
  text.remove_prefix(literal.size());
  return true;
}

// A figure ending at " |", at whitespace or at the end of the text: `%.2f` where the line may be
// cut after it (its last figure, on an unterminated line), else any decimal (older Megatron-LM
// printed the float whole: `10250.5693359375`).
bool take_figure(std::string_view& text, double& value, bool must_show_end) {
  std::size_t end = 0;
  while (end < text.size() && (is_digit(text[end]) || text[end] == '.')) ++end;
  const std::string_view figure = text.substr(0, end);
  if (must_show_end ? !parse_two_decimals(figure, value)
                    : (figure.empty() || figure.front() == '.' || !parse_finite(figure, value))) {
    return false;
  }
  text.remove_prefix(end);
  return text.empty() || is_space(text.front());
}

struct MemoryReport {
  std::uint32_t rank = 0;
  double max_allocated_mb = 0.0;
  double max_reserved_mb = 0.0;
};

// `[Rank {rank}] ({when}) memory (MB) | allocated: %.2f | max allocated: %.2f | reserved: %.2f |
// max reserved: %.2f` starting at `text`'s front; before 2021, `after {N} iterations memory (MB)
// | ...` without a rank (rank 0 printed it), and in 2019 `cached` for `reserved`.
std::optional<MemoryReport> parse_memory_report(std::string_view text, bool terminated) {
  MemoryReport report;
  double allocated = 0.0, reserved = 0.0;
  if (take(text, "[Rank ")) {
    const std::string_view rank = leading_digits(text, 9);
    if (!parse_unsigned32(rank, report.rank)) return std::nullopt;
    text.remove_prefix(rank.size());
    // `(after 5 iterations)`, `(before save_checkpoint for iteration 164)`: when it was taken.
    if (!take(text, "] (")) return std::nullopt;
    const std::size_t close = text.find(") memory (MB) | allocated: ");
    if (close == std::string_view::npos ||
        text.substr(0, close).find_first_of("()|") != std::string_view::npos) {
      return std::nullopt;
    }
    text.remove_prefix(close + 1);
  } else {
    if (!take(text, "after ")) return std::nullopt;
    const std::string_view iterations = leading_digits(text);
    if (iterations.empty()) return std::nullopt;
    text.remove_prefix(iterations.size());
    if (!take(text, " iterations")) return std::nullopt;
  }
  const bool cached = text.find("| cached: ") != std::string_view::npos;
  if (take(text, " memory (MB) | allocated: ") && take_figure(text, allocated, false) &&
      take(text, " | max allocated: ") && take_figure(text, report.max_allocated_mb, false) &&
      take(text, cached ? " | cached: " : " | reserved: ") && take_figure(text, reserved, false) &&
      take(text, cached ? " | max cached: " : " | max reserved: ") &&
      take_figure(text, report.max_reserved_mb, !terminated)) {
    return report;
  }
  return std::nullopt;
}

// ---- arguments block ---------------------------------------------------------------------------

constexpr std::size_t kArgumentColumn = 48;       // `_print_args` since 2022
constexpr std::size_t kOlderArgumentColumn = 32;  // before

// `  name ..... value`: two spaces, an identifier, a space, dots, a space, the value. Megatron pads
// the name with dots to a column (48 characters since 2022, 32 before); a name as long as the
// column has no dots, so two spaces separate it from its value.
std::optional<std::pair<std::string_view, std::string_view>> parse_argument(
    std::string_view content) {
  if (!content.starts_with("  ") || content.size() < 3 || !is_alpha(content[2])) {
    return std::nullopt;
  }
  std::size_t i = 2;
  while (i < content.size() && is_identifier_char(content[i])) ++i;
  const std::string_view name = content.substr(2, i - 2);
  if (content.substr(i, 1) != " ") return std::nullopt;
  ++i;
  const std::size_t dots_start = i;
  while (i < content.size() && content[i] == '.') ++i;
  const std::size_t dots = i - dots_start;
  const bool padded = dots > 0 && (name.size() + dots == kArgumentColumn ||
                                   name.size() + dots == kOlderArgumentColumn);
  const bool unpadded = dots == 0 && name.size() >= kOlderArgumentColumn;
  if ((!padded && !unpadded) || content.substr(i, 1) != " ") return std::nullopt;
  return std::pair{name, content.substr(i + 1)};
}

// ---- failure signs -----------------------------------------------------------------------------

// glog's `W0527 00:19:08.340000 50695 file.py:1052] ...` or c10's `[W527 00:18:20.731 ...]`: a
// warning or info line, whatever it quotes (a traceback, an error it recovered from).
bool is_quiet_level(std::string_view text) {
  if (!text.empty() && text.front() == '[') text.remove_prefix(1);
  if (text.empty() || (text.front() != 'W' && text.front() != 'I')) return false;
  const std::string_view digits = leading_digits(text.substr(1), 4);
  const std::size_t i = 1 + digits.size();
  return (digits.size() == 3 || digits.size() == 4) && text.size() > i + 3 && text[i] == ' ' &&
         is_digit(text[i + 1]) && is_digit(text[i + 2]) && text[i + 3] == ':';
}

bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }

// `RuntimeError: ...`, `torch.OutOfMemoryError: ...`, a bare `AssertionError`, `StopIteration`: a
// dotted name at the front of the text, then ':' or the end. Outside a traceback the name must
// end in Error or Exception; as a traceback's last line any CamelCase name is its exception (not
// `INFO:`, not a Warning).
bool is_exception_line(std::string_view text, bool ends_traceback) {
  std::size_t i = 0;
  std::size_t component_start = 0;
  while (i < text.size() && (is_identifier_char(text[i]) || text[i] == '.')) {
    if (text[i] == '.') component_start = i + 1;
    ++i;
  }
  if (i == 0 || !is_alpha(text[0])) return false;
  if (i < text.size() && text[i] != ':') return false;
  const std::string_view name = text.substr(component_start, i - component_start);
  // A bare "Error:" outside a traceback is a tool's banner (Spectrum MPI's "Error: SMPI environment
  // generator script not found"), not a Python exception: no builtin is called Error, and Python
  // prints other exceptions with their module (only __main__'s own come bare, and those end a
  // traceback).
  if (text.substr(0, i) == "Error" && !ends_traceback) return false;
  if (name.ends_with("Error") || name.ends_with("Exception")) return true;
  return ends_traceback && !name.empty() && is_upper(name.front()) && !name.ends_with("Warning") &&
         std::any_of(name.begin(), name.end(), is_lower);
}

// The sign a line gives, and the cause its mark names (kUnknown for a sign whose marks name none:
// an exception line, an NCCL error without a cause, an echo).
struct LineSign {
  FailureSign sign = FailureSign::kErrorEcho;
  FailureCause cause = FailureCause::kUnknown;
};

std::optional<LineSign> sign_of(std::string_view line, std::string_view text, bool ends_traceback) {
  // Strongest evidence first: a line that holds marks of two kinds is the stronger kind.
  const std::pair<std::span<const Mark>, FailureSign> marked[] = {
      {kOutOfMemoryMarks, FailureSign::kOutOfMemory},
      {kHardwareFaultMarks, FailureSign::kHardwareFault},
      {kInfrastructureMarks, FailureSign::kInfrastructure},
      {kCollectiveTimeoutMarks, FailureSign::kCollectiveTimeout},
      {kProgramErrorMarks, FailureSign::kProgramError},
  };
  for (const auto& [marks, sign] : marked) {
    if (const Mark* mark = first_mark(line, marks)) return LineSign{sign, mark->cause};
  }
  if (contains_any(line, kSuspectedInfrastructureMarks)) {
    return LineSign{FailureSign::kSuspectedInfrastructure};
  }
  if (is_exception_line(text, ends_traceback)) {
    return LineSign{contains_any(text, kEchoExceptionMarks) ? FailureSign::kErrorEcho
                                                            : FailureSign::kProgramError};
  }
  if (contains_any(line, kErrorEchoMarks)) return LineSign{FailureSign::kErrorEcho};
  return std::nullopt;
}

std::size_t indentation(std::string_view content) {
  std::size_t i = 0;
  while (i < content.size() && is_space(content[i])) ++i;
  return i;
}

// Lines that show the training program got past everything before them.
constexpr std::string_view kCompletionMarks[] = {
    "[after training is done]",
    "successfully saved checkpoint",
    "exiting program at iteration",
};

// The first lines a training program prints, whatever the launcher: before one of them (or a
// line a launcher labelled), a file holds the batch script's own output.
constexpr std::string_view kProgramMarks[] = {
    "using world size:", "initializing torch distributed", "> building", "setting random seeds",
    "training ...",
};

// `32-33`, `12,15`, `8-9,11`, `5`: srun's task list, into `tasks` (at most kReportingRanksMax).
bool parse_task_list(std::string_view list, std::vector<std::uint32_t>& tasks) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view range = list.substr(0, comma);
    const std::size_t dash = range.find('-');
    std::uint32_t first = 0, last = 0;
    if (!parse_unsigned32(range.substr(0, dash), first)) return false;
    last = first;
    if (dash != std::string_view::npos && !parse_unsigned32(range.substr(dash + 1), last)) {
      return false;
    }
    if (last < first || last - first >= kReportingRanksMax) return false;
    for (std::uint32_t task = first; task <= last && tasks.size() < kReportingRanksMax; ++task) {
      tasks.push_back(task);
    }
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return true;
}

void merge_sorted(std::vector<std::uint32_t>& into, const std::vector<std::uint32_t>& more) {
  into.insert(into.end(), more.begin(), more.end());
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

}  // namespace

std::strong_ordering operator<=>(const LineSource& a, const LineSource& b) {
  return std::lexicographical_compare_three_way(a.ranks.begin(), a.ranks.begin() + a.depth,
                                                b.ranks.begin(), b.ranks.begin() + b.depth);
}

std::optional<std::uint64_t> ArgumentsBlock::unsigned_value(std::string_view name) const {
  const auto found = values.find(std::string(name));
  std::uint64_t value = 0;
  if (found == values.end() || !parse_unsigned(trim(found->second), value)) return std::nullopt;
  return value;
}

void MegatronLogReader::start_file(std::string name) {
  ATTUNE_ASSERT(!finished_, "a finished reader takes no more files");
  if (file_started_) end_file();
  file_started_ = true;
  file_line_ = 0;
  log_.files.push_back(std::move(name));
  first_program_line_.push_back(0);
  last_iteration_lines_.push_back({0, 0});
  last_completion_line_.push_back(0);
}

void MegatronLogReader::end_file() {
  if (!pending_.empty() || pending_cut_) read_line(pending_, false);
  pending_.clear();
  pending_cut_ = false;
  // The held lines, in the order they were read.
  std::vector<TaskStream*> held;
  for (auto& [label, stream] : tasks_) {
    if (stream.held) held.push_back(&stream);
  }
  std::sort(held.begin(), held.end(), [](const TaskStream* a, const TaskStream* b) {
    return a->held->line_number < b->held->line_number;
  });
  for (TaskStream* stream : held) flush_held(*stream);
  tasks_.clear();
  in_traceback_.clear();
}

void MegatronLogReader::feed(std::string_view bytes) {
  ATTUNE_ASSERT(!finished_, "a finished reader takes no more lines");
  if (!file_started_) start_file("");
  while (!bytes.empty()) {
    const std::size_t newline = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, newline);
    if (newline != std::string_view::npos && pending_.empty() && !pending_cut_ &&
        piece.size() <= kLineBytesMax) {
      read_line(piece, true);  // the common case: a whole line, no copy
    } else {
      const std::size_t room = kLineBytesMax - pending_.size();
      pending_.append(piece.substr(0, room));
      if (piece.size() > room) pending_cut_ = true;
      if (newline == std::string_view::npos) return;
      read_line(pending_, !pending_cut_);
      pending_.clear();
      pending_cut_ = false;
    }
    bytes.remove_prefix(newline + 1);
  }
}

MegatronLog MegatronLogReader::finish() {
  ATTUNE_ASSERT(!finished_, "a reader finishes once");
  if (!file_started_) start_file("");
  end_file();
  finished_ = true;
  log_.iterations.reserve(iterations_.size());
  for (auto& [iteration, line] : iterations_) log_.iterations.push_back(std::move(line));
  log_.memory.reserve(memory_.size());
  for (const auto& [rank, memory] : memory_) log_.memory.push_back(memory);
  iterations_.clear();
  memory_.clear();
  log_.first_program_lines = first_program_line_;
  std::stable_sort(log_.signs.begin(), log_.signs.end(), [](const SignLine& a, const SignLine& b) {
    return std::pair(a.file, a.line_number) < std::pair(b.file, b.line_number);
  });
  for (SignLine& sign : log_.signs) {
    const std::uint64_t first_program = first_program_line_[sign.file];
    const bool job_level = contains_any(sign.text, kJobLevelMarks);
    sign.preamble = first_program > sign.line_number && !job_level;
    const bool went_on = last_iteration_lines_[sign.file][0] > sign.line_number ||
                         last_completion_line_[sign.file] > sign.line_number;
    sign.superseded = ((sign.preamble && !log_.iterations.empty()) || went_on) && !job_level;
    std::optional<SignLine>& first = log_.first_signs[static_cast<std::size_t>(sign.sign)];
    if (!first) first = sign;
  }
  return std::move(log_);
}

void MegatronLogReader::read_line(std::string_view line, bool terminated) {
  ++log_.lines_read;
  ++file_line_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string_view rest = line;
  std::uint32_t label = 0;
  if (!take_srun_label(rest, label) || line.size() > kHeldLineBytesMax) {
    process_line(line, file_line_, terminated);
    return;
  }
  auto found = tasks_.find(label);
  if (found == tasks_.end()) {
    if (tasks_.size() >= kHeldTasksMax) {
      process_line(line, file_line_, terminated);
      return;
    }
    found = tasks_.emplace(label, TaskStream{}).first;
  }
  TaskStream& stream = found->second;
  if (stream.inner_prefix.empty()) {
    std::string_view probe = rest;
    std::uint32_t rank = 0;
    if (take_bracket_rank(probe, rank)) {
      stream.inner_prefix = std::string(rest.substr(0, rest.size() - probe.size()));
    }
  }
  if (stream.held && !stream.inner_prefix.empty()) {
    std::string_view held = stream.held->text;
    take_srun_label(held, label);
    const bool held_is_task_line =
        held.starts_with(stream.inner_prefix) || stream.inner_prefix.starts_with(held);
    const bool continues = held_is_task_line && !rest.starts_with(stream.inner_prefix) &&
                           !rest.starts_with('[') && stream.held->terminated &&
                           stream.held->text.size() + rest.size() <= kHeldLineBytesMax;
    if (continues) {
      stream.held->text.append(rest);
      stream.held->terminated = terminated;
      ++log_.lines_rejoined;
      return;
    }
  }
  flush_held(stream);
  stream.held = HeldLine{std::string(line), file_line_, terminated};
}

void MegatronLogReader::flush_held(TaskStream& stream) {
  if (!stream.held) return;
  const HeldLine held = std::move(*stream.held);
  stream.held.reset();
  process_line(held.text, held.line_number, held.terminated);
}

void MegatronLogReader::process_line(std::string_view line, std::uint64_t line_number,
                                     bool terminated) {
  const Stripped stripped = strip_prefixes(line);
  std::uint64_t& first_program = first_program_line_.back();
  if (stripped.labelled || contains_any(stripped.content, kProgramMarks)) {
    if (first_program == 0 || line_number < first_program) first_program = line_number;
  }
  if (contains_any(stripped.content, kCompletionMarks)) last_completion_line_.back() = line_number;
  read_signs(line, stripped.content, stripped.source, line_number);
  if (!stripped.host.empty() && log_.signs.size() > signs_with_host_) {
    for (std::size_t i = signs_with_host_; i < log_.signs.size(); ++i) {
      log_.signs[i].host = std::string(stripped.host);
    }
  }
  signs_with_host_ = log_.signs.size();
  if (stripped.content.find("iteration ") != std::string_view::npos) {
    read_iteration_line(stripped.content, stripped.source, line_number, terminated);
  }
  if (stripped.content.find(" memory (MB) | ") != std::string_view::npos) {
    read_memory_line(stripped.content, terminated);
  }
  if (stripped.content.starts_with("srun: error: ")) read_node_report(stripped.content);
  read_torchrun_failure(trim(stripped.content));
  read_arguments_line(stripped.content, stripped.source, terminated);
}

void MegatronLogReader::read_iteration_line(std::string_view content, LineSource source,
                                            std::uint64_t line_number, bool terminated) {
  const std::optional<IterationHeader> header = find_header(content, 0);
  if (!header) return;
  IterationLine line;
  line.iteration = header->iteration;
  line.train_iters = header->train_iters;
  line.source = source;
  line.file = static_cast<std::uint32_t>(log_.files.size() - 1);
  line.line_number = line_number;
  const std::string_view body = content.substr(header->end);
  if (find_header(content, header->end) || !parse_segments(body, terminated, line)) {
    ++log_.iteration_lines_rejected;
    return;
  }
  std::array<std::uint64_t, 2>& last = last_iteration_lines_.back();
  if (line_number > last[1]) last = {last[1], line_number};
  const auto found = iterations_.find(line.iteration);
  if (found == iterations_.end()) {
    if (iterations_.size() >= kIterationsKeptMax) {
      ++log_.iterations_dropped;
      return;
    }
    iterations_.emplace(line.iteration, std::move(line));
  } else if (found->second.source <= source) {
    found->second = std::move(line);
  }
}

void MegatronLogReader::read_memory_line(std::string_view content, bool terminated) {
  std::vector<std::string_view> candidates;
  if (trim_left(content).starts_with("after ")) candidates.push_back(trim_left(content));
  for (std::size_t at = content.find("[Rank "); at != std::string_view::npos;
       at = content.find("[Rank ", at + 1)) {
    candidates.push_back(content.substr(at));
  }
  for (const std::string_view candidate : candidates) {
    const std::optional<MemoryReport> report = parse_memory_report(candidate, terminated);
    if (!report) continue;
    auto found = memory_.find(report->rank);
    if (found == memory_.end()) {
      if (memory_.size() >= kReportingRanksMax) return;
      found = memory_.emplace(report->rank, RankMemory{report->rank, 0.0, 0.0, 0}).first;
    }
    RankMemory& memory = found->second;
    memory.max_allocated_mb = std::max(memory.max_allocated_mb, report->max_allocated_mb);
    memory.max_reserved_mb = std::max(memory.max_reserved_mb, report->max_reserved_mb);
    ++memory.reports;
  }
}

void MegatronLogReader::read_arguments_line(std::string_view content, LineSource source,
                                            bool terminated) {
  // PyTorch writes `[rank0]: ` with a space for Python output; torchrun's `[default0]:` none.
  if (content.starts_with("   ") && content.size() > 3 && is_alpha(content[3])) {
    content.remove_prefix(1);
  }
  const std::string_view trimmed = trim(content);
  if (is_dashed_title(trimmed, "arguments")) {
    // A new block replaces an earlier one: the later run in this log is the one that ran on.
    log_.arguments = ArgumentsBlock{};
    arguments_open_ = true;
    arguments_source_ = source;
    return;
  }
  // Other ranks' lines may interleave with the block; only its own source's lines count.
  if (!arguments_open_ || source != arguments_source_) return;
  if (is_dashed_title(trimmed, "end of arguments")) {
    log_.arguments.complete = true;
    arguments_open_ = false;
    return;
  }
  if (log_.arguments.lines.size() >= kArgumentLinesMax) {
    arguments_open_ = false;
    return;
  }
  if (!terminated) return;  // a cut line could hold a cut value
  if (const auto argument = parse_argument(content)) {
    log_.arguments.lines.emplace_back(content);
    log_.arguments.values[std::string(argument->first)] = std::string(argument->second);
  }
}

// A traceback's frame line: `File "/path.py", line 12, in fn`.
bool is_frame_line(std::string_view text) {
  return text.starts_with("File \"") && text.find("\", line ") != std::string_view::npos;
}

// Follows the source's open traceback through `text` (indented by `indent`); true when the line is
// its exception. A traceback opens at its header, or at a frame where the header was lost.
// Python prints a chain root cause first: an exception after "During handling of the above
// exception" or "The above exception was the direct cause" is an echo of the first.
MegatronLogReader::ExceptionRole MegatronLogReader::follow_traceback(std::string_view text,
                                                                     std::size_t indent,
                                                                     LineSource source) {
  auto open = in_traceback_.find(source);
  const bool header = text.starts_with("Traceback (most recent call last):");
  if (open == in_traceback_.end()) {
    if ((!header && !is_frame_line(text)) || in_traceback_.size() >= kReportingRanksMax) {
      return ExceptionRole::kNone;
    }
    in_traceback_.emplace(source, OpenTraceback{indent});
    return ExceptionRole::kNone;
  }
  OpenTraceback& traceback = open->second;
  if (header || is_frame_line(text)) {
    if (header) traceback.indent = indent;
    traceback.idle_lines = 0;
    traceback.after_exception = false;
    return ExceptionRole::kNone;
  }
  if (indent > traceback.indent) return ExceptionRole::kNone;  // a frame's code
  if (text.starts_with("During handling of the above exception") ||
      text.starts_with("The above exception was the direct cause")) {
    traceback.chained = true;
    return ExceptionRole::kNone;
  }
  if (!traceback.after_exception && is_exception_line(text, true)) {
    const bool echo = traceback.chained && traceback.root_seen;
    traceback.root_seen = true;
    traceback.after_exception = true;
    return echo ? ExceptionRole::kChainedEcho : ExceptionRole::kException;
  }
  if (++traceback.idle_lines > kTracebackIdleLinesMax) in_traceback_.erase(open);
  return ExceptionRole::kNone;
}

void MegatronLogReader::read_signs(std::string_view line, std::string_view content,
                                   LineSource source, std::uint64_t line_number) {
  const std::string_view text = trim_left(content);
  if (text.empty() || is_quiet_level(text)) return;
  const ExceptionRole role = follow_traceback(text, indentation(content), source);
  if (role == ExceptionRole::kChainedEcho) {
    add_sign(FailureSign::kErrorEcho, FailureCause::kUnknown, line, source, line_number);
  } else if (const std::optional<LineSign> sign =
                 sign_of(line, text, role == ExceptionRole::kException)) {
    add_sign(sign->sign, sign->cause, line, source, line_number);
  }
}

void MegatronLogReader::add_sign(FailureSign sign, FailureCause cause, std::string_view line,
                                 LineSource source, std::uint64_t line_number) {
  std::uint32_t& kept = signs_kept_[static_cast<std::size_t>(sign)];
  if (kept >= kSignsPerKindMax) return;
  ++kept;
  SignLine entry;
  entry.line_number = line_number;
  entry.text = std::string(line.substr(0, kSignLineBytesMax));
  entry.sign = sign;
  entry.cause = cause;
  entry.file = static_cast<std::uint32_t>(log_.files.size() - 1);
  entry.source = source;
  log_.signs.push_back(std::move(entry));
}

// torchrun's failure table: `  host      : proj186` then `  rank      : 0 (local_rank: 0)`.
void MegatronLogReader::read_torchrun_failure(std::string_view text) {
  const auto field = [text](std::string_view name) -> std::optional<std::string_view> {
    if (!text.starts_with(name)) return std::nullopt;
    const std::string_view rest = trim_left(text.substr(name.size()));
    if (!rest.starts_with(": ")) return std::nullopt;
    return trim(rest.substr(2));
  };
  if (const auto host = field("host")) {
    torchrun_host_ = std::string(*host);
    return;
  }
  const auto rank = field("rank");
  if (!rank || torchrun_host_.empty()) return;
  std::uint32_t value = 0;
  if (!parse_unsigned32(leading_digits(*rank, 9), value)) return;
  auto found = log_.nodes.find(torchrun_host_);
  if (found == log_.nodes.end()) {
    if (log_.nodes.size() >= kNodesKeptMax) return;
    found = log_.nodes.emplace(torchrun_host_, NodeTasks{}).first;
  }
  merge_sorted(found->second.failed, {value});
  torchrun_host_.clear();
}

// `srun: error: HOST: tasks 32-33: Exited with exit code 1`, `srun: error: HOST: task 5: Killed`.
void MegatronLogReader::read_node_report(std::string_view content) {
  content.remove_prefix(std::string_view("srun: error: ").size());
  const std::size_t host_end = content.find(": task");
  if (host_end == std::string_view::npos || host_end == 0) return;
  const std::string host(content.substr(0, host_end));
  std::string_view rest = content.substr(host_end + 2);
  if (rest.starts_with("tasks ")) {
    rest.remove_prefix(6);
  } else if (rest.starts_with("task ")) {
    rest.remove_prefix(5);
  } else {
    return;
  }
  const std::size_t list_end = rest.find(": ");
  if (list_end == std::string_view::npos) return;
  std::vector<std::uint32_t> tasks;
  if (!parse_task_list(rest.substr(0, list_end), tasks)) return;
  const std::string_view status = rest.substr(list_end + 2);
  const bool failed = status.starts_with("Exited with exit code") &&
                      trim(status.substr(std::string_view("Exited with exit code").size())) != "0";
  const bool killed = status.starts_with("Killed") || status.starts_with("Terminated");
  if (!failed && !killed) return;
  auto found = log_.nodes.find(host);
  if (found == log_.nodes.end()) {
    if (log_.nodes.size() >= kNodesKeptMax) return;
    found = log_.nodes.emplace(host, NodeTasks{}).first;
  }
  merge_sorted(failed ? found->second.failed : found->second.killed, tasks);
}

MegatronLog read_megatron_log(std::string_view text) {
  MegatronLogReader reader;
  reader.feed(text);
  return reader.finish();
}

}  // namespace attune
