// Leader: the recipe to beat, and the verdict on every run judged against it.
//
// Owns the judging rule of the search: the leader starts as the baseline (run 0) at the baseline
// mean; after the band is set, each measured search or retry run, in sequence order, replaces the
// leader only when (T_run - T_leader) / T_baseline_mean > band, strictly. Runs measured before the
// band is set are judged, in the order they were measured, when it is. Check runs are never
// judged; calibration runs get the verdict "calibration"; a failed search or retry run gets
// "failed". Only a run's first outcome (measurement or failure) counts. A pure value type.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "events/event.h"
#include "projections/baseline_band.h"
#include "projections/id_map.h"
#include "projections/id_set.h"

namespace attune {

struct RunVerdict {
  RunId run_id = 0;
  Verdict verdict = Verdict::kNotBetter;
  double tokens_per_s_per_gpu = 0.0;  // 0 for a failed run
  double gain_fraction = 0.0;         // (T - baseline mean) / baseline mean; 0 unless judged
  RunId leader_before = 0;            // 0 = the baseline
  RunId leader_after = 0;
  double band_fraction = 0.0;  // the band in force when judged
  std::uint64_t sequence = 0;  // the event that decided it

  friend bool operator==(const RunVerdict&, const RunVerdict&) = default;
};

struct LeaderChange {
  std::uint64_t sequence = 0;
  RunId previous_run_id = 0;
  RunId run_id = 0;
  double tokens_per_s_per_gpu = 0.0;
  double gain_fraction = 0.0;

  friend bool operator==(const LeaderChange&, const LeaderChange&) = default;
};

struct Leader {
  RunId run_id = 0;  // 0 = the baseline
  double tokens_per_s_per_gpu = 0.0;
  double gain_fraction = 0.0;  // over the baseline mean

  std::map<RunId, RunVerdict> verdicts;
  std::vector<LeaderChange> history;  // every change of leader, in order

  // Bookkeeping: admitted runs' purposes, runs whose outcome counted, and the search/retry
  // measurements waiting for the band.
  IdMap<RunPurpose> purposes;
  IdSet concluded_run_ids;
  std::vector<CalibrationSample> awaiting_band;
  // The runs whose verdict the last event decided (the band judges many at once), so that
  // readers copy only what changed.
  std::vector<RunId> decided_by_last_event;

  friend bool operator==(const Leader&, const Leader&) = default;
};

Leader initial_leader();

// Applies one event. `band` is the baseline-and-band projection after this same event.
void evolve(Leader& state, const Envelope& event, const BaselineBand& band);

// The judging rule: (candidate - leader) / baseline_mean > band_fraction, strictly. False when the
// baseline mean is not positive.
bool beats_by_more_than_band(double candidate_tokens_per_s_per_gpu,
                             double leader_tokens_per_s_per_gpu,
                             double baseline_mean_tokens_per_s_per_gpu, double band_fraction);

// (T - baseline mean) / baseline mean; 0 when the mean is not positive.
double gain_fraction_of(double tokens_per_s_per_gpu, double baseline_mean_tokens_per_s_per_gpu);

}  // namespace attune
