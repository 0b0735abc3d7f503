#include "events/recipe.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "events/arg_catalog.h"
#include "events/sha256.h"

namespace attune {
namespace {

Recipe parse_ok(std::string_view text) {
  Result<Recipe> recipe = parse_recipe(text, "recipe.sh");
  EXPECT_TRUE(recipe.ok()) << recipe.error();
  return recipe.ok() ? std::move(recipe).value() : Recipe{};
}

std::string error_of(std::string_view text) {
  const Result<Recipe> recipe = parse_recipe(text, "recipe.sh");
  return recipe.ok() ? "parsed: " + canonical_text(recipe.value()) : recipe.error();
}

// ---- Parsing and canonical form -------------------------------------------------------------

TEST(RecipeParse, ReadsEnvCommandAndFlags) {
  const Recipe recipe = parse_ok(
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "NVTE_FWD_LAYERNORM_SM_MARGIN=8 python pretrain_gpt.py \\\n"
      "    --tensor-model-parallel-size 2 --lr=1e-4 --bf16 \\\n"
      "    --cp-comm-type p2p a2a --my-extension-flag on\n");
  Recipe expected;
  expected.command = "python pretrain_gpt.py";
  expected.env = {{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}, {"NVTE_FWD_LAYERNORM_SM_MARGIN", "8"}};
  expected.flags = {{"--tensor-model-parallel-size", "2"},
                    {"--lr", "1e-04"},
                    {"--bf16", ""},
                    {"--cp-comm-type", "p2p a2a"},
                    {"--my-extension-flag", "on"}};
  EXPECT_EQ(recipe, expected);
  EXPECT_EQ(canonical_text(recipe),
            "CUDA_DEVICE_MAX_CONNECTIONS=1\n"
            "NVTE_FWD_LAYERNORM_SM_MARGIN=8\n"
            "python pretrain_gpt.py\n"
            "--bf16\n"
            "--cp-comm-type p2p a2a\n"
            "--lr 1e-04\n"
            "--my-extension-flag on\n"
            "--tensor-model-parallel-size 2\n");
}

TEST(RecipeParse, EmptyTextIsTheEmptyRecipe) {
  EXPECT_EQ(parse_ok(""), Recipe{});
  EXPECT_EQ(parse_ok("  # only a comment\n\n \\\n"), Recipe{});
  EXPECT_EQ(canonical_text(Recipe{}), "");
}

TEST(RecipeParse, NoOpNotesAndTheScriptsOwnArgumentsExpandToNothing) {
  auto recipe = parse_recipe(
      "python pretrain_gpt.py \\\n  --micro-batch-size 2 $(: changed) \\\n  --bf16 \\\n  \"$@\"\n",
      "shipped.sh");
  ASSERT_TRUE(recipe.ok()) << recipe.error();
  EXPECT_EQ(recipe->flags.at("--micro-batch-size"), "2");
  EXPECT_EQ(recipe->flags.count("--bf16"), 1u);
  EXPECT_EQ(recipe->flags.size(), 2u);
  // Only a no-op command with its ')' on the line is a note; anything else is still refused.
  auto other = parse_recipe("python pretrain_gpt.py --bf16 $(date)\n", "r.sh");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().find("r.sh:1:"), std::string::npos) << other.error();
}

// Only "$@" itself, the unescaped expansion in double quotes, passes the script's arguments on. In
// single quotes or with its '$' escaped it is the two characters, a value like any other, and it
// keeps its place through the canonical text (a property run found '$@' lost there).
TEST(RecipeParse, AQuotedOrEscapedDollarAtIsAValue) {
  for (const char* spelled : {"'$@'", "\"\\$@\"", "\\$@"}) {
    SCOPED_TRACE(spelled);
    const Recipe recipe =
        parse_ok(std::string("python pretrain_gpt.py --my-extension-flag ") + spelled + " \"$@\"");
    ASSERT_EQ(recipe.flags.size(), 1u);
    EXPECT_EQ(recipe.flags.at("--my-extension-flag"), "'$@'");
    EXPECT_EQ(parse_ok(canonical_text(recipe)), recipe);
  }
}

TEST(RecipeParse, FlagsOnlyAndCommandOnly) {
  const Recipe flags_only = parse_ok("--micro-batch-size 1");
  EXPECT_EQ(flags_only.command, "");
  EXPECT_TRUE(flags_only.env.empty());
  EXPECT_EQ(flags_only.flags.at("--micro-batch-size"), "1");
  const Recipe command_only = parse_ok("FOO=1 python -u pretrain_gpt.py");
  EXPECT_EQ(command_only.command, "python -u pretrain_gpt.py");
  EXPECT_EQ(command_only.env.at("FOO"), "1");
  EXPECT_TRUE(command_only.flags.empty());
}

TEST(RecipeParse, AliasesAndEqualsFormGiveTheSameHash) {
  const Recipe a = parse_ok(
      "--save-interval 500 --no-tp-comm-bulk-wgrad --lr 0.0001 --tensor-model-parallel-size 2");
  const Recipe b = parse_ok(
      "--persistent-save-interval=500 --disable-tp-comm-bulk-wgrad --lr=1e-4 "
      "--tensor-model-parallel-size=2");
  EXPECT_EQ(a, b);
  EXPECT_EQ(recipe_hash(a), recipe_hash(b));
  EXPECT_EQ(a.flags.count("--save-interval"), 1u);
  EXPECT_EQ(a.flags.count("--no-tp-comm-bulk-wgrad"), 1u);
  EXPECT_EQ(b.flags.count("--disable-tp-comm-bulk-wgrad"), 0u);
}

TEST(RecipeParse, OrderDoesNotMatter) {
  const Recipe a = parse_ok("A=1 B=2 python x.py --bf16 --lr 3e-4 --micro-batch-size 2");
  const Recipe b = parse_ok("B=2\nexport A=1\npython x.py --micro-batch-size 2 --bf16 --lr 3e-4");
  EXPECT_EQ(a, b);
  EXPECT_EQ(recipe_hash(a), recipe_hash(b));
  EXPECT_EQ(canonical_text(a), canonical_text(b));
}

TEST(RecipeParse, DifferentRecipesHashDifferently) {
  EXPECT_NE(recipe_hash(parse_ok("--micro-batch-size 1")),
            recipe_hash(parse_ok("--micro-batch-size 2")));
  EXPECT_NE(recipe_hash(parse_ok("A=1 --bf16")), recipe_hash(parse_ok("--bf16")));
  EXPECT_NE(recipe_hash(parse_ok("python a.py --bf16")), recipe_hash(parse_ok("--bf16")));
}

TEST(RecipeParse, HashIsHexSha256OfTheCanonicalText) {
  const Recipe recipe = parse_ok("--bf16 --lr 1e-4");
  EXPECT_EQ(recipe_hash(recipe), to_hex(sha256(canonical_text(recipe))));
  EXPECT_EQ(recipe_hash(recipe).size(), 64u);
  EXPECT_EQ(recipe_hash(Recipe{}),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(RecipeParse, CommentsAndContinuations) {
  const Recipe recipe = parse_ok(
      "# launch script\n"
      "export NCCL_DEBUG=WARN   # trailing comment\n"
      "python pretrain_gpt.py \\\n"
      "  --lr 1e-4 \\   \n"  // blanks after the backslash
      "  # a whole-line comment between flags\n"
      "  --tokenizer-model '/data/tok#1.model' # the '#' in quotes is kept\n"
      "  --data-cache-path /cache/a#b\n"  // not a comment inside a word
      "  --micro-batch-size \\\n"
      "      4\n");
  EXPECT_EQ(recipe.env, (std::map<std::string, std::string>{{"NCCL_DEBUG", "WARN"}}));
  EXPECT_EQ(recipe.command, "python pretrain_gpt.py");
  EXPECT_EQ(recipe.flags,
            (std::map<std::string, std::string>{{"--lr", "1e-04"},
                                                {"--tokenizer-model", "/data/tok#1.model"},
                                                {"--data-cache-path", "/cache/a#b"},
                                                {"--micro-batch-size", "4"}}));
}

TEST(RecipeParse, QuotesAndEscapesAreRemoved) {
  const Recipe recipe = parse_ok(
      "MSG=\"a \\\"b\\\" \\$HOME 'c'\" OTHER='it'\\''s' ESC=x\\ y\n"
      "--tokenizer-model \"/my models/tok\" --wandb-exp-name=\"run 1\" --seq-length '4'096\n");
  EXPECT_EQ(recipe.env.at("MSG"), "a \"b\" $HOME 'c'");
  EXPECT_EQ(recipe.env.at("OTHER"), "it's");
  EXPECT_EQ(recipe.env.at("ESC"), "x y");
  EXPECT_EQ(recipe.flags.at("--tokenizer-model"), "/my models/tok");
  EXPECT_EQ(recipe.flags.at("--wandb-exp-name"), "run 1");
  EXPECT_EQ(recipe.flags.at("--seq-length"), "4096");
}

TEST(RecipeParse, NothingIsExpanded) {
  const Recipe recipe = parse_ok("DIR=$HOME/x --save \"$DIR/ckpt\" --load ~/ckpt");
  EXPECT_EQ(recipe.env.at("DIR"), "$HOME/x");
  EXPECT_EQ(recipe.flags.at("--save"), "$DIR/ckpt");
  EXPECT_EQ(recipe.flags.at("--load"), "~/ckpt");
}

TEST(RecipeParse, IntegersAreNormalised) {
  EXPECT_EQ(parse_ok("--seed +007").flags.at("--seed"), "7");
  EXPECT_EQ(parse_ok("--seed -0").flags.at("--seed"), "0");
  EXPECT_EQ(parse_ok("--seed -012").flags.at("--seed"), "-12");
  EXPECT_EQ(parse_ok("--seed 000").flags.at("--seed"), "0");
  // Python ints have no width limit; neither do these.
  EXPECT_EQ(parse_ok("--seed 0123456789012345678901234567890").flags.at("--seed"),
            "123456789012345678901234567890");
  EXPECT_EQ(parse_ok("--flash-attention-version 03").flags.at("--flash-attention-version"), "3");
  EXPECT_EQ(parse_ok("--rampup-batch-size 32 +32 0100").flags.at("--rampup-batch-size"),
            "32 32 100");
}

TEST(RecipeParse, FloatsAreNormalisedToTheShortestRoundTripForm) {
  const auto lr = [](std::string_view value) {
    return parse_ok("--lr " + std::string(value)).flags.at("--lr");
  };
  EXPECT_EQ(lr("1e-4"), lr("0.0001"));
  EXPECT_EQ(lr("1e-4"), lr("1.0E-04"));
  EXPECT_EQ(lr("1e-4"), lr("+.0001"));
  EXPECT_EQ(lr("1e-4"), lr("0.000100000000000000000000"));
  EXPECT_EQ(lr("1e-4"), "1e-04");
  EXPECT_EQ(lr("3"), "3");
  EXPECT_EQ(lr("3.0"), "3");
  EXPECT_EQ(lr("0.1"), "0.1");
  EXPECT_EQ(lr("1.5e3"), "1500");
  EXPECT_EQ(lr("-2.5"), "-2.5");
  EXPECT_EQ(lr("0.30000000000000004"), "0.30000000000000004");  // a different double from 0.3
  EXPECT_NE(lr("0.30000000000000004"), lr("0.3"));
  EXPECT_EQ(parse_ok("--moe-aux-loss-coeff 1e-2 0.010 1").flags.at("--moe-aux-loss-coeff"),
            "0.01 0.01 1");
}

TEST(RecipeParse, MultiValueFlagsTakeWordsUpToTheNextFlag) {
  const Recipe recipe = parse_ok(
      "--cp-comm-type p2p \\\n a2a   allgather --bf16 --recompute-modules 'core_attn' mlp "
      "--data-path --data-path-x 1");
  EXPECT_EQ(recipe.flags.at("--cp-comm-type"), "p2p a2a allgather");
  EXPECT_EQ(recipe.flags.at("--recompute-modules"), "core_attn mlp");
  EXPECT_EQ(recipe.flags.at("--data-path"), "");  // nargs=* with no values
  EXPECT_EQ(recipe.flags.at("--data-path-x"), "1");
  EXPECT_EQ(recipe.flags.at("--bf16"), "");
  // A value with blanks stays one value: it is quoted inside the list.
  const Recipe paths = parse_ok("--data-path 0.5 '/data/my set' \"\" /data/b");
  EXPECT_EQ(paths.flags.at("--data-path"), "0.5 '/data/my set' '' /data/b");
  EXPECT_EQ(canonical_text(paths), "--data-path 0.5 '/data/my set' '' /data/b\n");
  EXPECT_EQ(parse_ok(canonical_text(paths)), paths);
}

TEST(RecipeParse, BooleanOptionalNegationIsADifferentRecipe) {
  const Recipe on = parse_ok("--rl-partial-rollouts");
  const Recipe off = parse_ok("--no-rl-partial-rollouts");
  EXPECT_EQ(on.flags, (std::map<std::string, std::string>{{"--rl-partial-rollouts", ""}}));
  EXPECT_EQ(off.flags, (std::map<std::string, std::string>{{"--no-rl-partial-rollouts", ""}}));
  EXPECT_NE(recipe_hash(on), recipe_hash(off));
  EXPECT_NE(recipe_hash(off), recipe_hash(Recipe{}));
  EXPECT_EQ(canonical_text(off), "--no-rl-partial-rollouts\n");
}

TEST(RecipeParse, StoreFalseAliasPairCanonicalisesToTheFirstSpelling) {
  const Recipe recipe = parse_ok("--disable-tp-comm-bulk-wgrad --disable-fp8-wgrad");
  EXPECT_EQ(recipe.flags, (std::map<std::string, std::string>{{"--no-tp-comm-bulk-wgrad", ""},
                                                              {"--no-fp8-wgrad", ""}}));
}

TEST(RecipeParse, UnknownFlagsAreKept) {
  const Recipe recipe = parse_ok(
      "--my-switch --my-value 'a b' --my-attached=3 --my-last -1 --also-switch "
      "--my-list 0:16 2.4B:320");
  // Their words are kept as a list of shell words, as a launch script passed them.
  EXPECT_EQ(recipe.flags, (std::map<std::string, std::string>{{"--my-switch", ""},
                                                              {"--my-value", "'a b'"},
                                                              {"--my-attached", "3"},
                                                              {"--my-last", "-1"},
                                                              {"--also-switch", ""},
                                                              {"--my-list", "0:16 2.4B:320"}}));
  EXPECT_EQ(canonical_text(recipe),
            "--also-switch\n--my-attached 3\n--my-last -1\n--my-list 0:16 2.4B:320\n"
            "--my-switch\n--my-value 'a b'\n");
  EXPECT_EQ(parse_ok(canonical_text(recipe)), recipe);
}

TEST(RecipeParse, CanonicalTextQuotesWhatTheShellWouldSplit) {
  Recipe recipe;
  recipe.env = {{"A", "x y"}, {"B", "it's"}, {"C", ""}, {"D", "$HOME;#"}, {"E", "k=v"}};
  recipe.command = "python pretrain_gpt.py";
  ASSERT_TRUE(set_flag(recipe, "--tokenizer-model", "/p q/t").ok());
  ASSERT_TRUE(set_flag(recipe, "--wandb-exp-name", "").ok());
  EXPECT_FALSE(set_flag(recipe, "--wandb-project", "line\nbreak").ok()) << "one line each";
  EXPECT_EQ(canonical_text(recipe),
            "A='x y'\n"
            "B='it'\\''s'\n"
            "C=''\n"
            "D='$HOME;#'\n"
            "E='k=v'\n"
            "python pretrain_gpt.py\n"
            "--tokenizer-model '/p q/t'\n"
            "--wandb-exp-name ''\n");
  EXPECT_EQ(parse_ok(canonical_text(recipe)), recipe);
}

TEST(RecipeParse, CommandWordsRoundTrip) {
  const Recipe recipe = parse_ok("'export' 'A=1' \"my script.py\" --bf16");
  EXPECT_EQ(recipe.command, "'export' 'A=1' 'my script.py'");
  EXPECT_TRUE(recipe.env.empty());
  EXPECT_EQ(parse_ok(canonical_text(recipe)), recipe);
}

TEST(RecipeParse, RoundTripsThroughCanonicalText) {
  const Recipe recipe = parse_ok(
      "export A='multi word' B=\"q'uote\"; C=3\n"
      "torchrun pretrain_gpt.py --lr=.5e-3 --no-rl-partial-rollouts --cp-comm-type p2p 'a b'\n"
      "--exit-signal SIGUSR1 --tokenizer-model '' --unknown \"x;y\" --data-path\n");
  const std::string text = canonical_text(recipe);
  EXPECT_EQ(parse_ok(text), recipe);
  EXPECT_EQ(canonical_text(parse_ok(text)), text);
}

TEST(RecipeParse, ExportTakesSeveralAssignmentsUpToTheEndOfTheCommand) {
  const Recipe recipe = parse_ok("export A=1 B=2; C=3 python x.py");
  EXPECT_EQ(recipe.env, (std::map<std::string, std::string>{{"A", "1"}, {"B", "2"}, {"C", "3"}}));
  EXPECT_EQ(recipe.command, "python x.py");
}

TEST(RecipeParse, QuotedAssignmentIsACommandWord) {
  const Recipe recipe = parse_ok("\"A=1\" --bf16");
  EXPECT_TRUE(recipe.env.empty());
  EXPECT_EQ(recipe.command, "'A=1'");
  EXPECT_EQ(parse_ok("A=\"1 2\" --bf16").env.at("A"), "1 2");
}

// ---- Errors ---------------------------------------------------------------------------------

TEST(RecipeErrors, SwitchWithAValue) {
  EXPECT_EQ(error_of("A=1\n\n\npython x.py \\\n  --lr 1 \\\n  --seed 2 \\\n  --bf16 true\n"),
            "recipe.sh:7: --bf16 takes no value, found 'true'");
  EXPECT_EQ(error_of("--seed 1\n--bf16=true"), "recipe.sh:2: --bf16 takes no value, found 'true'");
  EXPECT_EQ(error_of("--bf16 \\\n  yes"), "recipe.sh:2: --bf16 takes no value, found 'yes'");
  EXPECT_EQ(error_of("--no-rl-partial-rollouts=1"),
            "recipe.sh:1: --no-rl-partial-rollouts takes no value, found '1'");
}

TEST(RecipeErrors, BadInteger) {
  EXPECT_EQ(error_of("python x.py\n--bf16\n--tensor-model-parallel-size two\n"),
            "recipe.sh:3: --tensor-model-parallel-size expects an integer, found 'two'");
  EXPECT_EQ(error_of("--seed 1.0"), "recipe.sh:1: --seed expects an integer, found '1.0'");
  EXPECT_EQ(error_of("--seed 0x10"), "recipe.sh:1: --seed expects an integer, found '0x10'");
  EXPECT_EQ(error_of("--seed ''"), "recipe.sh:1: --seed expects an integer, found ''");
  EXPECT_EQ(error_of("--seed +-1"), "recipe.sh:1: --seed expects an integer, found '+-1'");
  EXPECT_EQ(error_of("--rampup-batch-size 1 \\\n 2 \\\n x"),
            "recipe.sh:3: --rampup-batch-size expects an integer, found 'x'");
}

TEST(RecipeErrors, BadFloat) {
  EXPECT_EQ(error_of("--lr\n  fast"), "recipe.sh:2: --lr expects a float, found 'fast'");
  EXPECT_EQ(error_of("--lr 1e-4x"), "recipe.sh:1: --lr expects a float, found '1e-4x'");
  EXPECT_EQ(error_of("--lr +-1"), "recipe.sh:1: --lr expects a float, found '+-1'");
  EXPECT_EQ(error_of("--lr 1e999"), "recipe.sh:1: --lr expects a float, found '1e999'");
}

TEST(RecipeErrors, GivenTwice) {
  EXPECT_EQ(error_of("--lr 1\n--bf16\n\n\n\n\n\n\n--lr 2\n"), "recipe.sh:9: --lr given twice");
  EXPECT_EQ(error_of("--save-interval 1\n--persistent-save-interval=1"),
            "recipe.sh:2: --persistent-save-interval given twice (as --save-interval on line 1)");
  EXPECT_EQ(error_of("--rl-partial-rollouts\n--no-rl-partial-rollouts"),
            "recipe.sh:2: --no-rl-partial-rollouts given twice (as --rl-partial-rollouts on "
            "line 1)");
  EXPECT_EQ(error_of("--my-flag 1 --my-flag 1"), "recipe.sh:1: --my-flag given twice");
  EXPECT_EQ(error_of("A=1\nexport A=2"), "recipe.sh:2: A given twice");
}

TEST(RecipeErrors, UnterminatedQuote) {
  EXPECT_EQ(error_of("--lr 1\n--tokenizer-model '/a/b\n--bf16\n"),
            "recipe.sh:2: unterminated ' quote");
  EXPECT_EQ(error_of("A=1\nB=2\nC=\"x\ny\n"), "recipe.sh:3: unterminated \" quote");
  EXPECT_EQ(error_of("A=\"a\\\"\n"), "recipe.sh:1: unterminated \" quote");
}

TEST(RecipeErrors, ValueFlagWithoutValue) {
  EXPECT_EQ(error_of("--bf16\n--lr\n"), "recipe.sh:2: --lr expects a value, found none");
  EXPECT_EQ(error_of("--lr\n--bf16\n"), "recipe.sh:1: --lr expects a value, found none");
  EXPECT_EQ(error_of("--seed 1\n--cp-comm-type --bf16"),
            "recipe.sh:2: --cp-comm-type expects at least 1 value, found none");
  EXPECT_EQ(error_of("--rampup-batch-size 1 2"),
            "recipe.sh:1: --rampup-batch-size expects 3 values, found 2");
  EXPECT_EQ(error_of("--rampup-batch-size 1 2 3 4"),
            "recipe.sh:1: --rampup-batch-size expects 3 values, found 4");
}

TEST(RecipeErrors, StrayWordAfterTheFlags) {
  EXPECT_EQ(error_of("python x.py --lr 1\n--bf16 \\\n  --seed 3 4\n"),
            "recipe.sh:3: stray word '4' after the flags started");
  EXPECT_EQ(error_of("--my-unknown a b"), "parsed: --my-unknown a b\n")
      << "a flag missing from the catalog takes every word up to the next flag";
  EXPECT_EQ(error_of("--cp-comm-type=p2p a2a"),
            "recipe.sh:1: stray word 'a2a' after the flags started");
}

TEST(RecipeErrors, InvalidEnvironmentVariable) {
  EXPECT_EQ(error_of("A=1\n1FOO=bar python x.py"),
            "recipe.sh:2: invalid environment variable name '1FOO'");
  EXPECT_EQ(error_of("MY-VAR=1"), "recipe.sh:1: invalid environment variable name 'MY-VAR'");
  EXPECT_EQ(error_of("=1"), "recipe.sh:1: invalid environment variable name ''");
  EXPECT_EQ(error_of("export A=1 python x.py"),
            "recipe.sh:1: export expects NAME=VALUE, found 'python'");
  EXPECT_EQ(error_of("A=1\nexport\n--bf16"), "recipe.sh:2: export expects NAME=VALUE");
}

TEST(RecipeErrors, ChoiceOutsideTheList) {
  EXPECT_EQ(error_of("--recompute-granularity full\n--recompute-method blocks"),
            "recipe.sh:2: --recompute-method expects one of uniform|block, found 'blocks'");
  EXPECT_EQ(error_of("--flash-attention-version 5"),
            "recipe.sh:1: --flash-attention-version expects one of 2|3|4, found '5'");
  EXPECT_EQ(error_of("--moe-router-load-balancing-type aux_loss \\\n bogus"),
            "recipe.sh:2: --moe-router-load-balancing-type expects one of "
            "aux_loss|seq_aux_loss|global_aux_loss|sinkhorn|quantile_balancing|none, found "
            "'bogus'");
}

TEST(RecipeErrors, InvalidFlagsAndValues) {
  EXPECT_EQ(error_of("--bf16 -- --lr 1"), "recipe.sh:1: invalid flag '--'");
  EXPECT_EQ(error_of("--bf16 '--a b'"), "recipe.sh:1: invalid flag '--a b'");
  EXPECT_EQ(error_of("---lr 1"), "recipe.sh:1: invalid flag '---lr'");
  EXPECT_EQ(error_of("--tokenizer-model=--x"),
            "recipe.sh:1: --tokenizer-model value may not begin with '--', found '--x'");
}

TEST(RecipeErrors, SourceNameAndSizeLimit) {
  const Result<Recipe> recipe = parse_recipe("--lr x");
  ASSERT_FALSE(recipe.ok());
  EXPECT_EQ(recipe.error(), "<recipe>:1: --lr expects a float, found 'x'");
  const Result<Recipe> huge = parse_recipe(std::string(std::size_t{1} << 21, ' '), "big.sh");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error(), "big.sh:1: recipe is larger than 1048576 bytes");
}

// ---- Diff -----------------------------------------------------------------------------------

TEST(RecipeDiff, ListsChangedAddedAndRemovedSettingsSorted) {
  const Recipe baseline = parse_ok(
      "NCCL_ALGO=Ring CUDA_DEVICE_MAX_CONNECTIONS=1 python x.py --tensor-model-parallel-size 2 "
      "--micro-batch-size 1 --lr 1e-4 --log-interval 10 --my-flag a --rl-partial-rollouts");
  const Recipe candidate = parse_ok(
      "CUDA_DEVICE_MAX_CONNECTIONS=8 NVTE_X=1 python y.py --tensor-model-parallel-size 4 "
      "--micro-batch-size 1 --lr 0.0001 --cross-entropy-loss-fusion --my-flag b "
      "--no-rl-partial-rollouts");
  const std::vector<SettingChange> changes = diff_recipes(baseline, candidate);
  const auto change = [](ChangeKind kind, std::string name, bool before_present, std::string before,
                         bool after_present, std::string after, ObjectiveClass objective_class) {
    return SettingChange{kind,          std::move(name),  before_present, std::move(before),
                         after_present, std::move(after), objective_class};
  };
  const std::vector<SettingChange> expected = {
      change(ChangeKind::kFlag, "--cross-entropy-loss-fusion", false, "", true, "",
             ObjectiveClass::kSameMath),
      change(ChangeKind::kFlag, "--log-interval", true, "10", false, "", ObjectiveClass::kOther),
      change(ChangeKind::kFlag, "--my-flag", true, "a", true, "b", ObjectiveClass::kNumeric),
      change(ChangeKind::kFlag, "--no-rl-partial-rollouts", false, "", true, "",
             ObjectiveClass::kNumeric),
      change(ChangeKind::kFlag, "--rl-partial-rollouts", true, "", false, "",
             ObjectiveClass::kNumeric),
      change(ChangeKind::kFlag, "--tensor-model-parallel-size", true, "2", true, "4",
             ObjectiveClass::kStructural),
      change(ChangeKind::kEnv, "CUDA_DEVICE_MAX_CONNECTIONS", true, "1", true, "8",
             ObjectiveClass::kNumeric),
      change(ChangeKind::kEnv, "NCCL_ALGO", true, "Ring", false, "", ObjectiveClass::kNumeric),
      change(ChangeKind::kEnv, "NVTE_X", false, "", true, "1", ObjectiveClass::kNumeric),
  };
  EXPECT_EQ(changes, expected);
}

TEST(RecipeDiff, IdenticalRecipesHaveNoChanges) {
  const Recipe recipe = parse_ok("A=1 --bf16 --lr 1e-4");
  EXPECT_TRUE(diff_recipes(recipe, recipe).empty());
  EXPECT_TRUE(diff_recipes(recipe, parse_ok("A=1 --lr=0.0001 --bf16")).empty());
  EXPECT_TRUE(diff_recipes(Recipe{}, Recipe{}).empty());
}

TEST(RecipeDiff, EverythingIsAddedFromTheEmptyRecipe) {
  const std::vector<SettingChange> changes =
      diff_recipes(Recipe{}, parse_ok("Z=1 --sequence-parallel --grad-reduce-in-bf16"));
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].name, "--grad-reduce-in-bf16");
  EXPECT_EQ(changes[0].objective_class, ObjectiveClass::kNumeric);
  EXPECT_EQ(changes[1].name, "--sequence-parallel");
  EXPECT_EQ(changes[1].objective_class, ObjectiveClass::kStructural);
  EXPECT_EQ(changes[2].kind, ChangeKind::kEnv);
  for (const SettingChange& change : changes) {
    EXPECT_FALSE(change.before_present);
    EXPECT_TRUE(change.after_present);
  }
}

