// StreamBuilder: hand-built event streams for the projection tests.
//
// Appends envelopes the way the event store would: sequence numbers 1, 2, ..., one campaign id,
// recorded times one second apart, and a hash chain (each hash is a distinct stand-in digest; the
// real SHA-256 chain is the store's business). Helpers build the common shapes: a run's whole
// life (proposed, admitted, started, finished, measured or failed, charged) in one call.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "events/event.h"
#include "projections/audit.h"

namespace attune::test {

inline constexpr std::int64_t kStartUnixNs = 1'700'000'000'000'000'000;
inline constexpr std::int64_t kNsPerSecond = 1'000'000'000;

inline double gpu_hours_for(std::uint32_t gpus, std::int64_t admitted_ns,
                            std::int64_t released_ns) {
  return static_cast<double>(gpus) * static_cast<double>(released_ns - admitted_ns) /
         kUnixNsPerHour;
}

inline CampaignOpened test_opened(double budget_gpu_hours = 100.0) {
  CampaignOpened opened;
  opened.name = "test";
  opened.model = "llama3-8b";
  opened.hardware = "h100";
  opened.gpu_count = 8;
  opened.seq_length = 8192;
  opened.global_batch = 128;
  opened.precision = "bf16";
  opened.budget_gpu_hours = budget_gpu_hours;
  opened.tuner = "expert";
  opened.launcher = "sim";
  return opened;
}

inline SettingChange flag_change(std::string name, std::string before, std::string after,
                                 ObjectiveClass objective_class = ObjectiveClass::kStructural) {
  SettingChange change;
  change.kind = ChangeKind::kFlag;
  change.name = std::move(name);
  change.before_present = !before.empty();
  change.before = std::move(before);
  change.after_present = !after.empty();
  change.after = std::move(after);
  change.objective_class = objective_class;
  return change;
}

class StreamBuilder {
 public:
  explicit StreamBuilder(std::string campaign_id = "c-test")
      : campaign_id_(std::move(campaign_id)) {}

  StreamBuilder& add(Body body, std::string actor = "control-plane") {
    Envelope envelope;
    envelope.sequence = events_.size() + 1;
    envelope.campaign_id = campaign_id_;
    envelope.recorded_at_unix_ns =
        kStartUnixNs + static_cast<std::int64_t>(events_.size()) * kNsPerSecond;
    envelope.actor = std::move(actor);
    if (!events_.empty()) envelope.prev_hash = events_.back().hash;
    for (std::size_t i = 0; i < 8; ++i) {
      envelope.hash[i] = static_cast<std::uint8_t>(envelope.sequence >> (8 * i));
    }
    envelope.hash[31] = 0xA5;
    envelope.body = std::move(body);
    events_.push_back(std::move(envelope));
    return *this;
  }

  StreamBuilder& open(CampaignOpened opened = test_opened()) { return add(std::move(opened)); }

  StreamBuilder& propose(ProposalId proposal_id, RunPurpose purpose,
                         std::vector<SettingChange> diff = {}, RunId retry_of = 0,
                         RunId check_of = 0) {
    CandidateProposed proposed;
    proposed.proposal_id = proposal_id;
    proposed.purpose = purpose;
    proposed.recipe = "recipe-" + std::to_string(proposal_id);
    proposed.recipe_hash = "hash-" + std::to_string(proposal_id);
    proposed.diff = std::move(diff);
    for (const SettingChange& change : proposed.diff) {
      proposed.levers.push_back({change.name, change.objective_class});
    }
    if (!proposed.diff.empty())
      proposed.hypothesis = {"tp comm", "fewer all-reduces", 0.08, "tp_comm"};
    proposed.retry_of_run_id = retry_of;
    proposed.check_of_run_id = check_of;
    return add(std::move(proposed), "tuner:expert");
  }

  StreamBuilder& admit(ProposalId proposal_id, RunId run_id, RunPurpose purpose,
                       std::uint32_t gpus = 8, double expected_gpu_hours = 2.0) {
    LaunchAdmitted admitted;
    admitted.proposal_id = proposal_id;
    admitted.run_id = run_id;
    admitted.purpose = purpose;
    admitted.gpus = gpus;
    admitted.steps = 14;
    admitted.expected_gpu_hours = expected_gpu_hours;
    admitted.job_name = "attune-c-test-" + std::to_string(run_id);
    return add(std::move(admitted));
  }

  StreamBuilder& refuse(ProposalId proposal_id, RefusalReason reason, std::string detail) {
    return add(LaunchRefused{proposal_id, reason, std::move(detail)});
  }

