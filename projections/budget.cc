#include "projections/budget.h"

#include <algorithm>
#include <type_traits>

#include "events/assert.h"

namespace attune {

namespace {

// Negative and NaN figures count as zero, so no account can go negative.
double non_negative(double gpu_hours) { return std::max(0.0, gpu_hours); }

void add_charge(Budget& state, const Charged& charge) {
  const double gpu_hours = non_negative(charge.gpu_hours);
  state.charged_gpu_hours += gpu_hours;
  BudgetRun* run = state.runs.find(charge.run_id);
  const bool is_check = run != nullptr && run->purpose == RunPurpose::kCheck;
  if (run != nullptr) run->charged = true;
  state.uncharged_run_ids.erase(charge.run_id);
  if (charge.account == Account::kInfra) {
    state.infra_gpu_hours += gpu_hours;
  } else if (is_check) {
    state.checks_gpu_hours += gpu_hours;
  } else {
    state.tuner_gpu_hours += gpu_hours;
  }
}

void refresh_derived(Budget& state) {
  state.reserve_gpu_hours = non_negative(reserve_gpu_hours_of(
      state.reserve_checks, state.mean_launch_gpu_hours, state.check_steps, state.steps_per_run));
  // Summed afresh in run order rather than added and subtracted, so rounding cannot leave a
  // negative residue once every run is charged. Only uncharged runs are visited: replay stays
  // linear in the number of events.
  double in_flight = 0.0;
  for (RunId run_id : state.uncharged_run_ids)
    in_flight += state.runs.find(run_id)->expected_gpu_hours;
  state.in_flight_gpu_hours = in_flight;
  const double budget = non_negative(state.budget_gpu_hours);
  state.remaining_gpu_hours = non_negative(budget - state.reserve_gpu_hours -
                                           state.tuner_gpu_hours - state.in_flight_gpu_hours);
  state.reserve_left_gpu_hours = non_negative(state.reserve_gpu_hours - state.checks_gpu_hours);
  state.overshoot_gpu_hours = non_negative(state.tuner_gpu_hours + state.checks_gpu_hours - budget);
  ATTUNE_ASSERT(state.tuner_gpu_hours >= 0.0 && state.checks_gpu_hours >= 0.0 &&
                    state.infra_gpu_hours >= 0.0 && state.in_flight_gpu_hours >= 0.0,
                "the budget's accounts never go negative");
}

}  // namespace

Budget initial_budget() { return Budget{}; }

void evolve(Budget& state, const Envelope& event) {
  std::visit(
      [&state](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, CampaignOpened>) {
          if (state.opened) return;
          state.opened = true;
          state.budget_auto = body.budget_auto;
          state.reserve_checks = body.reserve_checks;
          state.check_steps = body.check_steps;
          state.steps_per_run = body.steps_per_run;
          state.budget_gpu_hours = non_negative(body.budget_gpu_hours);
        } else if constexpr (std::is_same_v<T, LaunchAdmitted>) {
          const bool added = state.runs.emplace(
              body.run_id, BudgetRun{body.purpose, non_negative(body.expected_gpu_hours), false});
          if (added) state.uncharged_run_ids.insert(body.run_id);
        } else if constexpr (std::is_same_v<T, Charged>) {
          add_charge(state, body);
        } else if constexpr (std::is_same_v<T, LlmCharged>) {
          ++state.llm_turns;
          state.llm_input_tokens += body.input_tokens;
          state.llm_output_tokens += body.output_tokens;
          state.llm_cost_usd += non_negative(body.cost_usd);
        } else if constexpr (std::is_same_v<T, BandSet>) {
          if (body.budget_gpu_hours > 0.0) state.budget_gpu_hours = body.budget_gpu_hours;
          state.mean_launch_gpu_hours = non_negative(body.mean_launch_gpu_hours);
        }
      },
      event.body);
  refresh_derived(state);
}

double reserve_gpu_hours_of(std::uint32_t reserve_checks, double mean_launch_gpu_hours,
                            std::uint32_t check_steps, std::uint32_t steps_per_run) {
  if (steps_per_run == 0) return 0.0;
  return static_cast<double>(reserve_checks) * mean_launch_gpu_hours *
         static_cast<double>(check_steps) / static_cast<double>(steps_per_run);
}

}  // namespace attune
