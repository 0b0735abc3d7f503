#include "gate/config_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gate/policy.h"

namespace attune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr std::string_view kMoeBaseline = R"(CUDA_DEVICE_MAX_CONNECTIONS=1
NCCL_NVLS_ENABLE=0
python pretrain_gpt.py \
  --tensor-model-parallel-size 2 \
  --pipeline-model-parallel-size 1 \
  --expert-model-parallel-size 8 \
  --expert-tensor-parallel-size 1 \
  --sequence-parallel \
  --micro-batch-size 1 \
  --global-batch-size 256 \
  --seq-length 4096 \
  --bf16 \
  --lr 1.0e-5 \
  --min-lr 1.0e-5 \
  --lr-decay-style constant \
  --moe-token-dispatcher-type alltoall \
  --moe-router-load-balancing-type aux_loss \
  --moe-aux-loss-coeff 1e-3 \
  --recompute-granularity selective \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --log-interval 1
)";

Recipe recipe_of(std::string_view text) {
  Result<Recipe> recipe = parse_recipe(text, "recipe.sh");
  EXPECT_TRUE(recipe.ok()) << recipe.error();
  return recipe.ok() ? recipe.value() : Recipe{};
}

Recipe baseline() { return recipe_of(kMoeBaseline); }

// The baseline with `flag` set to `value` ("false" turns a switch off).
Recipe with_flag(Recipe recipe, std::string_view flag, std::string_view value) {
  Status set = set_flag(recipe, flag, value);
  EXPECT_TRUE(set.ok()) << set.error();
  return recipe;
}

Policy policy_of(std::string_view text) {
  Result<Policy> policy = parse_policy(text, "test.toml");
  EXPECT_TRUE(policy.ok()) << policy.error();
  return policy.ok() ? policy.value() : Policy{};
}

Policy shipped(const std::string& name) {
  const std::string path = std::string(ATTUNE_SOURCE_DIR) + "/gate/policies/" + name + ".toml";
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  Result<Policy> policy = parse_policy(text.str(), path);
  EXPECT_TRUE(policy.ok()) << policy.error();
  return policy.ok() ? policy.value() : Policy{};
}

const CheckedChange* change_of(const ConfigCheckResult& result, std::string_view setting) {
  for (const CheckedChange& change : result.changes) {
    if (change.change.name == setting) return &change;
  }
  return nullptr;
}

// Expects exactly one change, refused by `rule`, with a refusal naming the setting, class and rule.
void expect_refused(const ConfigCheckResult& result, std::string_view setting,
                    ObjectiveClass objective_class, CheckRule rule) {
  EXPECT_FALSE(result.allowed);
  const CheckedChange* change = change_of(result, setting);
  ASSERT_NE(change, nullptr) << setting;
  EXPECT_EQ(change->verdict, CheckVerdict::kRefused);
  EXPECT_EQ(change->rule, rule) << change->message;
  EXPECT_EQ(change->change.objective_class, objective_class);
  const std::string head =
      std::string(setting) + " (" + to_string(objective_class) + "): " + to_string(rule) + ": ";
  EXPECT_THAT(change->message, testing::StartsWith(head));
  bool listed = false;
  for (const ConfigRefusal& refusal : result.refusals) {
    if (refusal.setting != setting) continue;
    listed = true;
    EXPECT_EQ(refusal.rule, rule);
    EXPECT_EQ(refusal.objective_class, objective_class);
    EXPECT_THAT(refusal.message, testing::StartsWith(head));
    EXPECT_THAT(refusal.message, Not(HasSubstr("\n")));
  }
  EXPECT_TRUE(listed) << "no refusal names " << setting;
}

bool has_refusal(const ConfigCheckResult& result, CheckRule rule) {
  for (const ConfigRefusal& refusal : result.refusals) {
    if (refusal.rule == rule) return true;
  }
  return false;
}

// What changes a value Megatron will use: a flag spelled at its default on one side only does
// not; another value, a switch turned on or off, or a flag whose default is None does.
TEST(ConfigCheck, EffectiveChangesDropOnlyDefaultsSpelledOnOneSide) {
  auto changes = [](const char* from, const char* to) {
    std::vector<std::string> names;
    for (const SettingChange& c :
         effective_changes(parse_recipe(from).value(), parse_recipe(to).value())) {
      names.push_back(c.name);
    }
    return names;
  };
  EXPECT_THAT(changes("--pipeline-model-parallel-size 1 --bf16", "--bf16"), IsEmpty());
  EXPECT_THAT(changes("--bf16", "--context-parallel-size 1 --bf16"), IsEmpty());
  EXPECT_THAT(changes("--pipeline-model-parallel-size 2", ""),
              ElementsAre("--pipeline-model-parallel-size"));
  EXPECT_THAT(changes("--sequence-parallel", ""), ElementsAre("--sequence-parallel"));
  // A store_false switch: given, it turns the fusion off, which is a change.
  EXPECT_THAT(changes("", "--no-gradient-accumulation-fusion"),
              ElementsAre("--no-gradient-accumulation-fusion"));
  // None as the default: the value Megatron derives (ETP from TP) is not known here, so counted.
  EXPECT_THAT(changes("--expert-tensor-parallel-size 1", ""),
              ElementsAre("--expert-tensor-parallel-size"));
}

TEST(ConfigCheck, AnIdenticalRecipeIsAllowedWithNoChanges) {
  const ConfigCheckResult result = check_config(default_policy(), baseline(), baseline());
  EXPECT_TRUE(result.allowed);
  EXPECT_THAT(result.changes, IsEmpty());
  EXPECT_THAT(result.refusals, IsEmpty());
  EXPECT_EQ(refusal_summary(result), "");
}

