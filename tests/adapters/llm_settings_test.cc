// The [tuner] table of an LLM campaign: every key read and checked, errors that name the key,
// and the API key taken from the environment variable the file names.
#include <gtest/gtest.h>

#include <map>

#include "adapters/tuner/llm/settings.h"

namespace attune::llm {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

const char* const kFull = R"(
name = "llm"
dialect = "openai"
endpoint = "https://api.example.com/proxy"
model = "qwen3-coder"
api_key_env = "EXAMPLE_KEY"
max_tokens_per_turn = 2048
turns_per_candidate = 6
cost_ceiling_usd = 12.5
input_usd_per_mtok = 1
output_usd_per_mtok = 2.5
timeout_seconds = 30
connect_timeout_seconds = 3
retries = 2
retry_base_ms = 250
framework_source = "/opt/megatron"
learned_rules = "none"
)";

TEST(LlmSettings, ReadsEveryKeyAndTheKeyFromTheEnvironment) {
  auto s = parse_llm_settings(kFull, env_of({{"EXAMPLE_KEY", "sk-secret"}}));
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->dialect, Dialect::kOpenAi);
  EXPECT_EQ(s->endpoint, "https://api.example.com/proxy");
  EXPECT_EQ(s->model, "qwen3-coder");
  EXPECT_EQ(s->api_key, "sk-secret");
  EXPECT_EQ(s->max_tokens_per_turn, 2048u);
  EXPECT_EQ(s->turns_per_candidate, 6u);
  EXPECT_DOUBLE_EQ(s->cost_ceiling_usd, 12.5);
  EXPECT_DOUBLE_EQ(s->input_usd_per_mtok, 1.0);
  EXPECT_DOUBLE_EQ(s->output_usd_per_mtok, 2.5);
  EXPECT_EQ(s->timeout_seconds, 30u);
  EXPECT_EQ(s->connect_timeout_seconds, 3u);
  EXPECT_EQ(s->retries, 2u);
  EXPECT_EQ(s->retry_base_ms, 250u);
  EXPECT_EQ(s->framework_source, "/opt/megatron");
}

TEST(LlmSettings, ErrorsNameTheKeyAndWhatWasExpected) {
  const std::string base =
      "dialect = \"anthropic\"\nendpoint = \"http://127.0.0.1:9\"\n"
      "model = \"m\"\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base + "temperature = 0.2\n", "temperature: unknown key"},
      {"endpoint = \"http://127.0.0.1:9\"\nmodel = \"m\"\n", "dialect: required"},
      {base + "retries = -1\n", "retries: expected an integer from 0 to 20, found -1"},
      {base + "turns_per_candidate = \"many\"\n", "turns_per_candidate: expected an integer"},
      {base + "cost_ceiling_usd = 0\n", "cost_ceiling_usd: expected a number above 0"},
      {"dialect = \"gemini\"\nendpoint = \"http://127.0.0.1:9\"\nmodel = \"m\"\n",
       "dialect: expected \"anthropic\" or \"openai\""},
      {"dialect = \"openai\"\nendpoint = \"http://api.example.com\"\nmodel = \"m\"\n",
       "endpoint: expected an https:// URL"},
      {"dialect = \"openai\"\nendpoint = \"https://api.example.com\"\nmodel = \"m\"\n",
       "api_key_env: required"},
      {"dialect = \"openai\"\nendpoint = \"https://api.example.com\"\nmodel = \"m\"\n"
       "api_key_env = \"MISSING_KEY\"\n",
       "the environment variable MISSING_KEY is not set"},
      {"dialect = [\n", "[tuner]"},
  };
  for (const auto& [text, expected] : cases) {
    auto s = parse_llm_settings(text, env_of({}));
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.error().find(expected), std::string::npos) << s.error();
    EXPECT_EQ(s.error().find('\n'), std::string::npos) << s.error();
  }
}

TEST(LlmSettings, ALoopbackEndpointMayHaveNoKey) {
  for (const char* endpoint :
       {"http://127.0.0.1:8000", "http://localhost:8000/v", "http://localhost", "http://[::1]:1"}) {
    auto s = parse_llm_settings(std::string("dialect = \"openai\"\nendpoint = \"") + endpoint +
                                    "\"\nmodel = \"m\"\napi_key_env = \"UNSET\"\n",
                                env_of({}));
    ASSERT_TRUE(s.ok()) << endpoint << ": " << s.error();
    EXPECT_TRUE(s->api_key.empty());
  }
  EXPECT_FALSE(is_loopback_endpoint("http://localhost.example.com"));
  EXPECT_FALSE(is_loopback_endpoint("https://127.0.0.1.example.com"));
}

}  // namespace
}  // namespace attune::llm
