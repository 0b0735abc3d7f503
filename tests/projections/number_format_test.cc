#include "projections/number_format.h"

#include <gtest/gtest.h>

#include <limits>

namespace attune {
namespace {

TEST(FormatFixed, RoundsToTheGivenDecimals) {
  EXPECT_EQ(format_fixed(1234.5, 2), "1234.50");
  EXPECT_EQ(format_fixed(2.0 / 3.0, 3), "0.667");
  EXPECT_EQ(format_fixed(1e6, 0), "1000000");
  EXPECT_EQ(format_fixed(-1.25, 1), "-1.2");  // round half to even, as printf does
}

TEST(FormatFixed, NeverPrintsANegativeZero) {
  EXPECT_EQ(format_fixed(-0.0, 2), "0.00");
  EXPECT_EQ(format_fixed(-0.0001, 2), "0.00");
  EXPECT_EQ(format_fixed(-0.01, 2), "-0.01");
}

TEST(FormatFixed, NamesNonFiniteValues) {
  EXPECT_EQ(format_fixed(std::numeric_limits<double>::quiet_NaN(), 2), "nan");
  EXPECT_EQ(format_fixed(-std::numeric_limits<double>::quiet_NaN(), 2), "nan");
  EXPECT_EQ(format_fixed(std::numeric_limits<double>::infinity(), 2), "inf");
  EXPECT_EQ(format_fixed(-std::numeric_limits<double>::infinity(), 2), "-inf");
}

TEST(FormatFixed, PrintsTheLargestDouble) {
  EXPECT_EQ(format_fixed(std::numeric_limits<double>::max(), 2).size(), 309u + 3u);
}

TEST(FormatPercent, ScalesAFraction) {
  EXPECT_EQ(format_percent(0.0345, 2), "3.45%");
  EXPECT_EQ(format_signed_percent(0.0345, 2), "+3.45%");
  EXPECT_EQ(format_signed_percent(-0.012, 2), "-1.20%");
  EXPECT_EQ(format_signed_percent(-0.0, 2), "+0.00%");
  EXPECT_EQ(format_signed_percent(std::numeric_limits<double>::quiet_NaN(), 2), "nan%");
}

}  // namespace
}  // namespace attune
