#include "gate/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "events/sha256.h"

namespace attune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(ATTUNE_SOURCE_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Policy parsed(std::string_view text) {
  Result<Policy> policy = parse_policy(text, "p.toml");
  EXPECT_TRUE(policy.ok()) << policy.error();
  return policy.ok() ? policy.value() : Policy{};
}

std::string error_of(std::string_view text) {
  Result<Policy> policy = parse_policy(text, "p.toml");
  EXPECT_FALSE(policy.ok());
  if (policy.ok()) return "";
  EXPECT_THAT(policy.error(), Not(HasSubstr("\n"))) << "errors are one line";
  return policy.error();
}

constexpr std::string_view kFullPolicy = R"(name = "test-moe"
model = "test-moe"
description = "every kind of row"

[[class_override]]
setting = "--launcher-rows"
class = "structural"
reason = "a launcher's own flag"

[[class_override]]
setting = "--use-precision-aware-optimizer"
class = "numeric"
reason = "optimizer path"

[[frozen]]
setting = "--micro-batch-size"
value = 1
reason = "load-balancing loss per microbatch"

[[frozen]]
setting = "--lr"
value = "1e-5"
reason = "constant learning rate"

[[frozen]]
setting = "--tp-comm-overlap"
value = "absent"
reason = "no component test"

[[frozen]]
setting = "--fp8-recipe"
reason = "published recipe"

[[frozen]]
setting = "NVTE_FUSED_ATTN"
value = "1"
reason = "attention backend"

[[swap]]
setting = "--moe-token-dispatcher-type"
values = ["alltoall", "flex", "alltoall"]
component_test = "passed"
note = "dispatcher"

[[swap]]
setting = "--optimizer-cpu-offload"
values = [true, false]
component_test = "untested"

[[swap]]
setting = "--no-rl-use-sequence-packing"
values = [true]
component_test = "failed"

[[env]]
name = "NCCL_BUFFSIZE"
class = "structural"

[[env]]
name = "NCCL_*"
class = "other"
note = "every other NCCL variable"

[[defect]]
when = { "--expert-tensor-parallel-size" = 8, "--expert-model-parallel-size" = "1", "--sequence-parallel" = true }
reason = "a defect"

[[defect]]
when = { "--expert-tensor-parallel-size" = "absent", "NCCL_ALGO" = "Tree" }
reason = "another defect"
)";

TEST(PolicyParse, ReadsEveryKindOfRow) {
  const Policy policy = parsed(kFullPolicy);
  EXPECT_EQ(policy.name, "test-moe");
  EXPECT_EQ(policy.model, "test-moe");
  EXPECT_EQ(policy.description, "every kind of row");
  EXPECT_EQ(policy.source, "p.toml");
  EXPECT_EQ(policy.hash, to_hex(sha256(kFullPolicy)));

  ASSERT_EQ(policy.frozen.size(), 5u);
  EXPECT_EQ(policy.frozen[0].setting, "--micro-batch-size");
  EXPECT_EQ(policy.frozen[0].pin, FrozenPin::kValue);
  EXPECT_EQ(policy.frozen[0].value, "1");
  EXPECT_EQ(policy.frozen[0].reason, "load-balancing loss per microbatch");
  EXPECT_EQ(policy.frozen[0].line, 15);
  EXPECT_EQ(policy.frozen[1].value, "1e-05") << "values are normalised as parse_recipe does";
  EXPECT_EQ(policy.frozen[2].pin, FrozenPin::kAbsent);
  EXPECT_EQ(policy.frozen[3].pin, FrozenPin::kBaseline);
  EXPECT_EQ(policy.frozen[4].kind, ChangeKind::kEnv);
  EXPECT_EQ(policy.frozen[4].setting, "NVTE_FUSED_ATTN");

  ASSERT_EQ(policy.swaps.size(), 3u);
  EXPECT_THAT(policy.swaps[0].values, ElementsAre("alltoall", "flex")) << "duplicates dropped";
  EXPECT_EQ(policy.swaps[0].component_test, ComponentTest::kPassed);
  EXPECT_EQ(policy.swaps[0].note, "dispatcher");
  EXPECT_THAT(policy.swaps[1].values, ElementsAre("true", "false"));
  EXPECT_EQ(policy.swaps[1].component_test, ComponentTest::kUntested);
  // Named by its --no-x spelling: the setting is the pair, and "true" of --no-x is "false".
  EXPECT_EQ(policy.swaps[2].setting, "--rl-use-sequence-packing");
  EXPECT_THAT(policy.swaps[2].values, ElementsAre("false"));
  EXPECT_EQ(policy.swaps[2].component_test, ComponentTest::kFailed);

  ASSERT_EQ(policy.env.size(), 2u);
  EXPECT_EQ(policy.env[1].objective_class, ObjectiveClass::kOther);

  ASSERT_EQ(policy.defects.size(), 2u);
  ASSERT_EQ(policy.defects[0].conditions.size(), 3u);
  EXPECT_EQ(policy.defects[0].conditions[0].setting, "--expert-model-parallel-size");
  EXPECT_EQ(policy.defects[0].conditions[0].value, "1");
  EXPECT_EQ(policy.defects[0].conditions[1].setting, "--expert-tensor-parallel-size");
  EXPECT_EQ(policy.defects[0].conditions[1].value, "8");
  EXPECT_EQ(policy.defects[0].conditions[2].setting, "--sequence-parallel");
  EXPECT_EQ(policy.defects[0].conditions[2].value, "true");
  ASSERT_EQ(policy.defects[1].conditions.size(), 2u);
  EXPECT_EQ(policy.defects[1].conditions[0].setting, "--expert-tensor-parallel-size");
  EXPECT_EQ(policy.defects[1].conditions[0].value, std::nullopt);
  EXPECT_EQ(policy.defects[1].conditions[1].kind, ChangeKind::kEnv);

  ASSERT_EQ(policy.class_overrides.size(), 2u);
  EXPECT_EQ(policy.class_overrides[0].setting, "--launcher-rows");
  EXPECT_EQ(policy.class_overrides[1].objective_class, ObjectiveClass::kNumeric);
}

