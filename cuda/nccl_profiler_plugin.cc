// libattune-nccl-profiler.so: an NCCL profiler plugin (NCCL_PROFILER_PLUGIN=<path to it>) that
// records every collective and point-to-point operation of every communicator in the process and
// writes them per rank in the Kineto format the trace analyzer reads.
//
// NCCL calls init per communicator; the plugin asks for Coll, P2p and KernelCh events. A Coll or
// P2p event starts when the operation is enqueued on the host and stops once it is enqueued; its
// KernelCh children carry the GPU globaltimer (ns) when each channel of the kernel started and
// stopped. An operation is complete when it has stopped and as many channels as it was given
// have stopped; it then moves from the fixed pool of operations in flight to its rank's log.
// Files are written when the last communicator is finalized and again when the library is
// unloaded or the process exits, each time whole (a run that never destroys its communicators,
// as PyTorch's often do not, still gets its files).
//
// Environment: ATTUNE_NCCL_TRACE_DIR (default ./attune-nccl-trace), ATTUNE_NCCL_TRACE_GZIP=1 for
// .json.gz; the rank from RANK / SLURM_PROCID / OMPI_COMM_WORLD_RANK / PMI_RANK, else the rank in
// the communicator; LOCAL_RANK as the device number written on GPU rows.
//
// Host times are CLOCK_MONOTONIC moved onto CLOCK_REALTIME by an offset sampled when the plugin
// loads (a steady clock in Unix time). The GPU globaltimer counts Unix-time ns too (the driver sets
// it from the host clock); if the first timed operation shows the two apart by more than
// kClockSkewMaxNs, GPU times are moved by the difference between that operation's kernel start
// and its enqueue.
//
// Thread-safety: NCCL calls from application threads and its proxy thread; one mutex guards all
// state. Only the ncclProfiler_v5 and ncclProfiler_v4 symbols are visible.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "adapters/kineto/kineto_trace.h"
#include "cuda/launch_rank.h"
#include "cuda/nccl_names.h"
#include "cuda/nccl_profiler_api.h"

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

namespace api = nccl_api;

constexpr int kOpsInFlightMax = 1024;
constexpr int kChannelsMax = 64;  // NCCL's channels per communicator
constexpr std::size_t kRecordsPerRankMax = 200'000;
constexpr std::int64_t kClockSkewMaxNs = 1'000'000'000;
// Synthetic stream numbers for NCCL kernels: the plugin does not see CUDA streams, so each
// communicator gets its own, above the stream numbers CUDA hands out in practice.
constexpr int kStreamBase = 1000;
constexpr std::size_t kNameBytesMax = 32;
constexpr int kLogWarn = 2;
constexpr int kLogInfo = 3;
constexpr unsigned long kLogInit = 1;

std::int64_t clock_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void copy_name(char (&to)[kNameBytesMax], const char* from) {
  std::snprintf(to, sizeof to, "%s", from == nullptr ? "" : from);
}

const char* environment(const char* name) { return std::getenv(name); }

struct Comm {
  std::uint64_t id = 0;
  std::string name;
  int nranks = 0;
  int rank = 0;
  int file_rank = 0;
  int stream = 0;
  bool finalized = false;
};

enum class HandleKind { kOp, kChannel };

struct Handle {
  HandleKind kind;
};

struct Op;

struct Channel : Handle {
  Op* op = nullptr;
  bool open = false;
  std::uint64_t start_timer = 0;
  std::uint64_t stop_timer = 0;
};

// An operation in flight. Names are copied: NCCL's strings need not outlive the call.
struct Op : Handle {
  bool in_use = false;
  Comm* comm = nullptr;
  bool point_to_point = false;
  char func[kNameBytesMax] = {};
  char datatype[kNameBytesMax] = {};
  char algo[kNameBytesMax] = {};
  char proto[kNameBytesMax] = {};
  std::uint64_t seq = 0;
  std::uint64_t count = 0;
  int peer = -1;
  int channels_expected = 0;
  int channels_started = 0;
  int channels_stopped = 0;
  bool stopped = false;
  std::int64_t tid = 0;
  std::int64_t host_start_ns = 0;
  std::int64_t host_stop_ns = 0;
  std::uint64_t gpu_start = 0;  // min over channels; 0 = none
  std::uint64_t gpu_stop = 0;   // max over channels
  std::array<Channel, kChannelsMax> channels;
};

