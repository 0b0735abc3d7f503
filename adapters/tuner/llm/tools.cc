#include "adapters/tuner/llm/tools.h"

#include <algorithm>
#include <limits>

#include "events/bottleneck.h"

namespace attune::llm {
namespace {

using nlohmann::json;

bool is_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

json run_id_schema(const char* description) {
  return {{"type", "object"},
          {"properties", {{"run_id", {{"type", "integer"}, {"description", description}}}}},
          {"required", {"run_id"}}};
}

}  // namespace

bool is_allowed_tool(std::string_view name) {
  return std::find(kToolNames.begin(), kToolNames.end(), name) != kToolNames.end();
}

namespace {

// propose_candidate: the changes, the parent run, the hypothesis and whether to trace the run.
ToolSpec propose_candidate_spec() {
  const json change = {
      {"type", "object"},
      {"properties",
       {{"flag",
         {{"type", "string"}, {"description", "a Megatron-LM flag, e.g. --recompute-granularity"}}},
        {"env",
         {{"type", "string"}, {"description", "an environment variable, e.g. NCCL_NVLS_ENABLE"}}},
        {"value",
         {{"type", {"string", "null"}},
          {"description",
           "the new value; \"\" for a switch; null removes the flag or variable"}}}}},
      {"required", {"value"}}};
  return ToolSpec{
      std::string(kProposeCandidate),
      "Propose a candidate: one lever or one coupled set of parallel degrees changed on the "
      "recipe of a parent run, with a hypothesis. The answer (admitted as run N, or refused with "
      "the reason) comes with the next message.",
      {{"type", "object"},
       {"properties",
        {{"changes", {{"type", "array"}, {"items", change}, {"minItems", 1}}},
         {"parent_run_id",
          {{"type", "integer"}, {"description", "the run whose recipe is changed; 0 = baseline"}}},
         {"hypothesis",
          {{"type", "object"},
           {"properties",
            {{"bottleneck", {{"type", "string"}}},
             {"bottleneck_tag",
              {{"type", "string"},
               {"enum",
                {"ep_a2a", "ep_a2a_cross_node", "tp_comm", "cp_comm", "pp_p2p", "bubble", "dp_comm",
                 "optimizer", "optimizer_offload", "recompute", "host", "compute", "memory_short"}},
               {"description", "the diagnosis tag of the bottleneck, when one fits"}}},
             {"mechanism", {{"type", "string"}}},
             {"expected_gain_fraction", {{"type", "number"}}}}},
           {"required", {"bottleneck", "mechanism", "expected_gain_fraction"}}}},
         {"profile", {{"type", "boolean"}, {"description", "trace the run (3 extra steps)"}}}}},
       {"required", {"changes", "parent_run_id", "hypothesis"}}}};
}

// The tools that read the framework checkout: a file's lines, and a search.
void add_framework_source_specs(std::vector<ToolSpec>& tools) {
  tools.push_back(
      {std::string(kReadFrameworkSource),
       "Read lines of a file in the framework checkout (paths relative to its root). Read a "
       "flag's implementation before you use it; the location is recorded.",
       {{"type", "object"},
        {"properties",
         {{"path", {{"type", "string"}}},
          {"first_line", {{"type", "integer"}, {"minimum", 1}}},
          {"last_line", {{"type", "integer"}, {"minimum", 1}}}}},
        {"required", {"path", "first_line", "last_line"}}}});
  tools.push_back(
      {std::string(kSearchFrameworkSource),
       "Find the lines that contain a text in the framework checkout.",
       {{"type", "object"},
        {"properties",
         {{"pattern", {{"type", "string"}, {"description", "plain text"}}},
          {"path_prefix", {{"type", "string"}, {"description", "a file or folder to search in"}}}}},
        {"required", {"pattern"}}}});
}

}  // namespace

std::vector<ToolSpec> tuner_tool_specs(bool with_framework_source) {
  std::vector<ToolSpec> tools;
  tools.push_back(propose_candidate_spec());
  tools.push_back({std::string(kWaitForRuns),
                   "Nothing to propose until a run in flight finishes; you are asked again then.",
                   {{"type", "object"}, {"properties", json::object()}}});
  tools.push_back({std::string(kRequestProfile),
                   "The per-stage breakdown of a profiled run: compute, exposed communication by "
                   "kind, host-bound and idle time, the slowest stage.",
                   run_id_schema("a run proposed with profile = true")});
  tools.push_back(
      {std::string(kGetRunLog), "The end of a run's training log.", run_id_schema("the run")});
  if (with_framework_source) add_framework_source_specs(tools);
  tools.push_back(
      {std::string(kRecordStop),
       "End the search: the remaining budget will not find a faster recipe. Give the evidence.",
       {{"type", "object"},
        {"properties",
         {{"evidence", {{"type", "string"}}},
          {"levers_tested", {{"type", "array"}, {"items", {{"type", "string"}}}}},
          {"last_diagnosis", {{"type", "string"}}}}},
        {"required", {"evidence"}}}});
  return tools;
}

Result<std::uint32_t> uint_arg(const json& input, const char* key) {
  const auto it = input.find(key);
  if (it == input.end()) return make_error(std::string(key) + ": required, an integer");
  if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
      it->get<std::int64_t>() > std::numeric_limits<std::uint32_t>::max()) {
    return make_error(std::string(key) + ": expected a non-negative integer, found " + it->dump());
  }
  return it->get<std::uint32_t>();
}

