// Workloads and recipes the simulated-world tests share: the small Qwen3-30B-A3B workload on 16
// H100s (two nodes) and the Mixtral-8x22B workload on 128 H100s, with their preset baselines, and
// helpers that change one flag.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/model/presets.h"
#include "adapters/model/workload.h"
#include "adapters/world/sim_job.h"
#include "events/recipe.h"
#include "gate/policy.h"

namespace attune::sim::testing {

inline Workload load(std::string_view model, std::string_view gpu, int gpus, int seq, int gbs,
                     Precision precision = Precision::kBf16) {
  Result<Workload> workload = load_workload(model, gpu, gpus, seq, gbs, precision);
  EXPECT_TRUE(workload.ok()) << (workload.ok() ? "" : workload.error());
  return workload.ok() ? std::move(workload).value() : Workload{};
}

inline Workload qwen_workload(Precision precision = Precision::kBf16) {
  return load("qwen3-30b-a3b", "h100", 16, 4096, 256, precision);
}

inline Recipe preset(std::string_view name) {
  Result<Recipe> recipe = load_recipe_preset(name);
  EXPECT_TRUE(recipe.ok()) << (recipe.ok() ? "" : recipe.error());
  return recipe.ok() ? std::move(recipe).value() : Recipe{};
}

inline Recipe qwen_baseline() { return preset("qwen3-30b-a3b-h100x16"); }

// Mixtral-8x22B on 128 H100s (16 nodes) with its expert-tuned recipe (the paper's baseline).
inline Workload mixtral_workload() { return load("mixtral-8x22b", "h100", 128, 4096, 256); }

inline Recipe mixtral_baseline() { return preset("mixtral-8x22b-h100x128"); }

// A model's gate policy, gate/policies/MODEL.toml.
inline Policy policy_file(std::string_view model) {
  const std::string path =
      std::string(ATTUNE_SOURCE_DIR) + "/gate/policies/" + std::string(model) + ".toml";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream text;
  text << in.rdbuf();
  Result<Policy> policy = parse_policy(text.str(), path);
  EXPECT_TRUE(policy.ok()) << (policy.ok() ? "" : policy.error());
  return policy.ok() ? std::move(policy).value() : default_policy();
}

inline Recipe with(Recipe recipe, std::string_view flag, std::string_view value = "") {
  const Status set = set_flag(recipe, flag, value);
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : set.error());
  return recipe;
}

inline Recipe without(Recipe recipe, std::string_view flag) {
  const Status removed = remove_flag(recipe, flag);
  EXPECT_TRUE(removed.ok()) << (removed.ok() ? "" : removed.error());
  return recipe;
}

// The largest |a/b - 1| over two curves of the same length.
inline double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::abs(a[i] / b[i] - 1.0));
  }
  return worst;
}

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace attune::sim::testing
