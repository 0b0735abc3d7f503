// Speed of the simulated cluster's performance model: predictions per second on one core (the
// goal is at least 100,000) and the wall time of a full GLM-4.5 sweep on 128 B200s (the goal is
// seconds). The binary's main() lives in another file of tools/bench.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>

#include "adapters/model/performance_model.h"
#include "adapters/model/presets.h"
#include "adapters/model/sweep.h"

namespace attune::sim {
namespace {

Workload glm45_on_128_b200() {
  Workload w;
  w.model = load_model("glm-4.5").value();
  w.hardware = load_hardware("b200").value();
  w.gpus = 128;
  w.seq_length = 4096;
  w.global_batch_size = 2048;
  w.precision = Precision::kBf16;
  return w;
}

Recipe glm45_baseline() {
  Result<Recipe> recipe = load_recipe_preset("glm-4.5-b200x128");
  if (!recipe.ok()) {
    std::cerr << recipe.error() << "\n";
    std::abort();
  }
  return recipe.value();
}

// Decode, validate and predict one recipe, as predict() is called by tuners and the world.
void BM_SimPredictRecipe(benchmark::State& state) {
  const Workload w = glm45_on_128_b200();
  const Recipe recipe = glm45_baseline();
  for (auto _ : state) {
    Prediction p = predict(w, recipe);
    benchmark::DoNotOptimize(p.step_time_s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SimPredictRecipe);

// The estimator alone on a resolved layout, as the sweep calls it.
void BM_SimPredictResolved(benchmark::State& state) {
  const Workload w = glm45_on_128_b200();
  const ResolvedLayout resolved =
      resolve_layout(w, decode_layout(w, glm45_baseline()).value()).value();
  for (auto _ : state) {
    Prediction p = predict_resolved(w, resolved);
    benchmark::DoNotOptimize(p.step_time_s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SimPredictResolved);

// A full sweep of GLM-4.5 on 128 B200s; items are layouts considered.
void BM_SimSweepGlm45On128B200(benchmark::State& state) {
  const Workload w = glm45_on_128_b200();
  const Recipe recipe = glm45_baseline();
  long long layouts = 0;
  for (auto _ : state) {
    Result<SweepResult> result = sweep(w, recipe);
    layouts += result.ok() ? result->layouts_considered : 0;
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(layouts);
}
BENCHMARK(BM_SimSweepGlm45On128B200)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace attune::sim