Result<std::optional<std::string>> string_arg(const json& input, const char* key, bool required) {
  const auto it = input.find(key);
  if (it == input.end() || it->is_null()) {
    if (required) return make_error(std::string(key) + ": required, a string");
    return std::optional<std::string>();
  }
  if (!it->is_string() || (required && it->get<std::string>().empty())) {
    return make_error(std::string(key) + ": expected a non-empty string, found " + it->dump());
  }
  return std::optional<std::string>(it->get<std::string>());
}

Result<ProposalArgs> parse_proposal_args(const json& input) {
  if (!input.is_object()) return make_error("the arguments are not a JSON object");
  ProposalArgs args;
  const auto changes = input.find("changes");
  if (changes == input.end() || !changes->is_array() || changes->empty()) {
    return make_error("changes: expected a non-empty array of {flag or env, value}");
  }
  if (changes->size() > kChangesPerProposalMax) {
    return make_error("changes: at most " + std::to_string(kChangesPerProposalMax) + " changes");
  }
  for (std::size_t i = 0; i < changes->size(); ++i) {
    const json& c = (*changes)[i];
    const std::string where = "changes[" + std::to_string(i) + "]";
    if (!c.is_object()) return make_error(where + ": expected an object");
    const bool has_flag = c.contains("flag");
    const bool has_env = c.contains("env");
    if (has_flag == has_env) return make_error(where + ": expected exactly one of flag or env");
    const json& name = has_flag ? c["flag"] : c["env"];
    if (!name.is_string() || name.get<std::string>().empty()) {
      return make_error(where + ": the name must be a non-empty string");
    }
    RecipeChange change;
    change.env = has_env;
    change.name = name.get<std::string>();
    if (change.env && !is_env_name(change.name)) {
      return make_error(where + ": '" + change.name + "' is not an environment variable name");
    }
    const auto value = c.find("value");
    if (value == c.end()) return make_error(where + ": value: required (null removes)");
    if (value->is_string()) {
      change.value = value->get<std::string>();
    } else if (value->is_boolean()) {
      change.value = value->get<bool>() ? "true" : "false";
    } else if (value->is_number()) {
      change.value = value->dump();
    } else if (!value->is_null()) {
      return make_error(where + ": value: expected a string, a number or null");
    }
    args.changes.push_back(std::move(change));
  }
  auto parent = uint_arg(input, "parent_run_id");
  if (!parent.ok()) return make_error(parent.error());
  args.parent_run_id = parent.value();
  const auto hypothesis = input.find("hypothesis");
  if (hypothesis == input.end() || !hypothesis->is_object()) {
    return make_error("hypothesis: required, {bottleneck, mechanism, expected_gain_fraction}");
  }
  auto bottleneck = string_arg(*hypothesis, "bottleneck", true);
  if (!bottleneck.ok()) return make_error("hypothesis." + bottleneck.error());
  auto mechanism = string_arg(*hypothesis, "mechanism", true);
  if (!mechanism.ok()) return make_error("hypothesis." + mechanism.error());
  const auto gain = hypothesis->find("expected_gain_fraction");
  if (gain == hypothesis->end() || !gain->is_number()) {
    return make_error("hypothesis.expected_gain_fraction: expected a number (0.05 = 5%)");
  }
  auto tag = string_arg(*hypothesis, "bottleneck_tag", false);
  if (!tag.ok()) return make_error("hypothesis." + tag.error());
  const std::string tag_text = tag->value_or("");
  if (!tag_text.empty() && !bottleneck_of_tag(tag_text)) {
    return make_error("hypothesis.bottleneck_tag: '" + tag_text + "' is not a diagnosis tag");
  }
  args.hypothesis = {**bottleneck, **mechanism, gain->get<double>(), tag_text};
  const auto profile = input.find("profile");
  if (profile != input.end() && !profile->is_null()) {
    if (!profile->is_boolean()) return make_error("profile: expected true or false");
    args.profile = profile->get<bool>();
  }
  return args;
}

Result<Recipe> apply_changes(Recipe recipe, const std::vector<RecipeChange>& changes) {
  for (const RecipeChange& change : changes) {
    if (change.env) {
      if (change.value) {
        if (Status set = set_env(recipe, change.name, *change.value); !set.ok()) {
          return make_error(set.error());
        }
      } else if (recipe.env.erase(change.name) == 0) {
        return make_error("env " + change.name + " is not set in the parent recipe");
      }
      continue;
    }
    const Status applied = change.value ? set_flag(recipe, change.name, *change.value)
                                        : remove_flag(recipe, change.name);
    if (!applied.ok()) return make_error(applied.error());
  }
  return recipe;
}

Result<StopArgs> parse_stop_args(const json& input) {
  if (!input.is_object()) return make_error("the arguments are not a JSON object");
  StopArgs args;
  auto evidence = string_arg(input, "evidence", true);
  if (!evidence.ok()) return make_error(evidence.error());
  args.evidence = **evidence;
  auto diagnosis = string_arg(input, "last_diagnosis", false);
  if (!diagnosis.ok()) return make_error(diagnosis.error());
  if (*diagnosis) args.last_diagnosis = **diagnosis;
  const auto levers = input.find("levers_tested");
  if (levers != input.end() && !levers->is_null()) {
    if (!levers->is_array()) return make_error("levers_tested: expected an array of strings");
    for (const json& lever : *levers) {
      if (!lever.is_string()) return make_error("levers_tested: expected an array of strings");
      args.levers_tested.push_back(lever.get<std::string>());
    }
  }
  return args;
}

}  // namespace attune::llm
