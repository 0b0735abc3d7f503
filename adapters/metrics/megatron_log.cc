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

constexpr std::string_view kArgumentsStart =
    "------------------------ arguments ------------------------";
constexpr std::string_view kArgumentsEnd =
    "-------------------- end of arguments ---------------------";
// Megatron pads an argument's name with dots to this width (`_print_args`).
constexpr std::size_t kArgumentNameWidth = 48;
constexpr std::size_t kUnsignedDigitsMax = 19;  // fits std::uint64_t
constexpr std::size_t kSrunLabelDigitsMax = 7;

// Marks of each failure sign, matched anywhere in a line. From megatron_lm.md §2.3, plus the
// Slurm and NCCL messages that name a node failure, a preemption, a time limit or a dead link.
constexpr std::string_view kOutOfMemoryMarks[] = {
    "OutOfMemoryError",
    "CUDA out of memory",
    "CUDA error: out of memory",
    "'out of memory'",  // NCCL: Cuda failure 2 'out of memory'
    "CUBLAS_STATUS_ALLOC_FAILED",
};
constexpr std::string_view kInfrastructureMarks[] = {
    "ncclSystemError",
    "ncclRemoteError",
    "ncclInternalError",
    "unhandled system error",
    "remote process exiting prematurely",
    "NET/IB : Got completion from peer",
    "closed by remote peer",
    "Connection reset by peer",
    "Connection closed by peer",
    "uncorrectable ECC error",
    "DUE TO NODE FAILURE",
    "Node failure on",
    "DUE TO PREEMPTION",
};
constexpr std::string_view kCollectiveTimeoutMarks[] = {
    "Watchdog caught collective operation timeout",
    "DUE TO TIME LIMIT",
};
constexpr std::string_view kProgramErrorMarks[] = {
    "Unexpected result",  // Megatron's rerun state machine: NaN/Inf/spiky loss or grad norm
    "illegal memory access",
};
constexpr std::string_view kErrorEchoMarks[] = {
    "Traceback (most recent call last):",
    "ChildFailedError",
    "ncclUnhandledCudaError",
    "unhandled cuda error",
    "terminate called after throwing",
};
// An exception line that contains one of these only reports a distributed failure elsewhere.
constexpr std::string_view kEchoExceptionMarks[] = {
    "DistBackendError", "DistStoreError",  "DistNetworkError",
    "ChildFailedError", "SignalException", "NCCL",
    "ProcessGroup",     "Watchdog",        "c10d",
};