TEST(PolicyParse, LookupsFindRowsByCanonicalName) {
  const Policy policy = parsed(kFullPolicy);
  EXPECT_NE(policy.find_frozen(ChangeKind::kFlag, "--micro-batch-size"), nullptr);
  EXPECT_EQ(policy.find_frozen(ChangeKind::kEnv, "--micro-batch-size"), nullptr);
  EXPECT_NE(policy.find_swap(ChangeKind::kFlag, "--rl-use-sequence-packing"), nullptr);
  EXPECT_NE(policy.find_class_override("--use-precision-aware-optimizer"), nullptr);
  ASSERT_NE(policy.find_env("NCCL_BUFFSIZE"), nullptr);
  EXPECT_EQ(policy.find_env("NCCL_BUFFSIZE")->objective_class, ObjectiveClass::kStructural)
      << "an exact row beats a prefix";
  ASSERT_NE(policy.find_env("NCCL_ALGO"), nullptr);
  EXPECT_EQ(policy.find_env("NCCL_ALGO")->name, "NCCL_*");
  EXPECT_EQ(policy.find_env("CUDA_DEVICE_MAX_CONNECTIONS"), nullptr);
}

TEST(PolicyParse, AliasSpellingsAreCanonical) {
  const Policy policy = parsed(R"(name = "a"
model = "a"
[[frozen]]
setting = "--disable-fp8-wgrad"
value = true
reason = "r"
[[frozen]]
setting = "--persistent-save-interval"
value = "+0100"
reason = "r"
)");
  ASSERT_EQ(policy.frozen.size(), 2u);
  EXPECT_EQ(policy.frozen[0].setting, "--no-fp8-wgrad");
  EXPECT_EQ(policy.frozen[0].value, "true");
  EXPECT_EQ(policy.frozen[1].setting, "--save-interval");
  EXPECT_EQ(policy.frozen[1].value, "100");
}

TEST(PolicyParse, TheHashIsOfTheFileBytes) {
  const std::string a = "name = \"x\"\nmodel = \"x\"\n";
  const std::string b = "name = \"x\"\nmodel = \"x\"\n# a comment changes the hash\n";
  EXPECT_EQ(parsed(a).hash, to_hex(sha256(a)));
  EXPECT_NE(parsed(a).hash, parsed(b).hash);
}

TEST(PolicyParse, MalformedTomlIsAnErrorNamingFileAndLine) {
  EXPECT_THAT(error_of("name = \"x\"\nmodel = \n"),
              testing::StartsWith("p.toml:2: invalid TOML: "));
}