// A finished operation, as written.
struct OpRecord {
  Comm* comm = nullptr;
  bool point_to_point = false;
  std::string func, datatype, algo, proto;
  std::uint64_t seq = 0;
  std::uint64_t count = 0;
  int peer = -1;
  int channels = 0;
  std::int64_t tid = 0;
  std::int64_t host_start_ns = 0;
  std::int64_t host_stop_ns = 0;
  std::uint64_t gpu_start = 0;
  std::uint64_t gpu_stop = 0;
};

struct RankLog {
  int world_size = 1;
  std::vector<OpRecord> records;
  std::int64_t dropped = 0;
};

// What NCCL's v4 and v5 descriptors say about an event, in one shape.
struct EventStart {
  std::uint64_t type = 0;
  void* parent = nullptr;
  const char* func = nullptr;
  const char* datatype = nullptr;
  const char* algo = nullptr;
  const char* proto = nullptr;
  std::uint64_t seq = 0;
  std::uint64_t count = 0;
  int peer = -1;
  int n_channels = 0;
  int channel_id = 0;
  std::uint64_t p_timer = 0;
};

class Recorder {
 public:
  Recorder()
      : realtime_offset_ns_(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC)),
        ops_(std::make_unique<std::array<Op, kOpsInFlightMax>>()) {
    for (Op& op : *ops_) {
      op.kind = HandleKind::kOp;
      for (Channel& channel : op.channels) {
        channel.kind = HandleKind::kChannel;
        channel.op = &op;
      }
    }
  }

  ~Recorder() {
    std::lock_guard lock(mutex_);
    for (Op& op : *ops_) {
      if (op.in_use) retire(op);
    }
    if (dirty_) write_all();
  }

  api::Result init(void** context, std::uint64_t comm_id, int* mask, const char* comm_name,
                   int nranks, int rank, api::DebugLogger log) {
    std::lock_guard lock(mutex_);
    if (comms_.empty()) configure(log);
    auto comm = std::make_unique<Comm>();
    comm->id = comm_id;
    comm->name = comm_name == nullptr ? "" : comm_name;
    comm->nranks = nranks;
    comm->rank = rank;
    comm->file_rank = launch_.from_environment ? launch_.rank : rank;
    comm->stream = kStreamBase + static_cast<int>(comms_.size());
    RankLog& log_of_rank = logs_[comm->file_rank];
    log_of_rank.world_size =
        launch_.from_environment ? launch_.world_size : std::max(log_of_rank.world_size, nranks);
    *context = comm.get();
    comms_.push_back(std::move(comm));
    ++live_comms_;
    *mask = static_cast<int>(api::kColl | api::kP2p | api::kKernelCh);
    return api::kSuccess;
  }

  api::Result start(void* context, void** handle, const EventStart& e) {
    *handle = nullptr;
    std::lock_guard lock(mutex_);
    if (e.type == api::kColl || e.type == api::kP2p) {
      Op* op = take_op();
      if (op == nullptr) {
        ++logs_[static_cast<Comm*>(context)->file_rank].dropped;
        return api::kSuccess;
      }
      op->comm = static_cast<Comm*>(context);
      op->point_to_point = e.type == api::kP2p;
      copy_name(op->func, e.func);
      copy_name(op->datatype, e.datatype);
      copy_name(op->algo, e.algo);
      copy_name(op->proto, e.proto);
      op->seq = e.seq;
      op->count = e.count;
      op->peer = e.peer;
      op->channels_expected = std::clamp(e.n_channels, 1, kChannelsMax);
      op->tid = static_cast<std::int64_t>(gettid());
      op->host_start_ns = now_ns();
      *handle = op;
    } else if (e.type == api::kKernelCh) {
      auto* parent = static_cast<Handle*>(e.parent);
      if (parent == nullptr || parent->kind != HandleKind::kOp || e.channel_id >= kChannelsMax) {
        return api::kSuccess;
      }
      Op* op = static_cast<Op*>(parent);
      if (!op->in_use) return api::kSuccess;
      Channel& channel = op->channels[static_cast<std::size_t>(e.channel_id)];
      channel.open = true;
      channel.start_timer = e.p_timer;
      channel.stop_timer = 0;
      ++op->channels_started;
      if (e.p_timer != 0 && (op->gpu_start == 0 || e.p_timer < op->gpu_start)) {
        op->gpu_start = e.p_timer;
      }
      *handle = &channel;
    }
    return api::kSuccess;
  }

  api::Result record_state(void* handle, api::EventState state, const api::EventStateArgs* args) {
    if (handle == nullptr || state != api::kKernelChStop || args == nullptr) return api::kSuccess;
    std::lock_guard lock(mutex_);
    auto* h = static_cast<Handle*>(handle);
    if (h->kind != HandleKind::kChannel) return api::kSuccess;
    static_cast<Channel*>(h)->stop_timer = args->kernel_ch_p_timer;
    return api::kSuccess;
  }

  api::Result stop(void* handle) {
    if (handle == nullptr) return api::kSuccess;
    std::lock_guard lock(mutex_);
    auto* h = static_cast<Handle*>(handle);
    Op* op = nullptr;
    if (h->kind == HandleKind::kOp) {
      op = static_cast<Op*>(h);
      if (!op->in_use || op->stopped) return api::kSuccess;
      op->stopped = true;
      op->host_stop_ns = now_ns();
    } else {
      auto* channel = static_cast<Channel*>(h);
      op = channel->op;
      if (!op->in_use || !channel->open) return api::kSuccess;
      channel->open = false;
      ++op->channels_stopped;
      const std::uint64_t stop_timer = std::max(channel->stop_timer, channel->start_timer);
      op->gpu_stop = std::max(op->gpu_stop, stop_timer);
    }
    if (op->stopped && op->channels_stopped >= op->channels_expected) retire(*op);
    return api::kSuccess;
  }

  api::Result finalize(void* context) {
    std::lock_guard lock(mutex_);
    auto* comm = static_cast<Comm*>(context);
    if (comm == nullptr || comm->finalized) return api::kSuccess;
    for (Op& op : *ops_) {
      if (op.in_use && op.comm == comm) retire(op);
    }
    comm->finalized = true;
    if (--live_comms_ == 0 && dirty_) write_all();
    return api::kSuccess;
  }

 private:
  // REQUIRES: mutex_ held.
  void configure(api::DebugLogger log) {
    log_ = log;
    const char* dir = std::getenv("ATTUNE_NCCL_TRACE_DIR");
    directory_ = dir != nullptr && *dir != '\0' ? dir : "attune-nccl-trace";
    const char* gzip = std::getenv("ATTUNE_NCCL_TRACE_GZIP");
    gzip_ = gzip != nullptr && std::strcmp(gzip, "1") == 0;
    launch_ = launch_rank(environment);
    const char* local_rank = std::getenv("LOCAL_RANK");
    device_ = local_rank != nullptr ? std::max(0, std::atoi(local_rank)) : 0;
  }

  std::int64_t now_ns() const { return clock_ns(CLOCK_MONOTONIC) + realtime_offset_ns_; }

  // REQUIRES: mutex_ held. A free slot, or nullptr when every slot holds an unfinished operation.
  Op* take_op() {
    for (int tries = 0; tries < 2; ++tries) {
      for (int i = 0; i < kOpsInFlightMax; ++i) {
        Op& op = (*ops_)[static_cast<std::size_t>((next_slot_ + i) % kOpsInFlightMax)];
        if (op.in_use) continue;
        next_slot_ = (next_slot_ + i + 1) % kOpsInFlightMax;
        reset(op);
        op.in_use = true;
        return &op;
      }
      // Full: operations whose every started channel has stopped are done even if NCCL ran
      // fewer channels than the descriptor said.
      for (Op& op : *ops_) {
        if (op.stopped && op.channels_started > 0 && op.channels_stopped == op.channels_started) {
          retire(op);
        }
      }
    }
    return nullptr;
  }

  static void reset(Op& op) {
    op.comm = nullptr;
    op.peer = -1;
    op.channels_started = op.channels_stopped = 0;
    op.stopped = false;
    op.host_start_ns = op.host_stop_ns = 0;
    op.gpu_start = op.gpu_stop = 0;
    for (Channel& channel : op.channels) channel.open = false;
  }

  // REQUIRES: mutex_ held; op.in_use. Moves the operation to its rank's log and frees the slot.
  void retire(Op& op) {
    RankLog& log = logs_[op.comm->file_rank];
    if (log.records.size() >= kRecordsPerRankMax) {
      ++log.dropped;
    } else {
      OpRecord r;
      r.comm = op.comm;
      r.point_to_point = op.point_to_point;
      r.func = op.func;
      r.datatype = op.datatype;
      r.algo = op.algo;
      r.proto = op.proto;
      r.seq = op.seq;
      r.count = op.count;
      r.peer = op.peer;
      r.channels = op.channels_started;
      r.tid = op.tid;
      r.host_start_ns = op.host_start_ns;
      r.host_stop_ns = op.stopped ? op.host_stop_ns : op.host_start_ns;
      r.gpu_start = op.gpu_start;
      r.gpu_stop = op.channels_stopped > 0 ? op.gpu_stop : 0;
      log.records.push_back(std::move(r));
      dirty_ = true;
    }
    op.in_use = false;
  }

  // REQUIRES: mutex_ held. GPU globaltimer ns to host ns, fixed by the first timed operation.
  std::int64_t gpu_offset_ns(const OpRecord& first_timed) {
    if (!gpu_offset_ns_) {
      const auto gpu_start = static_cast<std::int64_t>(first_timed.gpu_start);
      const std::int64_t skew = gpu_start - first_timed.host_start_ns;
      gpu_offset_ns_ = skew > kClockSkewMaxNs || skew < -kClockSkewMaxNs
                           ? first_timed.host_stop_ns - gpu_start
                           : 0;
    }
    return *gpu_offset_ns_;
  }

  // REQUIRES: mutex_ held.
  TraceRecords trace_of(int file_rank, const RankLog& log) {
    TraceRecords trace;
    trace.rank = file_rank;
    trace.world_size = std::max(log.world_size, file_rank + 1);
    trace.trace_name = "attune-nccl-profiler";
    std::map<const Comm*, bool> seen;
    std::int64_t untimed = 0;
    std::int64_t correlation = 1;
    const int pid = static_cast<int>(getpid());
    for (const OpRecord& r : log.records) {
      const Comm& comm = *r.comm;
      if (!seen[&comm]) {
        seen[&comm] = true;
        trace.process_groups.push_back(TraceProcessGroup{
            group_name(comm), comm.name.empty() ? "nccl" : comm.name, comm.nranks, {}});
      }
      const std::int64_t count = static_cast<std::int64_t>(r.count);
      const MessageElements elements = nccl_message_elements(r.func, count, comm.nranks);
      CollectiveArgs args;
      args.collective = kineto_collective(r.func);
      args.in_nelems = elements.in;
      args.out_nelems = elements.out;
      args.group_size = comm.nranks;
      args.dtype = kineto_dtype(r.datatype);
      args.group_name = group_name(comm);
      args.group_description = comm.name.empty() ? "nccl" : comm.name;
      args.comm_id = hex(comm.id);
      args.comm_rank = comm.rank;
      args.seq = static_cast<std::int64_t>(r.seq);
      args.algorithm = r.algo;
      args.protocol = r.proto;
      args.channels = r.channels;
      args.peer = r.point_to_point ? r.peer : -1;
      args.bytes = count * nccl_datatype_bytes(r.datatype);

      HostRow host;
      host.category = "cpu_op";
      host.name = "nccl" + r.func;
      host.pid = pid;
      host.tid = r.tid;
      host.start_ns = r.host_start_ns;
      host.end_ns = r.host_stop_ns;
      host.correlation = correlation;
      host.collective = args;
      trace.host.push_back(std::move(host));

      if (r.gpu_start != 0 && r.gpu_stop >= r.gpu_start) {
        const std::int64_t offset = gpu_offset_ns(r);
        GpuRow kernel;
        kernel.kind = GpuRowKind::kKernel;
        kernel.name = nccl_kernel_name(r.func, r.datatype, r.algo, r.proto);
        kernel.device = device_;
        kernel.stream = comm.stream;
        kernel.correlation = correlation;
        kernel.start_ns = static_cast<std::int64_t>(r.gpu_start) + offset;
        kernel.end_ns = static_cast<std::int64_t>(r.gpu_stop) + offset;
        kernel.collective = std::move(args);
        trace.gpu.push_back(std::move(kernel));
      } else {
        ++untimed;
      }
      ++correlation;
    }
    trace.counters = {{"nccl_ops", static_cast<std::int64_t>(log.records.size())},
                      {"nccl_ops_untimed", untimed},
                      {"nccl_ops_dropped", log.dropped}};
    return trace;
  }

  // REQUIRES: mutex_ held.
  void write_all() {
    for (const auto& [file_rank, log] : logs_) {
      if (log.records.empty() && log.dropped == 0) continue;
      const Result<std::string> path =
          write_trace_file(directory_, trace_of(file_rank, log), gzip_);
      if (log_ == nullptr) continue;
      if (path.ok()) {
        log_(kLogInfo, kLogInit, __FILE__, __LINE__, "attune NCCL profiler: %zu operations -> %s",
             log.records.size(), path->c_str());
      } else {
        log_(kLogWarn, kLogInit, __FILE__, __LINE__, "attune NCCL profiler: %s",
             path.error().c_str());
      }
    }
    dirty_ = false;
  }

  static std::string hex(std::uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
    return text;
  }

  static std::string group_name(const Comm& comm) {
    return comm.name.empty() ? hex(comm.id) : comm.name;
  }

  std::mutex mutex_;
  const std::int64_t realtime_offset_ns_;
  std::unique_ptr<std::array<Op, kOpsInFlightMax>> ops_;
  int next_slot_ = 0;
  std::vector<std::unique_ptr<Comm>> comms_;  // every communicator seen, finalized or not
  int live_comms_ = 0;
  std::map<int, RankLog> logs_;
  std::optional<std::int64_t> gpu_offset_ns_;
  bool dirty_ = false;
  std::string directory_;
  bool gzip_ = false;
  LaunchRank launch_;
  int device_ = 0;
  api::DebugLogger log_ = nullptr;
};

