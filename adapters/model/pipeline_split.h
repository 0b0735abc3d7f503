// The ways a black-box search splits a model's layers over its pipeline stages, as the paper's
// search spaces offer them (its Table E1): evenly, with the embedding and the loss counted as
// layers, or with light end stages (the first, the last or both hold fewer layers than the middle
// ones). A split that the layer count does not allow at a pipeline size is not realizable; a
// draw of it scores zero, as any infeasible draw does. Pure.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "adapters/model/layout.h"

namespace attune::sim {

enum class PipelineSplit { kEven, kAccountEmbeddingAndLoss, kLightFirst, kLightLast, kLightBoth };

// Every split, in a fixed order, and their names ("even", "account", "light-first", ...).
const std::vector<PipelineSplit>& pipeline_splits();
std::string_view split_name(PipelineSplit split);
std::optional<PipelineSplit> split_named(std::string_view name);

// Sets `l`'s split flags (the embedding and loss accounting, the first and last stages' layer
// counts) for `split` of `layers` decoder layers over l.pp stages; false, with `l` unchanged,
// when the split cannot be realized. At one stage every split is the even one.
bool apply_split(PipelineSplit split, int layers, Layout& l);

// The split whose apply_split gives `l`'s own split flags, if any.
std::optional<PipelineSplit> split_of(int layers, const Layout& l);

}  // namespace attune::sim