TEST(ConfigCheck, AStructuralChangeIsAllowed) {
  const ConfigCheckResult result = check_config(
      default_policy(), baseline(), with_flag(baseline(), "--pipeline-model-parallel-size", "4"));
  EXPECT_TRUE(result.allowed);
  ASSERT_EQ(result.changes.size(), 1u);
  const CheckedChange& change = result.changes[0];
  EXPECT_EQ(change.change.name, "--pipeline-model-parallel-size");
  EXPECT_EQ(change.change.before, "1");
  EXPECT_EQ(change.change.after, "4");
  EXPECT_EQ(change.change.objective_class, ObjectiveClass::kStructural);
  EXPECT_EQ(change.verdict, CheckVerdict::kAllowed);
  EXPECT_EQ(change.rule, CheckRule::kStructural);
}

TEST(ConfigCheck, ASameMathFlagIsAllowed) {
  const ConfigCheckResult result = check_config(
      default_policy(), baseline(), with_flag(baseline(), "--cross-entropy-loss-fusion", ""));
  EXPECT_TRUE(result.allowed);
  ASSERT_NE(change_of(result, "--cross-entropy-loss-fusion"), nullptr);
  EXPECT_EQ(change_of(result, "--cross-entropy-loss-fusion")->rule, CheckRule::kSameMath);
  EXPECT_EQ(change_of(result, "--cross-entropy-loss-fusion")->change.before, "false");
  EXPECT_EQ(change_of(result, "--cross-entropy-loss-fusion")->change.after, "true");
}

TEST(ConfigCheck, AnOtherFlagIsAllowedButReported) {
  const ConfigCheckResult result =
      check_config(default_policy(), baseline(), with_flag(baseline(), "--log-interval", "10"));
  EXPECT_TRUE(result.allowed);
  ASSERT_EQ(result.changes.size(), 1u);
  EXPECT_EQ(result.changes[0].verdict, CheckVerdict::kReported);
  EXPECT_EQ(result.changes[0].rule, CheckRule::kOther);
  EXPECT_EQ(result.changes[0].change.objective_class, ObjectiveClass::kOther);
}

TEST(ConfigCheck, ANumericChangeIsRefused) {
  const ConfigCheckResult result =
      check_config(default_policy(), baseline(), with_flag(baseline(), "--lr", "2e-5"));
  expect_refused(result, "--lr", ObjectiveClass::kNumeric, CheckRule::kNumeric);
  EXPECT_THAT(refusal_summary(result),
              testing::StartsWith("--lr (numeric): numeric: 1e-05 -> 2e-05"));
}

TEST(ConfigCheck, AddingOrRemovingANumericFlagIsRefused) {
  expect_refused(check_config(default_policy(), baseline(),
                              with_flag(baseline(), "--grad-reduce-in-bf16", "")),
                 "--grad-reduce-in-bf16", ObjectiveClass::kNumeric, CheckRule::kNumeric);
  Recipe without_bf16 = baseline();
  ASSERT_TRUE(remove_flag(without_bf16, "--bf16").ok());
  expect_refused(check_config(default_policy(), baseline(), without_bf16), "--bf16",
                 ObjectiveClass::kNumeric, CheckRule::kNumeric);
}

TEST(ConfigCheck, AFlagTheCatalogLacksIsUnlistedAndRefused) {
  const ConfigCheckResult result =
      check_config(default_policy(), baseline(), with_flag(baseline(), "--secret-knob", "3"));
  expect_refused(result, "--secret-knob", ObjectiveClass::kNumeric, CheckRule::kUnlisted);
  EXPECT_THAT(result.refusals[0].message, HasSubstr("unlisted means numeric"));
}

TEST(ConfigCheck, AnAliasCannotSneakANumericChangeThrough) {
  // --disable-fp8-wgrad is an alias of the numeric --no-fp8-wgrad; --persistent-save-interval of
  // the "other" --save-interval.
  const ConfigCheckResult result = check_config(
      default_policy(), baseline(), recipe_of(std::string(kMoeBaseline) + " --disable-fp8-wgrad"));
  expect_refused(result, "--no-fp8-wgrad", ObjectiveClass::kNumeric, CheckRule::kNumeric);
  // Even a hand-built recipe that keeps the alias as its key cannot hide the change.
  Recipe hand_built = baseline();
  hand_built.flags["--disable-fp8-wgrad"] = "";
  expect_refused(check_config(default_policy(), baseline(), hand_built), "--no-fp8-wgrad",
                 ObjectiveClass::kNumeric, CheckRule::kNumeric);
  const ConfigCheckResult other =
      check_config(default_policy(), recipe_of(std::string(kMoeBaseline) + " --save-interval 100"),
                   recipe_of(std::string(kMoeBaseline) + " --persistent-save-interval 0100"));
  EXPECT_TRUE(other.allowed);
  EXPECT_THAT(other.changes, IsEmpty()) << "the alias with the same value is no change";
}

