// libattune-cupti-tracer.so: a CUPTI activity tracer for jobs that are not PyTorch, injected with
// CUDA_INJECTION64_PATH=<path to it>. The driver loads it during cuInit and calls
// InitializeInjection, which turns on CUPTI's activity records: kernels (concurrent), memcpys,
// memsets, runtime and driver calls, synchronisations, devices, and NVTX ranges (markers; NVTX
// reaches CUPTI when NVTX_INJECTION64_PATH names libcupti). At exit it flushes CUPTI and writes
// the process's trace as rank-<R>.json(.gz) in the Kineto format (adapters/kineto/kineto_trace.h):
// GPU rows joined to their launch rows by CUPTI's correlation ids, NVTX ranges as user_annotation
// rows (so a range named ProfilerStep#N marks a step as the PyTorch profiler does).
//
// Environment: ATTUNE_CUPTI_TRACE_DIR (default ./attune-cupti-trace), ATTUNE_CUPTI_TRACE_GZIP=1;
// the rank from RANK / SLURM_PROCID / OMPI_COMM_WORLD_RANK / PMI_RANK (else 0).
//
// CUPTI allows one subscriber per process: do not combine with the PyTorch profiler or nsys.
// Thread-safety: CUPTI calls the buffer callbacks from its own threads; one mutex guards the rows.
// Only InitializeInjection is visible.
#include <cupti.h>
#include <cxxabi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "adapters/kineto/kineto_trace.h"
#include "cuda/launch_rank.h"

namespace attune::gpu {

using kineto::CollectiveArgs;
using kineto::GpuRow;
using kineto::GpuRowKind;
using kineto::HostRow;
using kineto::TraceDevice;
using kineto::TraceProcessGroup;
using kineto::TraceRecords;
using kineto::write_trace_file;
namespace {

constexpr std::size_t kBufferBytes = 4 << 20;  // what Kineto asks for
constexpr std::size_t kBufferAlignment = 8;
constexpr std::size_t kRowsMax = 4'000'000;  // host + GPU rows kept per process
constexpr std::size_t kOpenMarkersMax = 65'536;

const char* environment(const char* name) { return std::getenv(name); }

std::string demangled(const char* name) {
  if (name == nullptr) return "";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : std::string(name);
}

const char* memory_kind_name(unsigned kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    default:
      return "Unknown";
  }
}

const char* copy_kind_name(unsigned kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "Unknown";
  }
}

const char* sync_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

class Tracer {
 public:
  void configure() {
    const char* dir = std::getenv("ATTUNE_CUPTI_TRACE_DIR");
    directory_ = dir != nullptr && *dir != '\0' ? dir : "attune-cupti-trace";
    const char* gzip = std::getenv("ATTUNE_CUPTI_TRACE_GZIP");
    gzip_ = gzip != nullptr && std::strcmp(gzip, "1") == 0;
    const LaunchRank launch = launch_rank(environment);
    records_.rank = launch.rank;
    records_.world_size = launch.world_size;
    records_.trace_name = "attune-cupti-tracer";
  }

