// The scripts written for users: the baseline's order and launcher, changes marked, a diff.
#include "core/runnable_recipe.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

Recipe parsed(const std::string& text) {
  auto recipe = parse_recipe(text, "r");
  EXPECT_TRUE(recipe.ok()) << recipe.error();
  return recipe.ok() ? recipe.value() : Recipe{};
}

TEST(RunnableScript, KeepsTheBaselinesOrderAndMarksWhatChanged) {
  const std::string text =
      "export NCCL_X=1\npython pretrain_gpt.py --seq-length 4096 --bf16 "
      "--tensor-model-parallel-size 2 --lr 1e-4";
  const Recipe baseline = parsed(text);
  Recipe shipped = baseline;
  ASSERT_TRUE(set_flag(shipped, "--tensor-model-parallel-size", "4").ok());
  ASSERT_TRUE(set_flag(shipped, "--overlap-grad-reduce", "").ok());
  ASSERT_TRUE(remove_flag(shipped, "--bf16").ok());
  ScriptShape shape;
  shape.launcher = "torchrun --nproc_per_node 8";
  shape.order = recipe_order(text);
  EXPECT_EQ(shape.order.flags, (std::vector<std::string>{"--seq-length", "--bf16",
                                                         "--tensor-model-parallel-size", "--lr"}));
  EXPECT_EQ(runnable_script(shipped, baseline, shape, {"title"}),
            "#!/usr/bin/env bash\n"
            "# title\n"
            "# 3 settings differ from the baseline (lines marked $(: changed)):\n"
            "#   removed: --bf16\n"
            "#   added:   --overlap-grad-reduce\n"
            "#   changed: --tensor-model-parallel-size 2  ->  --tensor-model-parallel-size 4\n"
            "set -e\n"
            "export NCCL_X=1\n"
            "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
            "  --seq-length 4096 \\\n"
            "  --tensor-model-parallel-size 4 $(: changed) \\\n"
            "  --lr 1e-04 \\\n"
            "  --overlap-grad-reduce $(: changed) \\\n"
            "  \"$@\"\n");
  // Without a launcher, the script reads back as a pasted recipe, the one it ships: `set -e` is
  // the shell's, and its marks and "$@" expand to nothing.
  shape.launcher.clear();
  const Recipe read_back = parsed(runnable_script(shipped, baseline, shape, {"title"}));
  EXPECT_EQ(read_back.flags, shipped.flags);
  EXPECT_EQ(read_back.env, shipped.env);
  EXPECT_EQ(recipe_hash(read_back), recipe_hash(shipped));
}

TEST(RunnableScript, AFlagsOnlyRecipeRunsTheDefaultProgram) {
  const Recipe recipe = parsed("--bf16");
  const std::string script = runnable_script(recipe, recipe, ScriptShape{}, {});
  EXPECT_NE(script.find(std::string(kDefaultProgram) + " \\\n  --bf16 \\\n"), std::string::npos)
      << script;
  EXPECT_NE(script.find("# No setting differs from the baseline."), std::string::npos);
}

TEST(UnifiedDiff, OneHunkOfTheWholeFiles) {
  EXPECT_EQ(unified_diff("a\nb\nc\n", "a\nB\nc\nd\n", "x", "y"),
            "--- x\n+++ y\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n");
  EXPECT_EQ(unified_diff("same\n", "same\n", "x", "y"), "");
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

TEST(EditUserScript, AppliesLiteralChangesAndListsTheRest) {
  const std::string script =
      "#!/bin/bash\nTP=2\nARGS=(\n  --tensor-model-parallel-size $TP\n  --overlap-grad-reduce\n"
      "  --lr 1.0e-5\n  --micro-batch-size 1\n)\nexport NCCL_X=1\n"
      "torchrun pretrain_gpt.py \"${ARGS[@]}\" --seq-length 4096\n";
  const Recipe baseline = parse_recipe(
                              "NCCL_X=1 python pretrain_gpt.py --tensor-model-parallel-size 2 "
                              "--overlap-grad-reduce --lr 1e-5 --micro-batch-size 1 "
                              "--seq-length 4096",
                              "b")
                              .value();
  Recipe shipped = baseline;
  ASSERT_TRUE(set_flag(shipped, "--micro-batch-size", "2").ok());            // literal: replaced
  ASSERT_TRUE(remove_flag(shipped, "--overlap-grad-reduce").ok());           // literal: removed
  ASSERT_TRUE(set_flag(shipped, "--tensor-model-parallel-size", "4").ok());  // a variable
  ASSERT_TRUE(set_flag(shipped, "--use-distributed-optimizer", "").ok());    // added
  const ScriptEdit edit = edit_user_script(script, diff_recipes(baseline, shipped));
  EXPECT_NE(edit.text.find("  --micro-batch-size 2\n"), std::string::npos) << edit.text;
  EXPECT_EQ(edit.text.find("--overlap-grad-reduce"), std::string::npos) << edit.text;
  EXPECT_NE(edit.text.find("--lr 1.0e-5"), std::string::npos) << "unchanged text stays as written";
  ASSERT_EQ(edit.by_hand.size(), 2u);
  EXPECT_EQ(
      edit.by_hand[0],
      "line 4: --tensor-model-parallel-size takes $TP: make it --tensor-model-parallel-size 4");
  EXPECT_EQ(edit.by_hand[1], "add --use-distributed-optimizer to the training program's arguments");
  EXPECT_TRUE(edit.text.starts_with("#!/bin/bash\n# attune: change by hand")) << edit.text;
}

}  // namespace
}  // namespace attune
