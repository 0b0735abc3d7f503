// Model and hardware presets: the contract names load, the architectures match perf_model.md §1,
// and a user's TOML file goes through the same parser with one-line errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "adapters/model/presets.h"

namespace attune::sim {
namespace {

TEST(SimPresets, ContractNamesLoad) {
  for (const char* name :
       {"llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "mixtral-8x7b", "mixtral-8x22b", "glm-4.5",
        "minimax-m2", "deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-20b",
        "gpt-oss-120b", "kimi-k2", "nemotron4-15b", "nemotron4-340b", "gpt3-175b"}) {
    Result<ModelSpec> model = load_model(name);
    ASSERT_TRUE(model.ok()) << model.error();
    EXPECT_EQ(model->name, name);
  }
  for (const char* name : {"a100-80g", "h100", "h200", "b200", "gb200"}) {
    Result<HardwareSpec> hw = load_hardware(name);
    ASSERT_TRUE(hw.ok()) << hw.error();
    EXPECT_EQ(hw->name, name);
  }
  EXPECT_EQ(model_preset_names().size(), 16u);
  EXPECT_EQ(hardware_preset_names().size(), 7u);
}

TEST(SimPresets, HardwarePeaksFromTheReference) {
  const HardwareSpec h100 = load_hardware("h100").value();
  EXPECT_EQ(h100.bf16_dense_tflops, 989);
  EXPECT_EQ(h100.fp8_dense_tflops, 1979);
  EXPECT_EQ(h100.nvlink_domain_gpus, 8);
  const HardwareSpec b200 = load_hardware("b200").value();
  EXPECT_EQ(b200.bf16_dense_tflops, 2250);
  EXPECT_EQ(b200.fp8_dense_tflops, 4500);
  EXPECT_EQ(b200.hbm_bandwidth_gb_per_s, 8000);
  EXPECT_EQ(load_hardware("gb200")->bf16_dense_tflops, 2500);
}

// Total and active parameters (billions) of perf_model.md §1's derived table.
TEST(SimPresets, ParameterCountsMatchTheReference) {
  struct Expected {
    const char* model;
    double total_b;
    double active_b;
  };
  const Expected expected[] = {
      {"llama3.1-405b", 405.9, 405.9},  {"llama3.1-70b", 70.6, 70.6}, {"llama3.1-8b", 8.0, 8.0},
      {"mixtral-8x22b", 140.6, 39.2},   {"mixtral-8x7b", 46.7, 12.9}, {"glm-4.5", 352.8, 33.6},
      {"minimax-m2", 228.7, 11.0},      {"deepseek-v3", 671.0, 37.6}, {"qwen3-30b-a3b", 30.5, 3.4},
      {"qwen3-235b-a22b", 235.1, 22.2}, {"gpt-oss-120b", 116.8, 5.7}, {"gpt-oss-20b", 20.9, 4.2},
  };
  for (const Expected& e : expected) {
    const ModelSpec model = load_model(e.model).value();
    EXPECT_NEAR(total_params(model, 1, 0) / 1e9, e.total_b, 0.01 * e.total_b + 0.1) << e.model;
    EXPECT_NEAR(active_params(model, 1, 0) / 1e9, e.active_b, 0.02 * e.active_b + 0.1) << e.model;
  }
}

// Kimi-K2 against Moonshot AI's model card (moonshotai/Kimi-K2, "Model Summary"), which gives
// 1T total and 32B activated parameters, rounded: the preset's counts round to the same.
TEST(SimPresets, KimiK2MatchesItsModelCard) {
  const ModelSpec model = load_model("kimi-k2").value();
  const double total_b = total_params(model, 1, 0) / 1e9;
  const double active_b = active_params(model, 1, 0) / 1e9;
  EXPECT_GE(total_b, 950.0);
  EXPECT_LT(total_b, 1050.0);
  EXPECT_GE(active_b, 31.5);
  EXPECT_LT(active_b, 33.5);
}

// NVIDIA's Nemotron-4 340B report counts 340B parameters: 96 layers of width 18,432 with a
// squared-ReLU MLP of 73,728 and a 256,000-token vocabulary in two untied tables. The 15B model
// has the same shape at 32 layers of 6,144.
TEST(SimPresets, Nemotron4MatchesItsReport) {
  const ModelSpec model = load_model("nemotron4-340b").value();
  EXPECT_FALSE(model.gated_linear_unit);
  EXPECT_EQ(model.activation, "squared-relu");
  const double total_b = total_params(model, 1, 0) / 1e9;
  EXPECT_GE(total_b, 335.0);
  EXPECT_LT(total_b, 345.0);
  // Nemotron-4 15B: 12.5B parameters outside the embeddings and 3.2B in them (its report).
  const ModelSpec small = load_model("nemotron4-15b").value();
  const double small_b = total_params(small, 1, 0) / 1e9;
  EXPECT_GE(small_b, 15.2);
  EXPECT_LT(small_b, 16.2);
}

// GPT-3 175B: 96 layers of width 12,288 with biases and tied embeddings hold 174.6B parameters,
// plus the GPT-2 vocabulary's table (Brown et al., 2020, Table 2.1, say 175.0B).
TEST(SimPresets, Gpt3MatchesItsPaper) {
  const ModelSpec model = load_model("gpt3-175b").value();
  EXPECT_FALSE(model.untie_embeddings_and_output_weights);
  EXPECT_TRUE(model.add_bias_linear);
  const double total_b = total_params(model, 1, 0) / 1e9;
  EXPECT_GE(total_b, 174.0);
  EXPECT_LT(total_b, 176.0);
}

TEST(SimPresets, UnknownPresetNamesThePresets) {
  Result<ModelSpec> model = load_model("llama4");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().find("unknown model 'llama4'"), std::string::npos) << model.error();
  EXPECT_NE(model.error().find("glm-4.5"), std::string::npos);
}

class CustomModelFile : public ::testing::Test {
 protected:
  // One folder per process and test: CTest runs this binary's tests in parallel.
  std::string write(const std::string& text) {
    dir_ = std::filesystem::temp_directory_path() /
           ("attune-sim-presets-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    const std::string path = (dir_ / "my-model.toml").string();
    std::ofstream(path) << text;
    return path;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::filesystem::path dir_;
};

constexpr const char* kCustomModel = R"(name = "tiny-moe"
num_layers = 4
hidden_size = 1024
ffn_hidden_size = 4096
gated_linear_unit = false
vocab_size = 32000

[attention]
num_attention_heads = 16

[moe]
num_experts = 8
router_topk = 2
ffn_hidden_size = 512
first_dense_layers = 1
)";

TEST_F(CustomModelFile, LoadsThroughTheSameParser) {
  Result<ModelSpec> model = load_model(write(kCustomModel));
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_EQ(model->name, "tiny-moe");
  EXPECT_EQ(model->num_query_groups, 16);  // multi-head attention by default
  EXPECT_EQ(model->kv_channels, 64);       // hidden / heads
  EXPECT_FALSE(is_moe_layer(model.value(), 0));
  EXPECT_TRUE(is_moe_layer(model.value(), 1));
}

TEST_F(CustomModelFile, BadKeyIsOneLineNamingFileLineAndKey) {
  std::string text = kCustomModel;
  text.replace(text.find("router_topk"), 11, "router_top_k");
  const std::string path = write(text);
  Result<ModelSpec> model = load_model(path);
  ASSERT_FALSE(model.ok());
  const std::string& error = model.error();
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_EQ(error, path + ":13: key 'moe.router_top_k' is unknown");
}

TEST_F(CustomModelFile, UnknownKeyNamesItsLine) {
  std::string text = kCustomModel;
  text += "moe_capacity = 2\n";  // inside [moe]: line 16
  const std::string path = write(text);
  Result<ModelSpec> model = load_model(path);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error(), path + ":16: key 'moe.moe_capacity' is unknown");
}

TEST_F(CustomModelFile, WrongTypeNamesLineAndKey) {
  std::string text = kCustomModel;
  text.replace(text.find("hidden_size = 1024"), 18, "hidden_size = \"1k\"");
  const std::string path = write(text);
  Result<ModelSpec> model = load_model(path);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error(), path + ":3: key 'hidden_size' expects an integer >= 1, found a string");
}

