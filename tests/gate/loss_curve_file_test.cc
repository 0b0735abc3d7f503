#include "gate/loss_curve_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace attune {
namespace {

using ::testing::ElementsAre;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> parsed(std::string_view text) {
  Result<std::vector<double>> curve = parse_loss_curve(text, "curve.txt");
  EXPECT_TRUE(curve.ok()) << curve.error();
  return curve.ok() ? curve.value() : std::vector<double>{};
}

std::string error_of(std::string_view text) {
  Result<std::vector<double>> curve = parse_loss_curve(text, "curve.txt");
  EXPECT_FALSE(curve.ok());
  return curve.ok() ? std::string() : curve.error();
}

TEST(LossCurveLines, OneLossPerLineWithBlankLinesAndComments) {
  EXPECT_THAT(parsed("# baseline, 4 steps\n10.5\n\n  9.25  \n8 # step 2\n\t7.125e0\n"),
              ElementsAre(10.5, 9.25, 8.0, 7.125));
}

TEST(LossCurveLines, AcceptsCrLfAndNoFinalNewline) {
  EXPECT_THAT(parsed("1.5\r\n2.5\r\n3.5"), ElementsAre(1.5, 2.5, 3.5));
}

TEST(LossCurveLines, ReadsNanAndInfinitiesSoTheGateCanFailThem) {
  const std::vector<double> curve = parsed("nan\ninf\n-inf\nNaN\nInfinity\n+2.5\n");
  ASSERT_EQ(curve.size(), 6u);
  EXPECT_TRUE(std::isnan(curve[0]));
  EXPECT_EQ(curve[1], kInf);
  EXPECT_EQ(curve[2], -kInf);
  EXPECT_TRUE(std::isnan(curve[3]));
  EXPECT_EQ(curve[4], kInf);
  EXPECT_EQ(curve[5], 2.5);
}

TEST(LossCurveLines, AnythingElseIsAnErrorNamingTheFileAndLine) {
  EXPECT_EQ(error_of("1.0\n\n2.0 3.0\n"),
            "curve.txt:3: expected a loss (a number, nan or inf), got '2.0 3.0'");
  EXPECT_EQ(error_of("# header\nloss\n"),
            "curve.txt:2: expected a loss (a number, nan or inf), got 'loss'");
  EXPECT_EQ(error_of("1,2\n"), "curve.txt:1: expected a loss (a number, nan or inf), got '1,2'");
  EXPECT_EQ(error_of("1e999\n"), "curve.txt:1: loss '1e999' is out of the range of a double");
}

TEST(LossCurveLines, AnEmptyOrCommentOnlyTextIsAnEmptyCurve) {
  EXPECT_TRUE(parsed("").empty());
  EXPECT_TRUE(parsed("\n# nothing\n\n").empty());
}

TEST(LossCurveJson, AnArrayOfNumbers) {
  EXPECT_THAT(parsed("[10.5, 9.25,8,\n 7.125e0]\n"), ElementsAre(10.5, 9.25, 8.0, 7.125));
  EXPECT_THAT(parsed("  \n[ ]"), ElementsAre());
  EXPECT_THAT(parsed("\xEF\xBB\xBF[1]"), ElementsAre(1.0));
}

TEST(LossCurveJson, ReadsPythonAndJavaScriptNonFiniteSpellings) {
  const std::vector<double> curve = parsed("[NaN, Infinity, -Infinity, null, 1]");
  ASSERT_EQ(curve.size(), 5u);
  EXPECT_TRUE(std::isnan(curve[0]));
  EXPECT_EQ(curve[1], kInf);
  EXPECT_EQ(curve[2], -kInf);
  EXPECT_TRUE(std::isnan(curve[3]));
  EXPECT_EQ(curve[4], 1.0);
}

TEST(LossCurveJson, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("[1,\n2,\n\"x\"]"),
            "curve.txt:3: expected a loss (a number, nan or inf), got '\"x\"'");
  EXPECT_EQ(error_of("[1,\n2,\n]"), "curve.txt:3: expected a loss (a number, nan or inf), got ']'");
  EXPECT_EQ(error_of("[1, 2"), "curve.txt:1: the JSON array is not closed with ']'");
  EXPECT_EQ(error_of("[1 2]"), "curve.txt:1: expected ',' or ']' in the JSON array, got '2'");
  EXPECT_EQ(error_of("[1]\n[2]"), "curve.txt:2: unexpected text after the JSON array: '['");
  EXPECT_EQ(error_of("[[1]]"), "curve.txt:1: expected a loss (a number, nan or inf), got '['");
  EXPECT_EQ(error_of("[{\"a\": 1}]"),
            "curve.txt:1: expected a loss (a number, nan or inf), got '{\"a\":'");
}

TEST(LossCurveJson, AnErrorQuotesALongTokenShortened) {
  const std::string long_token(60, 'x');
  EXPECT_EQ(error_of(long_token), "curve.txt:1: expected a loss (a number, nan or inf), got '" +
                                      std::string(40, 'x') + "...'");
}

}  // namespace
}  // namespace attune