// ---- set_flag and remove_flag ---------------------------------------------------------------

TEST(RecipeSetFlag, CanonicalisesSpellingAndValue) {
  Recipe recipe;
  ASSERT_TRUE(set_flag(recipe, "persistent-save-interval", "0500").ok());
  ASSERT_TRUE(set_flag(recipe, "--lr", "1e-4").ok());
  ASSERT_TRUE(set_flag(recipe, "-cp-comm-type", "p2p 'a b'").ok());
  ASSERT_TRUE(set_flag(recipe, "--tokenizer-model", "/p q").ok());
  EXPECT_EQ(recipe, parse_ok("--save-interval 500 --lr 0.0001 --cp-comm-type p2p 'a b' "
                             "--tokenizer-model '/p q'"));
  ASSERT_TRUE(set_flag(recipe, "--lr", "2e-4").ok());  // replaces
  EXPECT_EQ(recipe.flags.at("--lr"), "2e-04");
}

TEST(RecipeSetFlag, SwitchesTakeTrueFalseOrNothing) {
  Recipe recipe;
  ASSERT_TRUE(set_flag(recipe, "--bf16", "").ok());
  ASSERT_TRUE(set_flag(recipe, "sequence-parallel", "true").ok());
  ASSERT_TRUE(set_flag(recipe, "--disable-tp-comm-bulk-wgrad", "true").ok());
  EXPECT_EQ(recipe, parse_ok("--bf16 --sequence-parallel --no-tp-comm-bulk-wgrad"));
  ASSERT_TRUE(set_flag(recipe, "--bf16", "false").ok());
  ASSERT_TRUE(set_flag(recipe, "--no-tp-comm-bulk-wgrad", "false").ok());
  EXPECT_EQ(recipe, parse_ok("--sequence-parallel"));
  ASSERT_TRUE(set_flag(recipe, "--bf16", "false").ok());  // already off
  EXPECT_EQ(recipe, parse_ok("--sequence-parallel"));

  const Status bad = set_flag(recipe, "--bf16", "yes");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "--bf16 is a switch: expects true, false or nothing, found 'yes'");
}

