#include "adapters/profiler/trace_file.h"

#include <libdeflate.h>
#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>

namespace attune::profiler {
namespace {

namespace od = simdjson::ondemand;

constexpr std::size_t kZlibChunkBytes = std::size_t{1} << 20;
constexpr std::size_t kGzipTrailerBytes = 8;
constexpr std::size_t kGzipHeaderBytesMin = 18;  // header, empty deflate, trailer
// Deflate cannot expand data more than this (a 258-byte match per two bits at best), so an ISIZE
// trailer claiming more than this times the compressed size is damaged or crafted.
constexpr std::size_t kDeflateExpansionMax = 1032;
// simdjson's document limit; larger texts are refused with a clear error.
constexpr std::size_t kJsonBytesMax = std::size_t{4} * 1024 * 1024 * 1024 - 1;
// A profiler trace's JSON compresses 5-30 times; a gzip that inflates more than this many times
// its size, past the floor, is refused before it takes the memory (a 2 MB file of zeros would
// otherwise ask for 2 GB).
constexpr std::size_t kTraceInflationRatioMax = 200;
constexpr double kTraceMicrosecondsMax = 1e17;
constexpr std::size_t kTraceInflationFloor = std::size_t{512} * 1024 * 1024;

std::size_t inflation_limit(std::size_t compressed_bytes) {
  return std::min(kJsonBytesMax,
                  std::max(kTraceInflationFloor, compressed_bytes * kTraceInflationRatioMax));
}

std::string inflation_error(const std::string& label, std::size_t compressed_bytes) {
  return label + ": the gzip inflates to more than " +
         std::to_string(inflation_limit(compressed_bytes) >> 20) + " MiB (over " +
         std::to_string(kTraceInflationRatioMax) +
         " times its size); a profiler trace compresses far less, so it is refused";
}

// A byte buffer with simdjson's padding after the text, so the text parses in place.
struct PaddedBuffer {
  std::unique_ptr<char[]> bytes;
  std::size_t size = 0;
  std::size_t capacity = 0;  // usable bytes, padding excluded

