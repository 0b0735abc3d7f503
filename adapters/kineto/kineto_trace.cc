#include "adapters/kineto/kineto_trace.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

#include "adapters/kineto/gzip.h"

namespace attune::kineto {
namespace {

constexpr std::int64_t kNsPerSecond = 1'000'000'000;
// What Kineto writes as the stream of a row that has none (a context synchronisation).
constexpr std::int64_t kNoStream = 4294967295LL;

void append_escaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x",
                    static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
}

void append_string(std::string& out, std::string_view text) {
  out += '"';
  append_escaped(out, text);
  out += '"';
}

void append_int(std::string& out, std::int64_t value) { out += std::to_string(value); }

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ranks[i]);
  }
  return out + "]";
}

void append_collective_args(std::string& out, const CollectiveArgs& c) {
  out += ", \"Collective name\": ";
  append_string(out, c.collective);
  out += ", \"In msg nelems\": ";
  append_int(out, c.in_nelems);
  out += ", \"Out msg nelems\": ";
  append_int(out, c.out_nelems);
  out += ", \"Group size\": ";
  append_int(out, c.group_size);
  out += ", \"dtype\": ";
  append_string(out, c.dtype);
  out += ", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": ";
  append_string(out, c.group_name);
  out += ", \"Process Group Description\": ";
  append_string(out, c.group_description);
  out += ", \"Process Group Ranks\": ";
  append_string(out, rank_list(c.group_ranks));
  if (!c.comm_id.empty()) {
    out += ", \"Comm Id\": ";
    append_string(out, c.comm_id);
  }
  if (c.comm_rank >= 0) {
    out += ", \"Comm Rank\": ";
    append_int(out, c.comm_rank);
  }
  if (c.seq >= 0) {
    out += ", \"Seq\": ";
    append_int(out, c.seq);
  }
  if (!c.algorithm.empty()) {
    out += ", \"Algorithm\": ";
    append_string(out, c.algorithm);
  }
  if (!c.protocol.empty()) {
    out += ", \"Protocol\": ";
    append_string(out, c.protocol);
  }
  if (c.channels >= 0) {
    out += ", \"Channels\": ";
    append_int(out, c.channels);
  }
  if (c.peer >= 0) {
    out += ", \"Peer\": ";
    append_int(out, c.peer);
  }
  if (c.bytes >= 0) {
    out += ", \"Bytes\": ";
    append_int(out, c.bytes);
  }
}

std::int64_t external_id_of(std::int64_t external_id, std::int64_t correlation) {
  return external_id >= 0 ? external_id : std::max<std::int64_t>(0, correlation);
}

const char* gpu_category(GpuRowKind kind) {
  switch (kind) {
    case GpuRowKind::kKernel:
      return "kernel";
    case GpuRowKind::kMemcpy:
      return "gpu_memcpy";
    case GpuRowKind::kMemset:
      return "gpu_memset";
    case GpuRowKind::kSync:
      return "cuda_sync";
  }
  return "kernel";
}

std::int64_t earliest_ns(const TraceRecords& records) {
  std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
  for (const HostRow& row : records.host) earliest = std::min(earliest, row.start_ns);
  for (const GpuRow& row : records.gpu) earliest = std::min(earliest, row.start_ns);
  return earliest == std::numeric_limits<std::int64_t>::max() ? 0 : earliest;
}

std::int64_t floor_to_second(std::int64_t ns) {
  std::int64_t seconds = ns / kNsPerSecond;
  if (ns < 0 && seconds * kNsPerSecond != ns) --seconds;
  return seconds * kNsPerSecond;
}

struct Writer {
  std::string out;
  bool first_event = true;

  void open_event() {
    out += first_event ? "  {\n" : ",\n  {\n";
    first_event = false;
  }
};

void write_header(Writer& w, const TraceRecords& records) {
  w.out += "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n";
  for (std::size_t i = 0; i < records.devices.size(); ++i) {
    const TraceDevice& d = records.devices[i];
    w.out += "    {\n      \"id\": " + std::to_string(d.id) + ", \"name\": ";
    append_string(w.out, d.name);
    w.out += ", \"totalGlobalMem\": " + std::to_string(d.total_memory_bytes) +
             ",\n      \"computeMajor\": " + std::to_string(d.compute_major) +
             ", \"computeMinor\": " + std::to_string(d.compute_minor) +
             ", \"numSms\": " + std::to_string(d.sm_count) + "\n    }";
    w.out += i + 1 < records.devices.size() ? ",\n" : "\n";
  }
  w.out += "  ],\n";
  // One line, as Kineto writes it: HTA finds the rank with the regex "rank":\s+(\d+).
  w.out +=
      "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(records.rank) +
      ", \"world_size\": " + std::to_string(records.world_size) +
      ", \"pg_count\": " + std::to_string(records.process_groups.size()) + ", \"pg_config\": [";
  for (std::size_t i = 0; i < records.process_groups.size(); ++i) {
    const TraceProcessGroup& g = records.process_groups[i];
    if (i > 0) w.out += ", ";
    w.out += "{\"pg_name\": ";
    append_string(w.out, g.name);
    w.out += ", \"pg_desc\": ";
    append_string(w.out, g.description);
    w.out += ", \"backend_config\": \"cuda:nccl\", \"pg_size\": " + std::to_string(g.size) +
             ", \"ranks\": " + rank_list(g.ranks) + "}";
  }
  w.out += "]";
  if (!records.nccl_version.empty()) {
    w.out += ", \"nccl_version\": ";
    append_string(w.out, records.nccl_version);
  }
  w.out += "},\n";
}