TEST(PolicyParse, ErrorsNameFileLineAndKey) {
  EXPECT_EQ(error_of("model = \"x\"\n"), "p.toml:1: name: missing, expected a string");
  EXPECT_EQ(error_of("name = 3\nmodel = \"x\"\n"),
            "p.toml:1: name: expected a string, found an integer");
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\ncolour = \"red\"\n"),
            "p.toml:3: colour: unknown key (expected one of class_override, defect, description, "
            "env, frozen, model, name, swap)");
  EXPECT_EQ(
      error_of("name = \"x\"\nmodel = \"x\"\n[[frozen]]\nsetting = \"--lr\"\nvalue = \"1\"\n"),
      "p.toml:3: [[frozen]] reason: missing, expected a string");
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\n[[frozen]]\nsetting = \"--lr\"\nreason = \"r\"\n"
                     "colour = 1\n"),
            "p.toml:6: [[frozen]] colour: unknown key (expected one of reason, setting, value)");
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\n[[frozen]]\nsetting = \"--micro-batch-size\"\n"
                     "value = \"two\"\nreason = \"r\"\n"),
            "p.toml:5: [[frozen]] value: --micro-batch-size expects an integer, found 'two'");
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\n[[frozen]]\nsetting = \"--sequence-parallel\"\n"
                     "value = \"on\"\nreason = \"r\"\n"),
            "p.toml:5: [[frozen]] value: --sequence-parallel is a switch: expected true, false or "
            "\"absent\", found 'on'");
  EXPECT_EQ(
      error_of("name = \"x\"\nmodel = \"x\"\n[[env]]\nname = \"NCCL ALGO\"\nclass = \"other\"\n"),
      "p.toml:4: [[env]] name: expected an environment variable name or a prefix ending in "
      "'*', found 'NCCL ALGO'");
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\n[[env]]\nname = \"A\"\nclass = \"safe\"\n"),
            "p.toml:5: [[env]] class: expected structural, same-math, numeric or other, found "
            "'safe'");
  EXPECT_EQ(
      error_of("name = \"x\"\nmodel = \"x\"\n[[swap]]\nsetting = \"--moe-token-dispatcher-type\"\n"
               "values = [\"flex\"]\ncomponent_test = \"ok\"\n"),
      "p.toml:6: [[swap]] component_test: expected passed, untested or failed, found 'ok'");
  EXPECT_EQ(
      error_of("name = \"x\"\nmodel = \"x\"\n[[swap]]\nsetting = \"--moe-token-dispatcher-type\"\n"
               "values = []\ncomponent_test = \"passed\"\n"),
      "p.toml:5: [[swap]] values: expected a non-empty array of values, found an empty array");
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\n[[defect]]\nreason = \"r\"\n"),
            "p.toml:3: [[defect]] when: missing, expected a table of setting = value");
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\nfrozen = 3\n"),
            "p.toml:3: frozen: expected an array of tables ([[frozen]]), found an integer");
}

TEST(PolicyParse, AFlagTheCatalogLacksNeedsAClassOverride) {
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\n[[frozen]]\nsetting = \"--micro-batchsize\"\n"
                     "value = 1\nreason = \"r\"\n"),
            "p.toml:4: [[frozen]] setting: '--micro-batchsize' is not a Megatron-LM flag of the "
            "catalog; give a flag the catalog lacks a [[class_override]] row first");
  EXPECT_EQ(
      error_of("name = \"x\"\nmodel = \"x\"\n[[defect]]\n"
               "when = { \"--expert-tensor-parallel\" = 8 }\nreason = \"r\"\n"),
      "p.toml:4: [[defect]] when: '--expert-tensor-parallel' is not a Megatron-LM flag of the "
      "catalog; give a flag the catalog lacks a [[class_override]] row first");
  const Policy policy = parsed(
      "name = \"x\"\nmodel = \"x\"\n[[frozen]]\nsetting = \"--rollout-rows\"\nvalue = 4\n"
      "reason = \"r\"\n[[class_override]]\nsetting = \"--rollout-rows\"\nclass = \"numeric\"\n"
      "reason = \"slime's flag\"\n");
  ASSERT_EQ(policy.frozen.size(), 1u);
  EXPECT_EQ(policy.frozen[0].value, "4") << "a flag the catalog lacks keeps its value as written";
}

TEST(PolicyParse, DuplicateRowsAreErrors) {
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\n[[frozen]]\nsetting = \"--save-interval\"\n"
                     "reason = \"r\"\n[[frozen]]\nsetting = \"--persistent-save-interval\"\n"
                     "reason = \"r\"\n"),
            "p.toml:6: [[frozen]] setting: duplicate row for --save-interval");
  EXPECT_EQ(error_of("name = \"x\"\nmodel = \"x\"\n[[defect]]\n"
                     "when = { \"--save-interval\" = 1, \"--persistent-save-interval\" = 2 }\n"
                     "reason = \"r\"\n"),
            "p.toml:4: [[defect]] when: two conditions on --save-interval (another spelling?)");
}

