// Random event streams for the projection properties.
//
// gen_campaign(): a plausible, well-formed campaign simulated from rapidcheck's choices — opened,
// calibrated (with the band recorded, sometimes late), searched with up to `concurrency` runs in
// flight (proposals refused or admitted; jobs submitted, started, finished; measured or failed
// as oom, hang, crash or infra, infrastructure failures retried once on other nodes; every launch
// charged gpus x (release - admission)), verdicts recorded, then maybe stopped, checked and
// shipped. Interleavings, sizes and outcomes vary; the audit of every such stream is clean.
//
// gen_chaotic_stream(): anything at all — bodies of every kind with small, colliding ids, odd
// sequence numbers and hashes, negative and huge figures, arbitrary bytes in strings — for the
// properties that must hold on any input (no crash, determinism, non-negative books).
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "events/event.h"
#include "projections/baseline_band.h"
#include "stream_builder.h"

namespace attune {

// How rapidcheck prints an event in a counterexample: sequence, body and the run it names.
inline void showValue(const Envelope& event, std::ostream& os) {
  os << "#" << event.sequence << " " << body_name(event.body);
  std::visit(
      [&os](const auto& body) {
        if constexpr (requires { body.run_id; }) os << " run " << body.run_id;
        if constexpr (requires { body.proposal_id; }) os << " proposal " << body.proposal_id;
        if constexpr (requires { body.tokens_per_sec_per_gpu; }) {
          os << " " << body.tokens_per_sec_per_gpu << " tokens/s/GPU";
        }
        if constexpr (requires { body.gpu_hours; }) os << " " << body.gpu_hours << " GPU-h";
      },
      event.body);
}

}  // namespace attune

namespace attune::test {

// A uniform draw whatever rapidcheck's current size: inRange scales its range with the size, which
// at small sizes would pin every outcome to the bottom of its range (always the first failure
// class, always the worst gain). Sizes still scale the number of steps and events.
template <typename T>
T uniform(T min, T max) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(min, max));
}

class CampaignSimulator {
 public:
  // Draws every choice from rapidcheck; call only inside rc::gen::exec or a property.
  std::vector<Envelope> run() {
    open_campaign();
    const bool band_late = uniform(0, 5) == 0;
    calibrate();
    if (!band_late) record_band();
    const int steps = *rc::gen::inRange(0, 120);  // scaled by size
    for (int step = 0; step < steps; ++step) {
      if (band_late && !band_set_ && step == steps / 2) record_band();
      search_step();
    }
    drain();
    if (!band_set_) record_band();
    if (uniform(0, 4) != 0) finish_campaign();
    return builder_.events();
  }

 private:
  enum class Stage { kAdmitted, kSubmitted, kStarted, kFinished, kConcluded };
  enum class Outcome { kMeasured, kFailed };

  struct Flight {
    RunId run_id = 0;
    RunPurpose purpose = RunPurpose::kSearch;
    std::vector<SettingChange> diff;
    std::uint32_t gpus = 0;
    double planned_hours = 0.0;
    Stage stage = Stage::kAdmitted;
    std::int64_t admitted_ns = 0;
    std::int64_t released_ns = 0;
    Outcome outcome = Outcome::kMeasured;
    FailureClass failure_class = FailureClass::kCrash;
    double tokens_per_s_per_gpu = 0.0;
  };

  struct Measured {
    RunId run_id;
    double tokens_per_s_per_gpu;
  };

  void tick() { clock_ns_ += uniform<std::int64_t>(1, 900) * kNsPerSecond; }

  void open_campaign() {
    opened_ = test_opened(0.0);
    opened_.gpu_count = *rc::gen::element<std::uint32_t>(8, 16, 64);
    opened_.budget_auto = *rc::gen::arbitrary<bool>();
    opened_.budget_gpu_hours = opened_.budget_auto ? 0.0 : uniform(5, 400);
    opened_.band_floor_fraction = *rc::gen::element(0.03, 0.05, 0.0);
    opened_.band_k = *rc::gen::element(3.0, 2.0);
    opened_.calibration_runs = uniform<std::uint32_t>(1, 7);
    opened_.reserve_checks = uniform<std::uint32_t>(0, 4);
    opened_.concurrency = uniform<std::uint32_t>(1, 4);
    base_tokens_ = uniform(300, 4000);
    builder_.open(opened_);
  }