  void reserve(std::size_t new_capacity) {
    if (new_capacity <= capacity) return;
    auto grown = std::make_unique_for_overwrite<char[]>(new_capacity + simdjson::SIMDJSON_PADDING);
    if (size > 0) std::memcpy(grown.get(), bytes.get(), size);
    bytes = std::move(grown);
    capacity = new_capacity;
  }
  std::string_view view() const { return {bytes.get(), size}; }
  simdjson::padded_string_view padded() const {
    return simdjson::padded_string_view(bytes.get(), size, capacity + simdjson::SIMDJSON_PADDING);
  }
};

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// Streaming inflate of every gzip member; the precise error when the stream is cut or corrupt.
Result<PaddedBuffer> inflate_with_zlib(std::string_view in, const std::string& label) {
  PaddedBuffer out;
  out.reserve(std::max<std::size_t>(in.size() * 4, kZlibChunkBytes));
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) return make_error(label + ": cannot start zlib");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  std::size_t remaining = in.size();
  int result = Z_OK;
  while (true) {
    if (stream.avail_in == 0 && remaining > 0) {
      const std::size_t feed = std::min<std::size_t>(remaining, UINT32_MAX);
      stream.avail_in = static_cast<uInt>(feed);
      remaining -= feed;
    }
    if (out.capacity - out.size < kZlibChunkBytes) {
      if (out.size >= inflation_limit(in.size())) {
        inflateEnd(&stream);
        return make_error(inflation_error(label, in.size()));
      }
      out.reserve(std::min(out.capacity * 2, inflation_limit(in.size()) + kZlibChunkBytes));
    }
    const std::size_t room = std::min<std::size_t>(out.capacity - out.size, UINT32_MAX);
    stream.next_out = reinterpret_cast<Bytef*>(out.bytes.get() + out.size);
    stream.avail_out = static_cast<uInt>(room);
    result = inflate(&stream, Z_NO_FLUSH);
    out.size += room - stream.avail_out;
    if (result == Z_STREAM_END) {
      // Another member may follow (concatenated gzip files), as Python's gzip module reads.
      if (stream.avail_in == 0 && remaining == 0) break;
      if (stream.avail_in < 2 ||
          !is_gzip(std::string_view(reinterpret_cast<const char*>(stream.next_in), 2))) {
        break;  // trailing bytes that are not a gzip member
      }
      inflateReset(&stream);
      continue;
    }
    if (result == Z_BUF_ERROR && stream.avail_in == 0 && remaining == 0) {
      inflateEnd(&stream);
      return make_error(label + ": truncated gzip (the compressed stream ends early)");
    }
    if (result != Z_OK && result != Z_BUF_ERROR) {
      const std::string why = stream.msg != nullptr ? stream.msg : "corrupt data";
      inflateEnd(&stream);
      return make_error(label + ": corrupt gzip (" + why + ")");
    }
  }
  inflateEnd(&stream);
  return out;
}

// Whole-buffer inflate with libdeflate, sized from the gzip trailer (ISIZE); anything it cannot
// do in one go (several members, > 4 GiB, damage, an ISIZE deflate could not produce) goes to
// zlib, which says precisely what is wrong and grows its buffer only as the data really inflates.
Result<PaddedBuffer> inflate_gzip(std::string_view in, const std::string& label) {
  if (in.size() < kGzipHeaderBytesMin) {
    return make_error(label + ": truncated gzip (" + std::to_string(in.size()) + " bytes)");
  }
  std::uint32_t isize = 0;
  std::memcpy(&isize, in.data() + in.size() - 4, 4);  // little-endian on the supported targets
  if (isize > in.size() * kDeflateExpansionMax) return inflate_with_zlib(in, label);
  if (isize > inflation_limit(in.size())) return make_error(inflation_error(label, in.size()));
  PaddedBuffer out;
  out.reserve(std::max<std::size_t>(isize, 1));
  libdeflate_decompressor* decompressor = libdeflate_alloc_decompressor();
  if (decompressor == nullptr) return make_error(label + ": out of memory");
  std::size_t in_used = 0;
  std::size_t out_size = 0;
  const libdeflate_result result = libdeflate_gzip_decompress_ex(
      decompressor, in.data(), in.size(), out.bytes.get(), out.capacity, &in_used, &out_size);
  libdeflate_free_decompressor(decompressor);
  if (result == LIBDEFLATE_SUCCESS && in_used + kGzipTrailerBytes > in.size()) {
    out.size = out_size;
    return out;
  }
  return inflate_with_zlib(in, label);
}

Result<PaddedBuffer> read_bytes(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return make_error(path + ": cannot open: " + std::generic_category().message(errno));
  }
  PaddedBuffer buffer;
  std::fseek(file, 0, SEEK_END);
  const long length = std::ftell(file);
  std::fseek(file, 0, SEEK_SET);
  if (length < 0) {
    std::fclose(file);
    return make_error(path + ": cannot read (not a regular file)");
  }
  if (static_cast<std::size_t>(length) > kJsonBytesMax) {
    std::fclose(file);
    return make_error(path + ": " + std::to_string(length) + " bytes, more than a trace may hold");
  }
  buffer.reserve(static_cast<std::size_t>(length) + 1);
  buffer.size = std::fread(buffer.bytes.get(), 1, static_cast<std::size_t>(length), file);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return make_error(path + ": read error");
  return buffer;
}

// HTA's rank: the first line matching `"rank":\s+(\d+)`. `\s+` cannot cross the line's end (a
// line ends at \n or \r in Python's text mode), so only blanks, tabs, \f and \v count.
std::optional<int> find_rank(std::string_view text) {
  constexpr std::string_view kKey = "\"rank\":";
  std::size_t at = 0;
  while ((at = text.find(kKey, at)) != std::string_view::npos) {
    std::size_t i = at + kKey.size();
    const std::size_t blanks_begin = i;
    while (i < text.size() &&
           (text[i] == ' ' || text[i] == '\t' || text[i] == '\f' || text[i] == '\v')) {
      ++i;
    }
    const std::size_t digits_begin = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i > blanks_begin && digits_begin > blanks_begin && i > digits_begin) {
      long long value = 0;
      const auto parsed = std::from_chars(text.data() + digits_begin, text.data() + i, value);
      if (parsed.ec == std::errc{} && value <= INT32_MAX) return static_cast<int>(value);
      return std::nullopt;
    }
    at += kKey.size();
  }
  return std::nullopt;
}

bool is_profiler_step(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  return name.starts_with(kPrefix) && name.size() > kPrefix.size() && name[kPrefix.size()] >= '0' &&
         name[kPrefix.size()] <= '9';
}