// An activation the model does not know, or one given to a gated MLP, is refused on its line.
TEST_F(CustomModelFile, UnknownOrGatedActivationNamesItsLine) {
  std::string text = kCustomModel;
  text.insert(text.find("vocab_size"), "activation = \"relu\"\n");  // line 6
  std::string path = write(text);
  Result<ModelSpec> model = load_model(path);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error(),
            path + ":6: key 'activation' expects \"gelu\" or \"squared-relu\", found \"relu\"");

  text = kCustomModel;
  text.replace(text.find("gated_linear_unit = false"), 25, "gated_linear_unit = true");
  text.insert(text.find("vocab_size"), "activation = \"squared-relu\"\n");
  path = write(text);
  model = load_model(path);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().find(":6: key 'activation' applies to an MLP that is not gated"),
            std::string::npos)
      << model.error();
}

// Attention sinks take one of Megatron's --softmax-type values, a clamp of the activation only a
// MoE model's gated experts (the clamp of a gated MLP Megatron allows with MoE only), and the
// position embedding one of Megatron's choices; each is refused on its line.
TEST_F(CustomModelFile, SoftmaxTypeAndActivationClampAreCheckedOnTheirLine) {
  // The custom model with `line` inserted before `before`: the one-line error names its line.
  const auto refused = [&](const char* before, const char* line, const std::string& error) {
    std::string text = kCustomModel;
    text.insert(text.find(before), line);
    const std::string path = write(text);
    Result<ModelSpec> model = load_model(path);
    ASSERT_FALSE(model.ok()) << line;
    EXPECT_EQ(model.error(), path + error);
  };
  refused("[moe]", "softmax_type = \"sink\"\n",  // inside [attention]: line 11
          ":11: key 'attention.softmax_type' expects one of Megatron's vanilla, off-by-one, "
          "learnable (--softmax-type); found \"sink\"");
  refused("vocab_size", "activation_func_clamp_value = 7.0\n",  // the experts are not gated
          ":6: key 'activation_func_clamp_value' applies to the gated experts of a MoE model only");
  refused("vocab_size", "position_embedding_type = \"alibi\"\n",  // not one of Megatron's
          ":6: key 'position_embedding_type' expects one of Megatron's learned_absolute, rope, "
          "yarn, mrope, relative, none (--position-embedding-type); found \"alibi\"");

  std::string text = kCustomModel;
  text.replace(text.find("gated_linear_unit = false"), 25, "gated_linear_unit = true");
  text.insert(text.find("vocab_size"), "activation_func_clamp_value = 7.0\n");
  text.insert(text.find("[moe]"), "softmax_type = \"learnable\"\n");
  Result<ModelSpec> model = load_model(write(text));
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_EQ(model->activation_func_clamp_value, 7.0);
  EXPECT_EQ(model->softmax, SoftmaxType::kLearnable);
  EXPECT_EQ(model->position_embedding_type, "rope");  // Megatron's RoPE unless the file says so
}

