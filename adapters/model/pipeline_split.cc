#include "adapters/model/pipeline_split.h"

#include <array>

namespace attune::sim {
namespace {

constexpr std::array<std::string_view, 5> kNames = {"even", "account", "light-first", "light-last",
                                                    "light-both"};

void clear_split(Layout& l) {
  l.account_for_embedding = false;
  l.account_for_loss = false;
  l.first_stage_layers_set = false;
  l.last_stage_layers_set = false;
  l.first_stage_layers = 0;
  l.last_stage_layers = 0;
}

// The first (or last) stage of a light split: the other stages hold layers / pp + 1 each (the
// ceiling, or one more where the count divides), so the end stage holds fewer; below 1 when
// there is no such split.
int light_end(int layers, int pp) {
  const int others = layers / pp + 1;
  return layers - (pp - 1) * others;
}

// Both end stages light: the middle stages hold `middle` each, the two ends the same count,
// fewer than the middle; 0 when no such split exists.
int light_ends(int layers, int pp) {
  if (pp < 3) return 0;
  for (int middle = (layers + pp - 1) / pp; (pp - 2) * middle < layers; ++middle) {
    const int ends = layers - (pp - 2) * middle;
    if (ends % 2 == 0 && ends / 2 >= 1 && ends / 2 < middle) return ends / 2;
  }
  return 0;
}

}  // namespace

const std::vector<PipelineSplit>& pipeline_splits() {
  static const std::vector<PipelineSplit> all = {
      PipelineSplit::kEven, PipelineSplit::kAccountEmbeddingAndLoss, PipelineSplit::kLightFirst,
      PipelineSplit::kLightLast, PipelineSplit::kLightBoth};
  return all;
}

std::string_view split_name(PipelineSplit split) { return kNames[static_cast<int>(split)]; }

std::optional<PipelineSplit> split_named(std::string_view name) {
  for (PipelineSplit split : pipeline_splits()) {
    if (split_name(split) == name) return split;
  }
  return std::nullopt;
}

bool apply_split(PipelineSplit split, int layers, Layout& l) {
  Layout out = l;
  clear_split(out);
  if (l.pp > 1) {
    switch (split) {
      case PipelineSplit::kEven:
        if (layers % l.pp != 0) return false;
        break;
      case PipelineSplit::kAccountEmbeddingAndLoss:
        if ((layers + 2) % l.pp != 0) return false;
        out.account_for_embedding = true;
        out.account_for_loss = true;
        break;
      case PipelineSplit::kLightFirst:
      case PipelineSplit::kLightLast: {
        const int end = light_end(layers, l.pp);
        if (end < 1) return false;
        const bool first = split == PipelineSplit::kLightFirst;
        (first ? out.first_stage_layers_set : out.last_stage_layers_set) = true;
        (first ? out.first_stage_layers : out.last_stage_layers) = end;
        break;
      }
      case PipelineSplit::kLightBoth: {
        const int end = light_ends(layers, l.pp);
        if (end < 1) return false;
        out.first_stage_layers_set = out.last_stage_layers_set = true;
        out.first_stage_layers = out.last_stage_layers = end;
        break;
      }
    }
  }
  l = out;
  return true;
}

std::optional<PipelineSplit> split_of(int layers, const Layout& l) {
  for (PipelineSplit split : pipeline_splits()) {
    Layout realized = l;
    if (!apply_split(split, layers, realized)) continue;
    if (realized.account_for_embedding == l.account_for_embedding &&
        realized.account_for_loss == l.account_for_loss &&
        realized.first_stage_layers_set == l.first_stage_layers_set &&
        realized.last_stage_layers_set == l.last_stage_layers_set &&
        realized.first_stage_layers == l.first_stage_layers &&
        realized.last_stage_layers == l.last_stage_layers) {
      return split;
    }
  }
  return std::nullopt;
}

}  // namespace attune::sim
