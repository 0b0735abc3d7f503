#include "adapters/tuner/llm/campaign_prompt.h"

#include <sstream>

#include "projections/number_format.h"
#include "projections/render.h"

namespace attune::llm {

std::string render_profile(const ProfileAnalyzed& profile) {
  std::ostringstream out;
  out << "Profile of run " << profile.run_id << ": slowest stage " << profile.slowest_stage
      << "; largest exposed cost: " << profile.largest_cost << "\n";
  for (const StageBreakdown& stage : profile.stages) {
    out << "- stage " << stage.stage << ": step " << format_fixed(stage.step_ms, 1)
        << " ms, compute " << format_fixed(stage.compute_ms, 1) << " ms";
    for (const CommTime& comm : stage.exposed_comm) {
      out << ", exposed " << comm.kind << " " << format_fixed(comm.exposed_ms, 1) << " ms";
    }
    out << ", host-bound " << format_fixed(stage.host_bound_ms, 1) << " ms, idle "
        << format_fixed(stage.idle_ms, 1) << " ms\n";
  }
  return out.str();
}

std::string last_diagnosis(const ControlState& state) {
  for (auto it = state.runs.rbegin(); it != state.runs.rend(); ++it) {
    if (it->second.profile_analyzed) return render_profile(*it->second.profile_analyzed);
  }
  return {};
}

std::string proposal_outcome(const ControlState& state, ProposalId proposal_id) {
  for (const RefusedProposal& refused : state.view.ledger.refused) {
    if (refused.proposal_id == proposal_id) {
      return std::string("refused (") + to_string(refused.reason) + "): " + refused.detail;
    }
  }
  for (const auto& [id, run] : state.runs) {
    if (run.proposal_id == proposal_id) return "admitted as run " + std::to_string(id);
  }
  return "not recorded: the control plane did not take it";
}

std::string render_campaign_state(const ControlState& state, const Recipe& baseline) {
  const CampaignView& view = state.view;
  const Budget& budget = view.budget;
  std::ostringstream out;
  out << "# Campaign state\n\n";
  out << "- Phase: " << to_string(phase_of(state)) << "\n";
  out << "- Baseline: " << format_fixed(view.baseline_band.mean_tokens_per_s_per_gpu, 1)
      << " tokens/s/GPU (mean of " << view.baseline_band.samples.size()
      << " calibration runs); noise band " << format_percent(view.baseline_band.band_fraction, 2)
      << "\n";
  out << "- Leader: "
      << (view.leader.run_id == 0 ? std::string("the baseline (run 0)")
                                  : "run " + std::to_string(view.leader.run_id))
      << " at " << format_fixed(view.leader.tokens_per_s_per_gpu, 1) << " tokens/s/GPU, "
      << format_percent(view.leader.gain_fraction, 2)
      << " over the baseline; a candidate must beat "
      << "it by more than the band\n";
  out << "- Budget: " << format_fixed(budget.remaining_gpu_hours, 2) << " GPU-hours left of "
      << format_fixed(budget.budget_gpu_hours, 2) << " (spent "
      << format_fixed(budget.tuner_gpu_hours, 2) << ", in flight "
      << format_fixed(budget.in_flight_gpu_hours, 2) << ", reserve "
      << format_fixed(budget.reserve_gpu_hours, 2) << "); mean launch "
      << format_fixed(budget.mean_launch_gpu_hours, 2) << " GPU-hours\n";
  out << "- LLM cost so far: $" << format_fixed(budget.llm_cost_usd, 4) << " over "
      << budget.llm_turns << " turns\n";
  out << "- Runs in flight: " << state.runs_in_flight() << " of at most "
      << view.settings.concurrency;
  bool first = true;
  for (const auto& [id, run] : state.runs) {
    if (!run.in_flight()) continue;
    out << (first ? " (" : ", ") << "run " << id;
    first = false;
  }
  out << (first ? "" : ")") << "\n\n";
  out << "## Ledger\n\n```\n" << render_ledger_text(view) << "```\n\n";
  const std::string diagnosis = last_diagnosis(state);
  out << "## Last diagnosis\n\n"
      << (diagnosis.empty() ? std::string("No run has been profiled yet.\n") : diagnosis) << "\n";
  const RunState* leader = state.run(view.leader.run_id);
  out << "## Leader's recipe (run " << view.leader.run_id << ")\n\n```\n"
      << (leader != nullptr && !leader->recipe.empty() ? leader->recipe : canonical_text(baseline))
      << "```\n";
  return out.str();
}

}  // namespace attune::llm