TEST(RecipeSetFlag, BooleanOptionalPairHoldsOnePolarity) {
  Recipe recipe;
  ASSERT_TRUE(set_flag(recipe, "--rl-partial-rollouts", "false").ok());
  EXPECT_EQ(recipe, parse_ok("--no-rl-partial-rollouts"));
  ASSERT_TRUE(set_flag(recipe, "--rl-partial-rollouts", "true").ok());
  EXPECT_EQ(recipe, parse_ok("--rl-partial-rollouts"));
  ASSERT_TRUE(set_flag(recipe, "--no-rl-partial-rollouts", "").ok());
  EXPECT_EQ(recipe, parse_ok("--no-rl-partial-rollouts"));
  ASSERT_TRUE(set_flag(recipe, "no-rl-partial-rollouts", "false").ok());
  EXPECT_EQ(recipe, parse_ok("--rl-partial-rollouts"));
}

TEST(RecipeSetFlag, UnknownFlagsAreKeptAsGiven) {
  Recipe recipe;
  ASSERT_TRUE(set_flag(recipe, "my-flag", "a b").ok());
  ASSERT_TRUE(set_flag(recipe, "--my-switch", "").ok());
  EXPECT_EQ(recipe.flags,
            (std::map<std::string, std::string>{{"--my-flag", "'a b'"}, {"--my-switch", ""}}));
  EXPECT_EQ(parse_ok(canonical_text(recipe)), recipe);
}