  void add(const CUpti_Activity* record) {
    std::lock_guard lock(mutex_);
    if (records_.host.size() + records_.gpu.size() >= kRowsMax) {
      ++dropped_;
      return;
    }
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL:
        add_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        add_memcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        add_memset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record));
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER:
        add_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record),
                record->kind == CUPTI_ACTIVITY_KIND_RUNTIME);
        break;
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        add_sync(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record));
        break;
      case CUPTI_ACTIVITY_KIND_MARKER:
        add_marker(*reinterpret_cast<const CUpti_ActivityMarker2*>(record));
        break;
      case CUPTI_ACTIVITY_KIND_DEVICE:
        add_device(*reinterpret_cast<const CUpti_ActivityDevice5*>(record));
        break;
      default:
        break;
    }
  }

  void count_dropped(std::size_t records) {
    std::lock_guard lock(mutex_);
    cupti_dropped_ += static_cast<std::int64_t>(records);
  }

  void write() {
    std::lock_guard lock(mutex_);
    records_.counters = {{"cupti_rows_dropped", dropped_},
                         {"cupti_records_dropped", cupti_dropped_}};
    const Result<std::string> path = write_trace_file(directory_, records_, gzip_);
    if (path.ok()) {
      std::fprintf(stderr, "attune CUPTI tracer: %zu GPU rows, %zu host rows -> %s\n",
                   records_.gpu.size(), records_.host.size(), path->c_str());
    } else {
      std::fprintf(stderr, "attune CUPTI tracer: %s\n", path.error().c_str());
    }
  }

 private:
  // REQUIRES: mutex_ held (for all add_* below).
  void add_kernel(const CUpti_ActivityKernel10& k) {
    GpuRow row;
    row.kind = GpuRowKind::kKernel;
    row.name = demangled(k.name);
    row.device = static_cast<int>(k.deviceId);
    row.stream = k.streamId;
    row.correlation = k.correlationId;
    row.start_ns = static_cast<std::int64_t>(k.start);
    row.end_ns = static_cast<std::int64_t>(k.end);
    context_device_[k.contextId] = row.device;
    row.grid[0] = k.gridX;
    row.grid[1] = k.gridY;
    row.grid[2] = k.gridZ;
    row.block[0] = k.blockX;
    row.block[1] = k.blockY;
    row.block[2] = k.blockZ;
    records_.gpu.push_back(std::move(row));
  }

  void add_memcpy(const CUpti_ActivityMemcpy6& m) {
    GpuRow row;
    row.kind = GpuRowKind::kMemcpy;
    row.name = std::string("Memcpy ") + copy_kind_name(m.copyKind) + " (" +
               memory_kind_name(m.srcKind) + " -> " + memory_kind_name(m.dstKind) + ")";
    row.device = static_cast<int>(m.deviceId);
    row.stream = m.streamId;
    row.correlation = m.correlationId;
    row.start_ns = static_cast<std::int64_t>(m.start);
    row.end_ns = static_cast<std::int64_t>(m.end);
    row.bytes = static_cast<std::int64_t>(m.bytes);
    records_.gpu.push_back(std::move(row));
  }

  void add_memset(const CUpti_ActivityMemset4& m) {
    GpuRow row;
    row.kind = GpuRowKind::kMemset;
    row.name = std::string("Memset (") + memory_kind_name(m.memoryKind) + ")";
    row.device = static_cast<int>(m.deviceId);
    row.stream = m.streamId;
    row.correlation = m.correlationId;
    row.start_ns = static_cast<std::int64_t>(m.start);
    row.end_ns = static_cast<std::int64_t>(m.end);
    row.bytes = static_cast<std::int64_t>(m.bytes);
    records_.gpu.push_back(std::move(row));
  }

  void add_api(const CUpti_ActivityAPI& a, bool runtime) {
    HostRow row;
    row.category = runtime ? "cuda_runtime" : "cuda_driver";
    row.name = api_name(runtime, a.cbid);
    row.pid = static_cast<int>(a.processId);
    row.tid = a.threadId;
    row.start_ns = static_cast<std::int64_t>(a.start);
    row.end_ns = static_cast<std::int64_t>(a.end);
    row.correlation = a.correlationId;
    row.cbid = static_cast<int>(a.cbid);
    records_.host.push_back(std::move(row));
  }

  void add_sync(const CUpti_ActivitySynchronization2& s) {
    GpuRow row;
    row.kind = GpuRowKind::kSync;
    row.name = sync_name(s.type);
    const auto device = context_device_.find(s.contextId);
    row.device = device == context_device_.end() ? 0 : device->second;
    row.stream = s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : s.streamId;
    row.correlation = s.correlationId;
    row.start_ns = static_cast<std::int64_t>(s.start);
    row.end_ns = static_cast<std::int64_t>(s.end);
    records_.gpu.push_back(std::move(row));
  }

  void add_marker(const CUpti_ActivityMarker2& m) {
    if ((m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
      if (open_markers_.size() < kOpenMarkersMax) {
        open_markers_[m.id] =
            OpenMarker{m.name == nullptr ? "" : m.name, static_cast<std::int64_t>(m.timestamp),
                       static_cast<std::int64_t>(m.objectId.pt.threadId)};
      }
      return;
    }
    if ((m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) == 0) return;
    const auto open = open_markers_.find(m.id);
    if (open == open_markers_.end()) return;
    HostRow row;
    row.category = "user_annotation";
    row.name = open->second.name;
    row.pid = static_cast<int>(getpid());
    row.tid = open->second.tid;
    row.start_ns = open->second.start_ns;
    row.end_ns = static_cast<std::int64_t>(m.timestamp);
    records_.host.push_back(std::move(row));
    open_markers_.erase(open);
  }

  void add_device(const CUpti_ActivityDevice5& d) {
    for (const TraceDevice& known : records_.devices) {
      if (known.id == static_cast<int>(d.id)) return;
    }
    records_.devices.push_back(TraceDevice{
        static_cast<int>(d.id), d.name == nullptr ? "" : d.name,
        static_cast<std::int64_t>(d.globalMemorySize), static_cast<int>(d.computeCapabilityMajor),
        static_cast<int>(d.computeCapabilityMinor), static_cast<int>(d.numMultiprocessors)});
  }

  // "cudaLaunchKernel_v7000" → "cudaLaunchKernel", as Kineto names runtime rows.
  const std::string& api_name(bool runtime, CUpti_CallbackId cbid) {
    const std::uint64_t key = (runtime ? 1ull << 32 : 0) | cbid;
    const auto known = api_names_.find(key);
    if (known != api_names_.end()) return known->second;
    const char* name = nullptr;
    cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid,
                         &name);
    std::string text = name == nullptr ? "cbid_" + std::to_string(cbid) : name;
    const std::size_t version = text.rfind("_v");
    if (version != std::string::npos && version + 2 < text.size() &&
        text.find_first_not_of("0123456789", version + 2) == std::string::npos) {
      text.resize(version);
    }
    return api_names_.emplace(key, std::move(text)).first->second;
  }

  struct OpenMarker {
    std::string name;
    std::int64_t start_ns = 0;
    std::int64_t tid = 0;
  };

  std::mutex mutex_;
  TraceRecords records_;
  std::map<std::uint64_t, std::string> api_names_;
  std::map<std::uint32_t, OpenMarker> open_markers_;
  std::map<std::uint32_t, int> context_device_;
  std::int64_t dropped_ = 0;
  std::int64_t cupti_dropped_ = 0;
  std::string directory_;
  bool gzip_ = false;
};