CatClass cat_class(std::string_view cat) {
  if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Kernel" ||
      cat == "Memcpy" || cat == "Memset" || cat == "mtia_ccp_events") {
    return CatClass::kKernel;
  }
  if (cat == "cuda_runtime" || cat == "cuda_driver") return CatClass::kRuntime;
  if (cat == "cuda_sync") return CatClass::kCudaSync;
  if (cat == "user_annotation" || cat == "gpu_user_annotation") return CatClass::kAnnotation;
  return CatClass::kOther;
}

std::string error_text(const std::string& label, simdjson::error_code error) {
  return label + ": malformed JSON (" + simdjson::error_message(error) + ")";
}

// pandas' to_numeric(errors="coerce") then astype(int): numeric strings count, others are -1.
std::int64_t coerce_integer(od::value value) {
  od::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS) return -1;
  double number = 0;
  if (type == od::json_type::number) {
    std::int64_t integer = 0;
    if (value.get_int64().get(integer) == simdjson::SUCCESS) return integer;
    if (value.get_double().get(number) != simdjson::SUCCESS) return -1;
  } else if (type == od::json_type::string) {
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS) return -1;
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), number);
    if (text.empty() || parsed.ec != std::errc{} || parsed.ptr != text.data() + text.size()) {
      return -1;
    }
  } else {
    return -1;
  }
  if (!std::isfinite(number) || std::abs(number) >= 9.2e18) return -1;
  return static_cast<std::int64_t>(number);
}

// Reads a string or a number as text (process-group names are sometimes numbers).
std::string text_of(od::value value) {
  od::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS) return {};
  if (type == od::json_type::string) {
    std::string_view text;
    if (value.get_string().get(text) == simdjson::SUCCESS) return std::string(text);
    return {};
  }
  std::string_view raw = value.raw_json_token();
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == ',')) {
    raw.remove_suffix(1);
  }
  return std::string(raw);
}

// The fields of one trace event that the analysis reads, as the event gives them.
struct RawEvent {
  std::string_view cat;
  std::string_view name;
  bool has_cat = false;
  bool has_ts = false;
  bool has_dur = false;
  double ts = 0;
  double dur = 0;
  std::int64_t stream = -1;
  bool has_stream = false;
  std::int64_t tid = -1;
  std::int64_t correlation = -1;
  CommArgs comm;
  bool has_comm_args = false;
};

// The event's args: its stream, correlation and process-group description.
simdjson::error_code read_args(od::value value, RawEvent& e) {
  od::json_type type;
  if (auto error = value.type().get(type)) return error;
  if (type != od::json_type::object) return simdjson::SUCCESS;
  od::object args;
  if (auto error = value.get_object().get(args)) return error;
  for (auto arg_result : args) {
    od::field arg;
    if (auto error = std::move(arg_result).get(arg)) return error;
    const od::raw_json_string arg_key = arg.key();
    if (arg_key == "stream") {
      e.stream = coerce_integer(arg.value());
      e.has_stream = true;
    } else if (arg_key == "correlation") {
      e.correlation = coerce_integer(arg.value());
    } else if (arg_key == "Process Group Description") {
      e.comm.group_desc = text_of(arg.value());
      e.has_comm_args = true;
    } else if (arg_key == "Process Group Name") {
      e.comm.group_name = text_of(arg.value());
      e.has_comm_args = true;
    } else if (arg_key == "Process Group Ranks") {
      e.comm.group_ranks = text_of(arg.value());
      e.has_comm_args = true;
    } else if (arg_key == "Collective name") {
      e.comm.collective = text_of(arg.value());
      e.has_comm_args = true;
    }
  }
  return simdjson::SUCCESS;
}

class TraceBuilder {
 public:
  explicit TraceBuilder(RankTrace& trace) : trace_(trace) {
    trace_.comm_args.emplace_back();  // id 0: no arguments
  }

  simdjson::error_code add_event(od::object event, std::uint32_t index);
  void finish();

 private:
  simdjson::error_code read_time(bool is_ts, od::value value, RawEvent& e);
  void add_row(const RawEvent& e, std::uint32_t index);
  std::uint32_t intern_name(std::string_view name);
  std::uint32_t intern_comm_args(const CommArgs& args);

  RankTrace& trace_;
  std::unordered_map<std::string_view, std::uint32_t> name_ids_;
  std::vector<std::unique_ptr<std::string>> name_storage_;
  std::vector<KernelClass> kernel_class_of_name_;
  std::unordered_map<std::string, std::uint32_t> comm_args_ids_;
  bool fractional_ts_ = false;
  bool gpu_row_with_negative_correlation_ = false;
};