TEST(DefaultPolicy, IsTheBaseClassificationOnly) {
  const Policy policy = default_policy();
  EXPECT_EQ(policy.name, "default");
  EXPECT_EQ(policy.hash, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
      << "the SHA-256 of the empty file a campaign without a policy file records";
  EXPECT_TRUE(policy.frozen.empty());
  EXPECT_TRUE(policy.swaps.empty());
  EXPECT_TRUE(policy.env.empty());
  EXPECT_TRUE(policy.defects.empty());
  EXPECT_TRUE(policy.class_overrides.empty());
}

class ShippedPolicy : public testing::TestWithParam<std::string> {};

TEST_P(ShippedPolicy, ParsesWithItsFileNameAsName) {
  const std::string path = "gate/policies/" + GetParam() + ".toml";
  const std::string text = read_source_file(path);
  Result<Policy> policy = parse_policy(text, path);
  ASSERT_TRUE(policy.ok()) << policy.error();
  EXPECT_EQ(policy->name, GetParam());
  EXPECT_EQ(policy->hash, to_hex(sha256(text)));
  EXPECT_NE(policy->find_env("CUDA_DEVICE_MAX_CONNECTIONS"), nullptr);
  EXPECT_EQ(policy->find_env("NCCL_ALGO"), nullptr) << "the reduction algorithm stays numeric";
  for (const EnvClass& env : policy->env) {
    EXPECT_NE(env.objective_class, ObjectiveClass::kNumeric) << env.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, ShippedPolicy,
                         testing::Values("default", "glm-4.5", "mixtral-8x22b", "llama3.1-405b",
                                         "minimax-m2"));

TEST(ShippedPolicies, DefaultFileAddsOnlyTheEnvironmentAllowlist) {
  Result<Policy> policy =
      parse_policy(read_source_file("gate/policies/default.toml"), "default.toml");
  ASSERT_TRUE(policy.ok()) << policy.error();
  EXPECT_TRUE(policy->frozen.empty());
  EXPECT_TRUE(policy->swaps.empty());
  EXPECT_TRUE(policy->defects.empty());
  EXPECT_TRUE(policy->class_overrides.empty());
}

TEST(ShippedPolicies, HoldThePapersFrozenSettingsAndDefects) {
  auto load = [](const std::string& name) {
    Result<Policy> policy =
        parse_policy(read_source_file("gate/policies/" + name + ".toml"), name + ".toml");
    EXPECT_TRUE(policy.ok()) << policy.error();
    return policy.ok() ? policy.value() : Policy{};
  };
  const Policy glm = load("glm-4.5");
  ASSERT_NE(glm.find_frozen(ChangeKind::kFlag, "--micro-batch-size"), nullptr);
  EXPECT_EQ(glm.find_frozen(ChangeKind::kFlag, "--micro-batch-size")->value, "1");
  ASSERT_NE(glm.find_frozen(ChangeKind::kFlag, "--tp-comm-overlap"), nullptr);
  EXPECT_EQ(glm.find_frozen(ChangeKind::kFlag, "--tp-comm-overlap")->pin, FrozenPin::kAbsent);
  EXPECT_EQ(glm.defects.size(), 2u);

  const Policy mixtral = load("mixtral-8x22b");
  EXPECT_NE(mixtral.find_frozen(ChangeKind::kFlag, "--micro-batch-size"), nullptr);
  EXPECT_EQ(mixtral.defects.size(), 4u);

  const Policy llama = load("llama3.1-405b");
  ASSERT_NE(llama.find_frozen(ChangeKind::kFlag, "--tp-comm-overlap"), nullptr);
  EXPECT_EQ(llama.find_frozen(ChangeKind::kFlag, "--tp-comm-overlap")->value, "true");
  ASSERT_NE(llama.find_frozen(ChangeKind::kFlag, "--fp8-format"), nullptr);
  EXPECT_EQ(llama.find_frozen(ChangeKind::kFlag, "--fp8-format")->value, "hybrid");

  const Policy minimax = load("minimax-m2");
  ASSERT_NE(minimax.find_frozen(ChangeKind::kFlag, "--moe-router-enable-expert-bias"), nullptr);
  ASSERT_NE(minimax.find_frozen(ChangeKind::kFlag, "--lr-decay-style"), nullptr);
  EXPECT_EQ(minimax.find_frozen(ChangeKind::kFlag, "--lr-decay-style")->value, "constant");
  const SameMathSwap* offload = minimax.find_swap(ChangeKind::kFlag, "--optimizer-cpu-offload");
  ASSERT_NE(offload, nullptr);
  EXPECT_EQ(offload->component_test, ComponentTest::kPassed);

  for (const Policy* policy : {&glm, &mixtral, &llama, &minimax}) {
    const ClassOverride* pao = policy->find_class_override("--use-precision-aware-optimizer");
    ASSERT_NE(pao, nullptr) << policy->name;
    EXPECT_EQ(pao->objective_class, ObjectiveClass::kNumeric) << policy->name;
    EXPECT_NE(policy->find_frozen(ChangeKind::kFlag, "--use-precision-aware-optimizer"), nullptr)
        << policy->name;
  }
}

}  // namespace
}  // namespace attune