TEST(RecipeSetFlag, RefusedValuesLeaveTheRecipeUnchanged) {
  Recipe recipe = parse_ok("--tensor-model-parallel-size 2");
  const Recipe before = recipe;
  const auto error_of_set = [&recipe](std::string_view flag, std::string_view value) {
    const Status status = set_flag(recipe, flag, value);
    return status.ok() ? std::string("ok") : status.error();
  };
  EXPECT_EQ(error_of_set("--tensor-model-parallel-size", "two"),
            "--tensor-model-parallel-size expects an integer, found 'two'");
  EXPECT_EQ(error_of_set("--recompute-granularity", "some"),
            "--recompute-granularity expects one of full|selective, found 'some'");
  EXPECT_EQ(error_of_set("--cp-comm-type", ""),
            "--cp-comm-type expects at least 1 value, found none");
  EXPECT_EQ(error_of_set("--cp-comm-type", "p2p 'a2a"),
            "--cp-comm-type value has an unterminated ' quote");
  EXPECT_EQ(error_of_set("--rampup-batch-size", "1 2"),
            "--rampup-batch-size expects 3 values, found 2");
  EXPECT_EQ(error_of_set("--tokenizer-model", "--x"),
            "--tokenizer-model value may not begin with '--', found '--x'");
  EXPECT_EQ(error_of_set("--my-flag", "--x"),
            "--my-flag value may not begin with '--', found '--x'");
  EXPECT_EQ(error_of_set("--", "1"), "invalid flag name '--'");
  EXPECT_EQ(error_of_set("--lr=1", "1"), "invalid flag name '--lr=1'");
  EXPECT_EQ(recipe, before);
}