  StreamBuilder& start(RunId run_id, std::int64_t admitted_ns) {
    return add(JobStarted{run_id, admitted_ns, {"node-1"}}, "launcher:sim");
  }

  StreamBuilder& finish(RunId run_id, std::int64_t released_ns) {
    return add(JobFinished{run_id, released_ns, "COMPLETED", "sim", "/logs/run.log"},
               "launcher:sim");
  }

  StreamBuilder& measure(RunId run_id, double tokens_per_s_per_gpu) {
    RunMeasured measured;
    measured.run_id = run_id;
    measured.tokens_per_sec_per_gpu = tokens_per_s_per_gpu;
    return add(std::move(measured), "metrics");
  }

  StreamBuilder& fail(RunId run_id, FailureClass failure_class) {
    // An out-of-memory failure names its cause, as the log reader's would; the rest name none.
    const FailureCause cause =
        failure_class == FailureClass::kOom ? FailureCause::kOutOfMemory : FailureCause::kUnknown;
    return add(RunFailed{run_id, failure_class, "log says so", "node-1", cause}, "metrics");
  }

  StreamBuilder& charge(RunId run_id, std::uint32_t gpus, std::int64_t admitted_ns,
                        std::int64_t released_ns, Account account = Account::kTuner) {
    return add(Charged{run_id, account, gpus, admitted_ns, released_ns,
                       gpu_hours_for(gpus, admitted_ns, released_ns)});
  }

  StreamBuilder& band_set(double mean, double rsd, double band, double budget_gpu_hours = 0.0,
                          double mean_launch_gpu_hours = 0.0) {
    BandSet band_set;
    band_set.mean_tokens_per_sec_per_gpu = mean;
    band_set.rsd = rsd;
    band_set.band_fraction = band;
    band_set.budget_gpu_hours = budget_gpu_hours;
    band_set.mean_launch_gpu_hours = mean_launch_gpu_hours;
    return add(std::move(band_set));
  }

  // Proposes (proposal id = run id), admits, starts and finishes a run of `hours` on `gpus`.
  StreamBuilder& launch(RunId run_id, RunPurpose purpose, std::vector<SettingChange> diff = {},
                        std::uint32_t gpus = 8, double hours = 0.25) {
    propose(run_id, purpose, std::move(diff));
    admit(run_id, run_id, purpose, gpus, gpus * hours);
    const std::int64_t admitted_ns = next_job_ns();
    const std::int64_t released_ns = admitted_ns + std::llround(hours * 3600.0) * kNsPerSecond;
    jobs_.push_back({run_id, gpus, admitted_ns, released_ns});
    start(run_id, admitted_ns);
    return finish(run_id, released_ns);
  }

  // Charges a launched run for its job's whole time.
  StreamBuilder& charge_job(RunId run_id, Account account = Account::kTuner) {
    for (const Job& job : jobs_) {
      if (job.run_id == run_id)
        return charge(run_id, job.gpus, job.admitted_ns, job.released_ns, account);
    }
    return *this;
  }

  // launch, measure, charge.
  StreamBuilder& measured_run(RunId run_id, RunPurpose purpose, double tokens_per_s_per_gpu,
                              std::vector<SettingChange> diff = {}, std::uint32_t gpus = 8,
                              double hours = 0.25) {
    launch(run_id, purpose, std::move(diff), gpus, hours);
    measure(run_id, tokens_per_s_per_gpu);
    return charge_job(run_id);
  }

  // launch, fail, charge (infrastructure failures to the infrastructure account).
  StreamBuilder& failed_run(RunId run_id, RunPurpose purpose, FailureClass failure_class,
                            std::vector<SettingChange> diff = {}, std::uint32_t gpus = 8,
                            double hours = 0.25) {
    launch(run_id, purpose, std::move(diff), gpus, hours);
    fail(run_id, failure_class);
    return charge_job(run_id,
                      failure_class == FailureClass::kInfra ? Account::kInfra : Account::kTuner);
  }

  const std::vector<Envelope>& events() const { return events_; }
  std::vector<Envelope>& mutable_events() { return events_; }

 private:
  struct Job {
    RunId run_id;
    std::uint32_t gpus;
    std::int64_t admitted_ns;
    std::int64_t released_ns;
  };

  std::int64_t next_job_ns() {
    job_cursor_ns_ += 60 * kNsPerSecond;
    return job_cursor_ns_;
  }

  std::string campaign_id_;
  std::vector<Envelope> events_;
  std::vector<Job> jobs_;
  std::int64_t job_cursor_ns_ = kStartUnixNs;
};

}  // namespace attune::test
