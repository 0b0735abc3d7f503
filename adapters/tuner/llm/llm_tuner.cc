#include "adapters/tuner/llm/llm_tuner.h"

#include "adapters/tuner/llm/campaign_prompt.h"
#include "adapters/tuner/llm/tools.h"
#include "adapters/tuner/skill.h"
#include "projections/number_format.h"

namespace attune {
namespace {

using llm::Message;
using llm::ToolCall;
using nlohmann::json;

constexpr const char* kRuleToolSet = "tool outside the allowed set";
constexpr const char* kRuleOutsideSource = "outside the framework source";
constexpr const char* kMalformedTool = "(malformed response)";

// Cut at a UTF-8 character boundary, so that the cut text stays valid.
std::string cut(const std::string& text, std::size_t bytes_max) {
  if (text.size() <= bytes_max) return text;
  std::size_t end = bytes_max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

std::string usd(double value) {
  std::string out = "$";  // appended: GCC 12 warns falsely (-Wrestrict) on "$" + std::string
  out += format_fixed(value, 4);
  return out;
}

std::size_t conversation_bytes(const std::vector<Message>& conversation) {
  std::size_t bytes = 0;
  for (const Message& m : conversation) {
    bytes += m.text.size();
    for (const llm::ToolResult& r : m.tool_results) bytes += r.content.size();
    for (const ToolCall& c : m.tool_calls) bytes += c.arguments_text.size();
  }
  return bytes;
}

}  // namespace

Result<std::unique_ptr<LlmTuner>> LlmTuner::open(const CampaignOpened& opened,
                                                 const LeverCatalog& catalog, RunLogReader read_log,
                                                 const llm::EnvLookup& env) {
  auto settings = llm::parse_llm_settings(opened.tuner_options, env);
  if (!settings.ok()) return make_error(settings.error());
  auto url = llm::parse_url(settings->endpoint);
  if (!url.ok()) return make_error("[tuner] endpoint: " + url.error());
  std::optional<llm::FrameworkSource> source;
  if (!settings->framework_source.empty()) {
    auto opened_source = llm::FrameworkSource::open(settings->framework_source);
    if (!opened_source.ok()) return make_error("[tuner] " + opened_source.error());
    source = std::move(opened_source).value();
  }
  std::string prompt = render_skill(catalog, opened.learned_rules);
  return std::unique_ptr<LlmTuner>(new LlmTuner(std::move(settings).value(), std::move(url).value(),
                                                std::move(source), std::move(prompt),
                                                std::move(read_log)));
}

LlmTuner::LlmTuner(llm::LlmSettings settings, llm::Url url,
                   std::optional<llm::FrameworkSource> source, std::string system_prompt,
                   RunLogReader read_log)
    : settings_(std::move(settings)),
      url_(url),
      client_(std::move(url), llm::HttpOptions{settings_.connect_timeout_seconds * 1000,
                                               settings_.timeout_seconds * 1000, settings_.retries,
                                               settings_.retry_base_ms}),
      source_(std::move(source)),
      system_prompt_(std::move(system_prompt)),
      tools_(llm::tuner_tool_specs(source_.has_value())),
      read_log_(std::move(read_log)) {}

std::vector<Body> LlmTuner::take_events() { return std::exchange(events_, {}); }

void LlmTuner::record_tool(const ToolCall& call, const std::string& result, bool allowed,
                           const std::string& source_location) {
  ToolCalled called;
  called.tool = call.name;
  called.input = cut(call.arguments_text, kToolResultBytesMax);
  called.result = cut(result, kToolResultBytesMax);
  called.allowed = allowed;
  called.source_location = source_location;
  called.turn = turn_;
  events_.emplace_back(std::move(called));
}

void LlmTuner::deny(const ToolCall& call, const std::string& object, const std::string& rule,
                    const std::string& result) {
  record_tool(call, result, false);
  events_.emplace_back(AccessDenied{object, rule});
}

Message LlmTuner::opening_message(const TunerView& view) {
  Message m;
  m.tool_results = std::exchange(pending_results_, {});
  if (pending_call_id_) {
    std::string outcome = pending_proposal_id_
                              ? "proposal " + std::to_string(*pending_proposal_id_) + ": " +
                                    llm::proposal_outcome(view.state, *pending_proposal_id_)
                              : std::string("a run finished; the state follows");
    m.tool_results.push_back({*pending_call_id_, outcome, false});
  }
  pending_call_id_.reset();
  pending_proposal_id_.reset();
  if (conversation_bytes(conversation_) > kConversationBytesMax) {
    // Start over: the state below holds the whole ledger, so the model keeps its picture. The
    // answers lose the calls they answer, so they become text.
    conversation_.clear();
    for (const llm::ToolResult& result : m.tool_results) {
      m.text += std::string("Answer to your last ") + (result.is_error ? "(failed) " : "") +
                "tool call: " + result.content + "\n";
    }
    m.tool_results.clear();
    m.text += "(The conversation was restarted to bound its length.)\n\n";
  }
  m.text += llm::render_campaign_state(view.state, view.baseline) + "\nYou have " +
            std::to_string(settings_.turns_per_candidate) +
            " turns for this decision. Call propose_candidate, wait_for_runs or record_stop.";
  return m;
}

double LlmTuner::charge_turn(std::uint64_t input_tokens, std::uint64_t output_tokens,
                             double total_usd) {
  const double turn_cost_usd =
      (static_cast<double>(input_tokens) * settings_.input_usd_per_mtok +
       static_cast<double>(output_tokens) * settings_.output_usd_per_mtok) /
      1e6;
  events_.emplace_back(
      LlmCharged{turn_, settings_.model, input_tokens, output_tokens, turn_cost_usd});
  if (progress_) {
    progress_("llm turn " + std::to_string(turn_) + " (" + settings_.model +
              "): " + std::to_string(input_tokens) + " input, " + std::to_string(output_tokens) +
              " output tokens, " + usd(turn_cost_usd) + " (LLM total " +
              usd(total_usd + turn_cost_usd) + ")");
  }
  return turn_cost_usd;
}

std::optional<TunerAnswer> LlmTuner::act_on_reply(const llm::Reply& reply, const TunerView& view) {
  Message answers;
  std::optional<TunerAnswer> answer;
  std::optional<ProposalId> proposal_id;
  std::string answer_call_id;
  for (const ToolCall& call : reply.tool_calls) {
    if (answer) {
      const std::string ignored =
          "not run: only the first propose_candidate, wait_for_runs or "
          "record_stop of a turn is acted on";
      record_tool(call, ignored, true);
      pending_results_.push_back({call.id, ignored, true});
      continue;
    }
    ToolOutcome outcome = run_tool(call, view);
    if (outcome.answer) {
      answer = std::move(outcome.answer);
      proposal_id = outcome.proposal_id;
      answer_call_id = call.id;
      continue;
    }
    answers.tool_results.push_back(
        {call.id, cut(outcome.result, kToolResultToModelBytesMax), outcome.is_error});
  }
  if (!answer) {
    if (reply.tool_calls.empty()) {
      answers.text = "Call a tool: propose_candidate, wait_for_runs or record_stop.";
    }
    conversation_.push_back(std::move(answers));
    return std::nullopt;
  }
  // The other calls' answers and this one's outcome open the next ask.
  answers.tool_results.insert(answers.tool_results.end(), pending_results_.begin(),
                              pending_results_.end());
  pending_results_ = std::move(answers.tool_results);
  pending_call_id_ = answer_call_id;
  pending_proposal_id_ = proposal_id;
  if (std::holds_alternative<TunerStop>(*answer)) {
    pending_results_.clear();
    pending_call_id_.reset();
  }
  return answer;
}

TunerAnswer LlmTuner::next(const TunerView& view) {
  if (!turns_counted_) {
    // A resumed campaign goes on numbering turns after the ledger's.
    turn_ = view.state.view.budget.llm_turns;
    turns_counted_ = true;
  }
  double cost_usd = view.state.view.budget.llm_cost_usd;
  conversation_.push_back(opening_message(view));
  std::uint32_t malformed = 0;
  for (std::uint32_t t = 0; t < settings_.turns_per_candidate; ++t) {
    if (cost_usd >= settings_.cost_ceiling_usd) {
      return TunerStop{
          "LLM cost ceiling reached: " + usd(cost_usd) + " of " + usd(settings_.cost_ceiling_usd),
          {},
          llm::last_diagnosis(view.state)};
    }
    ++turn_;
    const llm::ChatRequest request = llm::build_chat_request(
        settings_.dialect, url_.base_path, settings_.model, settings_.api_key,
        settings_.max_tokens_per_turn, system_prompt_, tools_, conversation_);
    auto response = client_.post_json(request.path, request.headers, request.body.dump());
    if (!response.ok()) {
      if (progress_) progress_("llm turn " + std::to_string(turn_) + ": " + response.error());
      return TunerStop{
          "the LLM endpoint failed: " + response.error(), {}, llm::last_diagnosis(view.state)};
    }
    const json body = json::parse(response->body, nullptr, false);
    const auto [input_tokens, output_tokens] = llm::usage_of(settings_.dialect, body);
    cost_usd += charge_turn(input_tokens, output_tokens, cost_usd);

    auto reply = llm::parse_chat_reply(settings_.dialect, response->body);
    if (!reply.ok()) {
      ++malformed;
      record_tool(ToolCall{"", kMalformedTool, response->body, json()}, reply.error(), false);
      // The conversation ends with the user's message: the note joins it.
      conversation_.back().text += "\n\nYour last response could not be read (" + reply.error() +
                                   "). Answer with a tool call.";
      continue;
    }
    conversation_.push_back(llm::assistant_message(reply.value()));
    if (auto answer = act_on_reply(reply.value(), view)) return std::move(*answer);
  }
  return TunerStop{"the model made no proposal and no stop in " +
                       std::to_string(settings_.turns_per_candidate) + " turns (" +
                       std::to_string(malformed) + " malformed responses)",
                   {},
                   llm::last_diagnosis(view.state)};
}

LlmTuner::ToolOutcome LlmTuner::run_tool(const ToolCall& call, const TunerView& view) {
  if (!llm::is_allowed_tool(call.name)) {
    const std::string result = "refused: '" + call.name + "' is not one of the tools offered";
    deny(call, call.name, kRuleToolSet, result);
    return {result, true, std::nullopt, std::nullopt};
  }
  if (call.input.is_discarded()) {
    const std::string result = "the arguments are not a JSON object: " + call.arguments_text;
    record_tool(call, result, false);
    return {result, true, std::nullopt, std::nullopt};
  }
  if (call.name == llm::kProposeCandidate) return propose(call, view);
  if (call.name == llm::kReadFrameworkSource) return read_source(call);
  if (call.name == llm::kSearchFrameworkSource) return search_source(call);
  if (call.name == llm::kGetRunLog) return run_log(call, view);
  if (call.name == llm::kRequestProfile) return profile_of(call, view);
  if (call.name == llm::kRecordStop) return stop(call, view);
  // wait_for_runs
  if (view.state.runs_in_flight() == 0) {
    const std::string result = "no run is in flight: propose a candidate or record a stop";
    record_tool(call, result, true);
    return {result, true, std::nullopt, std::nullopt};
  }
  record_tool(call, "waiting for a run in flight", true);
  return {"", false, TunerAnswer(TunerWait{}), std::nullopt};
}

LlmTuner::ToolOutcome LlmTuner::propose(const ToolCall& call, const TunerView& view) {
  auto args = llm::parse_proposal_args(call.input);
  if (!args.ok()) {
    record_tool(call, args.error(), false);
    return {args.error(), true, std::nullopt, std::nullopt};
  }
  Recipe parent = view.baseline;
  if (args->parent_run_id != 0) {
    const RunState* run = view.state.run(args->parent_run_id);
    auto recipe = run == nullptr || run->recipe.empty()
                      ? Result<Recipe>(make_error("no run " + std::to_string(args->parent_run_id)))
                      : parse_recipe(run->recipe, "run " + std::to_string(args->parent_run_id));
    if (!recipe.ok()) {
      const std::string result = "parent_run_id: " + recipe.error();
      record_tool(call, result, true);
      return {result, true, std::nullopt, std::nullopt};
    }
    parent = std::move(recipe).value();
  }
  auto candidate = llm::apply_changes(parent, args->changes);
  if (!candidate.ok() || candidate.value() == parent) {
    const std::string result = candidate.ok() ? "the changes leave the parent's recipe unchanged"
                                              : "cannot apply the changes: " + candidate.error();
    record_tool(call, result, true);
    return {result, true, std::nullopt, std::nullopt};
  }
  const ProposalId id = view.state.next_proposal_id();
  record_tool(call,
              "proposed as proposal " + std::to_string(id) + " on run " +
                  std::to_string(args->parent_run_id),
              true);
  TunerProposal proposal{std::move(candidate).value(), args->parent_run_id,
                         std::move(args->hypothesis), args->profile};
  return {"", false, TunerAnswer(std::move(proposal)), id};
}

LlmTuner::ToolOutcome LlmTuner::read_source(const ToolCall& call) {
  if (!source_) {
    const std::string result = "no framework_source is configured for this campaign";
    record_tool(call, result, true);
    return {result, true, std::nullopt, std::nullopt};
  }
  auto path = llm::string_arg(call.input, "path", true);
  auto first = llm::uint_arg(call.input, "first_line");
  auto last = llm::uint_arg(call.input, "last_line");
  for (const std::string* error :
       {path.ok() ? nullptr : &path.error(), first.ok() ? nullptr : &first.error(),
        last.ok() ? nullptr : &last.error()}) {
    if (error == nullptr) continue;
    record_tool(call, *error, false);
    return {*error, true, std::nullopt, std::nullopt};
  }
  const auto confined = source_->confine(**path);
  if (!confined) {
    const std::string result = "refused: " + **path + " is outside the framework source";
    deny(call, **path, kRuleOutsideSource, result);
    return {result, true, std::nullopt, std::nullopt};
  }
  auto excerpt = source_->read(*confined, first.value(), last.value());
  if (!excerpt.ok()) {
    record_tool(call, excerpt.error(), true);
    return {excerpt.error(), true, std::nullopt, std::nullopt};
  }
  record_tool(call, excerpt->text, true, excerpt->location);
  return {excerpt->location + "\n" + excerpt->text, false, std::nullopt, std::nullopt};
}

LlmTuner::ToolOutcome LlmTuner::search_source(const ToolCall& call) {
  if (!source_) {
    const std::string result = "no framework_source is configured for this campaign";
    record_tool(call, result, true);
    return {result, true, std::nullopt, std::nullopt};
  }
  auto pattern = llm::string_arg(call.input, "pattern", true);
  auto prefix = llm::string_arg(call.input, "path_prefix", false);
  if (!pattern.ok() || !prefix.ok()) {
    const std::string result = !pattern.ok() ? pattern.error() : prefix.error();
    record_tool(call, result, false);
    return {result, true, std::nullopt, std::nullopt};
  }
  const std::string under = prefix.value() ? **prefix : std::string(".");
  const auto confined = source_->confine(under);
  if (!confined) {
    const std::string result = "refused: " + under + " is outside the framework source";
    deny(call, under, kRuleOutsideSource, result);
    return {result, true, std::nullopt, std::nullopt};
  }
  auto hits = source_->search(**pattern, *confined);
  if (!hits.ok()) {
    record_tool(call, hits.error(), true);
    return {hits.error(), true, std::nullopt, std::nullopt};
  }
  record_tool(call, hits.value(), true, source_->relative(*confined));
  return {hits.value(), false, std::nullopt, std::nullopt};
}

LlmTuner::ToolOutcome LlmTuner::run_log(const ToolCall& call, const TunerView& view) {
  auto id = llm::uint_arg(call.input, "run_id");
  if (!id.ok()) {
    record_tool(call, id.error(), false);
    return {id.error(), true, std::nullopt, std::nullopt};
  }
  const RunState* run = view.state.run(id.value());
  std::string result;
  bool is_error = true;
  if (run == nullptr) {
    result = "no run " + std::to_string(id.value());
  } else if (run->log_path.empty() || !read_log_) {
    result = "run " + std::to_string(id.value()) + " has no log yet";
  } else {
    auto log = read_log_(run->log_path);
    if (!log.ok()) {
      result = log.error();
    } else {
      const std::string& text = log.value();
      result = text.size() > kLogTailBytesMax
                   ? "(the last " + std::to_string(kLogTailBytesMax) + " bytes)\n" +
                         text.substr(text.size() - kLogTailBytesMax)
                   : text;
      is_error = false;
    }
  }
  record_tool(call, result, true);
  return {result, is_error, std::nullopt, std::nullopt};
}

LlmTuner::ToolOutcome LlmTuner::profile_of(const ToolCall& call, const TunerView& view) {
  auto id = llm::uint_arg(call.input, "run_id");
  if (!id.ok()) {
    record_tool(call, id.error(), false);
    return {id.error(), true, std::nullopt, std::nullopt};
  }
  const RunState* run = view.state.run(id.value());
  std::string result;
  if (run == nullptr) {
    result = "no run " + std::to_string(id.value());
  } else if (run->profile_analyzed) {
    result = llm::render_profile(*run->profile_analyzed);
  } else if (run->profile && run->in_flight()) {
    result = "run " + std::to_string(id.value()) +
             " is profiled; its breakdown comes when it finishes (wait_for_runs)";
  } else {
    result = "run " + std::to_string(id.value()) +
             " was not profiled; set profile = true on the next proposal to trace a run";
  }
  record_tool(call, result, true);
  return {result, run == nullptr || !run->profile_analyzed, std::nullopt, std::nullopt};
}

LlmTuner::ToolOutcome LlmTuner::stop(const ToolCall& call, const TunerView& view) {
  auto args = llm::parse_stop_args(call.input);
  if (!args.ok()) {
    record_tool(call, args.error(), false);
    return {args.error(), true, std::nullopt, std::nullopt};
  }
  record_tool(call, "stop recorded", true);
  TunerStop stop{args->evidence, args->levers_tested, args->last_diagnosis};
  if (stop.last_diagnosis.empty()) stop.last_diagnosis = llm::last_diagnosis(view.state);
  return {"", false, TunerAnswer(std::move(stop)), std::nullopt};
}

}  // namespace attune
