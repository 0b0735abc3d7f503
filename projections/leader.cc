#include "projections/leader.h"

#include <type_traits>

#include "events/assert.h"

namespace attune {

namespace {

bool is_judged_purpose(RunPurpose purpose) {
  return purpose == RunPurpose::kSearch || purpose == RunPurpose::kRetry;
}

void judge(Leader& state, const CalibrationSample& measured, const BaselineBand& band,
           std::uint64_t sequence) {
  const double mean = band.mean_tokens_per_s_per_gpu;
  RunVerdict verdict;
  verdict.run_id = measured.run_id;
  verdict.tokens_per_s_per_gpu = measured.tokens_per_s_per_gpu;
  verdict.gain_fraction = gain_fraction_of(measured.tokens_per_s_per_gpu, mean);
  verdict.leader_before = state.run_id;
  verdict.band_fraction = band.band_fraction;
  verdict.sequence = sequence;
  if (beats_by_more_than_band(measured.tokens_per_s_per_gpu, state.tokens_per_s_per_gpu, mean,
                              band.band_fraction)) {
    state.history.push_back({sequence, state.run_id, measured.run_id, measured.tokens_per_s_per_gpu,
                             verdict.gain_fraction});
    state.run_id = measured.run_id;
    state.tokens_per_s_per_gpu = measured.tokens_per_s_per_gpu;
    verdict.verdict = Verdict::kNewLeader;
  } else {
    verdict.verdict = Verdict::kNotBetter;
  }
  verdict.leader_after = state.run_id;
  state.verdicts[measured.run_id] = verdict;
  state.decided_by_last_event.push_back(measured.run_id);
}

void record_unjudged(Leader& state, RunId run_id, Verdict verdict, double tokens_per_s_per_gpu,
                     const BaselineBand& band, std::uint64_t sequence) {
  state.verdicts[run_id] = RunVerdict{run_id,       verdict,      tokens_per_s_per_gpu, 0.0,
                                      state.run_id, state.run_id, band.band_fraction,   sequence};
  state.decided_by_last_event.push_back(run_id);
}

// Returns the run's purpose when the run was admitted and this is its first outcome.
const RunPurpose* first_outcome(Leader& state, RunId run_id) {
  const RunPurpose* purpose = state.purposes.find(run_id);
  if (purpose == nullptr) return nullptr;
  if (!state.concluded_run_ids.insert(run_id)) return nullptr;
  return purpose;
}

}  // namespace

Leader initial_leader() { return Leader{}; }

void evolve(Leader& state, const Envelope& event, const BaselineBand& band) {
  // The baseline leads at the baseline mean, which moves while calibration is live and is
  // replaced when the band is set; set it before any judging against it.
  if (state.run_id == 0) state.tokens_per_s_per_gpu = band.mean_tokens_per_s_per_gpu;
  state.decided_by_last_event.clear();
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, LaunchAdmitted>) {
          // Run id 0 names the baseline; a run admitted under it (an audit finding) is never
          // judged, so the leader's id always says which recipe leads.
          if (body.run_id != 0) state.purposes.emplace(body.run_id, body.purpose);
        } else if constexpr (std::is_same_v<T, RunMeasured>) {
          const RunPurpose* purpose = first_outcome(state, body.run_id);
          if (purpose == nullptr) return;
          const CalibrationSample measured{body.run_id, body.tokens_per_sec_per_gpu};
          if (*purpose == RunPurpose::kCalibration) {
            record_unjudged(state, body.run_id, Verdict::kCalibration, body.tokens_per_sec_per_gpu,
                            band, event.sequence);
          } else if (is_judged_purpose(*purpose)) {
            if (band.band_set) {
              judge(state, measured, band, event.sequence);
            } else {
              state.awaiting_band.push_back(measured);
            }
          }
        } else if constexpr (std::is_same_v<T, RunFailed>) {
          const RunPurpose* purpose = first_outcome(state, body.run_id);
          if (purpose == nullptr) return;
          if (*purpose == RunPurpose::kCalibration) {
            record_unjudged(state, body.run_id, Verdict::kCalibration, 0.0, band, event.sequence);
          } else if (is_judged_purpose(*purpose)) {
            record_unjudged(state, body.run_id, Verdict::kFailed, 0.0, band, event.sequence);
          }
        } else if constexpr (std::is_same_v<T, BandSet>) {
          for (const CalibrationSample& measured : state.awaiting_band) {
            judge(state, measured, band, event.sequence);
          }
          state.awaiting_band.clear();
        }
      },
      event.body);
  ATTUNE_ASSERT(state.run_id == 0 || state.verdicts.at(state.run_id).verdict == Verdict::kNewLeader,
                "the leader is a run judged a new leader");
  state.gain_fraction =
      gain_fraction_of(state.tokens_per_s_per_gpu, band.mean_tokens_per_s_per_gpu);
}

bool beats_by_more_than_band(double candidate_tokens_per_s_per_gpu,
                             double leader_tokens_per_s_per_gpu,
                             double baseline_mean_tokens_per_s_per_gpu, double band_fraction) {
  if (!(baseline_mean_tokens_per_s_per_gpu > 0.0)) return false;
  return (candidate_tokens_per_s_per_gpu - leader_tokens_per_s_per_gpu) /
             baseline_mean_tokens_per_s_per_gpu >
         band_fraction;
}

double gain_fraction_of(double tokens_per_s_per_gpu, double baseline_mean_tokens_per_s_per_gpu) {
  if (!(baseline_mean_tokens_per_s_per_gpu > 0.0)) return 0.0;
  return (tokens_per_s_per_gpu - baseline_mean_tokens_per_s_per_gpu) /
         baseline_mean_tokens_per_s_per_gpu;
}

}  // namespace attune
