// The learned-rules catalog as other campaigns left it: a torn tail is skipped, every other bad
// line names its line, and rules learned in the simulated world stay out of real campaigns.
#include "adapters/tuner/learned_rules.h"

#include <gtest/gtest.h>

#include <string>

namespace attune {
namespace {

constexpr char kRule[] =
    R"({"lever":"--x","when":"compute-bound","effect":"helped","rule":"r","source":"sim"})";

TEST(LearnedRulesCatalog, ATornLastLineIsSkippedAndSaid) {
  std::string torn;
  auto rules =
      parse_learned_rules(std::string(kRule) + "\n{\"lever\":\"--y\",\"wh", "cat.jsonl", &torn);
  ASSERT_TRUE(rules.ok()) << rules.error();
  ASSERT_EQ(rules->size(), 1u);
  EXPECT_EQ(rules->front().source, "sim");
  EXPECT_EQ(torn, "cat.jsonl:2: a torn last line (an append that did not finish) was skipped");
  // A bad line that is not the torn tail is an error naming its line.
  auto bad = parse_learned_rules(std::string("{oops\n") + kRule + "\n", "cat.jsonl");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "cat.jsonl:1: expected a JSON object per line");
  // A bad last line with its newline was written whole: also an error.
  EXPECT_FALSE(parse_learned_rules(std::string(kRule) + "\n{oops\n", "cat.jsonl").ok());
}

TEST(LearnedRulesCatalog, SimulatedRulesStayOutOfRealCampaignsUnlessAskedFor) {
  LearnedRule sim{"--x", "compute-bound", "helped", "", "r", {}, "sim"};
  LearnedRule real{"--y", "compute-bound", "hurt", "", "r", {}, "slurm"};
  LearnedRule untagged{"--z", "compute-bound", "hurt", "", "r", {}, ""};
  const std::vector<LearnedRule> all = {sim, real, untagged};
  EXPECT_EQ(rules_for_launcher(all, "sim", false).size(), 3u);
  const auto on_slurm = rules_for_launcher(all, "slurm", false);
  ASSERT_EQ(on_slurm.size(), 2u);
  EXPECT_EQ(on_slurm[0].lever, "--y");
  EXPECT_EQ(on_slurm[1].lever, "--z");
  EXPECT_EQ(rules_for_launcher(all, "local", true).size(), 3u);
  // The tag survives a round trip through the catalog's line format.
  auto back = parse_learned_rules(learned_rule_line(real), "x");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->front().source, "slurm");
}

}  // namespace
}  // namespace attune