std::uint32_t TraceBuilder::intern_name(std::string_view name) {
  const auto found = name_ids_.find(name);
  if (found != name_ids_.end()) return found->second;
  const auto id = static_cast<std::uint32_t>(trace_.names.size());
  trace_.names.emplace_back(name);
  name_storage_.push_back(std::make_unique<std::string>(name));
  name_ids_.emplace(*name_storage_.back(), id);
  kernel_class_of_name_.push_back(classify_kernel(name));
  return id;
}

std::uint32_t TraceBuilder::intern_comm_args(const CommArgs& args) {
  std::string key = args.group_desc + '\x1f' + args.group_name + '\x1f' + args.group_ranks +
                    '\x1f' + args.collective;
  const auto found = comm_args_ids_.find(key);
  if (found != comm_args_ids_.end()) return found->second;
  const auto id = static_cast<std::uint32_t>(trace_.comm_args.size());
  trace_.comm_args.push_back(args);
  comm_args_ids_.emplace(std::move(key), id);
  return id;
}

simdjson::error_code TraceBuilder::read_time(bool is_ts, od::value value, RawEvent& e) {
  od::json_type type;
  if (auto error = value.type().get(type)) return error;
  if (type != od::json_type::number) {
    if (is_ts) fractional_ts_ = true;  // a missing ts makes pandas' column float too
    return simdjson::SUCCESS;
  }
  od::number_type number_type;
  if (auto error = value.get_number_type().get(number_type)) return error;
  double number = 0;
  if (auto error = value.get_double().get(number)) return error;
  // Microseconds: nothing a profiler writes lies beyond about 3,000 years from the epoch or
  // the trace's start, and such a value would print as inf or nan downstream.
  if (!std::isfinite(number) || std::abs(number) > kTraceMicrosecondsMax) {
    return simdjson::NUMBER_OUT_OF_RANGE;
  }
  if (is_ts) {
    e.has_ts = true;
    e.ts = number;
    if (number_type != od::number_type::signed_integer &&
        number_type != od::number_type::unsigned_integer) {
      fractional_ts_ = true;
    }
  } else {
    e.has_dur = true;
    e.dur = number;
  }
  return simdjson::SUCCESS;
}

simdjson::error_code TraceBuilder::add_event(od::object event, std::uint32_t index) {
  RawEvent e;
  for (auto field_result : event) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return error;
    const od::raw_json_string key = field.key();
    od::value value = field.value();
    if (key == "cat") {
      od::json_type type;
      if (auto error = value.type().get(type)) return error;
      if (type == od::json_type::null) continue;
      e.has_cat = true;
      if (type == od::json_type::string) {
        if (auto error = value.get_string().get(e.cat)) return error;
      }
    } else if (key == "name") {
      od::json_type type;
      if (auto error = value.type().get(type)) return error;
      if (type == od::json_type::string) {
        if (auto error = value.get_string().get(e.name)) return error;
      }
    } else if (key == "ts" || key == "dur") {
      if (auto error = read_time(key == "ts", value, e)) return error;
    } else if (key == "tid") {
      e.tid = coerce_integer(value);
    } else if (key == "args") {
      if (auto error = read_args(value, e)) return error;
    }
  }
  if (!e.has_ts) fractional_ts_ = true;
  // HTA drops rows without dur or cat (metadata, instant and flow events) and cat "Trace".
  if (!e.has_cat || !e.has_dur || !e.has_ts || e.cat == "Trace") return simdjson::SUCCESS;
  add_row(e, index);
  return simdjson::SUCCESS;
}

