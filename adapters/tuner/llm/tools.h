// The tools the LLM tuner offers its model, and the pure parts of answering them: their JSON
// schemas, and reading a proposal's arguments into a recipe.
//
// The allowed set is exactly kToolNames; anything else the model calls is refused and recorded.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/tuner/llm/dialect.h"
#include "events/event.h"
#include "events/recipe.h"
#include "events/result.h"

namespace attune::llm {

inline constexpr std::string_view kProposeCandidate = "propose_candidate";
inline constexpr std::string_view kWaitForRuns = "wait_for_runs";
inline constexpr std::string_view kRequestProfile = "request_profile";
inline constexpr std::string_view kGetRunLog = "get_run_log";
inline constexpr std::string_view kReadFrameworkSource = "read_framework_source";
inline constexpr std::string_view kSearchFrameworkSource = "search_framework_source";
inline constexpr std::string_view kRecordStop = "record_stop";
inline constexpr std::array<std::string_view, 7> kToolNames = {
    kProposeCandidate,    kWaitForRuns,           kRequestProfile, kGetRunLog,
    kReadFrameworkSource, kSearchFrameworkSource, kRecordStop};

inline constexpr std::size_t kChangesPerProposalMax = 32;

bool is_allowed_tool(std::string_view name);

// The tools' names, descriptions and input schemas. The source tools are offered only when a
// framework checkout is configured.
std::vector<ToolSpec> tuner_tool_specs(bool with_framework_source);

// One change of a proposal: a flag (any spelling, with or without dashes) or an environment
// variable, set to a value or removed (nullopt).
struct RecipeChange {
  bool env = false;
  std::string name;
  std::optional<std::string> value;
};

struct ProposalArgs {
  std::vector<RecipeChange> changes;
  RunId parent_run_id = 0;
  Hypothesis hypothesis;
  bool profile = false;
};

// Errors are one line naming the argument and what was expected.
Result<ProposalArgs> parse_proposal_args(const nlohmann::json& input);

// The parent's recipe with the changes applied in order. Errors name the change.
Result<Recipe> apply_changes(Recipe recipe, const std::vector<RecipeChange>& changes);

struct StopArgs {
  std::string evidence;
  std::vector<std::string> levers_tested;
  std::string last_diagnosis;
};
Result<StopArgs> parse_stop_args(const nlohmann::json& input);

// A non-negative integer argument (a run id, a line number).
Result<std::uint32_t> uint_arg(const nlohmann::json& input, const char* key);
// A non-empty string argument, or nullopt when absent and not required.
Result<std::optional<std::string>> string_arg(const nlohmann::json& input, const char* key,
                                              bool required);

}  // namespace attune::llm
