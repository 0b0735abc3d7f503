// The final stage's repeat rule: when a third repeat is due, and what a recipe's value is.
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

}  // namespace
}  // namespace attune