TEST(RecipeSetFlag, RemoveFlagTakesAnySpelling) {
  Recipe recipe =
      parse_ok("--save-interval 5 --no-rl-partial-rollouts --disable-fp8-wgrad --my-flag 1 --bf16");
  ASSERT_TRUE(remove_flag(recipe, "persistent-save-interval").ok());
  ASSERT_TRUE(remove_flag(recipe, "--rl-partial-rollouts").ok());  // removes --no-... too
  ASSERT_TRUE(remove_flag(recipe, "--disable-fp8-wgrad").ok());
  ASSERT_TRUE(remove_flag(recipe, "my-flag").ok());
  EXPECT_EQ(recipe, parse_ok("--bf16"));
  const Status missing = remove_flag(recipe, "--lr");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "--lr is not set");
  const Status invalid = remove_flag(recipe, "");
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error(), "invalid flag name ''");
  EXPECT_EQ(recipe, parse_ok("--bf16"));
}

// ---- Property: spelling, order and layout never change the recipe ---------------------------

// One setting as the generator chose it: what the parsed recipe must hold, and the equivalent
// ways a launch script may write it.
struct GeneratedFlag {
  std::string key;                                  // expected key in Recipe::flags
  std::string value;                                // expected canonical value
  std::vector<std::string> spellings;               // interchangeable spellings of the key
  std::vector<std::vector<std::string>> arguments;  // per value word: equivalent unquoted texts
  bool single_value = false;                        // may be written --flag=value
};