Tracer& tracer() {
  static Tracer* instance = new Tracer();  // never destroyed: CUPTI may call back during exit
  return *instance;
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer == nullptr ? 0 : kBufferBytes;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                               std::size_t /*size*/, std::size_t valid_bytes) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    tracer().add(record);
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS &&
      dropped > 0) {
    tracer().count_dropped(dropped);
  }
  std::free(buffer);
}

void flush_and_write() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  tracer().write();
}

bool enable_activities() {
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
    return false;
  }
  constexpr CUpti_ActivityKind kRequired[] = {
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
      CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,
  };
  for (const CUpti_ActivityKind kind : kRequired) {
    if (cuptiActivityEnable(kind) != CUPTI_SUCCESS) return false;
  }
  // Optional: a CUPTI without them still gives the rows the breakdown needs.
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
  return true;
}

}  // namespace
}  // namespace attune::gpu

// Called by the CUDA driver during cuInit; 1 tells it the injection succeeded.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static bool initialized = false;
  if (initialized) return 1;
  initialized = true;
  attune::gpu::tracer().configure();
  if (!attune::gpu::enable_activities()) {
    std::fprintf(stderr, "attune CUPTI tracer: cannot enable CUPTI activity records\n");
    return 1;
  }
  std::atexit(attune::gpu::flush_and_write);
  return 1;
}