TEST(ConfigCheck, NegationsAreOneSettingWithTheCatalogDefault) {
  const std::string base(kMoeBaseline);
  // --rl-use-sequence-packing / --no-rl-use-sequence-packing is a numeric pair, default False.
  expect_refused(check_config(default_policy(), recipe_of(base + " --rl-use-sequence-packing"),
                              recipe_of(base + " --no-rl-use-sequence-packing")),
                 "--rl-use-sequence-packing", ObjectiveClass::kNumeric, CheckRule::kNumeric);
  expect_refused(check_config(default_policy(), recipe_of(base),
                              recipe_of(base + " --rl-use-sequence-packing")),
                 "--rl-use-sequence-packing", ObjectiveClass::kNumeric, CheckRule::kNumeric);
  const ConfigCheckResult same = check_config(default_policy(), recipe_of(base),
                                              recipe_of(base + " --no-rl-use-sequence-packing"));
  EXPECT_TRUE(same.allowed);
  EXPECT_THAT(same.changes, IsEmpty()) << "--no-x gives the default: no change";
}

TEST(ConfigCheck, GivingAFlagItsDefaultIsNoChange) {
  const ConfigCheckResult result = check_config(
      default_policy(), baseline(), with_flag(baseline(), "--context-parallel-size", "1"));
  EXPECT_TRUE(result.allowed);
  EXPECT_THAT(result.changes, IsEmpty());
}

TEST(ConfigCheck, EnvVarsAreNumericUnlessThePolicyListsThem) {
  Recipe candidate = baseline();
  candidate.env["NCCL_ALGO"] = "Tree";
  const ConfigCheckResult unlisted = check_config(default_policy(), baseline(), candidate);
  expect_refused(unlisted, "NCCL_ALGO", ObjectiveClass::kNumeric, CheckRule::kUnlisted);
  EXPECT_EQ(change_of(unlisted, "NCCL_ALGO")->change.kind, ChangeKind::kEnv);
  EXPECT_FALSE(change_of(unlisted, "NCCL_ALGO")->change.before_present);

  // Changing an allowlisted variable is allowed on the built-in default only if listed: it lists
  // nothing, so even CUDA_DEVICE_MAX_CONNECTIONS is refused there.
  Recipe connections = baseline();
  connections.env["CUDA_DEVICE_MAX_CONNECTIONS"] = "8";
  expect_refused(check_config(default_policy(), baseline(), connections),
                 "CUDA_DEVICE_MAX_CONNECTIONS", ObjectiveClass::kNumeric, CheckRule::kUnlisted);

  const Policy policy = policy_of(R"(name = "env"
model = "m"
[[env]]
name = "CUDA_DEVICE_MAX_CONNECTIONS"
class = "structural"
[[env]]
name = "NVTE_*"
class = "numeric"
[[env]]
name = "NCCL_DEBUG"
class = "other"
)");
  const ConfigCheckResult listed = check_config(policy, baseline(), connections);
  EXPECT_TRUE(listed.allowed);
  EXPECT_EQ(change_of(listed, "CUDA_DEVICE_MAX_CONNECTIONS")->rule, CheckRule::kStructural);

  Recipe nvte = baseline();
  nvte.env["NVTE_FUSED_ATTN"] = "0";
  expect_refused(check_config(policy, baseline(), nvte), "NVTE_FUSED_ATTN",
                 ObjectiveClass::kNumeric, CheckRule::kNumeric);

  Recipe removed = baseline();
  removed.env.erase("NCCL_NVLS_ENABLE");
  expect_refused(check_config(policy, baseline(), removed), "NCCL_NVLS_ENABLE",
                 ObjectiveClass::kNumeric, CheckRule::kUnlisted);

  Recipe debug = baseline();
  debug.env["NCCL_DEBUG"] = "INFO";
  const ConfigCheckResult reported = check_config(policy, baseline(), debug);
  EXPECT_TRUE(reported.allowed);
  EXPECT_EQ(change_of(reported, "NCCL_DEBUG")->verdict, CheckVerdict::kReported);
}

constexpr std::string_view kSwapPolicy = R"(name = "swaps"
model = "m"
[[swap]]
setting = "--moe-token-dispatcher-type"
values = ["alltoall", "flex"]
component_test = "passed"
[[swap]]
setting = "--moe-flex-dispatcher-backend"
values = ["deepep"]
component_test = "untested"
[[swap]]
setting = "--recompute-granularity"
values = ["selective", "full"]
component_test = "failed"
[[swap]]
setting = "--lr-warmup-iters"
values = [0, 10]
component_test = "passed"
[[swap]]
setting = "--min-lr"
values = [0]
component_test = "passed"
[[class_override]]
setting = "--min-lr"
class = "numeric"
reason = "the schedule"
)";

TEST(ConfigCheck, ASwapInsideItsValuesIsAllowed) {
  const ConfigCheckResult result =
      check_config(policy_of(kSwapPolicy), baseline(),
                   with_flag(baseline(), "--moe-token-dispatcher-type", "flex"));
  EXPECT_TRUE(result.allowed);
  ASSERT_EQ(result.changes.size(), 1u);
  EXPECT_EQ(result.changes[0].rule, CheckRule::kSwap);
  EXPECT_EQ(result.changes[0].change.objective_class, ObjectiveClass::kSameMath);
}

TEST(ConfigCheck, ASwapOutsideItsValuesIsRefused) {
  const ConfigCheckResult result =
      check_config(policy_of(kSwapPolicy), baseline(),
                   with_flag(baseline(), "--moe-token-dispatcher-type", "allgather"));
  expect_refused(result, "--moe-token-dispatcher-type", ObjectiveClass::kSameMath,
                 CheckRule::kSwapValue);
  EXPECT_THAT(result.refusals[0].message, HasSubstr("(alltoall, flex)"));

  // Removing the flag gives the catalog default, allgather, which is not listed.
  Recipe removed = baseline();
  ASSERT_TRUE(remove_flag(removed, "--moe-token-dispatcher-type").ok());
  expect_refused(check_config(policy_of(kSwapPolicy), baseline(), removed),
                 "--moe-token-dispatcher-type", ObjectiveClass::kSameMath, CheckRule::kSwapValue);
}