struct GeneratedRecipe {
  Recipe expected;
  std::vector<std::string> command_words;
  std::vector<GeneratedFlag> flags;
};

std::string shortest_float(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

bool is_plain_word(const std::string& word) {
  if (word.empty()) return false;
  for (const char c : word) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && c != '_' && c != '-' && c != '.' && c != '/') return false;
  }
  return true;
}

// A count drawn from the whole range whatever the test's current size, so that every run writes
// recipes of realistic length.
std::size_t gen_count(std::size_t min, std::size_t max_exclusive) {
  return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(min, max_exclusive));
}

std::string gen_text(bool plain) {
  static const std::string kPlain = "abcxyzABC0129_-./";
  // Anything but a newline: a recipe's values are one line each.
  static const std::string kAny = "abcxyzABC0129_-./:,=+@% \t'\"$#;\\&|()*?~`!";
  const std::string& alphabet = plain ? kPlain : kAny;
  const std::size_t length = gen_count(plain ? 1 : 0, 9);
  std::string text;
  for (std::size_t i = 0; i < length; ++i) {
    text += alphabet[gen_count(0, alphabet.size())];
  }
  if (text.starts_with("--")) text.insert(0, "x");  // would read as a flag
  return text;
}

// One value of `info`: its canonical form and equivalent ways to write it.
std::pair<std::string, std::vector<std::string>> gen_value(const ArgInfo& info) {
  if (!info.choices.empty()) {
    const std::string choice = info.choices[gen_count(0, info.choices.size())];
    if (info.value_kind == ArgValueKind::kInt) return {choice, {choice, "0" + choice}};
    return {choice, {choice}};
  }
  if (info.value_kind == ArgValueKind::kInt) {
    const auto value = *rc::gen::arbitrary<std::int64_t>();
    const std::string text = std::to_string(value);
    const std::string digits = value < 0 ? text.substr(1) : text;
    const std::string sign = value < 0 ? "-" : "+";
    return {text, {text, sign + digits, sign + "00" + digits}};
  }
  if (info.value_kind == ArgValueKind::kFloat) {
    const double value =
        *rc::gen::suchThat(rc::gen::arbitrary<double>(), [](double v) { return std::isfinite(v); });
    char g17[64];
    char e20[64];
    std::snprintf(g17, sizeof g17, "%.17g", value);
    std::snprintf(e20, sizeof e20, "%.20E", value);
    const std::string shortest = shortest_float(value);
    std::vector<std::string> texts = {shortest, g17, e20};
    if (!std::signbit(value)) texts.push_back("+" + shortest);
    return {shortest, texts};
  }
  const std::string text = gen_text(info.multi_value);
  return {text, {text}};
}

