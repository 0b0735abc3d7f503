#include "core/control_state.h"

#include <algorithm>
#include <type_traits>

namespace attune {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::kNotOpened:
      return "not-opened";
    case Phase::kCalibrating:
      return "calibrating";
    case Phase::kSearching:
      return "searching";
    case Phase::kShipping:
      return "shipping";
    case Phase::kDone:
      return "done";
  }
  return "?";
}

std::uint32_t ControlState::runs_in_flight() const {
  std::uint32_t count = 0;
  for (const auto& [id, run] : runs) count += run.in_flight() ? 1 : 0;
  return count;
}

const RunState* ControlState::run(RunId run_id) const {
  auto found = runs.find(run_id);
  return found == runs.end() ? nullptr : &found->second;
}

ControlState initial_control_state() {
  ControlState state;
  state.view = initial_view();
  return state;
}

namespace {

// The run a launch admits, with the recipe and lineage of the proposal it carries out.
RunState admitted_run(const ControlState& state, const LaunchAdmitted& admitted) {
  RunState run;
  run.run_id = admitted.run_id;
  run.proposal_id = admitted.proposal_id;
  run.purpose = admitted.purpose;
  run.gpus = admitted.gpus;
  run.steps = admitted.steps;
  run.expected_gpu_hours = admitted.expected_gpu_hours;
  run.job_name = admitted.job_name;
  run.exclude_nodes = admitted.exclude_nodes;
  auto proposal = state.proposals.find(admitted.proposal_id);
  if (proposal != state.proposals.end()) {
    run.recipe = proposal->second.recipe;
    run.recipe_hash = proposal->second.recipe_hash;
    run.profile = proposal->second.profile;
    run.retry_of_run_id = proposal->second.retry_of_run_id;
    run.check_of_run_id = proposal->second.check_of_run_id;
  }
  return run;
}

}  // namespace

void evolve(ControlState& state, const Envelope& event) {
  evolve(state.view, event);
  const auto* refused = std::get_if<LaunchRefused>(&event.body);
  state.waiting_for_budget = refused != nullptr && refused->reason == RefusalReason::kBudget;
  auto find_run = [&](RunId run_id) -> RunState* {
    auto found = state.runs.find(run_id);
    return found == state.runs.end() ? nullptr : &found->second;
  };
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, CandidateProposed>) {
          state.proposals[body.proposal_id] = body;
        } else if constexpr (std::is_same_v<T, LaunchRefused>) {
          ++state.refusals_in_a_row;
        } else if constexpr (std::is_same_v<T, LaunchAdmitted>) {
          state.refusals_in_a_row = 0;
          state.runs[body.run_id] = admitted_run(state, body);
        } else if constexpr (std::is_same_v<T, JobSubmitted>) {
          if (RunState* run = find_run(body.run_id)) {
            run->submitted = true;
            run->launcher_job_id = body.launcher_job_id;
          }
        } else if constexpr (std::is_same_v<T, JobStarted>) {
          if (RunState* run = find_run(body.run_id)) {
            run->started = true;
            run->admitted_at_unix_ns = body.admitted_at_unix_ns;
            run->nodes = body.nodes;
          }
        } else if constexpr (std::is_same_v<T, JobFinished>) {
          if (RunState* run = find_run(body.run_id)) {
            run->finished = true;
            run->released_at_unix_ns = body.released_at_unix_ns;
            run->final_state = body.final_state;
            run->log_path = body.log_path;
          }
        } else if constexpr (std::is_same_v<T, ProfileAnalyzed>) {
          if (RunState* run = find_run(body.run_id)) run->profile_analyzed = body;
        } else if constexpr (std::is_same_v<T, RunMeasured>) {
          if (RunState* run = find_run(body.run_id)) run->measured = body;
        } else if constexpr (std::is_same_v<T, RunFailed>) {
          if (RunState* run = find_run(body.run_id)) run->failed = body;
        } else if constexpr (std::is_same_v<T, Charged>) {
          if (RunState* run = find_run(body.run_id)) run->charged = true;
        } else if constexpr (std::is_same_v<T, ConvergenceChecked>) {
          state.gate_results[body.candidate_run_id] = body;
        } else if constexpr (std::is_same_v<T, StopRecorded>) {
          state.stop_recorded = true;
        } else if constexpr (std::is_same_v<T, RecipeShipped>) {
          state.shipped = true;
        } else if constexpr (std::is_same_v<T, LeverRuleLearned>) {
          state.learned_rules.push_back(LearnedRuleRecord{event.sequence, body});
        }
      },
      event.body);
}