TEST(ConfigCheck, AbsentInASwapListMeansTheDefault) {
  const Policy policy = policy_of(R"(name = "absent"
model = "m"
[[swap]]
setting = "--moe-token-dispatcher-type"
values = ["absent", "alltoall"]
component_test = "passed"
)");
  Recipe removed = baseline();
  ASSERT_TRUE(remove_flag(removed, "--moe-token-dispatcher-type").ok());
  EXPECT_TRUE(check_config(policy, baseline(), removed).allowed);
  EXPECT_TRUE(check_config(policy, baseline(),
                           with_flag(baseline(), "--moe-token-dispatcher-type", "allgather"))
                  .allowed)
      << "allgather is the catalog default, so it is what \"absent\" allows";
  EXPECT_FALSE(
      check_config(policy, baseline(), with_flag(baseline(), "--moe-token-dispatcher-type", "flex"))
          .allowed);
}

TEST(ConfigCheck, ClassifySettingAcceptsAnySpelling) {
  const Policy policy = policy_of(R"(name = "spellings"
model = "m"
[[class_override]]
setting = "--save-interval"
class = "numeric"
reason = "r"
)");
  EXPECT_EQ(
      classify_setting(policy, ChangeKind::kFlag, "--persistent-save-interval").objective_class,
      ObjectiveClass::kNumeric);
  EXPECT_EQ(classify_setting(default_policy(), ChangeKind::kFlag, "--persistent-save-interval")
                .objective_class,
            ObjectiveClass::kOther);
  EXPECT_TRUE(
      classify_setting(default_policy(), ChangeKind::kFlag, "--no-rl-use-sequence-packing").listed);
  EXPECT_FALSE(classify_setting(default_policy(), ChangeKind::kFlag, "--secret-knob").listed);
  EXPECT_FALSE(classify_setting(default_policy(), ChangeKind::kEnv, "NCCL_ALGO").listed);
}

TEST(ConfigCheck, ASwapWhoseComponentTestHasNotPassedIsRefused) {
  expect_refused(check_config(policy_of(kSwapPolicy), baseline(),
                              with_flag(baseline(), "--moe-flex-dispatcher-backend", "hybridep")),
                 "--moe-flex-dispatcher-backend", ObjectiveClass::kSameMath,
                 CheckRule::kSwapUntested);
  expect_refused(check_config(policy_of(kSwapPolicy), baseline(),
                              with_flag(baseline(), "--recompute-granularity", "full")),
                 "--recompute-granularity", ObjectiveClass::kSameMath, CheckRule::kSwapUntested);
}

TEST(ConfigCheck, ASwapPromotesANumericCatalogFlagButAnOverrideWins) {
  // --lr-warmup-iters is numeric in the catalog; the policy lists it as a tested swap. --min-lr is
  // listed as a swap too, but an override classes it numeric, and numeric is refused.
  const ConfigCheckResult swapped = check_config(policy_of(kSwapPolicy), baseline(),
                                                 with_flag(baseline(), "--lr-warmup-iters", "10"));
  EXPECT_TRUE(swapped.allowed);
  expect_refused(
      check_config(policy_of(kSwapPolicy), baseline(), with_flag(baseline(), "--min-lr", "0")),
      "--min-lr", ObjectiveClass::kNumeric, CheckRule::kNumeric);
}

constexpr std::string_view kFrozenPolicy = R"(name = "frozen"
model = "m"
[[frozen]]
setting = "--micro-batch-size"
value = 1
reason = "load-balancing loss per microbatch"
[[frozen]]
setting = "--tp-comm-overlap"
value = "absent"
reason = "no component test"
[[frozen]]
setting = "--recompute-granularity"
reason = "kept as the baseline has it"
[[frozen]]
setting = "CUDA_DEVICE_MAX_CONNECTIONS"
value = "1"
reason = "needed by the overlap"
[[env]]
name = "CUDA_DEVICE_MAX_CONNECTIONS"
class = "structural"
)";

TEST(ConfigCheck, AChangeToAFrozenSettingIsRefused) {
  const Policy policy = policy_of(kFrozenPolicy);
  const ConfigCheckResult mbs =
      check_config(policy, baseline(), with_flag(baseline(), "--micro-batch-size", "2"));
  expect_refused(mbs, "--micro-batch-size", ObjectiveClass::kNumeric, CheckRule::kFrozen);
  EXPECT_THAT(mbs.refusals[0].message, HasSubstr("load-balancing loss per microbatch"));
  EXPECT_EQ(mbs.refusals.size(), 1u) << "one refusal per change, not a second for the value";

  expect_refused(check_config(policy, baseline(), with_flag(baseline(), "--tp-comm-overlap", "")),
                 "--tp-comm-overlap", ObjectiveClass::kStructural, CheckRule::kFrozen);
  expect_refused(
      check_config(policy, baseline(), with_flag(baseline(), "--recompute-granularity", "full")),
      "--recompute-granularity", ObjectiveClass::kStructural, CheckRule::kFrozen);
  Recipe env = baseline();
  env.env["CUDA_DEVICE_MAX_CONNECTIONS"] = "32";
  expect_refused(check_config(policy, baseline(), env), "CUDA_DEVICE_MAX_CONNECTIONS",
                 ObjectiveClass::kStructural, CheckRule::kFrozen);
}