  std::vector<SettingChange> random_diff() {
    static const char* kFlags[] = {"--tensor-model-parallel-size", "--pipeline-model-parallel-size",
                                   "--recompute-granularity", "--overlap-grad-reduce",
                                   "--micro-batch-size"};
    const std::size_t flag = uniform<std::size_t>(0, std::size(kFlags));
    const auto objective_class = flag == 4 ? ObjectiveClass::kNumeric : ObjectiveClass::kStructural;
    return {flag_change(kFlags[flag], std::to_string(uniform(1, 4)), std::to_string(uniform(4, 9)),
                        objective_class)};
  }

  ProposalId propose(RunPurpose purpose, std::vector<SettingChange> diff, RunId retry_of = 0,
                     RunId check_of = 0) {
    const ProposalId proposal_id = next_proposal_id_++;
    builder_.propose(proposal_id, purpose, std::move(diff), retry_of, check_of);
    return proposal_id;
  }

  void admit(RunPurpose purpose, std::vector<SettingChange> diff, RunId retry_of = 0,
             RunId check_of = 0) {
    const ProposalId proposal_id = propose(purpose, diff, retry_of, check_of);
    Flight flight;
    flight.run_id = next_run_id_++;
    flight.purpose = purpose;
    flight.diff = std::move(diff);
    flight.gpus = opened_.gpu_count;
    flight.planned_hours = uniform(5, 60) / 60.0;
    builder_.admit(proposal_id, flight.run_id, purpose, flight.gpus,
                   flight.gpus * flight.planned_hours);
    flights_.push_back(std::move(flight));
  }

  void choose_outcome(Flight& flight) {
    const int roll = uniform(0, 100);
    const double gain = uniform(-300, 400) / 1000.0;
    const bool calibration = flight.purpose == RunPurpose::kCalibration;
    const bool check = flight.purpose == RunPurpose::kCheck;
    const double noise = uniform(-40, 41) / 1000.0;
    if (roll < 8) {
      flight.outcome = Outcome::kFailed;
      flight.failure_class = FailureClass::kInfra;
    } else if (roll < 25 && !calibration && !check) {
      flight.outcome = Outcome::kFailed;
      flight.failure_class =
          *rc::gen::element(FailureClass::kOom, FailureClass::kHang, FailureClass::kCrash);
    } else {
      flight.outcome = Outcome::kMeasured;
      flight.tokens_per_s_per_gpu = base_tokens_ * (1.0 + (calibration || check ? noise : gain));
    }
  }

  // Moves one run one step along its life.
  void advance(std::size_t index) {
    Flight& flight = flights_[index];
    tick();
    switch (flight.stage) {
      case Stage::kAdmitted:
        builder_.add(JobSubmitted{flight.run_id, "job-" + std::to_string(flight.run_id),
                                  "attune-" + std::to_string(flight.run_id), clock_ns_},
                     "launcher:sim");
        flight.stage = Stage::kSubmitted;
        return;
      case Stage::kSubmitted:
        flight.admitted_ns = clock_ns_;
        builder_.start(flight.run_id, flight.admitted_ns);
        flight.stage = Stage::kStarted;
        return;
      case Stage::kStarted: {
        choose_outcome(flight);
        const double fraction = uniform(50, 150) / 100.0;
        flight.released_ns =
            flight.admitted_ns +
            static_cast<std::int64_t>(flight.planned_hours * fraction * 3600.0) * kNsPerSecond;
        clock_ns_ = std::max(clock_ns_, flight.released_ns);
        builder_.finish(flight.run_id, flight.released_ns);
        flight.stage = Stage::kFinished;
        return;
      }
      case Stage::kFinished:
        conclude(flight);
        flight.stage = Stage::kConcluded;
        return;
      case Stage::kConcluded:
        charge(flight);
        flights_.erase(flights_.begin() + static_cast<std::ptrdiff_t>(index));
        return;
    }
  }