// Names close the event list, at the time of the first row, as Kineto writes them.
void write_names(Writer& w, const TraceRecords& records, std::int64_t at_ns, std::int64_t base_ns) {
  for (const TraceName& name : records.names) {
    w.open_event();
    w.out += "    \"name\": ";
    append_string(w.out, name.kind);
    w.out += ", \"ph\": \"M\", \"ts\": " + kineto_microseconds(at_ns - base_ns) +
             ", \"pid\": " + std::to_string(name.pid) + ", \"tid\": " + std::to_string(name.tid) +
             ",\n    \"args\": {\n      ";
    append_string(w.out, name.key);
    w.out += ": ";
    if (name.value_is_number) {
      w.out += name.value;
    } else {
      append_string(w.out, name.value);
    }
    w.out += "\n    }\n  }";
  }
}

void write_host_row(Writer& w, const HostRow& row, std::int64_t base_ns) {
  w.open_event();
  w.out += "    \"ph\": \"X\", \"cat\": ";
  append_string(w.out, row.category);
  w.out += ", \"name\": ";
  append_string(w.out, row.name);
  w.out += ", \"pid\": " + std::to_string(row.pid) + ", \"tid\": " + std::to_string(row.tid) +
           ",\n    \"ts\": " + kineto_microseconds(row.start_ns - base_ns) + ", \"dur\": " +
           kineto_microseconds(std::max<std::int64_t>(0, row.end_ns - row.start_ns)) +
           ",\n    \"args\": {\n      \"External id\": " +
           std::to_string(external_id_of(row.external_id, row.correlation));
  if (row.cbid >= 0) w.out += ", \"cbid\": " + std::to_string(row.cbid);
  if (row.correlation >= 0) w.out += ", \"correlation\": " + std::to_string(row.correlation);
  if (row.collective) append_collective_args(w.out, *row.collective);
  w.out += "\n    }\n  }";
}

void write_gpu_row(Writer& w, const GpuRow& row, std::int64_t base_ns) {
  const std::int64_t stream = row.stream < 0 ? kNoStream : row.stream;
  w.open_event();
  w.out += "    \"ph\": \"X\", \"cat\": \"";
  w.out += gpu_category(row.kind);
  w.out += "\", \"name\": ";
  append_string(w.out, row.name);
  w.out +=
      ", \"pid\": " + std::to_string(row.device) + ", \"tid\": " + std::to_string(stream) +
      ",\n    \"ts\": " + kineto_microseconds(row.start_ns - base_ns) +
      ", \"dur\": " + kineto_microseconds(std::max<std::int64_t>(0, row.end_ns - row.start_ns)) +
      ",\n    \"args\": {\n      \"External id\": " +
      std::to_string(external_id_of(row.external_id, row.correlation)) +
      ", \"device\": " + std::to_string(row.device) + ", \"stream\": " + std::to_string(stream) +
      ", \"correlation\": " + std::to_string(row.correlation);
  if (row.bytes >= 0) w.out += ", \"bytes\": " + std::to_string(row.bytes);
  if (row.kind == GpuRowKind::kMemcpy && row.bytes >= 0 && row.end_ns > row.start_ns) {
    char bandwidth[64];
    std::snprintf(bandwidth, sizeof bandwidth, "%.3f",
                  static_cast<double>(row.bytes) / static_cast<double>(row.end_ns - row.start_ns));
    w.out += ", \"memory bandwidth (GB/s)\": ";
    w.out += bandwidth;
  }
  if (row.kind == GpuRowKind::kKernel && row.grid[0] > 0) {
    w.out += ", \"grid\": [" + std::to_string(row.grid[0]) + ", " + std::to_string(row.grid[1]) +
             ", " + std::to_string(row.grid[2]) + "], \"block\": [" + std::to_string(row.block[0]) +
             ", " + std::to_string(row.block[1]) + ", " + std::to_string(row.block[2]) + "]";
  }
  if (row.collective) append_collective_args(w.out, *row.collective);
  w.out += "\n    }\n  }";
}

