#include "adapters/agent/control_plane.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "events/bottleneck.h"
#include "events/recipe.h"
#include "projections/render.h"

namespace attune::agent {
namespace {

using json = nlohmann::json;

constexpr std::size_t kDeniedTextBytesMax = 4096;
constexpr std::size_t kLogTailBytesDefault = 64 * 1024;
constexpr char kOperations[] = "ping, status, propose, profile, wait, log, stop, deny, read";

json error_reply(const std::string& message) { return {{"ok", false}, {"error", message}}; }

std::string cut(std::string text, std::size_t max_bytes) {
  if (text.size() > max_bytes) text.resize(max_bytes);
  return text;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// A string member, or an error naming it.
Result<std::string> text_of(const json& request, const char* key, bool required) {
  const auto it = request.find(key);
  if (it == request.end() || it->is_null()) {
    if (required) return make_error(std::string("'") + key + "' is required");
    return std::string();
  }
  if (!it->is_string()) return make_error(std::string("'") + key + "' must be a string");
  return it->get<std::string>();
}

Result<std::uint64_t> number_of(const json& request, const char* key, std::uint64_t fallback) {
  const auto it = request.find(key);
  if (it == request.end() || it->is_null()) return fallback;
  if (!it->is_number_unsigned()) {
    return make_error(std::string("'") + key + "' must be a non-negative integer");
  }
  return it->get<std::uint64_t>();
}

// Applies the proposal's changes: [{"flag": F, "value": V} | {"flag": F, "remove": true} |
// {"env": N, "value": V} | {"env": N, "remove": true}].
Status apply_changes(Recipe& recipe, const json& changes) {
  if (!changes.is_array() || changes.empty()) {
    return make_error("'changes' must be a non-empty list of {flag|env, value|remove}");
  }
  for (const json& change : changes) {
    if (!change.is_object()) return make_error("each change must be an object");
    const bool remove = change.value("remove", false);
    const auto value = change.find("value");
    if (!remove && (value == change.end() || !value->is_string())) {
      return make_error("a change needs a string 'value' or \"remove\": true");
    }
    if (change.contains("flag") && change["flag"].is_string()) {
      const std::string flag = change["flag"].get<std::string>();
      Status status =
          remove ? remove_flag(recipe, flag) : set_flag(recipe, flag, value->get<std::string>());
      if (!status.ok()) return status;
    } else if (change.contains("env") && change["env"].is_string()) {
      const std::string name = change["env"].get<std::string>();
      if (!valid_env_name(name)) return make_error("'" + name + "' is not an environment name");
      if (remove) {
        if (recipe.env.erase(name) == 0) return make_error(name + " is not set");
      } else {
        if (Status set = set_env(recipe, name, value->get<std::string>()); !set.ok()) return set;
      }
    } else {
      return make_error("each change names a 'flag' or an 'env' variable");
    }
  }
  return Ok{};
}

}  // namespace

struct ControlPlane::Impl {
  CampaignRuntime& runtime;
  Scheduler& scheduler;
  const Launcher& launcher;

  std::mutex mutex;  // guards closed and closed_why
  bool closed = false;
  std::string closed_why;

  std::set<RunId> reported;  // runs a wait has reported; the scheduler's thread only

  Impl(CampaignRuntime& runtime_in, Scheduler& scheduler_in, const Launcher& launcher_in)
      : runtime(runtime_in), scheduler(scheduler_in), launcher(launcher_in) {}

  std::optional<std::string> closed_reason() {
    std::lock_guard lock(mutex);
    if (!closed) return std::nullopt;
    return closed_why;
  }

  // Runs `work` on the scheduler's thread and waits for its answer (or for close()).
  json on_scheduler(std::function<json()> work) {
    auto promise = std::make_shared<std::promise<json>>();
    std::future<json> answer = promise->get_future();
    if (auto why = closed_reason()) return error_reply(*why);
    const bool posted = scheduler.post([promise, work = std::move(work)] {
      try {
        promise->set_value(work());
      } catch (const std::exception& e) {
        promise->set_value(error_reply(std::string("internal error: ") + e.what()));
      }
    });
    if (!posted) return error_reply("busy: the control plane has too many requests waiting");
    while (answer.wait_for(std::chrono::milliseconds(kWaitPollMs)) != std::future_status::ready) {
      if (auto why = closed_reason()) return error_reply(*why);
    }
    return answer.get();
  }

  // ---- On the scheduler's thread ------------------------------------------------------------

