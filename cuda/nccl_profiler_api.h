// The NCCL profiler plugin interface, versions 5 (NCCL 2.28) and 4 (NCCL 2.27), declared from
// its documented layout (trace_anchors.md §3): the function table a plugin exports under the
// symbols ncclProfiler_v5 / ncclProfiler_v4, the event descriptors NCCL passes to startEvent,
// and the state arguments of recordEventState. Only what this project's plugin reads is named;
// the members before it are declared so the offsets match NCCL's.
//
// Layout-only declarations: no code. NCCL owns every pointer it passes; a descriptor is valid
// only during the call it is passed to.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace attune::gpu::nccl_api {

// ncclResult_t: the plugin returns kSuccess from everything but a failed init (which disables it).
enum Result : int { kSuccess = 0, kInternalError = 3 };

// Event types, as bits of the activation mask and as the descriptor's type.
enum EventType : std::uint64_t {
  kGroup = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kProxyOp = 1u << 3,
  kProxyStep = 1u << 4,
  kProxyCtrl = 1u << 5,
  kKernelCh = 1u << 6,
  kNetPlugin = 1u << 7,
  kGroupApi = 1u << 8,       // v5
  kCollApi = 1u << 9,        // v5
  kP2pApi = 1u << 10,        // v5
  kKernelLaunch = 1u << 11,  // v5
};

// recordEventState states; only the end of a kernel channel matters here.
enum EventState : int { kKernelChStop = 22 };

// The logger NCCL passes to init (level, subsystem flags, file, line, printf format).
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* format, ...);

struct CollDescrV5 {
  std::uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  std::size_t count;
  int root;
  const char* datatype;
  std::uint8_t n_channels;
  std::uint8_t n_warps;
  const char* algo;
  const char* proto;
  void* parent_group;
};

struct P2pDescrV5 {
  const char* func;
  void* buff;
  const char* datatype;
  std::size_t count;
  int peer;
  std::uint8_t n_channels;
  void* parent_group;
};

struct KernelChDescr {
  std::uint8_t channel_id;
  std::uint64_t p_timer;  // GPU globaltimer (ns) when the channel started
};

struct ProxyOpDescr {
  pid_t pid;
  std::uint8_t channel_id;
  int peer;
  int n_steps;
  int chunk_size;
  int is_send;
};

struct NetPluginDescr {
  std::int64_t id;
  void* data;
};

// v5's API-level events (not enabled by this plugin; declared for the union's size).
struct CollApiDescr {
  const char* func;
  std::size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graph_captured;
};

struct EventDescrV5 {
  std::uint64_t type;
  void* parent_obj;  // the handle startEvent returned for the parent event
  int rank;
  union {
    CollApiDescr coll_api;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxy_op;
    int proxy_step;
    KernelChDescr kernel_ch;
    NetPluginDescr net_plugin;
  };
};

struct CollDescrV4 {
  std::uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  std::size_t count;
  int root;
  const char* datatype;
  std::uint8_t n_channels;
  std::uint8_t n_warps;
  const char* algo;
  const char* proto;
};

struct P2pDescrV4 {
  const char* func;
  void* buff;
  const char* datatype;
  std::size_t count;
  int peer;
  std::uint8_t n_channels;
};

struct EventDescrV4 {
  std::uint8_t type;
  void* parent_obj;
  int rank;
  union {
    CollDescrV4 coll;
    P2pDescrV4 p2p;
    ProxyOpDescr proxy_op;
    int proxy_step;
    KernelChDescr kernel_ch;
    NetPluginDescr net_plugin;
  };
};

// State arguments (the same union in v4 and v5).
union EventStateArgs {
  std::size_t proxy_step_trans_size;
  int proxy_ctrl_appended_ops;
  void* net_plugin_data;
  std::uint64_t kernel_ch_p_timer;  // GPU globaltimer (ns) when the channel stopped
};

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, std::uint64_t comm_id, int* activation_mask, const char* comm_name,
                 int n_nodes, int nranks, int rank, DebugLogger log);
  Result (*start_event)(void* context, void** handle, EventDescrV5* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, EventState state, EventStateArgs* args);
  Result (*finalize)(void* context);
};

struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* activation_mask, const char* comm_name,
                 std::uint64_t comm_hash, int n_nodes, int nranks, int rank, DebugLogger log);
  Result (*start_event)(void* context, void** handle, EventDescrV4* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, EventState state, EventStateArgs* args);
  Result (*finalize)(void* context);
};

}  // namespace attune::gpu::nccl_api