Recorder& recorder() {
  static Recorder instance;
  return instance;
}

api::Result init_v5(void** context, std::uint64_t comm_id, int* mask, const char* comm_name,
                    int /*n_nodes*/, int nranks, int rank, api::DebugLogger log) {
  return recorder().init(context, comm_id, mask, comm_name, nranks, rank, log);
}

api::Result init_v4(void** context, int* mask, const char* comm_name, std::uint64_t comm_hash,
                    int /*n_nodes*/, int nranks, int rank, api::DebugLogger log) {
  return recorder().init(context, comm_hash, mask, comm_name, nranks, rank, log);
}

template <typename Descr>
EventStart event_start(const Descr& d) {
  EventStart e;
  e.type = d.type;
  e.parent = d.parent_obj;
  if (d.type == api::kColl) {
    e.func = d.coll.func;
    e.datatype = d.coll.datatype;
    e.algo = d.coll.algo;
    e.proto = d.coll.proto;
    e.seq = d.coll.seq_number;
    e.count = d.coll.count;
    e.n_channels = d.coll.n_channels;
  } else if (d.type == api::kP2p) {
    e.func = d.p2p.func;
    e.datatype = d.p2p.datatype;
    e.count = d.p2p.count;
    e.peer = d.p2p.peer;
    e.n_channels = d.p2p.n_channels;
  } else if (d.type == api::kKernelCh) {
    e.channel_id = d.kernel_ch.channel_id;
    e.p_timer = d.kernel_ch.p_timer;
  }
  return e;
}

