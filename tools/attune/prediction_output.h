// What `attune sim predict` prints for one prediction, shared by the commands that show one:
// the workload line, the text view (layout, step, throughput, memory per stage, the breakdown of
// the critical stage) and the JSON view.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "adapters/model/performance_model.h"

namespace attune::cli {

// "MODEL on N x GPU, seq S, global batch B, PRECISION".
std::string workload_line(const sim::Workload& w);

// The prediction as `sim predict` prints it, to standard output.
void print_prediction(const sim::Prediction& p);

// The prediction as `sim predict --json` writes it.
nlohmann::json prediction_json(const sim::Prediction& p);

}  // namespace attune::cli
