// Budget: the campaign's GPU-hour books — what is spent, in flight, held back and left.
//
// Owns the accounts every launch is charged to. The budget comes from CampaignOpened and is
// replaced by a BandSet that carries one (budget "auto" is sized at calibration). The reserve
// holds back reserve_checks check runs: reserve_checks x mean launch cost x check_steps /
// steps_per_run, the mean launch cost being BandSet's (0 before it). Accounts: tuner (tuner
// charges of non-check runs), checks (tuner charges of check runs, drawn from the reserve), infra
// (infrastructure charges, never touching the tuner's budget), in flight (expected cost of
// admitted runs not charged yet). Exactly tuner + checks + infra == sum of all charges, each sum
// taken in event order. LLM turns (LlmCharged) are summed on their own account, in US dollars and
// tokens; they never touch the GPU-hour accounts. No figure is ever negative: a negative charge or
// expected cost (an audit finding) counts as zero. A pure value type.
#pragma once

#include <cstdint>
#include <map>
#include <set>

#include "events/event.h"
#include "projections/id_map.h"

namespace attune {

struct BudgetRun {
  RunPurpose purpose = RunPurpose::kSearch;
  double expected_gpu_hours = 0.0;
  bool charged = false;

  friend bool operator==(const BudgetRun&, const BudgetRun&) = default;
};

struct Budget {
  // Settings from the first CampaignOpened, then BandSet.
  bool opened = false;
  bool budget_auto = false;
  std::uint32_t reserve_checks = CampaignOpened{}.reserve_checks;
  std::uint32_t check_steps = CampaignOpened{}.check_steps;
  std::uint32_t steps_per_run = CampaignOpened{}.steps_per_run;
  double budget_gpu_hours = 0.0;
  double mean_launch_gpu_hours = 0.0;

  // Accounts, each a sum in event order.
  double tuner_gpu_hours = 0.0;
  double checks_gpu_hours = 0.0;
  double infra_gpu_hours = 0.0;
  double charged_gpu_hours = 0.0;  // every charge, whatever the account

  // The LLM account (LlmCharged): an LLM tuner's turns, tokens and cost, beside the GPU-hours.
  std::uint32_t llm_turns = 0;
  std::uint64_t llm_input_tokens = 0;
  std::uint64_t llm_output_tokens = 0;
  double llm_cost_usd = 0.0;

  // Derived after every event.
  double reserve_gpu_hours = 0.0;
  double in_flight_gpu_hours = 0.0;
  double remaining_gpu_hours = 0.0;     // max(0, budget - reserve - tuner - in flight)
  double reserve_left_gpu_hours = 0.0;  // max(0, reserve - checks)
  double overshoot_gpu_hours = 0.0;     // max(0, tuner + checks - budget)

  IdMap<BudgetRun> runs;              // admitted runs
  std::set<RunId> uncharged_run_ids;  // admitted runs without a charge yet

  friend bool operator==(const Budget&, const Budget&) = default;
};

Budget initial_budget();

void evolve(Budget& state, const Envelope& event);

// reserve_checks x mean launch cost x check_steps / steps_per_run; 0 when steps_per_run is 0.
double reserve_gpu_hours_of(std::uint32_t reserve_checks, double mean_launch_gpu_hours,
                            std::uint32_t check_steps, std::uint32_t steps_per_run);

}  // namespace attune
