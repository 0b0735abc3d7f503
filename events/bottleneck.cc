#include "events/bottleneck.h"

#include <array>

namespace attune {
namespace {

struct Entry {
  Bottleneck bottleneck;
  std::string_view tag;
  std::string_view words;
};

constexpr std::array kEntries = {
    Entry{Bottleneck::kInvalid, "invalid", "an unreadable layout"},
    Entry{Bottleneck::kCompute, "compute", "a compute-bound step"},
    Entry{Bottleneck::kEpA2a, "ep_a2a", "an expert all-to-all"},
    Entry{Bottleneck::kEpA2aCrossNode, "ep_a2a_cross_node", "a cross-node expert all-to-all"},
    Entry{Bottleneck::kTpComm, "tp_comm", "tensor-parallel communication"},
    Entry{Bottleneck::kCpComm, "cp_comm", "context-parallel exchange"},
    Entry{Bottleneck::kPpP2p, "pp_p2p", "pipeline send/receive"},
    Entry{Bottleneck::kBubble, "bubble", "a pipeline bubble"},
    Entry{Bottleneck::kDpComm, "dp_comm", "data-parallel communication"},
    Entry{Bottleneck::kOptimizer, "optimizer", "the optimizer step"},
    Entry{Bottleneck::kOptimizerOffload, "optimizer_offload", "an offloaded optimizer step"},
    Entry{Bottleneck::kRecompute, "recompute", "recomputation"},
    Entry{Bottleneck::kHost, "host", "host-bound launches"},
    Entry{Bottleneck::kMemoryShort, "memory_short", "a layout short of memory"},
};

const Entry& entry_of(Bottleneck bottleneck) {
  for (const Entry& entry : kEntries) {
    if (entry.bottleneck == bottleneck) return entry;
  }
  return kEntries.front();
}

}  // namespace

std::string_view tag_of(Bottleneck bottleneck) { return entry_of(bottleneck).tag; }

std::string_view words_of(Bottleneck bottleneck) { return entry_of(bottleneck).words; }

std::optional<Bottleneck> bottleneck_of_tag(std::string_view tag) {
  for (const Entry& entry : kEntries) {
    if (entry.tag == tag) return entry.bottleneck;
  }
  return std::nullopt;
}

bool helps_under(Bottleneck listed, Bottleneck diagnosed) {
  return listed == diagnosed ||
         (listed == Bottleneck::kEpA2a && diagnosed == Bottleneck::kEpA2aCrossNode);
}

}  // namespace attune