ControlState fold_campaign(std::span<const Envelope> events) {
  ControlState state = initial_control_state();
  for (const Envelope& event : events) evolve(state, event);
  return state;
}

Phase phase_of(const ControlState& state) {
  if (!state.view.opened) return Phase::kNotOpened;
  if (state.shipped) return Phase::kDone;
  if (state.stop_recorded) return Phase::kShipping;
  if (!state.view.baseline_band.band_set) return Phase::kCalibrating;
  return Phase::kSearching;
}

std::uint32_t calibration_runs_measured(const ControlState& state) {
  std::uint32_t count = 0;
  for (const auto& [id, run] : state.runs) {
    count += run.purpose == RunPurpose::kCalibration && run.measured ? 1 : 0;
  }
  return count;
}

std::uint32_t calibration_runs_in_flight(const ControlState& state) {
  std::uint32_t count = 0;
  for (const auto& [id, run] : state.runs) {
    count += run.purpose == RunPurpose::kCalibration && run.in_flight() ? 1 : 0;
  }
  return count;
}

CalibrationPlan plan_calibration(std::vector<CalibrationEntry> entries, std::uint32_t runs,
                                 double floor_fraction, double k) {
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.run_id < b.run_id; });
  std::vector<CalibrationSample> first;  // the first `runs` measured
  for (const CalibrationEntry& entry : entries) {
    if (entry.tokens_per_s_per_gpu && first.size() < runs) {
      first.push_back({entry.run_id, *entry.tokens_per_s_per_gpu});
    }
  }
  CalibrationPlan plan;
  if (first.size() < runs || first.empty()) return plan;
  const std::vector<CalibrationOutlier> outliers =
      flagged_calibration_runs(first, floor_fraction, k);
  const auto named = [&first, &outliers](bool leave_out, const std::vector<RunId>& in_place) {
    std::vector<RunId> ids;
    for (const CalibrationSample& sample : first) {
      const bool outlier = std::any_of(outliers.begin(), outliers.end(),
                                       [&](const auto& o) { return o.run_id == sample.run_id; });
      if (!(leave_out && outlier)) ids.push_back(sample.run_id);
    }
    ids.insert(ids.end(), in_place.begin(), in_place.end());
    return ids;
  };
  if (outliers.empty()) {
    plan.band_run_ids = named(false, {});
    return plan;
  }
  for (const CalibrationOutlier& outlier : outliers) plan.outlier_run_ids.push_back(outlier.run_id);
  const RunId last = first.back().run_id;
  std::uint32_t launched = 0;
  bool waiting = false;
  std::vector<RunId> measured;
  for (const CalibrationEntry& entry : entries) {
    if (entry.run_id <= last) continue;
    ++launched;
    if (entry.tokens_per_s_per_gpu) measured.push_back(entry.run_id);
    waiting = waiting || !entry.finished;
  }
  if (launched < outliers.size()) {
    plan.reruns_wanted = static_cast<std::uint32_t>(outliers.size()) - launched;
  } else if (!waiting) {
    plan.band_run_ids = measured.empty() ? named(false, {}) : named(true, measured);
  }
  return plan;
}

std::vector<std::string> nodes_of_runs(const ControlState& state, std::span<const RunId> runs) {
  std::set<std::string> nodes;
  for (const RunId id : runs) {
    if (const RunState* run = state.run(id)) nodes.insert(run->nodes.begin(), run->nodes.end());
  }
  return {nodes.begin(), nodes.end()};
}

void append_nodes(std::vector<std::string>& into, std::span<const std::string> nodes) {
  for (const std::string& node : nodes) {
    if (std::find(into.begin(), into.end(), node) == into.end()) into.push_back(node);
  }
}

std::vector<std::string> slow_node_suspects(const ControlState& state) {
  return nodes_of_runs(state, state.view.baseline_band.left_out_run_ids);
}

std::vector<CalibrationEntry> calibration_entries(const ControlState& state) {
  std::vector<CalibrationEntry> entries;
  for (const auto& [id, run] : state.runs) {
    if (run.purpose != RunPurpose::kCalibration) continue;
    CalibrationEntry entry{id, std::nullopt, run.finished};
    if (run.measured) entry.tokens_per_s_per_gpu = run.measured->tokens_per_sec_per_gpu;
    entries.push_back(entry);
  }
  return entries;
}

}  // namespace attune
