// LlmSettings: the [tuner] table of a campaign file whose tuner is "llm".
//
// Owns the reading and checking of the LLM tuner's settings: the API dialect, the endpoint, the
// model, the NAME of the environment variable that holds the API key (the key itself is read from
// the environment here and never written to the ledger or a log), the limits (tokens per turn,
// turns per candidate, cost ceiling), the prices, the HTTP timeouts and retries, and the
// framework checkout the model may read. Errors are one line naming the key and what was
// expected; an unknown key is an error. Pure apart from the environment lookup, which the caller
// passes in.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "events/result.h"

namespace attune::llm {

enum class Dialect : std::uint8_t { kAnthropic, kOpenAi };
const char* to_string(Dialect dialect);

struct LlmSettings {
  Dialect dialect = Dialect::kAnthropic;
  std::string endpoint;  // base URL, e.g. "https://api.anthropic.com" or "http://127.0.0.1:8000"
  std::string model;
  std::string api_key_env;  // the variable's name, as the campaign file gives it
  std::string api_key;      // its value; empty only for a loopback endpoint
  std::uint32_t max_tokens_per_turn = 4096;
  std::uint32_t turns_per_candidate = 12;
  double cost_ceiling_usd = 50.0;
  double input_usd_per_mtok = 3.0;
  double output_usd_per_mtok = 15.0;
  std::uint32_t timeout_seconds = 120;         // per read or write
  std::uint32_t connect_timeout_seconds = 10;  // per connection attempt
  std::uint32_t retries = 5;                   // after the first attempt, on 429, 5xx, I/O errors
  std::uint32_t retry_base_ms = 1000;          // the first backoff; doubled per retry
  std::string framework_source;                // a directory; empty: no source tools
};

// Reads the variable's value; nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment.
std::optional<std::string> process_env(const std::string& name);

// `toml_text` is CampaignOpened.tuner_options. Keys "name" (must be "llm") and "learned_rules"
// (read by the campaign file) are accepted and ignored here.
Result<LlmSettings> parse_llm_settings(std::string_view toml_text, const EnvLookup& env);

// True for http://127.0.0.1, http://localhost and http://[::1] endpoints, which may take no key.
bool is_loopback_endpoint(std::string_view endpoint);

}  // namespace attune::llm