api::Result start_v5(void* context, void** handle, api::EventDescrV5* descr) {
  if (descr == nullptr) {
    *handle = nullptr;
    return api::kSuccess;
  }
  return recorder().start(context, handle, event_start(*descr));
}

api::Result start_v4(void* context, void** handle, api::EventDescrV4* descr) {
  if (descr == nullptr) {
    *handle = nullptr;
    return api::kSuccess;
  }
  return recorder().start(context, handle, event_start(*descr));
}

api::Result stop(void* handle) { return recorder().stop(handle); }

api::Result record_state(void* handle, api::EventState state, api::EventStateArgs* args) {
  return recorder().record_state(handle, state, args);
}

api::Result finalize(void* context) { return recorder().finalize(context); }

}  // namespace
}  // namespace attune::gpu

extern "C" {

__attribute__((visibility("default"))) attune::gpu::nccl_api::ProfilerV5 ncclProfiler_v5 = {
    "attune",          attune::gpu::init_v5,      attune::gpu::start_v5,
    attune::gpu::stop, attune::gpu::record_state, attune::gpu::finalize};

__attribute__((visibility("default"))) attune::gpu::nccl_api::ProfilerV4 ncclProfiler_v4 = {
    "attune",          attune::gpu::init_v4,      attune::gpu::start_v4,
    attune::gpu::stop, attune::gpu::record_state, attune::gpu::finalize};

}  // extern "C"