  void conclude(const Flight& flight) {
    if (flight.outcome == Outcome::kFailed) {
      builder_.fail(flight.run_id, flight.failure_class);
      return;
    }
    builder_.measure(flight.run_id, flight.tokens_per_s_per_gpu);
    const Measured measured{flight.run_id, flight.tokens_per_s_per_gpu};
    if (flight.purpose == RunPurpose::kCalibration) calibration_.push_back(measured);
    if (flight.purpose == RunPurpose::kSearch || flight.purpose == RunPurpose::kRetry) {
      if (band_set_) {
        judge(measured);
      } else {
        awaiting_band_.push_back(measured);
      }
    }
  }

  void charge(const Flight& flight) {
    const bool infra =
        flight.outcome == Outcome::kFailed && flight.failure_class == FailureClass::kInfra;
    builder_.charge(flight.run_id, flight.gpus, flight.admitted_ns, flight.released_ns,
                    infra ? Account::kInfra : Account::kTuner);
    if (flight.purpose == RunPurpose::kCalibration) {
      calibration_charges_.push_back(
          gpu_hours_for(flight.gpus, flight.admitted_ns, flight.released_ns));
    }
    // One retry on other nodes; a second infrastructure failure counts as the recipe's.
    if (infra && flight.purpose == RunPurpose::kSearch && uniform(0, 3) != 0) {
      retries_.push_back(flight);
    }
  }

  void judge(const Measured& measured) {
    const RunId before = leader_run_id_;
    // The rule, written out independently of the Leader projection.
    const bool beats = (measured.tokens_per_s_per_gpu - leader_tokens_) / mean_ > band_;
    if (beats) {
      leader_run_id_ = measured.run_id;
      leader_tokens_ = measured.tokens_per_s_per_gpu;
    }
    if (measured.tokens_per_s_per_gpu > mean_ * (1.0 + band_)) candidates_.push_back(measured);
    builder_.add(VerdictRecorded{measured.run_id, beats ? Verdict::kNewLeader : Verdict::kNotBetter,
                                 (measured.tokens_per_s_per_gpu - mean_) / mean_, before,
                                 leader_run_id_, band_});
  }

  void record_band() {
    std::vector<double> values;
    for (const Measured& m : calibration_) values.push_back(m.tokens_per_s_per_gpu);
    mean_ = values.empty() ? base_tokens_ : mean_of(values);
    const double rsd = relative_std_dev(values);
    band_ = std::max(opened_.band_floor_fraction, opened_.band_k * rsd);
    const double mean_launch = calibration_charges_.empty() ? 1.0 : mean_of(calibration_charges_);
    BandSet band_set;
    for (const Measured& m : calibration_) band_set.calibration_run_ids.push_back(m.run_id);
    band_set.mean_tokens_per_sec_per_gpu = mean_;
    band_set.rsd = rsd;
    band_set.band_fraction = band_;
    band_set.mean_launch_gpu_hours = mean_launch;
    if (opened_.budget_auto) {
      band_set.budget_gpu_hours = std::max(10.0, 10.0 * std::ceil(30.0 * mean_launch / 10.0));
    }
    builder_.add(std::move(band_set));
    band_set_ = true;
    leader_tokens_ = mean_;
    for (const Measured& measured : awaiting_band_) judge(measured);
    awaiting_band_.clear();
  }

  void drive_until_at_most(std::size_t flights_max) {
    while (flights_.size() > flights_max) {
      advance(uniform<std::size_t>(0, flights_.size()));
    }
  }

  void calibrate() {
    for (std::uint32_t i = 0; i < opened_.calibration_runs; ++i) {
      drive_until_at_most(opened_.concurrency - 1);
      admit(RunPurpose::kCalibration, {});
      if (*rc::gen::arbitrary<bool>() && !flights_.empty()) {
        advance(uniform<std::size_t>(0, flights_.size()));
      }
    }
    drive_until_at_most(0);
  }