  json run_json(const RunState& run) const {
    const CampaignView& view = runtime.state().view;
    json out = {{"run_id", run.run_id},
                {"purpose", to_string(run.purpose)},
                {"recipe", run.recipe},
                {"profile", run.profile},
                {"profiled", run.profile_analyzed.has_value()}};
    const auto proposal = runtime.state().proposals.find(run.proposal_id);
    if (proposal != runtime.state().proposals.end()) {
      out["parent_run_id"] = proposal->second.parent_run_id;
      out["hypothesis"] = {
          {"bottleneck", proposal->second.hypothesis.bottleneck},
          {"mechanism", proposal->second.hypothesis.mechanism},
          {"expected_gain_fraction", proposal->second.hypothesis.expected_gain_fraction}};
    }
    if (run.measured) {
      out["state"] = "measured";
      out["tokens_per_s_per_gpu"] = run.measured->tokens_per_sec_per_gpu;
    } else if (run.failed) {
      out["state"] = "failed";
      out["failure"] = {{"class", to_string(run.failed->failure_class)},
                        {"message", run.failed->message}};
    } else {
      out["state"] = run.in_flight() ? "in flight" : "finished";
    }
    const auto row = view.ledger.rows.find(run.run_id);
    if (row != view.ledger.rows.end()) {
      out["diff"] = row->second.diff_summary;
      if (row->second.verdict) {
        out["verdict"] = to_string(*row->second.verdict);
        out["gain_fraction"] = row->second.gain_fraction;
      }
    }
    return out;
  }

  json status() const {
    const ControlState& state = runtime.state();
    const CampaignView& view = state.view;
    const Phase phase = phase_of(state);
    json runs = json::array();
    for (const auto& [id, run] : state.runs) runs.push_back(run_json(run));
    json refused = json::array();
    for (const RefusedProposal& entry : view.ledger.refused) {
      refused.push_back({{"proposal_id", entry.proposal_id},
                         {"reason", to_string(entry.reason)},
                         {"detail", entry.detail},
                         {"diff", entry.diff_summary}});
    }
    return {{"ok", true},
            {"campaign_id", view.campaign_id},
            {"phase", to_string(phase)},
            {"searching", phase == Phase::kSearching},
            {"search_over", phase == Phase::kShipping || phase == Phase::kDone},
            {"stop_recorded", state.stop_recorded},
            {"runs_in_flight", state.runs_in_flight()},
            {"concurrency", view.settings.concurrency},
            {"workload",
             {{"model", view.settings.model},
              {"hardware", view.settings.hardware},
              {"gpus", view.settings.gpu_count},
              {"seq_length", view.settings.seq_length},
              {"global_batch", view.settings.global_batch},
              {"precision", view.settings.precision}}},
            {"baseline_recipe", view.settings.baseline_recipe},
            {"band", to_json(view.baseline_band)},
            {"leader",
             {{"run_id", view.leader.run_id},
              {"tokens_per_s_per_gpu", view.leader.tokens_per_s_per_gpu},
              {"gain_fraction", view.leader.gain_fraction}}},
            {"budget", to_json(view.budget)},
            {"runs", runs},
            {"refused", refused},
            {"ledger", render_ledger_text(view)}};
  }

  json propose(const json& request) {
    const ControlState& state = runtime.state();
    auto parent_id = number_of(request, "parent_run_id", 0);
    if (!parent_id.ok()) return error_reply(parent_id.error());
    std::string parent_text = state.view.settings.baseline_recipe;
    if (parent_id.value() != 0) {
      const RunState* parent = state.run(static_cast<RunId>(parent_id.value()));
      if (parent == nullptr) {
        return error_reply("run " + std::to_string(parent_id.value()) + " does not exist");
      }
      parent_text = parent->recipe;
    }
    auto recipe = parse_recipe(parent_text, "the parent recipe");
    if (!recipe.ok()) return error_reply(recipe.error());
    Status changed = apply_changes(recipe.value(), request.value("changes", json()));
    if (!changed.ok()) return error_reply(changed.error());
    TunerProposal proposal;
    proposal.recipe = std::move(recipe).value();
    proposal.parent_run_id = static_cast<RunId>(parent_id.value());
    proposal.profile = request.value("profile", false);
    const json hypothesis = request.value("hypothesis", json::object());
    if (!hypothesis.is_object()) return error_reply("'hypothesis' must be an object");
    auto bottleneck = text_of(hypothesis, "bottleneck", true);
    auto mechanism = text_of(hypothesis, "mechanism", true);
    if (!bottleneck.ok() || !mechanism.ok() || bottleneck->empty() || mechanism->empty()) {
      return error_reply(
          "a proposal needs a hypothesis: the bottleneck it removes and the mechanism");
    }
    proposal.hypothesis.bottleneck = bottleneck.value();
    proposal.hypothesis.mechanism = mechanism.value();
    auto tag = text_of(hypothesis, "bottleneck_tag", false);
    if (!tag.ok()) return error_reply(tag.error());
    if (!tag->empty() && !bottleneck_of_tag(tag.value())) {
      return error_reply("hypothesis.bottleneck_tag '" + tag.value() +
                         "' is not a diagnosis tag (ep_a2a, ep_a2a_cross_node, tp_comm, cp_comm, "
                         "pp_p2p, bubble, dp_comm, optimizer, optimizer_offload, recompute, host, "
                         "compute, memory_short)");
    }
    proposal.hypothesis.bottleneck_tag = tag.value();
    const auto gain = hypothesis.find("expected_gain_fraction");
    if (gain != hypothesis.end() && gain->is_number()) {
      proposal.hypothesis.expected_gain_fraction = gain->get<double>();
    }
    const ProposalOutcome outcome = runtime.propose(proposal, kExternalActor);
    json out = {{"ok", true},
                {"proposal_id", outcome.proposal_id},
                {"admitted", outcome.admitted},
                {"search_over", outcome.search_over}};
    if (outcome.admitted) out["run_id"] = outcome.run_id;
    if (!outcome.refusal.empty()) out["refusal"] = outcome.refusal;
    if (!outcome.detail.empty()) out["detail"] = outcome.detail;
    return out;
  }