TEST(ConfigCheck, AFrozenSettingOffItsValueIsRefusedEvenWithoutAChange) {
  // A baseline that breaks its policy: run on (baseline, baseline) the check says so.
  const Recipe broken = with_flag(baseline(), "--micro-batch-size", "4");
  const ConfigCheckResult result = check_config(policy_of(kFrozenPolicy), broken, broken);
  EXPECT_FALSE(result.allowed);
  EXPECT_THAT(result.changes, IsEmpty());
  ASSERT_EQ(result.refusals.size(), 1u);
  EXPECT_EQ(result.refusals[0].setting, "--micro-batch-size");
  EXPECT_EQ(result.refusals[0].rule, CheckRule::kFrozen);
  EXPECT_THAT(result.refusals[0].message,
              testing::StartsWith("--micro-batch-size (numeric): frozen: frozen at 1 by policy "
                                  "frozen, the candidate has 4"));
}

constexpr std::string_view kDefectPolicy = R"(name = "defects"
model = "m"
[[defect]]
when = { "--expert-tensor-parallel-size" = 8, "--expert-model-parallel-size" = 1 }
reason = "changes training"
[[defect]]
when = { "--expert-tensor-parallel-size" = "absent", "--tensor-model-parallel-size" = 8, "--expert-model-parallel-size" = 1 }
reason = "ETP defaults to TP"
)";

TEST(ConfigCheck, AKnownDefectIsRefusedOnTheFullSettings) {
  const Policy policy = policy_of(kDefectPolicy);
  // The baseline already has ETP 1 -> 8 is one change; EP is changed to 1 by dropping the flag,
  // which leaves its catalog default, 1.
  Recipe candidate = with_flag(baseline(), "--expert-tensor-parallel-size", "8");
  EXPECT_TRUE(check_config(policy, baseline(), candidate).allowed) << "EP is still 8";
  ASSERT_TRUE(remove_flag(candidate, "--expert-model-parallel-size").ok());
  const ConfigCheckResult result = check_config(policy, baseline(), candidate);
  EXPECT_FALSE(result.allowed);
  ASSERT_EQ(result.refusals.size(), 1u);
  EXPECT_EQ(result.refusals[0].rule, CheckRule::kDefect);
  EXPECT_EQ(result.refusals[0].setting,
            "--expert-model-parallel-size=1 --expert-tensor-parallel-size=8");
  EXPECT_EQ(result.refusals[0].message,
            "--expert-model-parallel-size=1 (structural) with --expert-tensor-parallel-size=8 "
            "(structural): defect: a known stack defect of policy defects: changes training");
  for (const CheckedChange& change : result.changes) {
    EXPECT_EQ(change.verdict, CheckVerdict::kAllowed) << "each change alone is structural";
  }
}

TEST(ConfigCheck, ADefectThroughADefaultIsRefused) {
  Recipe candidate = with_flag(baseline(), "--tensor-model-parallel-size", "8");
  ASSERT_TRUE(remove_flag(candidate, "--expert-tensor-parallel-size").ok());
  candidate = with_flag(candidate, "--expert-model-parallel-size", "1");
  const ConfigCheckResult result = check_config(policy_of(kDefectPolicy), baseline(), candidate);
  EXPECT_FALSE(result.allowed);
  ASSERT_EQ(result.refusals.size(), 1u);
  EXPECT_THAT(result.refusals[0].message, HasSubstr("ETP defaults to TP"));
  EXPECT_THAT(result.refusals[0].setting, HasSubstr("--expert-tensor-parallel-size=absent"));
}

TEST(ConfigCheck, AChangedCommandIsRefused) {
  Recipe candidate = baseline();
  candidate.command = "python pretrain_mamba.py";
  const ConfigCheckResult result = check_config(default_policy(), baseline(), candidate);
  EXPECT_FALSE(result.allowed);
  ASSERT_EQ(result.refusals.size(), 1u);
  EXPECT_EQ(result.refusals[0].rule, CheckRule::kCommand);
}

TEST(ConfigCheck, SeveralRefusalsAreAllListedAndSummarised) {
  Recipe candidate = with_flag(baseline(), "--lr", "3e-5");
  candidate = with_flag(candidate, "--seed", "7");
  candidate = with_flag(candidate, "--tensor-model-parallel-size", "4");
  const ConfigCheckResult result = check_config(default_policy(), baseline(), candidate);
  EXPECT_FALSE(result.allowed);
  EXPECT_EQ(result.changes.size(), 3u);
  EXPECT_EQ(result.refusals.size(), 2u);
  EXPECT_THAT(refusal_summary(result), testing::EndsWith("(and 1 more refusal)"));
}

// ---- Silent rewrites that the recipe alone does not show (gate/implied_args.h).