  void search_step() {
    const int action = uniform(0, 10);
    if (action < 3) {
      if (!retries_.empty()) {
        const Flight failed = retries_.front();
        retries_.erase(retries_.begin());
        if (flights_.size() < opened_.concurrency) {
          admit(RunPurpose::kRetry, failed.diff, failed.run_id);
          return;
        }
      }
      std::vector<SettingChange> diff = random_diff();
      if (flights_.size() >= opened_.concurrency) {
        builder_.refuse(propose(RunPurpose::kSearch, diff), RefusalReason::kConcurrency,
                        "3 runs in flight");
      } else if (uniform(0, 5) == 0) {
        builder_.refuse(propose(RunPurpose::kSearch, diff),
                        *rc::gen::element(RefusalReason::kDuplicate, RefusalReason::kLayer1,
                                          RefusalReason::kBudget, RefusalReason::kMultipleLevers),
                        "refused");
      } else {
        admit(RunPurpose::kSearch, diff);
      }
    } else if (action < 9) {
      if (!flights_.empty()) advance(uniform<std::size_t>(0, flights_.size()));
    } else {
      switch (uniform(0, 3)) {
        case 0:
          builder_.add(AccessDenied{"/etc/passwd", "deny-by-default"}, "tuner:agent");
          break;
        case 1:
          builder_.add(
              LeverRuleLearned{
                  "--overlap-grad-reduce", "helps when dp comm is exposed", {}, "", "", ""},
              "tuner:agent");
          break;
        default:
          builder_.add(ProfileAnalyzed{next_run_id_ > 1 ? next_run_id_ - 1 : 1, {}, 0, "tp", {}},
                       "profiler");
          break;
      }
    }
  }

  void drain() { drive_until_at_most(0); }

  void finish_campaign() {
    builder_.add(StopRecorded{*rc::gen::element(StopReason::kBudgetSpent, StopReason::kTunerStopped,
                                                StopReason::kOperator),
                              leader_run_id_,
                              {"tp", "pp"},
                              "tp comm",
                              "flat gains"},
                 "tuner:expert");
    if (uniform(0, 4) == 0) return;  // stopped, not shipped yet
    std::sort(candidates_.begin(), candidates_.end(), [](const Measured& a, const Measured& b) {
      return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
    });
    const std::size_t checks = std::min<std::size_t>(candidates_.size(), opened_.reserve_checks);
    for (std::size_t i = 0; i < checks; ++i) {
      const Measured& candidate = candidates_[i];
      admit(RunPurpose::kCheck, random_diff(), 0, candidate.run_id);
      const RunId check_run_id = flights_.back().run_id;
      drive_until_at_most(0);
      const bool passed = *rc::gen::arbitrary<bool>();
      builder_.add(ConvergenceChecked{candidate.run_id,
                                      check_run_id,
                                      true,
                                      true,
                                      passed,
                                      {},
                                      passed ? "" : "final loss off by 7%"});
      if (passed) {
        builder_.add(RecipeShipped{candidate.run_id, false, "recipe", "hash",
                                   candidate.tokens_per_s_per_gpu,
                                   (candidate.tokens_per_s_per_gpu - mean_) / mean_, "passed"});
        return;
      }
    }
    builder_.add(RecipeShipped{0, true, "baseline", "hash", mean_, 0.0, "no candidate passed"});
  }

  StreamBuilder builder_{"c-prop"};
  CampaignOpened opened_;
  double base_tokens_ = 1000.0;
  std::int64_t clock_ns_ = kStartUnixNs;
  ProposalId next_proposal_id_ = 1;
  RunId next_run_id_ = 1;
  std::vector<Flight> flights_;
  std::vector<Flight> retries_;
  std::vector<Measured> calibration_;
  std::vector<double> calibration_charges_;
  std::vector<Measured> awaiting_band_;
  std::vector<Measured> candidates_;
  bool band_set_ = false;
  double mean_ = 0.0;
  double band_ = 0.0;
  RunId leader_run_id_ = 0;
  double leader_tokens_ = 0.0;
};

inline rc::Gen<std::vector<Envelope>> gen_campaign() {
  return rc::gen::exec([] { return CampaignSimulator().run(); });
}

