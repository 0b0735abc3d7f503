#include "events/event_json.h"

#include <string_view>
#include <variant>
#include <vector>

namespace attune {
namespace {

using nlohmann::json;

json fields(const SettingChange& value) {
  return {{"kind", to_string(value.kind)},
          {"name", value.name},
          {"before_present", value.before_present},
          {"before", value.before},
          {"after_present", value.after_present},
          {"after", value.after},
          {"objective_class", to_string(value.objective_class)}};
}

json fields(const Lever& value) {
  return {{"name", value.name}, {"objective_class", to_string(value.objective_class)}};
}

json fields(const Hypothesis& value) {
  return {{"bottleneck", value.bottleneck},
          {"mechanism", value.mechanism},
          {"expected_gain_fraction", value.expected_gain_fraction},
          {"bottleneck_tag", value.bottleneck_tag}};
}

json fields(const CommTime& value) {
  return {{"kind", value.kind}, {"exposed_ms", value.exposed_ms}};
}

json fields(const ConvergenceCheck& value) {
  return {{"name", value.name},
          {"measured", value.measured},
          {"threshold", value.threshold},
          {"passed", value.passed}};
}

// StageBreakdown holds a list itself, so it is declared before the list renderer that calls it.
json fields(const StageBreakdown& value);

template <typename T>
json array_of(const std::vector<T>& values) {
  json array = json::array();
  for (const T& value : values) array.push_back(fields(value));
  return array;
}

json fields(const StageBreakdown& value) {
  return {{"stage", value.stage},
          {"step_ms", value.step_ms},
          {"compute_ms", value.compute_ms},
          {"exposed_comm", array_of(value.exposed_comm)},
          {"host_bound_ms", value.host_bound_ms},
          {"idle_ms", value.idle_ms}};
}

json fields(const CampaignOpened& value) {
  return {{"name", value.name},
          {"model", value.model},
          {"hardware", value.hardware},
          {"gpu_count", value.gpu_count},
          {"seq_length", value.seq_length},
          {"global_batch", value.global_batch},
          {"precision", value.precision},
          {"data", value.data},
          {"baseline_recipe", value.baseline_recipe},
          {"baseline_recipe_hash", value.baseline_recipe_hash},
          {"policy_name", value.policy_name},
          {"policy_hash", value.policy_hash},
          {"budget_auto", value.budget_auto},
          {"budget_gpu_hours", value.budget_gpu_hours},
          {"reserve_checks", value.reserve_checks},
          {"concurrency", value.concurrency},
          {"steps_per_run", value.steps_per_run},
          {"window_first_step", value.window_first_step},
          {"window_last_step", value.window_last_step},
          {"check_steps", value.check_steps},
          {"hang_timeout_minutes", value.hang_timeout_minutes},
          {"band_floor_fraction", value.band_floor_fraction},
          {"band_k", value.band_k},
          {"calibration_runs", value.calibration_runs},
          {"tuner", value.tuner},
          {"seed", value.seed},
          {"reality_seed", value.reality_seed},
          {"campaign_file_hash", value.campaign_file_hash},
          {"launcher", value.launcher},
          {"policy_path", value.policy_path},
          {"job_template", value.job_template},
          {"expected_seconds_per_step", value.expected_seconds_per_step},
          {"learned_rules", value.learned_rules},
          {"learned_rules_path", value.learned_rules_path},
          {"tuner_options", value.tuner_options},
          {"tuner_black_box", value.tuner_black_box},
          {"lever_groups_hash", value.lever_groups_hash},
          {"usd_per_gpu_hour", value.usd_per_gpu_hour},
          {"sim_stack", value.sim_stack}};
}

json fields(const CandidateProposed& value) {
  return {{"proposal_id", value.proposal_id},
          {"purpose", to_string(value.purpose)},
          {"recipe", value.recipe},
          {"recipe_hash", value.recipe_hash},
          {"diff", array_of(value.diff)},
          {"levers", array_of(value.levers)},
          {"hypothesis", fields(value.hypothesis)},
          {"profile", value.profile},
          {"retry_of_run_id", value.retry_of_run_id},
          {"check_of_run_id", value.check_of_run_id},
          {"parent_run_id", value.parent_run_id}};
}

json fields(const LaunchRefused& value) {
  return {{"proposal_id", value.proposal_id},
          {"reason", to_string(value.reason)},
          {"detail", value.detail}};
}

json fields(const LaunchAdmitted& value) {
  return {{"proposal_id", value.proposal_id},
          {"run_id", value.run_id},
          {"purpose", to_string(value.purpose)},
          {"gpus", value.gpus},
          {"steps", value.steps},
          {"expected_gpu_hours", value.expected_gpu_hours},
          {"exclude_nodes", value.exclude_nodes},
          {"job_name", value.job_name}};
}

json fields(const JobSubmitted& value) {
  return {{"run_id", value.run_id},
          {"launcher_job_id", value.launcher_job_id},
          {"job_name", value.job_name},
          {"at_unix_ns", value.at_unix_ns}};
}

json fields(const JobStarted& value) {
  return {{"run_id", value.run_id},
          {"admitted_at_unix_ns", value.admitted_at_unix_ns},
          {"nodes", value.nodes}};
}

json fields(const JobFinished& value) {
  return {{"run_id", value.run_id},
          {"released_at_unix_ns", value.released_at_unix_ns},
          {"final_state", value.final_state},
          {"facts_source", value.facts_source},
          {"log_path", value.log_path}};
}

json fields(const RunMeasured& value) {
  return {{"run_id", value.run_id},
          {"tokens_per_s_per_gpu", value.tokens_per_sec_per_gpu},
          {"step_times_ms", value.step_times_ms},
          {"window_rsd", value.window_rsd},
          {"peak_memory_gib_by_stage", value.peak_memory_gib_by_stage},
          {"loss_curve", value.loss_curve},
          {"resolved_args_hash", value.resolved_args_hash}};
}

json fields(const RunFailed& value) {
  return {{"run_id", value.run_id},
          {"failure_class", to_string(value.failure_class)},
          {"message", value.message},
          {"node", value.node},
          {"cause", to_string(value.cause)}};
}

json fields(const Charged& value) {
  return {{"run_id", value.run_id},
          {"account", to_string(value.account)},
          {"gpus", value.gpus},
          {"admitted_at_unix_ns", value.admitted_at_unix_ns},
          {"released_at_unix_ns", value.released_at_unix_ns},
          {"gpu_hours", value.gpu_hours}};
}

json fields(const BandSet& value) {
  return {{"calibration_run_ids", value.calibration_run_ids},
          {"mean_tokens_per_s_per_gpu", value.mean_tokens_per_sec_per_gpu},
          {"rsd", value.rsd},
          {"band_fraction", value.band_fraction},
          {"budget_gpu_hours", value.budget_gpu_hours},
          {"mean_launch_gpu_hours", value.mean_launch_gpu_hours}};
}

json fields(const VerdictRecorded& value) {
  return {{"run_id", value.run_id},
          {"verdict", to_string(value.verdict)},
          {"gain_fraction", value.gain_fraction},
          {"leader_before", value.leader_before},
          {"leader_after", value.leader_after},
          {"band_fraction", value.band_fraction}};
}

json fields(const ProfileAnalyzed& value) {
  return {{"run_id", value.run_id},
          {"stages", array_of(value.stages)},
          {"slowest_stage", value.slowest_stage},
          {"largest_cost", value.largest_cost},
          {"trace_paths", value.trace_paths}};
}

json fields(const StopRecorded& value) {
  return {{"reason", to_string(value.reason)},
          {"leader_run_id", value.leader_run_id},
          {"levers_tested", value.levers_tested},
          {"last_diagnosis", value.last_diagnosis},
          {"evidence", value.evidence}};
}

json fields(const ConvergenceChecked& value) {
  return {{"candidate_run_id", value.candidate_run_id},
          {"check_run_id", value.check_run_id},
          {"has_verdict", value.has_verdict},
          {"layer1_passed", value.layer1_passed},
          {"layer2_passed", value.layer2_passed},
          {"checks", array_of(value.checks)},
          {"reason", value.reason}};
}

json fields(const RecipeShipped& value) {
  return {{"run_id", value.run_id},
          {"is_baseline", value.is_baseline},
          {"recipe", value.recipe},
          {"recipe_hash", value.recipe_hash},
          {"tokens_per_s_per_gpu", value.tokens_per_sec_per_gpu},
          {"gain_fraction", value.gain_fraction},
          {"evidence", value.evidence}};
}

json fields(const AccessDenied& value) { return {{"object", value.object}, {"rule", value.rule}}; }

json fields(const LeverRuleLearned& value) {
  return {{"lever", value.lever},
          {"rule", value.rule},
          {"evidence_run_ids", value.evidence_run_ids},
          {"when", value.when},
          {"effect", value.effect},
          {"action", value.action}};
}

json fields(const ToolCalled& value) {
  return {{"tool", value.tool},
          {"input", value.input},
          {"result", value.result},
          {"allowed", value.allowed},
          {"source_location", value.source_location},
          {"turn", value.turn}};
}

json fields(const LlmCharged& value) {
  return {{"turn", value.turn},
          {"model", value.model},
          {"input_tokens", value.input_tokens},
          {"output_tokens", value.output_tokens},
          {"cost_usd", value.cost_usd}};
}

// RFC 4180: a field is quoted, with its quotes doubled, when it holds a separator, a quote or a
// line break.
std::string csv_quoted(std::string_view value) {
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '"') quoted.push_back('"');
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}

std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(value);
  return csv_quoted(value);
}

}  // namespace

