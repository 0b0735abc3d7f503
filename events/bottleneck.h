// Bottleneck: what a diagnosis says limits a run, as a closed vocabulary of the ledger. The expert
// tuner names one per diagnosis, the lever catalog lists under which ones each lever helps (a tag
// there that is not in the vocabulary is a catalog error), the learned rules record the one a lever
// was tried under, and every hypothesis carries its tag (Hypothesis::bottleneck_tag), so nothing is
// read back out of prose. Pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace attune {

enum class Bottleneck : std::uint8_t {
  kInvalid,           // the estimator cannot read the layout
  kCompute,           // no exposed cost above 5 % of the step
  kEpA2a,             // the expert all-to-all, within a fast domain
  kEpA2aCrossNode,    // the expert all-to-all across nodes
  kTpComm,            // tensor-parallel communication
  kCpComm,            // context-parallel exchange
  kPpP2p,             // pipeline send and receive
  kBubble,            // the pipeline bubble
  kDpComm,            // data-parallel gradient reduction and parameter gather
  kOptimizer,         // the optimizer step
  kOptimizerOffload,  // an optimizer step offloaded to the CPU
  kRecompute,         // recomputation
  kHost,              // the GPU waits for kernel launches
  kMemoryShort,       // the layout does not fit in memory
};

// The tag in data files and hypotheses, e.g. "ep_a2a_cross_node".
std::string_view tag_of(Bottleneck bottleneck);
std::optional<Bottleneck> bottleneck_of_tag(std::string_view tag);
// In words, for rules and summaries: "a cross-node expert all-to-all".
std::string_view words_of(Bottleneck bottleneck);
// Whether a lever listed as helping against `listed` is tried first under `diagnosed`: the same
// bottleneck, or a cross-node all-to-all where the lever helps an all-to-all.
bool helps_under(Bottleneck listed, Bottleneck diagnosed);

}  // namespace attune
