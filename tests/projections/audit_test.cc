#include "projections/audit.h"

#include <gtest/gtest.h>

#include <string>

#include "stream_builder.h"

namespace attune {
namespace {

using test::StreamBuilder;

Audit fold_audit(const std::vector<Envelope>& events) {
  Audit audit = initial_audit();
  for (const Envelope& event : events) evolve(audit, event);
  return audit;
}

StreamBuilder clean_campaign() {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.failed_run(2, RunPurpose::kSearch, FailureClass::kInfra);
  b.propose(3, RunPurpose::kSearch);
  b.refuse(3, RefusalReason::kDuplicate, "same recipe as run 1");
  b.add(AccessDenied{"/etc/shadow", "deny-by-default"}, "tuner:agent");
  return b;
}

bool has_finding(const Audit& audit, std::uint64_t sequence, const std::string& part) {
  for (const AuditFinding& finding : audit.findings) {
    if (finding.sequence == sequence && finding.message.find(part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string all_findings(const Audit& audit) {
  std::string out;
  for (const AuditFinding& f : audit.findings)
    out += std::to_string(f.sequence) + ": " + f.message + "\n";
  return out;
}

TEST(GpuHoursOf, IsGpusTimesHours) {
  EXPECT_DOUBLE_EQ(gpu_hours_of(8, 0, 1'800'000'000'000), 4.0);
  EXPECT_DOUBLE_EQ(gpu_hours_of(8, test::kStartUnixNs, test::kStartUnixNs + 1'800'000'000'000),
                   4.0);
}

TEST(Audit, AWellFormedStreamIsClean) {
  const Audit audit = fold_audit(clean_campaign().events());
  EXPECT_TRUE(audit.findings.empty()) << all_findings(audit);
  EXPECT_EQ(audit.event_count, clean_campaign().events().size());
}

TEST(Audit, ListsChargesRefusalsAndAccessDenials) {
  const Audit audit = fold_audit(clean_campaign().events());
  ASSERT_EQ(audit.charges.size(), 2u);
  EXPECT_EQ(audit.charges[0].run_id, 1u);
  EXPECT_EQ(audit.charges[0].account, Account::kTuner);
  EXPECT_EQ(audit.charges[0].gpus, 8u);
  EXPECT_DOUBLE_EQ(audit.charges[0].gpu_hours, 2.0);
  EXPECT_EQ(audit.charges[1].account, Account::kInfra);
  ASSERT_EQ(audit.refusals.size(), 1u);
  EXPECT_EQ(audit.refusals[0].proposal_id, 3u);
  EXPECT_EQ(audit.refusals[0].reason, RefusalReason::kDuplicate);
  ASSERT_EQ(audit.access_denied.size(), 1u);
  EXPECT_EQ(audit.access_denied[0].actor, "tuner:agent");
  EXPECT_EQ(audit.access_denied[0].object, "/etc/shadow");
  EXPECT_EQ(audit.access_denied[0].rule, "deny-by-default");
}

TEST(Audit, FindsADoubleCharge) {
  StreamBuilder b = clean_campaign();
  b.charge_job(1);
  const Audit audit = fold_audit(b.events());
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, b.events().size(), "run 1 charged again"));
  EXPECT_EQ(audit.charges.size(), 3u);
}

TEST(Audit, FindsWrongGpuHours) {
  StreamBuilder b;
  b.open();
  b.launch(1, RunPurpose::kCalibration, {}, 8, 0.5);
  const Envelope& started = b.events()[3];
  const Envelope& finished = b.events()[4];
  const std::int64_t admitted = std::get<JobStarted>(started.body).admitted_at_unix_ns;
  const std::int64_t released = std::get<JobFinished>(finished.body).released_at_unix_ns;
  b.add(Charged{1, Account::kTuner, 8, admitted, released, 4.0 * (1.0 + 1e-6)});
  const Audit audit = fold_audit(b.events());
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, b.events().size(), "GPU-hours"));
}

TEST(Audit, ToleratesRoundingWithinOnePartInABillion) {
  StreamBuilder b;
  b.open();
  b.launch(1, RunPurpose::kCalibration, {}, 8, 0.5);
  const std::int64_t admitted = std::get<JobStarted>(b.events()[3].body).admitted_at_unix_ns;
  const std::int64_t released = std::get<JobFinished>(b.events()[4].body).released_at_unix_ns;
  b.add(Charged{1, Account::kTuner, 8, admitted, released, 4.0 * (1.0 + 1e-12)});
  EXPECT_TRUE(fold_audit(b.events()).findings.empty());
}

TEST(Audit, FindsAGapInSequenceNumbers) {
  StreamBuilder b = clean_campaign();
  std::vector<Envelope> events = b.events();
  events.erase(events.begin() + 3);
  for (std::size_t i = 3; i < events.size(); ++i) events[i].prev_hash = events[i - 1].hash;
  const Audit audit = fold_audit(events);
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 5, "sequence number 5 follows 3"));
}