TEST(ConfigCheck, AGraphImplementationIsJudgedForTheRngTrackerItTurnsOn) {
  // Megatron's validate_args turns on te_rng_tracker for any --cuda-graph-impl but none
  // (confirmed with tools/megatron-oracle); --te-rng-tracker is numeric in the catalog.
  for (const std::string impl : {"local", "transformer_engine"}) {
    SCOPED_TRACE(impl);
    const Recipe candidate = with_flag(baseline(), "--cuda-graph-impl", impl);
    const ConfigCheckResult result = check_config(default_policy(), baseline(), candidate);
    ASSERT_NE(change_of(result, "--cuda-graph-impl"), nullptr);
    EXPECT_EQ(change_of(result, "--cuda-graph-impl")->verdict, CheckVerdict::kAllowed);
    expect_refused(result, "--te-rng-tracker", ObjectiveClass::kNumeric, CheckRule::kNumeric);
    const CheckedChange* rng = change_of(result, "--te-rng-tracker");
    EXPECT_EQ(rng->change.before, "false");
    EXPECT_EQ(rng->change.after, "true");
    EXPECT_THAT(rng->message, HasSubstr("implied by --cuda-graph-impl"));
  }
  // Explicit none is no rewrite.
  EXPECT_TRUE(
      check_config(default_policy(), baseline(), with_flag(baseline(), "--cuda-graph-impl", "none"))
          .allowed);
  // The deprecated switches are graphs too; without Transformer Engine the tracker stays off.
  for (const std::string old_switch : {"--enable-cuda-graph", "--external-cuda-graph"}) {
    expect_refused(
        check_config(default_policy(), baseline(), with_flag(baseline(), old_switch, "")),
        "--te-rng-tracker", ObjectiveClass::kNumeric, CheckRule::kNumeric);
  }
  const Recipe local = with_flag(baseline(), "--transformer-impl", "local");
  const ConfigCheckResult local_graphs =
      check_config(default_policy(), local, with_flag(local, "--cuda-graph-impl", "local"));
  EXPECT_EQ(change_of(local_graphs, "--te-rng-tracker"), nullptr);
}

TEST(ConfigCheck, ARewriteTheBaselineAlreadyHasIsNoChange) {
  // A baseline with graphs runs the tracker already: another implementation changes nothing
  // numeric, and neither does a baseline that gives --te-rng-tracker itself.
  const Recipe graphed = with_flag(baseline(), "--cuda-graph-impl", "transformer_engine");
  EXPECT_TRUE(
      check_config(default_policy(), graphed, with_flag(graphed, "--cuda-graph-impl", "local"))
          .allowed);
  const Recipe tracked = with_flag(baseline(), "--te-rng-tracker", "");
  EXPECT_TRUE(
      check_config(default_policy(), tracked, with_flag(tracked, "--cuda-graph-impl", "local"))
          .allowed);
  // Dropping the graphs from a graphed baseline turns the tracker off: refused the other way.
  const ConfigCheckResult dropped =
      check_config(default_policy(), graphed, with_flag(graphed, "--cuda-graph-impl", "none"));
  expect_refused(dropped, "--te-rng-tracker", ObjectiveClass::kNumeric, CheckRule::kNumeric);
  EXPECT_EQ(change_of(dropped, "--te-rng-tracker")->change.after, "false");
}

TEST(ConfigCheck, AnOverrideThatAllowsTheCauseStillMeetsTheRewrittenSetting) {
  // A policy that classes --grad-reduce-in-bf16 as same-math still refuses the candidate: under
  // --bf16 it turns accumulate_allreduce_grads_in_fp32 from True to False.
  const Policy policy = policy_of(R"(name = "lenient"
model = "test"
[[class_override]]
setting = "--grad-reduce-in-bf16"
class = "same-math"
reason = "a test policy"
)");
  const ConfigCheckResult result =
      check_config(policy, baseline(), with_flag(baseline(), "--grad-reduce-in-bf16", ""));
  EXPECT_EQ(change_of(result, "--grad-reduce-in-bf16")->verdict, CheckVerdict::kAllowed);
  expect_refused(result, "--accumulate-allreduce-grads-in-fp32", ObjectiveClass::kNumeric,
                 CheckRule::kNumeric);
  EXPECT_EQ(change_of(result, "--accumulate-allreduce-grads-in-fp32")->change.before, "true");
  EXPECT_EQ(change_of(result, "--accumulate-allreduce-grads-in-fp32")->change.after, "false");
  // The candidate giving the flag that --bf16 sets anyway is no change.
  const Recipe explicit_fp32 = with_flag(baseline(), "--accumulate-allreduce-grads-in-fp32", "");
  EXPECT_TRUE(check_config(policy, baseline(), explicit_fp32).allowed);
}

TEST(ConfigCheck, AClassOverrideOnTheRewrittenSettingDecides) {
  const Policy policy = policy_of(R"(name = "no-dropout"
model = "test"
[[class_override]]
setting = "--te-rng-tracker"
class = "same-math"
reason = "the recipe has no dropout"
)");
  const ConfigCheckResult result =
      check_config(policy, baseline(), with_flag(baseline(), "--cuda-graph-impl", "local"));
  EXPECT_TRUE(result.allowed) << refusal_summary(result);
  ASSERT_NE(change_of(result, "--te-rng-tracker"), nullptr);
  EXPECT_EQ(change_of(result, "--te-rng-tracker")->rule, CheckRule::kSameMath);
}

// ---- The shipped policies enforce the paper's rules.

Recipe minimax_baseline() {
  Recipe recipe = baseline();
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--moe-router-enable-expert-bias", ""},
                                                        {"--moe-router-score-function", "sigmoid"},
                                                        {"--use-precision-aware-optimizer", ""},
                                                        {"--optimizer-cpu-offload", ""},
                                                        {"--overlap-cpu-optimizer-d2h-h2d", ""}}) {
    recipe = with_flag(recipe, flag, value);
  }
  return recipe;
}

// A baseline that holds the frozen settings of the named shipped policy.
Recipe baseline_for(const std::string& name) {
  if (name == "minimax-m2") return minimax_baseline();
  if (name == "llama3.1-405b") {
    return with_flag(with_flag(baseline(), "--tp-comm-overlap", ""), "--fp8-format", "hybrid");
  }
  return baseline();
}