// One row HTA keeps, with its flags, kernel class and communication arguments.
void TraceBuilder::add_row(const RawEvent& e, std::uint32_t index) {
  ++trace_.row_count;
  trace_.min_ts_us = std::min(trace_.min_ts_us, e.ts);
  TraceEvent row;
  row.ts_us = e.ts;
  row.dur_us = e.dur;
  row.stream = e.stream;
  row.correlation = e.correlation;
  row.index = index;
  row.name_id = intern_name(e.name);
  row.cat = cat_class(e.cat);
  row.kernel = kernel_class_of_name_[row.name_id];
  const bool gpu_row =
      (e.stream >= 0 && e.correlation >= 0) || e.name == "Event Sync" || e.name == "Context Sync";
  if (gpu_row) row.flags |= kGpuRow;
  if (is_profiler_step(e.name)) row.flags |= kProfilerStep;
  if (e.cat == "gpu_user_annotation") row.flags |= kGpuAnnotation;
  if (gpu_row) {
    if (e.correlation < 0) gpu_row_with_negative_correlation_ = true;
  } else {
    trace_.min_cpu_ts_us = std::min(trace_.min_cpu_ts_us, e.ts);
    if (e.correlation < 0) trace_.negative_correlation_cpu_rows.emplace_back(e.correlation, e.ts);
  }
  const bool native_comm =
      row.kernel == KernelClass::kCommunication || moves_data_between_gpus(e.name);
  if (row.cat == CatClass::kKernel && native_comm) {
    row.comm = CommKind::kUnknown;  // resolved in finish(), once distributedInfo is known
    if (e.has_comm_args) row.comm_args = intern_comm_args(e.comm);
  }
  // MTIA device events carry their queue in tid, not args.stream (resolved in finish()).
  const bool tid_stream = row.cat == CatClass::kKernel && !e.has_stream && e.tid >= 0;
  if (tid_stream) {
    row.flags |= kStreamFromTid;
    row.stream = e.tid;
  }
  const bool keep = e.stream != -1 || gpu_row || e.correlation >= 0 || row.profiler_step() ||
                    index == 0 || tid_stream;
  if (keep) trace_.events.push_back(row);
}

// The kind of each communication kernel: the process-group description in its arguments, else
// the group its name or its ranks point to in distributedInfo, else its name; then, for kernels
// still unknown, the one kind every told kernel on the same stream has.
void TraceBuilder::finish() {
  const bool mtia = trace_.backend.starts_with("mtia");
  std::erase_if(trace_.events, [&](TraceEvent& e) {
    if ((e.flags & kStreamFromTid) == 0) return false;
    if (mtia) return false;
    e.stream = -1;
    return !(e.gpu_row() || e.correlation >= 0 || e.profiler_step() || e.index == 0);
  });
  if (fractional_ts_) {
    trace_.ns_rounded = true;
    for (TraceEvent& e : trace_.events) {
      const double end = std::floor(e.ts_us + e.dur_us);
      e.ts_us = std::ceil(e.ts_us);
      e.dur_us = end - e.ts_us;
    }
    for (auto& row : trace_.negative_correlation_cpu_rows) row.second = std::ceil(row.second);
    trace_.min_ts_us = std::ceil(trace_.min_ts_us);
    trace_.min_cpu_ts_us = std::ceil(trace_.min_cpu_ts_us);
  }
  if (!gpu_row_with_negative_correlation_) {
    trace_.negative_correlation_cpu_rows.clear();
    trace_.negative_correlation_cpu_rows.shrink_to_fit();
  }

  std::vector<CommKind> kind_of_args(trace_.comm_args.size(), CommKind::kUnknown);
  for (std::size_t i = 1; i < trace_.comm_args.size(); ++i) {
    const CommArgs& args = trace_.comm_args[i];
    CommKind kind = comm_kind_of_group(args.group_desc);
    for (const ProcessGroupInfo& group : trace_.process_groups) {
      if (kind != CommKind::kUnknown) break;
      std::string ranks = "[";
      for (std::size_t r = 0; r < group.ranks.size(); ++r) {
        ranks += (r > 0 ? ", " : "") + std::to_string(group.ranks[r]);
      }
      ranks += "]";
      if ((!args.group_name.empty() && args.group_name == group.name) ||
          (!args.group_ranks.empty() && args.group_ranks == ranks)) {
        kind = comm_kind_of_group(group.desc);
      }
    }
    kind_of_args[i] = kind;
  }
  std::unordered_map<std::int64_t, CommKind> kind_of_stream;
  for (TraceEvent& e : trace_.events) {
    if (e.comm == CommKind::kNone) continue;
    e.comm = kind_of_args[e.comm_args];
    if (e.comm == CommKind::kUnknown) {
      e.comm =
          comm_kind_of_kernel(trace_.names[e.name_id], trace_.comm_args[e.comm_args].collective);
    }
    if (e.comm == CommKind::kUnknown) continue;
    const auto [it, inserted] = kind_of_stream.emplace(e.stream, e.comm);
    if (!inserted && it->second != e.comm) it->second = CommKind::kUnknown;
  }
  for (TraceEvent& e : trace_.events) {
    if (e.comm != CommKind::kUnknown) continue;
    const auto found = kind_of_stream.find(e.stream);
    if (found != kind_of_stream.end()) e.comm = found->second;
  }
}

