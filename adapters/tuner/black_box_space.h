// The black-box searches' frozen space (the paper's Appendix E, Table E1): the objective-preserving
// knobs that random search and TPE draw from, the same for both, as JSON (knob -> its choices),
// and the map between a point of the space and a layout. Pure.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "adapters/model/layout.h"
#include "adapters/model/workload.h"

namespace attune {

// The frozen space for this workload and baseline: the parallel degrees, virtual stages,
// pipeline split, recomputation, the MoE dispatcher, CPU optimizer offload where the baseline
// uses it, and the rows per microbatch where the policy frees them (`micro_batch_sizes`).
nlohmann::json search_space(const sim::Workload& w, const sim::Layout& baseline,
                            const std::vector<int>& micro_batch_sizes);

// A layout's point in the space (the inverse of layout_at).
nlohmann::json params_of(const sim::Workload& w, const sim::Layout& l, const nlohmann::json& space);

// Whether every value of `p` is a choice of the space (a baseline outside it is not told).
bool in_space(const nlohmann::json& p, const nlohmann::json& space);

// The layout at a point of the space, the baseline's elsewhere; none when its pipeline split
// cannot be realized at its pipeline size (an infeasible draw).
std::optional<sim::Layout> layout_at(const sim::Workload& w, const sim::Layout& baseline,
                                     const nlohmann::json& p);

}  // namespace attune