TEST(ShippedPolicies, MoreRowsPerMicrobatchAreRefusedOnGlmAndMixtral) {
  for (const std::string name : {"glm-4.5", "mixtral-8x22b"}) {
    SCOPED_TRACE(name);
    expect_refused(
        check_config(shipped(name), baseline(), with_flag(baseline(), "--micro-batch-size", "2")),
        "--micro-batch-size", ObjectiveClass::kNumeric, CheckRule::kFrozen);
  }
  // The base classification refuses it too, as numeric.
  expect_refused(check_config(shipped("default"), baseline(),
                              with_flag(baseline(), "--micro-batch-size", "2")),
                 "--micro-batch-size", ObjectiveClass::kNumeric, CheckRule::kNumeric);
}

TEST(ShippedPolicies, TpCommOverlapIsRefusedOnGlmAndFrozenOnLlama) {
  expect_refused(
      check_config(shipped("glm-4.5"), baseline(), with_flag(baseline(), "--tp-comm-overlap", "")),
      "--tp-comm-overlap", ObjectiveClass::kStructural, CheckRule::kFrozen);
  const Recipe llama =
      with_flag(baseline_for("llama3.1-405b"), "--tensor-model-parallel-size", "8");
  const Policy policy = shipped("llama3.1-405b");
  EXPECT_TRUE(check_config(policy, llama, llama).allowed)
      << refusal_summary(check_config(policy, llama, llama));
  expect_refused(check_config(policy, llama, with_flag(llama, "--tp-comm-overlap", "false")),
                 "--tp-comm-overlap", ObjectiveClass::kStructural, CheckRule::kFrozen);
  expect_refused(check_config(policy, llama, with_flag(llama, "--fp8-recipe", "tensorwise")),
                 "--fp8-recipe", ObjectiveClass::kNumeric, CheckRule::kFrozen);
  // Mixtral does not freeze it: a structural change.
  EXPECT_TRUE(check_config(shipped("mixtral-8x22b"), baseline(),
                           with_flag(baseline(), "--tp-comm-overlap", ""))
                  .allowed);
}

TEST(ShippedPolicies, GradReduceInBf16IsRefusedEverywhere) {
  const Recipe candidate = with_flag(baseline(), "--grad-reduce-in-bf16", "");
  for (const std::string name :
       {"default", "glm-4.5", "mixtral-8x22b", "llama3.1-405b", "minimax-m2"}) {
    SCOPED_TRACE(name);
    const ConfigCheckResult result = check_config(shipped(name), baseline(), candidate);
    EXPECT_FALSE(result.allowed);
    const CheckedChange* change = change_of(result, "--grad-reduce-in-bf16");
    ASSERT_NE(change, nullptr);
    EXPECT_EQ(change->verdict, CheckVerdict::kRefused);
    EXPECT_EQ(change->change.objective_class, ObjectiveClass::kNumeric);
  }
  expect_refused(check_config(default_policy(), baseline(), candidate), "--grad-reduce-in-bf16",
                 ObjectiveClass::kNumeric, CheckRule::kNumeric);
}

TEST(ShippedPolicies, MinimaxAllowsDroppingTheOptimizerOffloadButNotTheRouting) {
  const Policy policy = shipped("minimax-m2");
  const Recipe base = minimax_baseline();
  ASSERT_TRUE(check_config(policy, base, base).allowed)
      << refusal_summary(check_config(policy, base, base));

  Recipe no_offload = with_flag(base, "--optimizer-cpu-offload", "false");
  no_offload = with_flag(no_offload, "--overlap-cpu-optimizer-d2h-h2d", "false");
  const ConfigCheckResult dropped = check_config(policy, base, no_offload);
  EXPECT_TRUE(dropped.allowed) << refusal_summary(dropped);
  ASSERT_NE(change_of(dropped, "--optimizer-cpu-offload"), nullptr);
  EXPECT_EQ(change_of(dropped, "--optimizer-cpu-offload")->rule, CheckRule::kSwap);

  const ConfigCheckResult rows =
      check_config(policy, base, with_flag(base, "--micro-batch-size", "2"));
  EXPECT_TRUE(rows.allowed) << "aux-loss-free routing: rows per microbatch are structural";

  expect_refused(check_config(policy, base, with_flag(base, "--lr-decay-style", "cosine")),
                 "--lr-decay-style", ObjectiveClass::kNumeric, CheckRule::kFrozen);
  expect_refused(
      check_config(policy, base, with_flag(base, "--moe-router-enable-expert-bias", "false")),
      "--moe-router-enable-expert-bias", ObjectiveClass::kNumeric, CheckRule::kFrozen);
  expect_refused(check_config(policy, base, with_flag(base, "--lr", "1e-4")), "--lr",
                 ObjectiveClass::kNumeric, CheckRule::kFrozen);
}