GeneratedRecipe gen_recipe() {
  const ArgCatalog& catalog = ArgCatalog::megatron();
  GeneratedRecipe generated;

  const std::size_t env_count = gen_count(0, 4);
  for (std::size_t i = 0; i < env_count; ++i) {
    const std::string name =
        *rc::gen::element<std::string>("A", "NCCL_X", "_B2") + "_" + std::to_string(i);
    generated.expected.env[name] = gen_text(false);
  }
  generated.command_words = *rc::gen::elementOf(std::vector<std::vector<std::string>>{
      {}, {"python", "pretrain_gpt.py"}, {"python", "-u", "pretrain_gpt.py"}});
  for (const std::string& word : generated.command_words) {
    generated.expected.command += (generated.expected.command.empty() ? "" : " ") + word;
  }

  std::set<std::size_t> rows;
  const std::size_t row_count = gen_count(0, 24);
  for (std::size_t i = 0; i < row_count; ++i) {
    rows.insert(gen_count(0, catalog.all().size()));
  }
  for (const std::size_t row : rows) {
    const ArgInfo& info = catalog.all()[row];
    GeneratedFlag flag;
    flag.key = info.canonical;
    flag.spellings = info.spellings;
    if (info.negatable && *rc::gen::arbitrary<bool>()) {
      flag.key = info.negation;
      flag.spellings = {info.negation};
    }
    if (info.takes_value) {
      const std::size_t count =
          info.multi_value ? gen_count(info.value_count_min,
                                       std::min(info.value_count_max, info.value_count_min + 3) + 1)
                           : 1;
      for (std::size_t i = 0; i < count; ++i) {
        auto [canonical, texts] = gen_value(info);
        flag.value += (i == 0 ? "" : " ") + canonical;
        flag.arguments.push_back(std::move(texts));
      }
      flag.single_value = !info.multi_value;
    }
    generated.expected.flags[flag.key] = flag.value;
    generated.flags.push_back(std::move(flag));
  }

  const std::size_t unknown_count = gen_count(0, 3);
  for (std::size_t i = 0; i < unknown_count; ++i) {
    GeneratedFlag flag;
    flag.key = "--attune-test-unknown-" + std::to_string(i);
    flag.spellings = {flag.key};
    if (*rc::gen::arbitrary<bool>()) {
      const std::string word = gen_text(false);
      flag.value = word.empty() ? "x" : word;
      flag.arguments = {{flag.value}};
      flag.single_value = true;
    }
    // One word, kept as a shell word (a list of one).
    generated.expected.flags[flag.key] = flag.value.empty() ? "" : shell_quote(flag.value);
    generated.flags.push_back(std::move(flag));
  }
  return generated;
}

