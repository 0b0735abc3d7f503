// The final stage's repeat rule: when a third repeat is due, what a recipe's value is, and the
// schedule of repeats with a measure function standing in for the cluster.
#include "projections/final_stage.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

TEST(FinalStage, AThirdRepeatIsDueWhenTwoMeasuredRepeatsDifferByMoreThanTheBand) {
  EXPECT_TRUE(repeats_disagree({1000, 1040}, 0.03));        // 3.9 % of their mean
  EXPECT_FALSE(repeats_disagree({1000, 1020}, 0.03));       // 2.0 %
  EXPECT_FALSE(repeats_disagree({1000, 1040}, 0.05));       // inside a wider band
  EXPECT_FALSE(repeats_disagree({0, 1040}, 0.03));          // one produced no measurement
  EXPECT_FALSE(repeats_disagree({1000, 1040, 990}, 0.03));  // already has its third
  EXPECT_FALSE(repeats_disagree({1000}, 0.03));
}

TEST(FinalStage, TheValueIsTheMedianOfThreeElseTheMeanOfWhatWasMeasured) {
  EXPECT_DOUBLE_EQ(value_of_repeats({1000, 1040}), 1020);
  EXPECT_DOUBLE_EQ(value_of_repeats({1000, 1200, 1040}), 1040);  // the median, not the mean
  EXPECT_DOUBLE_EQ(value_of_repeats({1200, 1000, 990}), 1000);
  // A repeat without a measurement counts for nothing, even as the third.
  EXPECT_DOUBLE_EQ(value_of_repeats({1000, 1040, 0}), 1020);
  EXPECT_DOUBLE_EQ(value_of_repeats({0, 1040}), 1040);
  EXPECT_DOUBLE_EQ(value_of_repeats({0, 0}), 0);
  EXPECT_DOUBLE_EQ(value_of_repeats({}), 0);
}

// A measure function that replays scripted values per recipe and logs every run.
struct Script {
  std::map<std::string, std::vector<double>> values;
  std::vector<std::pair<std::string, std::uint64_t>> log;
  MeasureOnce measure() {
    return [this](const std::string& key, std::uint64_t run) {
      log.emplace_back(key, run);
      std::vector<double>& left = values.at(key);
      EXPECT_FALSE(left.empty()) << key << " measured more often than scripted";
      if (left.empty()) return 0.0;
      const double value = left.front();
      left.erase(left.begin());
      return value;
    };
  }
};

TEST(FinalStage, EveryRecipeRunsTwiceInOneShuffledOrderWhenItsRepeatsAgree) {
  Script script;
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) {
    keys.push_back("r" + std::to_string(i));
    script.values[keys.back()] = {1000.0 + i, 1001.0 + i};
  }
  const FinalStageRepeats out = measure_final_stage(keys, 0.03, 7, script.measure());
  EXPECT_EQ(out.third, 0);
  EXPECT_EQ(out.rerun, 0);
  ASSERT_EQ(script.log.size(), 12u);
  for (std::size_t i = 0; i < script.log.size(); ++i) EXPECT_EQ(script.log[i].second, i);
  for (const std::string& key : keys) {
    EXPECT_EQ(out.values.at(key).size(), 2u) << key;
    const double first = 1000.0 + (key[1] - '0');
    EXPECT_EQ(out.values.at(key), (std::vector<double>{first, first + 1})) << key;
  }
  // Interleaved, not recipe by recipe: some recipe's second run is not right after its first.
  bool interleaved = false;
  for (std::size_t i = 0; i + 1 < script.log.size(); i += 2) {
    interleaved |= script.log[i].first != script.log[i + 1].first;
  }
  EXPECT_TRUE(interleaved);
  // The order is the seed's: the same seed gives the same order, another seed another.
  Script again;
  Script other;
  for (const std::string& key : keys) {
    again.values[key] = {1, 1};
    other.values[key] = {1, 1};
  }
  measure_final_stage(keys, 0.03, 7, again.measure());
  measure_final_stage(keys, 0.03, 8, other.measure());
  EXPECT_EQ(again.log, script.log);
  EXPECT_NE(other.log, script.log);
}

TEST(FinalStage, RepeatsThatDisagreeGetAThirdAfterEveryRecipesFirstTwo) {
  Script script;
  script.values["steady"] = {1000, 1010};
  script.values["noisy"] = {1000, 1100, 1050};  // 9.5 % apart: a third is due
  const FinalStageRepeats out = measure_final_stage({"steady", "noisy"}, 0.03, 1, script.measure());
  EXPECT_EQ(out.third, 1);
  EXPECT_EQ(out.values.at("noisy"), (std::vector<double>{1000, 1100, 1050}));
  EXPECT_EQ(out.values.at("steady").size(), 2u);
  ASSERT_EQ(script.log.size(), 5u);
  EXPECT_EQ(script.log.back().first, "noisy");  // the third comes after all first rounds
  EXPECT_DOUBLE_EQ(value_of_repeats(out.values.at("noisy")), 1050);
}

TEST(FinalStage, ARepeatWithoutAMeasurementIsRunAgainThreeTimesAtMost) {
  Script script;
  script.values["flaky"] = {0, 1000, 0, 0, 1020};  // first repeat on its 2nd try, second on 3rd
  script.values["dead"] = {0, 0, 0, 0, 0, 0};      // never measures: 3 tries per repeat
  const FinalStageRepeats out = measure_final_stage({"flaky", "dead"}, 0.03, 3, script.measure());
  EXPECT_EQ(out.values.at("flaky"), (std::vector<double>{1000, 1020}));
  EXPECT_EQ(out.values.at("dead"), (std::vector<double>{0, 0}));
  EXPECT_EQ(out.rerun, 1 + 2 + 2 + 2);
  EXPECT_EQ(out.third, 0);  // a recipe without two measurements gets no third
  EXPECT_TRUE(script.values.at("flaky").empty());
  EXPECT_TRUE(script.values.at("dead").empty());
  EXPECT_DOUBLE_EQ(value_of_repeats(out.values.at("dead")), 0);
  // A retry follows its failed try at once: the dead recipe's tries come in blocks of three.
  std::vector<std::size_t> dead;
  for (std::size_t i = 0; i < script.log.size(); ++i) {
    if (script.log[i].first == "dead") dead.push_back(i);
  }
  ASSERT_EQ(dead.size(), 6u);
  EXPECT_EQ(dead[1], dead[0] + 1);
  EXPECT_EQ(dead[2], dead[0] + 2);
  EXPECT_EQ(dead[4], dead[3] + 1);
  EXPECT_EQ(dead[5], dead[3] + 2);
}

}  // namespace
}  // namespace attune