simdjson::error_code parse_distributed_info(od::value value, RankTrace& trace) {
  od::json_type type;
  if (auto error = value.type().get(type)) return error;
  if (type != od::json_type::object) return simdjson::SUCCESS;
  od::object info;
  if (auto error = value.get_object().get(info)) return error;
  for (auto field_result : info) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return error;
    const od::raw_json_string key = field.key();
    if (key == "backend") {
      trace.backend = text_of(field.value());
    } else if (key == "rank") {
      trace.distributed_rank = static_cast<int>(coerce_integer(field.value()));
    } else if (key == "world_size") {
      trace.world_size = static_cast<int>(coerce_integer(field.value()));
    } else if (key == "pg_config") {
      od::array groups;
      if (field.value().get_array().get(groups) != simdjson::SUCCESS) continue;
      for (auto group_result : groups) {
        od::object group;
        if (group_result.get_object().get(group) != simdjson::SUCCESS) continue;
        ProcessGroupInfo info_row;
        for (auto group_field_result : group) {
          od::field group_field;
          if (auto error = std::move(group_field_result).get(group_field)) return error;
          const od::raw_json_string group_key = group_field.key();
          if (group_key == "pg_name") {
            info_row.name = text_of(group_field.value());
          } else if (group_key == "pg_desc") {
            info_row.desc = text_of(group_field.value());
          } else if (group_key == "ranks") {
            od::array ranks;
            if (group_field.value().get_array().get(ranks) != simdjson::SUCCESS) continue;
            for (auto rank_result : ranks) {
              std::int64_t rank = 0;
              if (rank_result.get_int64().get(rank) == simdjson::SUCCESS) {
                info_row.ranks.push_back(static_cast<int>(rank));
              }
            }
          }
        }
        trace.process_groups.push_back(std::move(info_row));
      }
    }
  }
  return simdjson::SUCCESS;
}

// Where the parts of a Kineto document lie, found by a scan that only tracks strings and nesting:
// the members of the top-level object that the reader uses, and cut points in the traceEvents
// array (the commas between its elements), about kEventChunkBytes apart. Parsing the array a
// chunk at a time keeps simdjson's structural index to one chunk's size instead of the whole
// document's (four bytes per structural character: as much again as the text on a large trace).
struct DocumentLayout {
  std::size_t events_open = 0;    // the array's '['
  std::size_t events_close = 0;   // its ']'
  std::vector<std::size_t> cuts;  // offsets of commas between elements, in order
  std::optional<std::pair<std::size_t, std::size_t>> distributed_info;  // [begin, end) of the value
};

constexpr std::size_t kEventChunkBytes = std::size_t{8} << 20;

class StructureScanner {
 public:
  explicit StructureScanner(std::string_view text) : text_(text) {}

  // nullopt when the text is not an object with a traceEvents array, or is malformed in a way the
  // scan sees; the whole-document parse then reports what is wrong.
  std::optional<DocumentLayout> scan() {
    DocumentLayout layout;
    bool saw_events = false;
    skip_blanks();
    if (!take('{')) return std::nullopt;
    skip_blanks();
    if (take('}')) return std::nullopt;  // no traceEvents
    while (true) {
      skip_blanks();
      const std::size_t key_begin = at_;
      if (!skip_string()) return std::nullopt;
      const std::string_view key = text_.substr(key_begin + 1, at_ - key_begin - 2);
      skip_blanks();
      if (!take(':')) return std::nullopt;
      skip_blanks();
      const std::size_t value_begin = at_;
      if (key == "traceEvents" && !saw_events) {
        if (!scan_events(layout)) return std::nullopt;
        saw_events = true;
      } else {
        if (!skip_value()) return std::nullopt;
        if (key == "distributedInfo") layout.distributed_info.emplace(value_begin, at_);
      }
      skip_blanks();
      if (take(',')) continue;
      if (take('}')) break;
      return std::nullopt;
    }
    skip_blanks();
    if (at_ != text_.size() || !saw_events) return std::nullopt;
    return layout;
  }

 private:
  bool scan_events(DocumentLayout& layout) {
    if (!take('[')) return false;
    layout.events_open = at_ - 1;
    std::size_t chunk_begin = at_;
    skip_blanks();
    if (take(']')) {
      layout.events_close = at_ - 1;
      return true;
    }
    while (true) {
      skip_blanks();
      if (!skip_value()) return false;
      skip_blanks();
      if (take(']')) {
        layout.events_close = at_ - 1;
        return true;
      }
      if (!take(',')) return false;
      if (at_ - chunk_begin >= kEventChunkBytes) {
        layout.cuts.push_back(at_ - 1);
        chunk_begin = at_;
      }
    }
  }