// Writes `word` so that the shell reads it back unchanged, in a randomly chosen quoting style.
std::string render_word(const std::string& word, std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      if (is_plain_word(word)) return word;
      [[fallthrough]];
    case 1: {
      std::string out = "\"";
      for (const char c : word) {
        if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
        out += c;
      }
      return out + "\"";
    }
    case 2:
      // Backslash escapes; a newline or a trailing blank cannot be written this way.
      if (!word.empty() && word.find('\n') == std::string::npos && word.back() != ' ' &&
          word.back() != '\t') {
        std::string out;
        for (const char c : word) {
          if (!is_plain_word(std::string(1, c))) out += '\\';
          out += c;
        }
        return out;
      }
      [[fallthrough]];
    default: {
      std::string out = "'";
      for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return out + "'";
    }
  }
}

std::string separator(std::mt19937_64& rng) {
  static const char* const kSeparators[] = {" ",       "  ", "\t",        " \\\n",
                                            " \\  \n", "\n", " # note\n", "\n# whole line\n  "};
  return kSeparators[rng() % std::size(kSeparators)];
}

// Writes the recipe as a launch script: env first, then the command, then the flags, with
// shuffled order, random alias spellings, '=' or a blank before values, quoting and layout.
std::string render(const GeneratedRecipe& generated, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::string, std::string>> env(generated.expected.env.begin(),
                                                       generated.expected.env.end());
  std::shuffle(env.begin(), env.end(), rng);
  std::string text;
  for (const auto& [name, value] : env) {
    text += (rng() % 2 == 0 ? "export " : "") + name + "=" + render_word(value, rng);
    text += rng() % 2 == 0 ? "\n" : "; ";
  }
  for (const std::string& word : generated.command_words) {
    text += render_word(word, rng) + separator(rng);
  }
  std::vector<GeneratedFlag> flags = generated.flags;
  std::shuffle(flags.begin(), flags.end(), rng);
  for (const GeneratedFlag& flag : flags) {
    text += flag.spellings[rng() % flag.spellings.size()];
    const bool attached = flag.single_value && rng() % 2 == 0;
    for (const std::vector<std::string>& texts : flag.arguments) {
      text += attached ? "=" : separator(rng);
      text += render_word(texts[rng() % texts.size()], rng);
    }
    text += separator(rng);
  }
  return text;
}

RC_GTEST_PROP(RecipeProperty, SpellingOrderAndLayoutDoNotChangeTheRecipe, ()) {
  const GeneratedRecipe generated = gen_recipe();
  const std::string first_text = render(generated, *rc::gen::arbitrary<std::uint64_t>());
  const std::string second_text = render(generated, *rc::gen::arbitrary<std::uint64_t>());
  const Result<Recipe> first = parse_recipe(first_text);
  const Result<Recipe> second = parse_recipe(second_text);
  RC_LOG() << "first:\n" << first_text << "\nsecond:\n" << second_text << "\n";
  if (!first.ok()) RC_FAIL(first.error());
  if (!second.ok()) RC_FAIL(second.error());
  RC_ASSERT(first.value() == generated.expected);
  RC_ASSERT(second.value() == generated.expected);
  RC_ASSERT(recipe_hash(first.value()) == recipe_hash(second.value()));

  const std::string canonical = canonical_text(first.value());
  const Result<Recipe> reparsed = parse_recipe(canonical);
  if (!reparsed.ok()) RC_FAIL(reparsed.error());
  RC_ASSERT(reparsed.value() == first.value());
  RC_ASSERT(canonical_text(reparsed.value()) == canonical);
}

RC_GTEST_PROP(RecipeProperty, SetFlagAgreesWithParsing, ()) {
  const GeneratedRecipe generated = gen_recipe();
  Recipe built;
  built.env = generated.expected.env;
  built.command = generated.expected.command;
  for (const GeneratedFlag& flag : generated.flags) {
    // Multi-value words are plain, so joining them with blanks gives the shell word list.
    std::string value;
    for (const std::vector<std::string>& texts : flag.arguments) {
      value += (value.empty() ? "" : " ") + texts.back();
    }
    const Status status = set_flag(built, flag.spellings.back(), value);
    if (!status.ok()) RC_FAIL(status.error());
  }
  RC_ASSERT(built == generated.expected);
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// A recipe is one command with one-line values: what would break the gate later, or merge two
// commands silently, is refused where the recipe is read.
TEST(RecipeErrors, ANewlineInsideAValueOrASecondCommandIsRefused) {
  EXPECT_EQ(error_of("python x.py --data-path 'a\nb'"),
            "recipe.sh:1: a quoted word spans lines; a recipe's values are one line each");
  EXPECT_EQ(error_of("A=\"x\ny\" python x.py --bf16"),
            "recipe.sh:1: a quoted word spans lines; a recipe's values are one line each");
  EXPECT_EQ(error_of("python x.py --bf16; rm -rf /tmp/x"),
            "recipe.sh:1: a second command after ';'; a recipe is one command");
  EXPECT_EQ(error_of("python x.py; --bf16"),
            "recipe.sh:1: a second command after ';'; a recipe is one command");
  // Environment assignments before the command may still end with ';', and flags one per line
  // (the pasted form) still read.
  EXPECT_EQ(parse_ok("export A=1; python x.py\n--bf16\n--seed 3").env.at("A"), "1");
}

}  // namespace
}  // namespace attune
