// LlmTuner: a tuner whose search is run by a language model over an HTTP chat API.
//
// Each ask (next()) opens with a user message: the outcome of the model's last proposal and the
// answers to its other tool calls, then the campaign's state (campaign_prompt.h). The system
// prompt is the tuning skill (render_skill). The model answers with tool calls (tools.h); the
// tuner runs the read-only ones at once and sends their results back, until the model proposes
// a candidate (a TunerProposal: its changes applied to the parent's recipe), waits for a run in
// flight (TunerWait) or records a stop (TunerStop). The conversation is kept across asks, so the
// model sees each proposal's outcome as that tool call's result.
//
// Every tool call is a ToolCalled event (a framework-source read with its location, rule 3), a
// tool outside the allowed set or a path outside the framework checkout also an AccessDenied,
// and every HTTP turn an LlmCharged event, all handed to the runtime by take_events().
//
// Limits: turns_per_candidate turns without a proposal, wait or stop end the search; the cost
// ceiling is checked before every turn; a malformed response is recorded and costs a turn; an
// endpoint that still fails after the HTTP client's retries ends the search with the error as
// evidence. None of these is a crash: the campaign then ships as usual. A conversation longer than
// kConversationBytesMax starts over from the campaign state, which holds the whole ledger.
//
// Not a pure function of the view: a resumed campaign starts a new conversation from the
// ledger's state. REQUIRES external synchronization.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/tuner/lever_catalog.h"
#include "adapters/tuner/llm/dialect.h"
#include "adapters/tuner/llm/framework_source.h"
#include "adapters/tuner/llm/http_client.h"
#include "adapters/tuner/llm/settings.h"
#include "core/ports.h"

namespace attune {

// Reads a run's log by the path its launcher reported (Launcher::read_log).
using RunLogReader = std::function<Result<std::string>(const std::string& log_path)>;

inline constexpr std::size_t kToolResultToModelBytesMax = 24 * 1024;
inline constexpr std::size_t kLogTailBytesMax = 12 * 1024;
// Past this much text the conversation starts over from the campaign state (about 100k tokens).
inline constexpr std::size_t kConversationBytesMax = 400 * 1024;

class LlmTuner final : public Tuner {
 public:
  // Reads the [tuner] settings from opened.tuner_options; errors are one line naming the key.
  static Result<std::unique_ptr<LlmTuner>> open(const CampaignOpened& opened,
                                                const LeverCatalog& catalog, RunLogReader read_log,
                                                const llm::EnvLookup& env = llm::process_env);

  std::string name() const override { return "llm"; }
  TunerAnswer next(const TunerView& view) override;
  std::vector<Body> take_events() override;
  // One line per turn: the tokens and cost, or the endpoint's failure.
  void set_progress(std::function<void(const std::string&)> progress) override {
    progress_ = std::move(progress);
  }

  const std::string& system_prompt() const { return system_prompt_; }

 private:
  LlmTuner(llm::LlmSettings settings, llm::Url url, std::optional<llm::FrameworkSource> source,
           std::string system_prompt, RunLogReader read_log);

  // What one tool call asks of next(): an answer now (tool result), or the end of the ask.
  struct ToolOutcome {
    std::string result;
    bool is_error = false;
    std::optional<TunerAnswer> answer;  // a proposal, a wait or a stop
    std::optional<ProposalId> proposal_id;
  };
  ToolOutcome run_tool(const llm::ToolCall& call, const TunerView& view);
  ToolOutcome propose(const llm::ToolCall& call, const TunerView& view);
  ToolOutcome read_source(const llm::ToolCall& call);
  ToolOutcome search_source(const llm::ToolCall& call);
  ToolOutcome run_log(const llm::ToolCall& call, const TunerView& view);
  ToolOutcome profile_of(const llm::ToolCall& call, const TunerView& view);
  ToolOutcome stop(const llm::ToolCall& call, const TunerView& view);

  void record_tool(const llm::ToolCall& call, const std::string& result, bool allowed,
                   const std::string& source_location = {});
  void deny(const llm::ToolCall& call, const std::string& object, const std::string& rule,
            const std::string& result);
  llm::Message opening_message(const TunerView& view);
  // Charges one turn's tokens (an LlmCharged event) and returns its cost.
  double charge_turn(std::uint64_t input_tokens, std::uint64_t output_tokens, double total_usd);
  // Runs a reply's tool calls: the answer its first proposal, wait or stop gives, if any; the
  // other calls' results go into the conversation or open the next ask.
  std::optional<TunerAnswer> act_on_reply(const llm::Reply& reply, const TunerView& view);

  llm::LlmSettings settings_;
  llm::Url url_;
  llm::HttpClient client_;
  std::optional<llm::FrameworkSource> source_;
  std::string system_prompt_;
  std::vector<llm::ToolSpec> tools_;
  RunLogReader read_log_;

  std::vector<llm::Message> conversation_;
  std::vector<llm::ToolResult> pending_results_;   // answered at the next ask
  std::optional<std::string> pending_call_id_;     // the call that ended the last ask
  std::optional<ProposalId> pending_proposal_id_;  // its proposal, if it proposed
  std::uint32_t turn_ = 0;                         // the last turn's number, campaign-wide
  bool turns_counted_ = false;                     // turn_ taken from the ledger once
  std::vector<Body> events_;
  std::function<void(const std::string&)> progress_;
};

}  // namespace attune