void write_flow(Writer& w, const char* phase, std::int64_t id, int pid, std::int64_t tid,
                std::int64_t ts_ns, std::int64_t base_ns) {
  w.open_event();
  w.out += "    \"ph\": \"";
  w.out += phase;
  w.out += "\", \"id\": " + std::to_string(id) + ", \"pid\": " + std::to_string(pid) +
           ", \"tid\": " + std::to_string(tid) +
           ", \"ts\": " + kineto_microseconds(ts_ns - base_ns) +
           ",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"";
  if (phase[0] == 'f') w.out += ", \"bp\": \"e\"";
  w.out += "\n  }";
}

}  // namespace

std::string trace_file_name(int rank, bool gzip) {
  return "rank-" + std::to_string(rank) + (gzip ? ".json.gz" : ".json");
}

std::string kineto_microseconds(std::int64_t ns) {
  const bool negative = ns < 0;
  // Magnitude in unsigned arithmetic so the most negative value does not overflow.
  const std::uint64_t magnitude =
      negative ? ~static_cast<std::uint64_t>(ns) + 1 : static_cast<std::uint64_t>(ns);
  char fraction[4];
  std::snprintf(fraction, sizeof fraction, "%03u", static_cast<unsigned>(magnitude % 1000));
  std::string out = negative ? "-" : "";
  out += std::to_string(magnitude / 1000);
  out += '.';
  out += fraction;
  return out;
}

std::string kineto_trace_json(const TraceRecords& records) {
  const std::int64_t base_ns = floor_to_second(earliest_ns(records));
  std::vector<const HostRow*> host;
  host.reserve(records.host.size());
  for (const HostRow& row : records.host) host.push_back(&row);
  std::stable_sort(host.begin(), host.end(),
                   [](const HostRow* a, const HostRow* b) { return a->start_ns < b->start_ns; });
  std::vector<const GpuRow*> gpu;
  gpu.reserve(records.gpu.size());
  for (const GpuRow& row : records.gpu) gpu.push_back(&row);
  std::stable_sort(gpu.begin(), gpu.end(),
                   [](const GpuRow* a, const GpuRow* b) { return a->start_ns < b->start_ns; });

  Writer w;
  w.out.reserve(4096 + 400 * (host.size() + gpu.size()));
  write_header(w, records);
  w.out += "  \"traceEvents\": [\n";
  // Launch rows that a GPU row points back to get a flow start; their GPU rows the flow end.
  std::vector<std::int64_t> launched;
  for (const HostRow* row : host) {
    write_host_row(w, *row, base_ns);
    if (row->correlation >= 0 && row->cbid >= 0) launched.push_back(row->correlation);
  }
  std::sort(launched.begin(), launched.end());
  for (const HostRow* row : host) {
    if (row->correlation >= 0 && row->cbid >= 0) {
      write_flow(w, "s", row->correlation, row->pid, row->tid, row->start_ns, base_ns);
    }
  }
  for (const GpuRow* row : gpu) {
    write_gpu_row(w, *row, base_ns);
    if (row->correlation >= 0 &&
        std::binary_search(launched.begin(), launched.end(), row->correlation)) {
      write_flow(w, "f", row->correlation, row->device, row->stream < 0 ? kNoStream : row->stream,
                 row->start_ns, base_ns);
    }
  }
  write_names(w, records, earliest_ns(records), base_ns);
  w.out += "\n  ],\n";
  if (!records.counters.empty()) {
    w.out += "  \"attune\": {";
    for (std::size_t i = 0; i < records.counters.size(); ++i) {
      if (i > 0) w.out += ", ";
      append_string(w.out, records.counters[i].first);
      w.out += ": " + std::to_string(records.counters[i].second);
    }
    w.out += "},\n";
  }
  w.out += "  \"traceName\": ";
  append_string(w.out, records.trace_name);
  w.out +=
      ",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " + std::to_string(base_ns) +
      "\n}\n";
  return std::move(w.out);
}

Result<std::string> write_trace_file(const std::string& directory, const TraceRecords& records,
                                     bool gzip) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) return make_error(directory + ": cannot create the directory: " + error.message());
  const std::string path =
      (std::filesystem::path(directory) / trace_file_name(records.rank, gzip)).string();
  const std::string text = kineto_trace_json(records);
  const std::string bytes = gzip ? gzip_text(text) : text;
  const std::string partial = path + ".partial";
  {
    std::ofstream file(partial, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) return make_error(partial + ": cannot write the trace");
  }
  std::filesystem::rename(partial, path, error);
  if (error) return make_error(path + ": cannot rename the trace into place: " + error.message());
  return path;
}

}  // namespace attune::kineto
