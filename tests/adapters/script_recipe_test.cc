// Every real launch script's answer (what bash ran) that upstream Megatron-LM accepts reads as a
// recipe a campaign can tune: each flag it passed is a setting of the recipe, its variables are
// the recipe's environment, and a flag passed twice keeps its last value, as argparse does.
#include "adapters/script/script_recipe.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "events/arg_catalog.h"

namespace attune::script {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

TEST(ScriptRecipe, EveryRealScriptsAnswerReadsAsARecipeWithEveryFlag) {
  const fs::path answers = fs::path(ATTUNE_SOURCE_DIR) / "tests/data/real-world/recipes/expected";
  int read = 0;
  int refused = 0;
  for (const auto& entry : fs::directory_iterator(answers)) {
    std::ifstream in(entry.path());
    const json answer = json::parse(in);
    if (answer["program"].is_null()) continue;
    ResolvedScript resolved;
    resolved.program = answer["program"];
    resolved.program_path = answer["program_path"];
    resolved.args = answer["args"].get<std::vector<std::string>>();
    resolved.env = answer["env"].get<std::map<std::string, std::string>>();
    resolved.launcher = answer["launcher"].is_string() ? answer["launcher"].get<std::string>() : "";
    auto recipe = recipe_of_script(resolved, entry.path().filename().string());
    if (!recipe.ok()) {
      // What upstream Megatron-LM's argparse refuses too: a fork's choice (Megatron-DeepSpeed's
      // rmsnorm, a fork's tokenizer), or a value bash split into words a one-value flag cannot
      // take. Each is refused with the flag and the value.
      const bool explained = recipe.error().find("expects one of") != std::string::npos ||
                             recipe.error().find("stray word") != std::string::npos;
      EXPECT_TRUE(explained) << recipe.error();
      ++refused;
      continue;
    }
    ++read;
    EXPECT_EQ(recipe->recipe.env, resolved.env) << entry.path();
    EXPECT_EQ(recipe->shape.launcher, resolved.launcher);
    for (const std::string& word : resolved.args) {
      if (!word.starts_with("--")) continue;
      const std::string spelling = word.substr(0, word.find('='));
      bool negated = false;
      const ArgInfo* info = ArgCatalog::megatron().find(spelling, &negated);
      const std::string key =
          info == nullptr ? spelling : (negated ? info->negation : info->canonical);
      const std::string other = info == nullptr ? spelling : info->canonical;
      EXPECT_TRUE(recipe->recipe.flags.contains(key) || recipe->recipe.flags.contains(other))
          << entry.path().filename() << ": " << word << " was lost";
    }
  }
  EXPECT_EQ(read + refused, 28) << "the answers with a training program";
  EXPECT_EQ(read, 24) << "4 pass values upstream Megatron-LM refuses";
}

TEST(ScriptRecipe, AFlagGivenTwiceKeepsItsLastValueWithAWarning) {
  ResolvedScript resolved;
  resolved.program = resolved.program_path = "pretrain_gpt.py";
  resolved.args = {"--lr", "1e-4", "--bf16", "--lr", "2e-4", "--data-path", "a", "b"};
  auto recipe = recipe_of_script(resolved, "s.sh");
  ASSERT_TRUE(recipe.ok()) << recipe.error();
  EXPECT_EQ(recipe->recipe.flags.at("--lr"), "2e-04");
  EXPECT_EQ(recipe->recipe.flags.at("--data-path"), "a b");
  ASSERT_EQ(recipe->warnings.size(), 1u);
  EXPECT_NE(recipe->warnings[0].find("--lr is given more than once"), std::string::npos);
  EXPECT_EQ(recipe->shape.order.flags, (std::vector<std::string>{"--bf16", "--lr", "--data-path"}));
}

}  // namespace
}  // namespace attune::script
