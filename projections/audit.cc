#include "projections/audit.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "projections/number_format.h"

namespace attune {

namespace {

void add_finding(Audit& state, std::uint64_t sequence, std::string message) {
  state.findings.push_back({sequence, std::move(message)});
}

std::string run_text(RunId run_id) { return "run " + std::to_string(run_id); }

// Finds the admitted run, or records that the event refers to a run never admitted.
AuditRun* admitted_run(Audit& state, RunId run_id, const char* event_name, std::uint64_t sequence) {
  if (AuditRun* run = state.runs.find(run_id)) return run;
  add_finding(state, sequence,
              std::string(event_name) + " for " + run_text(run_id) + ", which was never admitted");
  return nullptr;
}

bool charge_matches_hours(const Charged& charge) {
  const double expected =
      gpu_hours_of(charge.gpus, charge.admitted_at_unix_ns, charge.released_at_unix_ns);
  const double scale = std::max(std::fabs(expected), std::fabs(charge.gpu_hours));
  return std::fabs(charge.gpu_hours - expected) <= kChargeRelativeTolerance * scale;
}

void check_envelope(Audit& state, const Envelope& event) {
  const std::uint64_t seq = event.sequence;
  if (state.event_count == 0) {
    if (seq != 1) {
      add_finding(state, seq, "sequence numbers start at " + std::to_string(seq) + ", not 1");
    }
    if (event.prev_hash != Digest{}) add_finding(state, seq, "first event's prev_hash is not zero");
    state.campaign_id = event.campaign_id;
    if (!std::holds_alternative<CampaignOpened>(event.body)) {
      add_finding(state, seq,
                  std::string("first event is ") + body_name(event.body) + ", not CampaignOpened");
    }
    return;
  }
  if (seq != state.last_sequence + 1) {
    add_finding(state, seq,
                "sequence number " + std::to_string(seq) + " follows " +
                    std::to_string(state.last_sequence));
  }
  if (event.prev_hash != state.last_hash) {
    add_finding(state, seq,
                "prev_hash does not match the hash of the previous event (sequence " +
                    std::to_string(state.last_sequence) + ")");
  }
  if (event.campaign_id != state.campaign_id) {
    add_finding(state, seq,
                "campaign id '" + event.campaign_id + "' differs from the first event's '" +
                    state.campaign_id + "'");
  }
}

void check_charge(Audit& state, const Charged& charge, std::uint64_t seq) {
  const ChargeEntry entry{seq,
                          charge.run_id,
                          charge.account,
                          charge.gpus,
                          charge.admitted_at_unix_ns,
                          charge.released_at_unix_ns,
                          charge.gpu_hours};
  state.charges.push_back(entry);
  const std::string run = run_text(charge.run_id);
  if (charge.released_at_unix_ns < charge.admitted_at_unix_ns) {
    add_finding(state, seq,
                "charge for " + run + " releases at " + std::to_string(charge.released_at_unix_ns) +
                    " ns, before its admission at " + std::to_string(charge.admitted_at_unix_ns) +
                    " ns");
  }
  if (!charge_matches_hours(charge)) {
    add_finding(state, seq,
                "charge for " + run + " is " + format_fixed(charge.gpu_hours, 9) + " GPU-hours; " +
                    std::to_string(charge.gpus) + " GPUs from admission to release make " +
                    format_fixed(gpu_hours_of(charge.gpus, charge.admitted_at_unix_ns,
                                              charge.released_at_unix_ns),
                                 9));
  }
  AuditRun* admitted = admitted_run(state, charge.run_id, "Charged", seq);
  if (admitted == nullptr) return;
  if (admitted->first_charge) {
    add_finding(state, seq,
                run + " charged again (first charge at sequence " +
                    std::to_string(admitted->first_charge->sequence) + ")");
    return;
  }
  admitted->first_charge = entry;
  if (charge.gpus != admitted->gpus) {
    add_finding(state, seq,
                "charge for " + run + " names " + std::to_string(charge.gpus) +
                    " GPUs; the run was admitted with " + std::to_string(admitted->gpus));
  }
  if (admitted->started_at_unix_ns && *admitted->started_at_unix_ns != charge.admitted_at_unix_ns) {
    add_finding(state, seq,
                "charge for " + run + " starts at " + std::to_string(charge.admitted_at_unix_ns) +
                    " ns; the job was admitted at " +
                    std::to_string(*admitted->started_at_unix_ns) + " ns");
  }
  if (admitted->finished_at_unix_ns &&
      *admitted->finished_at_unix_ns != charge.released_at_unix_ns) {
    add_finding(state, seq,
                "charge for " + run + " ends at " + std::to_string(charge.released_at_unix_ns) +
                    " ns; the job was released at " +
                    std::to_string(*admitted->finished_at_unix_ns) + " ns");
  }
}

void check_job_started(Audit& state, const JobStarted& started, std::uint64_t seq) {
  AuditRun* run = admitted_run(state, started.run_id, "JobStarted", seq);
  if (run == nullptr) return;
  if (run->started_at_unix_ns) {
    add_finding(state, seq, run_text(started.run_id) + " started twice");
    return;
  }
  run->started_at_unix_ns = started.admitted_at_unix_ns;
  if (run->first_charge && run->first_charge->admitted_at_unix_ns != started.admitted_at_unix_ns) {
    add_finding(state, seq,
                run_text(started.run_id) + " admitted at " +
                    std::to_string(started.admitted_at_unix_ns) + " ns; its charge starts at " +
                    std::to_string(run->first_charge->admitted_at_unix_ns) + " ns");
  }
}

void check_job_finished(Audit& state, const JobFinished& finished, std::uint64_t seq) {
  AuditRun* run = admitted_run(state, finished.run_id, "JobFinished", seq);
  if (run == nullptr) return;
  if (run->finished_at_unix_ns) {
    add_finding(state, seq, run_text(finished.run_id) + " finished twice");
    return;
  }
  run->finished_at_unix_ns = finished.released_at_unix_ns;
  if (run->first_charge && run->first_charge->released_at_unix_ns != finished.released_at_unix_ns) {
    add_finding(state, seq,
                run_text(finished.run_id) + " released at " +
                    std::to_string(finished.released_at_unix_ns) + " ns; its charge ends at " +
                    std::to_string(run->first_charge->released_at_unix_ns) + " ns");
  }
}

void check_outcome(Audit& state, RunId run_id, bool is_measurement, std::uint64_t seq) {
  AuditRun* run = admitted_run(state, run_id, is_measurement ? "RunMeasured" : "RunFailed", seq);
  if (run == nullptr) return;
  bool& seen_before = is_measurement ? run->measured : run->failed;
  const bool other_outcome_seen = is_measurement ? run->failed : run->measured;
  if (seen_before) {
    add_finding(state, seq,
                run_text(run_id) + (is_measurement ? " measured twice" : " failed twice"));
  } else if (other_outcome_seen) {
    add_finding(state, seq, run_text(run_id) + " both measured and failed");
  }
  seen_before = true;
}

void check_body(Audit& state, const Envelope& event) {
  const std::uint64_t seq = event.sequence;
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, CampaignOpened>) {
          if (state.opened) add_finding(state, seq, "a second CampaignOpened");
          state.opened = true;
        } else if constexpr (std::is_same_v<T, CandidateProposed>) {
          if (!state.proposal_ids.insert(body.proposal_id)) {
            add_finding(state, seq,
                        "proposal " + std::to_string(body.proposal_id) + " proposed twice");
          }
        } else if constexpr (std::is_same_v<T, LaunchRefused>) {
          state.refusals.push_back({seq, body.proposal_id, body.reason, body.detail});
          if (!state.proposal_ids.contains(body.proposal_id)) {
            add_finding(state, seq,
                        "LaunchRefused for proposal " + std::to_string(body.proposal_id) +
                            ", which was never proposed");
          }
        } else if constexpr (std::is_same_v<T, LaunchAdmitted>) {
          if (!state.proposal_ids.contains(body.proposal_id)) {
            add_finding(state, seq,
                        "LaunchAdmitted of " + run_text(body.run_id) + " for proposal " +
                            std::to_string(body.proposal_id) + ", which was never proposed");
          }
          if (body.run_id == 0) add_finding(state, seq, "run id 0 is reserved for the baseline");
          if (!state.runs.emplace(body.run_id, AuditRun{body.gpus, {}, {}, {}, false, false})) {
            add_finding(state, seq, run_text(body.run_id) + " admitted twice");
          }
        } else if constexpr (std::is_same_v<T, JobSubmitted>) {
          admitted_run(state, body.run_id, "JobSubmitted", seq);
        } else if constexpr (std::is_same_v<T, JobStarted>) {
          check_job_started(state, body, seq);
        } else if constexpr (std::is_same_v<T, JobFinished>) {
          check_job_finished(state, body, seq);
        } else if constexpr (std::is_same_v<T, RunMeasured>) {
          check_outcome(state, body.run_id, true, seq);
        } else if constexpr (std::is_same_v<T, RunFailed>) {
          check_outcome(state, body.run_id, false, seq);
        } else if constexpr (std::is_same_v<T, Charged>) {
          check_charge(state, body, seq);
        } else if constexpr (std::is_same_v<T, VerdictRecorded>) {
          admitted_run(state, body.run_id, "VerdictRecorded", seq);
        } else if constexpr (std::is_same_v<T, AccessDenied>) {
          state.access_denied.push_back({seq, event.actor, body.object, body.rule});
        } else if constexpr (std::is_same_v<T, LlmCharged>) {
          state.llm_charges.push_back({seq, event.actor, body.turn, body.model, body.input_tokens,
                                       body.output_tokens, body.cost_usd});
        }
      },
      event.body);
}

}  // namespace

Audit initial_audit() { return Audit{}; }

void evolve(Audit& state, const Envelope& event) {
  check_envelope(state, event);
  check_body(state, event);
  ++state.event_count;
  state.last_sequence = event.sequence;
  state.last_hash = event.hash;
}

double gpu_hours_of(std::uint32_t gpus, std::int64_t admitted_at_unix_ns,
                    std::int64_t released_at_unix_ns) {
  // Subtract in integers so timestamps near 2^62 ns keep their nanoseconds; only a difference
  // that overflows 64 bits (a corrupt event) falls back to floating point.
  std::int64_t duration_ns_exact = 0;
  const double duration_ns =
      __builtin_sub_overflow(released_at_unix_ns, admitted_at_unix_ns, &duration_ns_exact)
          ? static_cast<double>(released_at_unix_ns) - static_cast<double>(admitted_at_unix_ns)
          : static_cast<double>(duration_ns_exact);
  return static_cast<double>(gpus) * duration_ns / kUnixNsPerHour;
}

}  // namespace attune