nlohmann::json event_to_json(const Envelope& envelope) {
  return {{"sequence", envelope.sequence},
          {"campaign_id", envelope.campaign_id},
          {"recorded_at_unix_ns", envelope.recorded_at_unix_ns},
          {"actor", envelope.actor},
          {"prev_hash", to_hex(envelope.prev_hash)},
          {"hash", to_hex(envelope.hash)},
          {"type", body_name(envelope.body)},
          {"body", std::visit([](const auto& body) { return fields(body); }, envelope.body)}};
}

const char* event_csv_header() {
  return "sequence,campaign_id,recorded_at_unix_ns,actor,type,prev_hash,hash,"
         "body";
}

std::string event_to_csv_row(const Envelope& envelope) {
  const json body = std::visit([](const auto& value) { return fields(value); }, envelope.body);
  const std::string body_text = body.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string row;
  row += std::to_string(envelope.sequence) + ',';
  row += csv_field(envelope.campaign_id) + ',';
  row += std::to_string(envelope.recorded_at_unix_ns) + ',';
  row += csv_field(envelope.actor) + ',';
  row += std::string(body_name(envelope.body)) + ',';
  row += to_hex(envelope.prev_hash) + ',';
  row += to_hex(envelope.hash) + ',';
  row += csv_quoted(body_text);
  return row;
}

}  // namespace attune