  json profile(const json& request) const {
    auto run_id = number_of(request, "run_id", 0);
    if (!run_id.ok()) return error_reply(run_id.error());
    const RunState* run = runtime.state().run(static_cast<RunId>(run_id.value()));
    if (run == nullptr)
      return error_reply("run " + std::to_string(run_id.value()) + " does not exist");
    if (!run->profile_analyzed) {
      return error_reply("run " + std::to_string(run->run_id) +
                         (run->profile && run->in_flight()
                              ? " is still running; its profile comes when it finishes"
                              : " was not profiled; propose with profile to profile a candidate"));
    }
    const ProfileAnalyzed& p = *run->profile_analyzed;
    json stages = json::array();
    for (const StageBreakdown& stage : p.stages) {
      json comm = json::object();
      for (const CommTime& c : stage.exposed_comm) comm[c.kind] = c.exposed_ms;
      stages.push_back({{"stage", stage.stage},
                        {"step_ms", stage.step_ms},
                        {"compute_ms", stage.compute_ms},
                        {"exposed_comm_ms", comm},
                        {"host_bound_ms", stage.host_bound_ms},
                        {"idle_ms", stage.idle_ms}});
    }
    return {{"ok", true},
            {"run_id", p.run_id},
            {"slowest_stage", p.slowest_stage},
            {"largest_cost", p.largest_cost},
            {"stages", stages}};
  }

  // One look for a finished run no wait has reported yet.
  json wait_once() {
    const ControlState& state = runtime.state();
    for (const auto& [id, run] : state.runs) {
      if (run.in_flight() || run.purpose == RunPurpose::kCheck || reported.contains(id)) continue;
      reported.insert(id);
      return {
          {"ok", true}, {"finished", run_json(run)}, {"runs_in_flight", state.runs_in_flight()}};
    }
    const Phase phase = phase_of(state);
    return {{"ok", true},
            {"finished", nullptr},
            {"runs_in_flight", state.runs_in_flight()},
            {"phase", to_string(phase)},
            {"search_over", phase == Phase::kShipping || phase == Phase::kDone}};
  }

  json log(const json& request) const {
    auto run_id = number_of(request, "run_id", 0);
    auto tail = number_of(request, "tail_bytes", kLogTailBytesDefault);
    if (!run_id.ok()) return error_reply(run_id.error());
    if (!tail.ok()) return error_reply(tail.error());
    const RunState* run = runtime.state().run(static_cast<RunId>(run_id.value()));
    if (run == nullptr)
      return error_reply("run " + std::to_string(run_id.value()) + " does not exist");
    Result<std::string> text = run->in_flight() || run->log_path.empty()
                                   ? launcher.read_log_so_far(run->run_id)
                                   : launcher.read_log(run->log_path);
    if (!text.ok()) return error_reply("run " + std::to_string(run->run_id) + ": " + text.error());
    std::string body = std::move(text).value();
    const std::size_t keep = std::min<std::size_t>(tail.value(), kLogTailBytesMax);
    if (body.size() > keep) body = body.substr(body.size() - keep);
    return {{"ok", true}, {"run_id", run->run_id}, {"in_flight", run->in_flight()}, {"log", body}};
  }

  json stop(const json& request) {
    auto evidence = text_of(request, "evidence", true);
    if (!evidence.ok() || evidence->empty()) {
      return error_reply("a stop needs evidence: why no lever left is worth its GPU-hours");
    }
    TunerStop stop;
    stop.evidence = evidence.value();
    std::set<std::string> levers;
    for (const auto& [id, proposal] : runtime.state().proposals) {
      for (const Lever& lever : proposal.levers) levers.insert(lever.name);
    }
    stop.levers_tested.assign(levers.begin(), levers.end());
    auto diagnosis = text_of(request, "last_diagnosis", false);
    if (diagnosis.ok()) stop.last_diagnosis = diagnosis.value();
    Status recorded = runtime.record_stop(stop, kExternalActor);
    if (!recorded.ok()) return error_reply(recorded.error());
    return {{"ok", true}, {"phase", to_string(phase_of(runtime.state()))}};
  }

