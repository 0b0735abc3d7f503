#include "adapters/tuner/llm/settings.h"

#include <toml++/toml.h>

#include <cstdlib>
#include <set>

#include "gate/toml_names.h"

namespace attune::llm {
namespace {

constexpr std::uint32_t kMaxTokensPerTurnMax = 1'000'000;
constexpr std::uint32_t kTurnsPerCandidateMax = 200;
constexpr double kCostCeilingUsdMax = 1e6;
constexpr double kUsdPerMtokMax = 1e4;
constexpr std::uint32_t kTimeoutSecondsMax = 3600;
constexpr std::uint32_t kRetriesMax = 20;
constexpr std::uint32_t kRetryBaseMsMax = 60'000;

const char* const kWhere = "[tuner]";

class Reader {
 public:
  explicit Reader(const toml::table& table) : table_(table) {}

  Status text(const char* key, std::string& out, bool required) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) {
      if (required) return make_error(std::string(kWhere) + " " + key + ": required, a string");
      return Ok{};
    }
    const auto value = node->value<std::string>();
    if (!node->is_string() || !value || value->empty()) {
      return make_error(std::string(kWhere) + " " + key + ": expected a non-empty string, found " +
                        toml_type_name(*node));
    }
    out = *value;
    return Ok{};
  }

  Status count(const char* key, std::uint32_t& out, std::uint32_t min, std::uint32_t max) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) return Ok{};
    const auto value = node->value<std::int64_t>();
    if (!node->is_integer() || !value || *value < min || *value > max) {
      return make_error(std::string(kWhere) + " " + key + ": expected an integer from " +
                        std::to_string(min) + " to " + std::to_string(max) + ", found " +
                        describe(*node));
    }
    out = static_cast<std::uint32_t>(*value);
    return Ok{};
  }

  Status number(const char* key, double& out, double min, double max, bool min_open) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) return Ok{};
    const auto value = node->value<double>();
    const bool in_range = value && (min_open ? *value > min : *value >= min) && *value <= max;
    if (!(node->is_floating_point() || node->is_integer()) || !in_range) {
      std::string range =
          std::string(min_open ? "above " : "from ") + trimmed(min) + " to " + trimmed(max);
      return make_error(std::string(kWhere) + " " + key + ": expected a number " + range +
                        ", found " + describe(*node));
    }
    out = *value;
    return Ok{};
  }

 private:
  static std::string trimmed(double value) {
    std::string text = std::to_string(value);
    while (!text.empty() && text.back() == '0') text.pop_back();
    if (!text.empty() && text.back() == '.') text.pop_back();
    return text;
  }
  static std::string describe(const toml::node& node) {
    if (const auto i = node.value_exact<std::int64_t>()) return std::to_string(*i);
    if (const auto d = node.value_exact<double>()) return trimmed(*d);
    return toml_type_name(node);
  }

  const toml::table& table_;
};

}  // namespace

const char* to_string(Dialect dialect) {
  switch (dialect) {
    case Dialect::kAnthropic:
      return "anthropic";
    case Dialect::kOpenAi:
      return "openai";
  }
  return "?";
}

std::optional<std::string> process_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

bool is_loopback_endpoint(std::string_view endpoint) {
  for (std::string_view prefix : {"http://127.0.0.1", "http://localhost", "http://[::1]"}) {
    if (endpoint.substr(0, prefix.size()) != prefix) continue;
    if (endpoint.size() == prefix.size()) return true;
    const char next = endpoint[prefix.size()];
    if (next == ':' || next == '/') return true;
  }
  return false;
}