inline Body chaotic_body() {
  const RunId run_id = uniform<RunId>(0, 6);
  const ProposalId proposal_id = uniform<ProposalId>(0, 6);
  const auto purpose = *rc::gen::element(RunPurpose::kCalibration, RunPurpose::kSearch,
                                         RunPurpose::kCheck, RunPurpose::kRetry);
  const auto figure = [] {
    return *rc::gen::element(-5.0, 0.0, 0.25, 1.0, 2.5, 1000.0, 1234.5, 1e12, -1e300);
  };
  const auto time_ns = [] { return uniform<std::int64_t>(-1'000'000, 20'000'000'000'000); };
  const auto text = [] { return *rc::gen::arbitrary<std::string>(); };
  switch (uniform(0, 18)) {
    case 0: {
      CampaignOpened opened = test_opened(figure());
      opened.budget_auto = *rc::gen::arbitrary<bool>();
      opened.band_floor_fraction = *rc::gen::element(0.0, 0.03, -1.0);
      opened.steps_per_run = uniform<std::uint32_t>(0, 20);
      opened.name = text();
      return opened;
    }
    case 1: {
      CandidateProposed proposed;
      proposed.proposal_id = proposal_id;
      proposed.purpose = purpose;
      proposed.recipe = text();
      if (*rc::gen::arbitrary<bool>()) proposed.diff.push_back(flag_change(text(), text(), text()));
      proposed.hypothesis = {text(), text(), figure(), text()};
      proposed.retry_of_run_id = uniform<RunId>(0, 6);
      proposed.check_of_run_id = uniform<RunId>(0, 6);
      return proposed;
    }
    case 2:
      return LaunchRefused{proposal_id, RefusalReason::kBudget, text()};
    case 3: {
      LaunchAdmitted admitted;
      admitted.proposal_id = proposal_id;
      admitted.run_id = run_id;
      admitted.purpose = purpose;
      admitted.gpus = uniform<std::uint32_t>(0, 17);
      admitted.expected_gpu_hours = figure();
      return admitted;
    }
    case 4:
      return JobSubmitted{run_id, text(), text(), time_ns()};
    case 5:
      return JobStarted{run_id, time_ns(), {text()}};
    case 6:
      return JobFinished{run_id, time_ns(), text(), text(), text()};
    case 7: {
      RunMeasured measured;
      measured.run_id = run_id;
      measured.tokens_per_sec_per_gpu = figure();
      return measured;
    }
    case 8:
      return RunFailed{
          run_id, *rc::gen::element(FailureClass::kOom, FailureClass::kInfra, FailureClass::kCrash),
          text(), text()};
    case 9:
      return Charged{run_id,
                     *rc::gen::element(Account::kTuner, Account::kInfra),
                     uniform<std::uint32_t>(0, 17),
                     time_ns(),
                     time_ns(),
                     figure()};
    case 10:
      return BandSet{
          {run_id}, figure(), *rc::gen::element(0.0, 0.01, 0.1), *rc::gen::element(0.0, 0.03, 0.2),
          figure(), figure()};
    case 11:
      return VerdictRecorded{run_id, Verdict::kNewLeader, figure(), 0, run_id, 0.03};
    case 12:
      return ProfileAnalyzed{run_id, {}, 0, text(), {}};
    case 13:
      return StopRecorded{StopReason::kOperator, run_id, {text()}, text(), text()};
    case 14:
      return ConvergenceChecked{run_id, run_id, true, true, false, {}, text()};
    case 15:
      return RecipeShipped{run_id, run_id == 0, text(), text(), figure(), figure(), text()};
    case 16:
      return AccessDenied{text(), text()};
    case 17:
      return LeverRuleLearned{text(), text(), {run_id}, text(), text(), text()};
    case 18:
      return ToolCalled{text(), text(), text(), run_id % 2 == 0, text(), run_id};
    default:
      return LlmCharged{run_id, text(), run_id * 1000ULL, run_id * 10ULL, figure()};
  }
}

inline rc::Gen<std::vector<Envelope>> gen_chaotic_stream() {
  return rc::gen::exec([] {
    const int count = *rc::gen::inRange(0, 60);  // scaled by size
    std::vector<Envelope> events;
    std::uint64_t sequence = *rc::gen::element<std::uint64_t>(0, 1, 1, 1, 7);
    for (int i = 0; i < count; ++i) {
      Envelope envelope;
      envelope.sequence = sequence;
      sequence += *rc::gen::element<std::uint64_t>(1, 1, 1, 1, 0, 2);
      envelope.campaign_id = *rc::gen::element<std::string>("c-1", "c-1", "c-2");
      envelope.actor = *rc::gen::arbitrary<std::string>();
      envelope.hash[0] = static_cast<std::uint8_t>(i + 1);
      if (!events.empty() && uniform(0, 8) != 0) envelope.prev_hash = events.back().hash;
      envelope.body = chaotic_body();
      events.push_back(std::move(envelope));
    }
    return events;
  });
}

}  // namespace attune::test