TEST(ShippedPolicies, ThePrecisionAwareOptimizerIsRefused) {
  // Adding it where the baseline lacks it, and dropping it on MiniMax-M2 where the baseline has it.
  for (const std::string name : {"glm-4.5", "mixtral-8x22b", "llama3.1-405b"}) {
    SCOPED_TRACE(name);
    expect_refused(check_config(shipped(name), baseline(),
                                with_flag(baseline(), "--use-precision-aware-optimizer", "")),
                   "--use-precision-aware-optimizer", ObjectiveClass::kNumeric, CheckRule::kFrozen);
  }
  Recipe candidate = with_flag(minimax_baseline(), "--use-precision-aware-optimizer", "false");
  candidate = with_flag(candidate, "--optimizer-cpu-offload", "false");
  expect_refused(check_config(shipped("minimax-m2"), minimax_baseline(), candidate),
                 "--use-precision-aware-optimizer", ObjectiveClass::kNumeric, CheckRule::kFrozen);
  // On GLM-4.5 the offload, which needs the precision-aware optimizer, is therefore unreachable.
  EXPECT_FALSE(check_config(shipped("glm-4.5"), baseline(),
                            with_flag(with_flag(baseline(), "--use-precision-aware-optimizer", ""),
                                      "--optimizer-cpu-offload", ""))
                   .allowed);
}

TEST(ShippedPolicies, TheDispatcherSwapFollowsItsComponentTest) {
  for (const std::string name : {"glm-4.5", "minimax-m2"}) {
    SCOPED_TRACE(name);
    const Recipe flex = with_flag(baseline_for(name), "--moe-token-dispatcher-type", "flex");
    const ConfigCheckResult result = check_config(shipped(name), baseline_for(name), flex);
    EXPECT_TRUE(result.allowed) << refusal_summary(result);
    EXPECT_EQ(change_of(result, "--moe-token-dispatcher-type")->rule, CheckRule::kSwap);
    expect_refused(check_config(shipped(name), flex,
                                with_flag(flex, "--moe-flex-dispatcher-backend", "hybridep")),
                   "--moe-flex-dispatcher-backend", ObjectiveClass::kSameMath,
                   CheckRule::kSwapValue);
  }
  expect_refused(check_config(shipped("mixtral-8x22b"), baseline(),
                              with_flag(baseline(), "--moe-token-dispatcher-type", "flex")),
                 "--moe-token-dispatcher-type", ObjectiveClass::kSameMath,
                 CheckRule::kSwapUntested);
}

TEST(ShippedPolicies, TheEnvironmentAllowlistHoldsAndUnlistedStaysNumeric) {
  for (const std::string name :
       {"default", "glm-4.5", "mixtral-8x22b", "llama3.1-405b", "minimax-m2"}) {
    SCOPED_TRACE(name);
    const Policy policy = shipped(name);
    const Recipe base = baseline_for(name);
    Recipe buffers = base;
    buffers.env["NCCL_BUFFSIZE"] = "8388608";
    EXPECT_TRUE(check_config(policy, base, buffers).allowed);
    Recipe algo = base;
    algo.env["NCCL_ALGO"] = "Tree";
    expect_refused(check_config(policy, base, algo), "NCCL_ALGO", ObjectiveClass::kNumeric,
                   CheckRule::kUnlisted);
  }
}

// Builds, from a baseline, a candidate that meets every condition of `defect`.
Recipe meeting(Recipe recipe, const KnownDefect& defect) {
  for (const DefectCondition& condition : defect.conditions) {
    if (condition.kind == ChangeKind::kEnv) {
      if (condition.value) {
        recipe.env[condition.setting] = *condition.value;
      } else {
        recipe.env.erase(condition.setting);
      }
    } else if (condition.value) {
      recipe = with_flag(recipe, condition.setting, *condition.value);
    } else if (effective_value(recipe, ChangeKind::kFlag, condition.setting) !=
               default_value(ChangeKind::kFlag, condition.setting)) {
      EXPECT_TRUE(remove_flag(recipe, condition.setting).ok());
    }
  }
  return recipe;
}

TEST(ShippedPolicies, EveryKnownDefectIsRefused) {
  std::size_t defects = 0;
  for (const std::string name : {"glm-4.5", "mixtral-8x22b", "llama3.1-405b", "minimax-m2"}) {
    const Policy policy = shipped(name);
    for (const KnownDefect& defect : policy.defects) {
      SCOPED_TRACE(name + " line " + std::to_string(defect.line));
      ++defects;
      const ConfigCheckResult result =
          check_config(policy, baseline(), meeting(baseline(), defect));
      EXPECT_FALSE(result.allowed);
      EXPECT_TRUE(has_refusal(result, CheckRule::kDefect)) << refusal_summary(result);
      for (const ConfigRefusal& refusal : result.refusals) {
        if (refusal.rule == CheckRule::kDefect) {
          EXPECT_THAT(refusal.message, HasSubstr(defect.reason));
        }
      }
    }
  }
  EXPECT_EQ(defects, 6u) << "GLM-4.5: ETP 8 with EP 1 (and through the TP default); Mixtral: "
                            "ETP 8 and ETP 4 with EP 1 (each also through the TP default)";
  // The named configurations of Table B1, written out.
  Recipe etp8 = with_flag(with_flag(baseline(), "--expert-tensor-parallel-size", "8"),
                          "--expert-model-parallel-size", "1");
  Recipe etp4 = with_flag(with_flag(baseline(), "--expert-tensor-parallel-size", "4"),
                          "--expert-model-parallel-size", "1");
  EXPECT_TRUE(has_refusal(check_config(shipped("glm-4.5"), baseline(), etp8), CheckRule::kDefect));
  EXPECT_FALSE(has_refusal(check_config(shipped("glm-4.5"), baseline(), etp4), CheckRule::kDefect));
  EXPECT_TRUE(
      has_refusal(check_config(shipped("mixtral-8x22b"), baseline(), etp8), CheckRule::kDefect));
  EXPECT_TRUE(
      has_refusal(check_config(shipped("mixtral-8x22b"), baseline(), etp4), CheckRule::kDefect));
}

}  // namespace
}  // namespace attune