  void skip_blanks() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t')) {
      ++at_;
    }
  }
  bool take(char c) {
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  // From an opening quote to just past the closing one: the next quote not escaped by an odd
  // number of backslashes (memchr finds quotes far faster than a byte loop).
  bool skip_string() {
    if (!take('"')) return false;
    while (at_ < text_.size()) {
      const void* quote = std::memchr(text_.data() + at_, '"', text_.size() - at_);
      if (quote == nullptr) return false;
      const std::size_t q =
          static_cast<std::size_t>(static_cast<const char*>(quote) - text_.data());
      std::size_t backslashes = 0;
      while (q - backslashes > at_ && text_[q - backslashes - 1] == '\\') ++backslashes;
      at_ = q + 1;
      if (backslashes % 2 == 0) return true;
    }
    return false;
  }
  // One value: a string, an object or array (balanced, strings skipped), or a scalar's bytes.
  bool skip_value() {
    if (at_ >= text_.size()) return false;
    const char first = text_[at_];
    if (first == '"') return skip_string();
    if (first != '{' && first != '[') {
      const std::size_t begin = at_;
      while (at_ < text_.size() && text_[at_] != ',' && text_[at_] != '}' && text_[at_] != ']' &&
             text_[at_] != ' ' && text_[at_] != '\n' && text_[at_] != '\r' && text_[at_] != '\t') {
        ++at_;
      }
      return at_ > begin;
    }
    int depth = 0;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '"') {
        if (!skip_string()) return false;
        continue;
      }
      ++at_;
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return true;
      }
    }
    return false;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

// Adds each event of `events` to `builder`, numbering them from `index` on (HTA's event index
// counts every event of traceEvents, across chunks).
Status add_events(TraceBuilder& builder, od::array& events, std::uint32_t& index,
                  const std::string& label) {
  for (auto event_result : events) {
    od::object event;
    if (auto error = event_result.get_object().get(event)) {
      return make_error(error == simdjson::INCORRECT_TYPE
                            ? label + ": traceEvents[" + std::to_string(index) +
                                  "] is not an object"
                            : error_text(label, error));
    }
    if (auto error = builder.add_event(event, index)) {
      return make_error(error == simdjson::NUMBER_OUT_OF_RANGE
                            ? label + ": traceEvents[" + std::to_string(index) +
                                  "] has a ts or dur that is not a plausible time in microseconds"
                            : error_text(label, error));
    }
    ++index;
  }
  return Ok{};
}

// The whole document at once: for what the scan cannot split, so that malformed input gets
// simdjson's precise error.
Result<RankTrace> parse_whole(simdjson::padded_string_view json, RankTrace trace,
                              const std::string& label) {
  od::parser parser;
  od::document document;
  if (auto error = parser.iterate(json).get(document)) return make_error(error_text(label, error));
  od::object top;
  if (auto error = document.get_object().get(top)) {
    return make_error(error == simdjson::INCORRECT_TYPE
                          ? label + ": not a Kineto trace (the JSON is not an object)"
                          : error_text(label, error));
  }
  TraceBuilder builder(trace);
  bool saw_events = false;
  for (auto field_result : top) {
    od::field field;
    if (auto error = std::move(field_result).get(field))
      return make_error(error_text(label, error));
    const od::raw_json_string key = field.key();
    if (key == "traceEvents" && !saw_events) {
      od::array events;
      if (field.value().get_array().get(events) != simdjson::SUCCESS) {
        return make_error(label + ": traceEvents is not an array");
      }
      std::uint32_t index = 0;
      if (Status added = add_events(builder, events, index, label); !added.ok()) {
        return make_error(added.error());
      }
      trace.event_count = index;
      saw_events = true;
    } else if (key == "distributedInfo") {
      if (auto error = parse_distributed_info(field.value(), trace)) {
        return make_error(error_text(label, error));
      }
    }
  }
  if (!saw_events) return make_error(label + ": not a Kineto trace (no traceEvents array)");
  builder.finish();
  return trace;
}