// GPT-OSS as Megatron-Bridge's provider builds it: attention sinks, YaRN RoPE, and the experts'
// activation clamped at 7 (gpt_oss_bridge.py).
TEST(SimPresets, GptOssCarriesSinksYarnAndItsClamp) {
  for (const char* name : {"gpt-oss-120b", "gpt-oss-20b"}) {
    const ModelSpec model = load_model(name).value();
    EXPECT_EQ(model.softmax, SoftmaxType::kLearnable) << name;
    EXPECT_EQ(model.position_embedding_type, "yarn") << name;
    EXPECT_EQ(model.activation_func_clamp_value, 7.0) << name;
  }
  const ModelSpec llama = load_model("llama3.1-8b").value();
  EXPECT_EQ(llama.softmax, SoftmaxType::kVanilla);
  EXPECT_EQ(llama.position_embedding_type, "rope");
  EXPECT_EQ(llama.activation_func_clamp_value, 0.0);
}

TEST(SimPresets, HardwareFileErrorsAreOneLine) {
  Result<HardwareSpec> hw =
      parse_hardware_toml("name = \"x\"\ncompute_capability = 9.0\n", "x.toml");
  ASSERT_FALSE(hw.ok());
  EXPECT_EQ(hw.error(), "x.toml: key 'compute.bf16_dense_tflops' is required and missing");
}

TEST(SimPresets, RecipePresetsParse) {
  for (const std::string& name : recipe_preset_names()) {
    Result<Recipe> recipe = load_recipe_preset(name);
    EXPECT_TRUE(recipe.ok()) << name << ": " << recipe.error();
  }
  EXPECT_GE(recipe_preset_names().size(), 4u);
}

}  // namespace
}  // namespace attune::sim