TEST(Audit, FindsSequenceNumbersThatDoNotStartAtOne) {
  std::vector<Envelope> events = clean_campaign().events();
  for (Envelope& event : events) event.sequence += 10;
  const Audit audit = fold_audit(events);
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 11, "start at 11"));
}

TEST(Audit, FindsABrokenHashLink) {
  std::vector<Envelope> events = clean_campaign().events();
  events[4].prev_hash[0] ^= 1;
  const Audit audit = fold_audit(events);
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 5, "prev_hash"));
}

TEST(Audit, FindsAForeignCampaignId) {
  std::vector<Envelope> events = clean_campaign().events();
  events[2].campaign_id = "other";
  const Audit audit = fold_audit(events);
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 3, "campaign id 'other'"));
}

TEST(Audit, TheFirstEventMustBeTheOnlyCampaignOpened) {
  StreamBuilder late;
  late.propose(1, RunPurpose::kCalibration);
  late.open();
  Audit audit = fold_audit(late.events());
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 1, "first event is CandidateProposed"));

  StreamBuilder twice;
  twice.open();
  twice.open();
  audit = fold_audit(twice.events());
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 2, "second CampaignOpened"));
}

TEST(Audit, FindsEventsForRunsNeverAdmitted) {
  StreamBuilder b;
  b.open();
  b.start(5, 100);
  b.finish(5, 200);
  b.measure(5, 1000.0);
  b.fail(6, FailureClass::kCrash);
  b.charge(7, 8, 100, 200);
  const Audit audit = fold_audit(b.events());
  EXPECT_EQ(audit.findings.size(), 5u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 2, "JobStarted for run 5, which was never admitted"));
  EXPECT_TRUE(has_finding(audit, 4, "RunMeasured for run 5"));
  EXPECT_TRUE(has_finding(audit, 5, "RunFailed for run 6"));
  EXPECT_TRUE(has_finding(audit, 6, "Charged for run 7"));
}

TEST(Audit, FindsAnAdmissionWithoutAProposal) {
  StreamBuilder b;
  b.open();
  b.admit(9, 1, RunPurpose::kSearch);
  const Audit audit = fold_audit(b.events());
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 2, "proposal 9, which was never proposed"));
}

TEST(Audit, FindsARunBothMeasuredAndFailed) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kSearch, 1000.0);
  b.fail(1, FailureClass::kCrash);
  const Audit audit = fold_audit(b.events());
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, b.events().size(), "both measured and failed"));
}

TEST(Audit, FindsAChargeThatDisagreesWithTheJob) {
  StreamBuilder b;
  b.open();
  b.launch(1, RunPurpose::kSearch, {}, 8, 0.5);
  const std::int64_t admitted = std::get<JobStarted>(b.events()[3].body).admitted_at_unix_ns;
  const std::int64_t released = std::get<JobFinished>(b.events()[4].body).released_at_unix_ns;
  b.charge(1, 4, admitted + test::kNsPerSecond, released);  // wrong GPUs, late start
  const Audit audit = fold_audit(b.events());
  EXPECT_EQ(audit.findings.size(), 2u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 6, "names 4 GPUs; the run was admitted with 8"));
  EXPECT_TRUE(has_finding(audit, 6, "the job was admitted at"));
}

TEST(Audit, FindsAChargeThatEndsBeforeItStarts) {
  StreamBuilder b;
  b.open();
  b.propose(1, RunPurpose::kSearch);
  b.admit(1, 1, RunPurpose::kSearch, 8);
  b.add(Charged{1, Account::kTuner, 8, 2000, 1000, gpu_hours_of(8, 2000, 1000)});
  const Audit audit = fold_audit(b.events());
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 4, "before its admission"));
}

TEST(Audit, ChecksJobTimesThatArriveAfterTheCharge) {
  StreamBuilder b;
  b.open();
  b.propose(1, RunPurpose::kSearch);
  b.admit(1, 1, RunPurpose::kSearch, 8);
  b.charge(1, 8, 1000, 5000);
  b.start(1, 1000);
  b.finish(1, 6000);
  const Audit audit = fold_audit(b.events());
  ASSERT_EQ(audit.findings.size(), 1u) << all_findings(audit);
  EXPECT_TRUE(has_finding(audit, 6, "released at 6000 ns; its charge ends at 5000 ns"));
}

}  // namespace
}  // namespace attune