// REQUIRES: `buffer` holds the text with simdjson's padding after it. The traceEvents array is
// parsed a chunk at a time in place: the comma before a chunk becomes '[' and the one after it
// ']' (the text is not needed afterwards).
Result<RankTrace> parse_padded(PaddedBuffer& buffer, const std::string& label) {
  RankTrace trace;
  trace.path = label;
  trace.json_bytes = buffer.size;
  if (buffer.size > kJsonBytesMax) {
    return make_error(label + ": the trace is larger than 4 GiB of JSON");
  }
  const std::string_view text = buffer.view();
  if (const std::optional<int> rank = find_rank(text)) {
    trace.rank = *rank;
    trace.rank_found = true;
  }
  const std::optional<DocumentLayout> layout = StructureScanner(text).scan();
  if (!layout) return parse_whole(buffer.padded(), std::move(trace), label);

  char* const bytes = buffer.bytes.get();
  const std::size_t padded_end = buffer.capacity + simdjson::SIMDJSON_PADDING;
  od::parser parser;
  if (layout->distributed_info) {
    const auto [begin, end] = *layout->distributed_info;
    od::document info;
    const simdjson::padded_string_view view(bytes + begin, end - begin, padded_end - begin);
    if (auto error = parser.iterate(view).get(info)) return make_error(error_text(label, error));
    od::value value;
    if (auto error = info.get_value().get(value)) return make_error(error_text(label, error));
    if (auto error = parse_distributed_info(value, trace)) {
      return make_error(error_text(label, error));
    }
  }
  TraceBuilder builder(trace);
  std::uint32_t index = 0;
  std::size_t open = layout->events_open;
  for (std::size_t chunk = 0; chunk <= layout->cuts.size(); ++chunk) {
    const std::size_t close =
        chunk < layout->cuts.size() ? layout->cuts[chunk] : layout->events_close;
    bytes[open] = '[';
    bytes[close] = ']';
    const simdjson::padded_string_view view(bytes + open, close - open + 1, padded_end - open);
    od::document document;
    if (auto error = parser.iterate(view).get(document)) {
      return make_error(error_text(label, error));
    }
    od::array events;
    if (auto error = document.get_array().get(events)) return make_error(error_text(label, error));
    if (Status added = add_events(builder, events, index, label); !added.ok()) {
      return make_error(added.error());
    }
    open = close;
  }
  trace.event_count = index;
  builder.finish();
  return trace;
}

// A trace file's bytes, gzip (told by its magic bytes) or plain JSON. The compressed bytes are
// freed before the text is parsed, so at most the text and the records are held while parsing.
Result<RankTrace> parse_file_bytes(PaddedBuffer bytes, const std::string& label) {
  if (!is_gzip(bytes.view())) return parse_padded(bytes, label);
  Result<PaddedBuffer> json = inflate_gzip(bytes.view(), label);
  if (!json) return make_error(json.error());
  bytes = PaddedBuffer{};
  return parse_padded(*json, label);
}

}  // namespace

Result<std::string> gunzip(std::string_view compressed, const std::string& label) {
  Result<PaddedBuffer> inflated = inflate_gzip(compressed, label);
  if (!inflated) return make_error(inflated.error());
  return std::string(inflated->view());
}

Result<RankTrace> parse_trace_text(std::string_view json_text, const std::string& label) {
  PaddedBuffer buffer;
  buffer.reserve(json_text.size() + 1);
  if (!json_text.empty()) std::memcpy(buffer.bytes.get(), json_text.data(), json_text.size());
  buffer.size = json_text.size();
  return parse_padded(buffer, label);
}

Result<RankTrace> parse_trace_bytes(std::string_view bytes, const std::string& label) {
  if (bytes.size() > kJsonBytesMax) {
    return make_error(label + ": " + std::to_string(bytes.size()) +
                      " bytes, more than a trace may hold");
  }
  PaddedBuffer buffer;
  buffer.reserve(bytes.size() + 1);
  if (!bytes.empty()) std::memcpy(buffer.bytes.get(), bytes.data(), bytes.size());
  buffer.size = bytes.size();
  return parse_file_bytes(std::move(buffer), label);
}

Result<RankTrace> read_trace_file(const std::string& path) {
  try {
    Result<PaddedBuffer> bytes = read_bytes(path);
    if (!bytes) return make_error(bytes.error());
    return parse_file_bytes(std::move(bytes).value(), path);
  } catch (const std::bad_alloc&) {
    return make_error(path + ": not enough memory to read the trace");
  }
}

}  // namespace attune::profiler