namespace {

// Every key under [tuner] is one the LLM tuner reads.
Status check_known_keys(const toml::table& table) {
  static const std::set<std::string> kKeys = {"name",
                                              "learned_rules",
                                              "simulated_rules",
                                              "dialect",
                                              "endpoint",
                                              "model",
                                              "api_key_env",
                                              "max_tokens_per_turn",
                                              "turns_per_candidate",
                                              "cost_ceiling_usd",
                                              "input_usd_per_mtok",
                                              "output_usd_per_mtok",
                                              "timeout_seconds",
                                              "connect_timeout_seconds",
                                              "retries",
                                              "retry_base_ms",
                                              "framework_source"};
  for (const auto& [key, node] : table) {
    if (!kKeys.contains(std::string(key.str()))) {
      return make_error(std::string(kWhere) + " " + std::string(key.str()) +
                        ": unknown key for tuner \"llm\"; expected dialect, endpoint, model, "
                        "api_key_env, max_tokens_per_turn, turns_per_candidate, cost_ceiling_usd, "
                        "input_usd_per_mtok, output_usd_per_mtok, timeout_seconds, "
                        "connect_timeout_seconds, retries, retry_base_ms or framework_source");
    }
  }
  return Ok{};
}

// The endpoint is https (or plain http on loopback), and the API key is read from the variable
// api_key_env names, which only a loopback endpoint may leave out.
Status check_endpoint_and_key(const EnvLookup& env, LlmSettings& s) {
  const bool https = s.endpoint.rfind("https://", 0) == 0;
  const bool loopback = is_loopback_endpoint(s.endpoint);
  if (!https && !loopback) {
    return make_error(std::string(kWhere) + " endpoint: expected an https:// URL (http:// only " +
                      "for 127.0.0.1 or localhost), found \"" + s.endpoint + "\"");
  }
  if (s.api_key_env.empty()) {
    if (!loopback) {
      return make_error(std::string(kWhere) +
                        " api_key_env: required, the name of the environment variable that holds "
                        "the API key");
    }
    return Ok{};
  }
  const std::optional<std::string> key = env(s.api_key_env);
  if ((!key || key->empty()) && !loopback) {
    return make_error(std::string(kWhere) + " api_key_env: the environment variable " +
                      s.api_key_env + " is not set; export it with the API key");
  }
  if (key) s.api_key = *key;
  return Ok{};
}

}  // namespace

Result<LlmSettings> parse_llm_settings(std::string_view toml_text, const EnvLookup& env) {
  toml::table table;
  try {
    table = toml::parse(toml_text, std::string_view("[tuner]"));
  } catch (const toml::parse_error& e) {
    return make_error(std::string(kWhere) + ": " + std::string(e.description()));
  }
  if (Status known = check_known_keys(table); !known.ok()) return make_error(known.error());
  const Reader r(table);
  LlmSettings s;
  std::string dialect;
  if (auto st = r.text("dialect", dialect, true); !st.ok()) return make_error(st.error());
  if (dialect == "anthropic") {
    s.dialect = Dialect::kAnthropic;
  } else if (dialect == "openai") {
    s.dialect = Dialect::kOpenAi;
  } else {
    return make_error(std::string(kWhere) +
                      " dialect: expected \"anthropic\" or \"openai\", found \"" + dialect + "\"");
  }
  for (auto st :
       {r.text("endpoint", s.endpoint, true), r.text("model", s.model, true),
        r.text("api_key_env", s.api_key_env, false),
        r.text("framework_source", s.framework_source, false),
        r.count("max_tokens_per_turn", s.max_tokens_per_turn, 1, kMaxTokensPerTurnMax),
        r.count("turns_per_candidate", s.turns_per_candidate, 1, kTurnsPerCandidateMax),
        r.number("cost_ceiling_usd", s.cost_ceiling_usd, 0, kCostCeilingUsdMax, true),
        r.number("input_usd_per_mtok", s.input_usd_per_mtok, 0, kUsdPerMtokMax, false),
        r.number("output_usd_per_mtok", s.output_usd_per_mtok, 0, kUsdPerMtokMax, false),
        r.count("timeout_seconds", s.timeout_seconds, 1, kTimeoutSecondsMax),
        r.count("connect_timeout_seconds", s.connect_timeout_seconds, 1, kTimeoutSecondsMax),
        r.count("retries", s.retries, 0, kRetriesMax),
        r.count("retry_base_ms", s.retry_base_ms, 0, kRetryBaseMsMax)}) {
    if (!st.ok()) return make_error(st.error());
  }
  if (Status st = check_endpoint_and_key(env, s); !st.ok()) return make_error(st.error());
  return s;
}

}  // namespace attune::llm