bool contains_any(std::string_view text, std::span<const std::string_view> marks) {
  return std::any_of(marks.begin(), marks.end(), [text](std::string_view mark) {
    return text.find(mark) != std::string_view::npos;
  });
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

struct Stripped {
  std::string_view content;
  LineSource source;
};

Stripped strip_prefixes(std::string_view line) {
  Stripped out{line, {}};
  for (std::size_t taken = 0; taken < kPrefixesMax; ++taken) {
    std::uint32_t rank = 0;
    if (take_bracket_rank(out.content, rank) || take_srun_label(out.content, rank)) {
      out.source.ranks[out.source.depth++] = rank;
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

// The ` key: value |` segments after the header, into `line`. False when a segment is malformed
// or repeated, or a field Megatron always prints is missing or not a number.
bool parse_segments(std::string_view body, IterationLine& line) {
  std::vector<std::string_view> keys_seen;
  bool has_consumed = false, has_elapsed = false, has_batch = false, has_scale = false,
       has_skipped = false, has_nan = false;
  while (!has_nan) {
    const std::size_t bar = body.find('|');
    if (bar == std::string_view::npos) break;  // an unclosed tail: not a segment
    const std::string_view piece = body.substr(0, bar);
    body.remove_prefix(bar + 1);
    if (piece.size() < 5 || piece.front() != ' ' || piece.back() != ' ') return false;
    const std::string_view inner = piece.substr(1, piece.size() - 2);
    const std::size_t colon = inner.find(": ");
    if (colon == std::string_view::npos || colon == 0 || inner.front() == ' ') return false;
    const std::string_view key = inner.substr(0, colon);
    const std::string_view value = trim(inner.substr(colon + 2));
    if (value.empty()) return false;
    const bool repeated = std::find(keys_seen.begin(), keys_seen.end(), key) != keys_seen.end();
    keys_seen.push_back(key);
    if (repeated) {
      // Megatron prints each of its own fields once; a fork's or the MoE string's extra key may
      // repeat, and the first one counts.
      if (is_megatron_field(key)) return false;
      continue;
    }

    bool ok = true;
    if (key == "consumed samples") {
      ok = has_consumed = parse_unsigned(value, line.consumed_samples);
    } else if (key == "elapsed time per iteration (ms)") {
      ok = has_elapsed =
          parse_finite(value, line.elapsed_ms_per_iteration) && line.elapsed_ms_per_iteration >= 0;
    } else if (key == "throughput per GPU (TFLOP/s/GPU)") {
      double tflops = 0.0;
      ok = parse_finite(value, tflops);
      line.throughput_tflops_per_gpu = tflops;
    } else if (key == "learning rate") {
      double rate = 0.0;
      ok = parse_finite(value, rate);
      line.learning_rate = rate;
    } else if (key == "global batch size") {
      ok = has_batch = parse_unsigned(value, line.global_batch_size);
    } else if (key == "loss scale") {
      ok = has_scale = parse_finite(value, line.loss_scale);
    } else if (key == "grad norm") {
      double norm = 0.0;
      ok = parse_double(value, norm);
      line.grad_norm = norm;
    } else if (key == "number of skipped iterations") {
      ok = has_skipped = parse_unsigned32(value, line.skipped_iterations);
    } else if (key == "number of nan iterations") {
      ok = has_nan = parse_unsigned32(value, line.nan_iterations);
    } else if (key.ends_with("loss")) {
      double loss = 0.0;
      ok = parse_double(value, loss);
      if (key == "lm loss") {
        line.lm_loss = loss;
      } else {
        line.other_losses.push_back({std::string(key), loss});
      }
    }
    if (!ok) return false;
  }
  return has_consumed && has_elapsed && has_batch && has_scale && has_skipped && has_nan;
}

// ---- memory report -----------------------------------------------------------------------------

// Consumes `literal` at the front of `text`.
bool take(std::string_view& text, std::string_view literal) {
  if (!text.starts_with(literal)) return false;
  text.remove_prefix(literal.size());
  return true;
}

// A `%.2f` figure ending at " |", at whitespace or at the end of the text.
bool take_figure(std::string_view& text, double& value) {
  std::size_t end = 0;
  while (end < text.size() && (is_digit(text[end]) || text[end] == '.')) ++end;
  if (!parse_two_decimals(text.substr(0, end), value)) return false;
  text.remove_prefix(end);
  return text.empty() || is_space(text.front());
}

struct MemoryReport {
  std::uint32_t rank = 0;
  double max_allocated_mb = 0.0;
  double max_reserved_mb = 0.0;
};

// `[Rank {rank}] (after {N} iterations) memory (MB) | allocated: %.2f | max allocated: %.2f |
// reserved: %.2f | max reserved: %.2f` starting at `text`'s front.
std::optional<MemoryReport> parse_memory_report(std::string_view text) {
  MemoryReport report;
  double allocated = 0.0, reserved = 0.0;
  if (!take(text, "[Rank ")) return std::nullopt;
  const std::string_view rank = leading_digits(text, 9);
  if (!parse_unsigned32(rank, report.rank)) return std::nullopt;
  text.remove_prefix(rank.size());
  if (!take(text, "] (after ")) return std::nullopt;
  const std::string_view iterations = leading_digits(text);
  if (iterations.empty()) return std::nullopt;
  text.remove_prefix(iterations.size());
  if (take(text, " iterations) memory (MB) | allocated: ") && take_figure(text, allocated) &&
      take(text, " | max allocated: ") && take_figure(text, report.max_allocated_mb) &&
      take(text, " | reserved: ") && take_figure(text, reserved) &&
      take(text, " | max reserved: ") && take_figure(text, report.max_reserved_mb)) {
    return report;
  }
  return std::nullopt;
}

// ---- arguments block ---------------------------------------------------------------------------

// `  name ..... value`: two spaces, an identifier, a space, (48 - length) dots, a space, the
// value. With a name of 48 or more characters there are no dots, so two spaces separate it.
std::optional<std::pair<std::string_view, std::string_view>> parse_argument(
    std::string_view content) {
  if (!content.starts_with("  ") || content.size() < 3 || !is_alpha(content[2])) {
    return std::nullopt;
  }
  std::size_t i = 2;
  while (i < content.size() && is_identifier_char(content[i])) ++i;
  const std::string_view name = content.substr(2, i - 2);
  const std::size_t dots =
      name.size() < kArgumentNameWidth ? kArgumentNameWidth - name.size() : std::size_t{0};
  if (content.substr(i, 1) != " ") return std::nullopt;
  ++i;
  for (std::size_t k = 0; k < dots; ++k, ++i) {
    if (i >= content.size() || content[i] != '.') return std::nullopt;
  }
  if (content.substr(i, 1) != " ") return std::nullopt;
  return std::pair{name, content.substr(i + 1)};
}

// ---- failure signs -----------------------------------------------------------------------------

// `RuntimeError: ...`, `torch.OutOfMemoryError: ...`, a bare `AssertionError`: a dotted name
// ending in Error or Exception, at the front of the text, then ':' or the end.
bool is_exception_line(std::string_view text) {
  std::size_t i = 0;
  std::size_t component_start = 0;
  while (i < text.size() && (is_identifier_char(text[i]) || text[i] == '.')) {
    if (text[i] == '.') component_start = i + 1;
    ++i;
  }
  if (i == 0 || !is_alpha(text[0])) return false;
  if (i < text.size() && text[i] != ':') return false;
  const std::string_view name = text.substr(component_start, i - component_start);
  return name.ends_with("Error") || name.ends_with("Exception");
}

std::optional<FailureSign> sign_of(std::string_view line, std::string_view content) {
  if (contains_any(line, kOutOfMemoryMarks)) return FailureSign::kOutOfMemory;
  if (contains_any(line, kInfrastructureMarks)) return FailureSign::kInfrastructure;
  if (contains_any(line, kCollectiveTimeoutMarks)) return FailureSign::kCollectiveTimeout;
  if (contains_any(line, kProgramErrorMarks)) return FailureSign::kProgramError;
  const std::string_view text = trim_left(content);
  if (is_exception_line(text)) {
    return contains_any(text, kEchoExceptionMarks) ? FailureSign::kErrorEcho
                                                   : FailureSign::kProgramError;
  }
  if (contains_any(line, kErrorEchoMarks)) return FailureSign::kErrorEcho;
  return std::nullopt;
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

void MegatronLogReader::feed(std::string_view bytes) {
  ATTUNE_ASSERT(!finished_, "a finished reader takes no more lines");
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
  if (!pending_.empty() || pending_cut_) read_line(pending_, false);
  pending_.clear();
  finished_ = true;
  log_.iterations.reserve(iterations_.size());
  for (auto& [iteration, line] : iterations_) log_.iterations.push_back(std::move(line));
  log_.memory.reserve(memory_.size());
  for (const auto& [rank, memory] : memory_) log_.memory.push_back(memory);
  iterations_.clear();
  memory_.clear();
  return std::move(log_);
}

void MegatronLogReader::read_line(std::string_view line, bool terminated) {
  ++log_.lines_read;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const Stripped stripped = strip_prefixes(line);
  read_signs(line, stripped.content);
  if (stripped.content.find("iteration ") != std::string_view::npos) {
    read_iteration_line(stripped.content, stripped.source);
  }
  if (stripped.content.find("[Rank ") != std::string_view::npos) {
    read_memory_line(stripped.content);
  }
  read_arguments_line(stripped.content, stripped.source, terminated);
}

void MegatronLogReader::read_iteration_line(std::string_view content, LineSource source) {
  const std::optional<IterationHeader> header = find_header(content, 0);
  if (!header) return;
  IterationLine line;
  line.iteration = header->iteration;
  line.train_iters = header->train_iters;
  line.source = source;
  const std::string_view body = content.substr(header->end);
  if (find_header(content, header->end) || !parse_segments(body, line)) {
    ++log_.iteration_lines_rejected;
    return;
  }
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

void MegatronLogReader::read_memory_line(std::string_view content) {
  for (std::size_t at = content.find("[Rank "); at != std::string_view::npos;
       at = content.find("[Rank ", at + 1)) {
    const std::optional<MemoryReport> report = parse_memory_report(content.substr(at));
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
  if (trimmed == kArgumentsStart) {
    // A new block replaces an earlier one: the later run in this log is the one that ran on.
    log_.arguments = ArgumentsBlock{};
    arguments_open_ = true;
    arguments_source_ = source;
    return;
  }
  // Other ranks' lines may interleave with the block; only its own source's lines count.
  if (!arguments_open_ || source != arguments_source_) return;
  if (trimmed == kArgumentsEnd) {
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

void MegatronLogReader::read_signs(std::string_view line, std::string_view content) {
  const std::optional<FailureSign> sign = sign_of(line, content);
  if (!sign) return;
  std::optional<SignLine>& first = log_.first_signs[static_cast<std::size_t>(*sign)];
  if (!first) first = SignLine{log_.lines_read, std::string(line.substr(0, kSignLineBytesMax))};
}

MegatronLog read_megatron_log(std::string_view text) {
  MegatronLogReader reader;
  reader.feed(text);
  return reader.finish();
}

}  // namespace attune