  json deny(const json& request) {
    auto object = text_of(request, "object", true);
    auto rule = text_of(request, "rule", true);
    if (!object.ok() || !rule.ok()) return error_reply("a deny needs 'object' and 'rule'");
    Status recorded = runtime.record({AccessDenied{cut(object.value(), kDeniedTextBytesMax),
                                                   cut(rule.value(), kDeniedTextBytesMax)}},
                                     kHookActor);
    if (!recorded.ok()) return error_reply(recorded.error());
    return {{"ok", true}};
  }

  json read(const json& request) {
    auto tool = text_of(request, "tool", true);
    auto input = text_of(request, "input", false);
    auto location = text_of(request, "source_location", true);
    if (!tool.ok() || !input.ok() || !location.ok() || location->empty()) {
      return error_reply("a read needs 'tool' and 'source_location'");
    }
    ToolCalled called;
    called.tool = cut(tool.value(), kDeniedTextBytesMax);
    called.input = cut(input.value(), kToolResultBytesMax);
    called.allowed = true;
    called.source_location = cut(location.value(), kDeniedTextBytesMax);
    Status recorded = runtime.record({called}, kHookActor);
    if (!recorded.ok()) return error_reply(recorded.error());
    return {{"ok", true}};
  }

  json refuse_operation(const std::string& op) {
    const std::string object = cut("control socket operation '" + op + "'", kDeniedTextBytesMax);
    Status recorded = runtime.record(
        {AccessDenied{object, std::string("the control socket offers only ") + kOperations}},
        "agent:socket");
    return error_reply("unknown operation '" + op + "' (the control socket offers " + kOperations +
                       ")" + (recorded.ok() ? "; recorded" : ""));
  }
};

ControlPlane::ControlPlane(CampaignRuntime& runtime, Scheduler& scheduler, const Launcher& launcher)
    : impl_(std::make_unique<Impl>(runtime, scheduler, launcher)) {}

ControlPlane::~ControlPlane() = default;

void ControlPlane::close(const std::string& why) {
  std::lock_guard lock(impl_->mutex);
  impl_->closed = true;
  impl_->closed_why = why;
}

std::string ControlPlane::handle(const std::string& request_line) {
  Impl& impl = *impl_;
  const json request = json::parse(request_line, nullptr, false);
  if (request.is_discarded() || !request.is_object()) {
    return error_reply("a request is one JSON object on one line").dump();
  }
  const auto op_it = request.find("op");
  if (op_it == request.end() || !op_it->is_string()) {
    return error_reply("a request names its operation: {\"op\": ...}").dump();
  }
  const std::string op = op_it->get<std::string>();
  if (op == "ping") {
    if (auto why = impl.closed_reason()) return error_reply(*why).dump();
    return json{{"ok", true}}.dump();
  }
  if (op == "wait") {
    auto timeout = number_of(request, "timeout_ms", 600'000);
    if (!timeout.ok()) return error_reply(timeout.error()).dump();
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(std::min<std::uint64_t>(
                              timeout.value(), static_cast<std::uint64_t>(kWaitTimeoutMsMax)));
    for (;;) {
      json answer = impl.on_scheduler([&impl] { return impl.wait_once(); });
      const bool nothing_to_wait_for =
          answer.value("runs_in_flight", 0) == 0 || answer.value("search_over", false);
      if (!answer.value("ok", false) || !answer["finished"].is_null() || nothing_to_wait_for ||
          std::chrono::steady_clock::now() >= deadline) {
        if (answer.value("ok", false) && answer["finished"].is_null()) {
          answer["timed_out"] = !nothing_to_wait_for;
        }
        return answer.dump();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(kWaitPollMs));
    }
  }
  std::function<json()> work;
  if (op == "status") {
    work = [&impl] { return impl.status(); };
  } else if (op == "propose") {
    work = [&impl, &request] { return impl.propose(request); };
  } else if (op == "profile") {
    work = [&impl, &request] { return impl.profile(request); };
  } else if (op == "log") {
    work = [&impl, &request] { return impl.log(request); };
  } else if (op == "stop") {
    work = [&impl, &request] { return impl.stop(request); };
  } else if (op == "deny") {
    work = [&impl, &request] { return impl.deny(request); };
  } else if (op == "read") {
    work = [&impl, &request] { return impl.read(request); };
  } else {
    work = [&impl, op] { return impl.refuse_operation(op); };
  }
  return impl.on_scheduler(std::move(work)).dump();
}

}  // namespace attune::agent
