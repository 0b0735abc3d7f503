#include "projections/render.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "projections/campaign_view.h"
#include "stream_builder.h"

namespace attune {
namespace {

using test::flag_change;
using test::StreamBuilder;

// Compares rendered text with tests/projections/golden/NAME byte for byte. With
// ATTUNE_UPDATE_GOLDEN=1 in the environment the file is rewritten instead (review the diff).
void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(ATTUNE_SOURCE_DIR) + "/tests/projections/golden/" + name;
  if (const char* update = std::getenv("ATTUNE_UPDATE_GOLDEN");
      update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::ostringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden file " << path;
}

// A small campaign with a bit of everything: calibration, a refusal, a new leader, a run inside
// the band, an infrastructure failure and its retry, a stop and a shipment.
std::vector<Envelope> sample_campaign() {
  CampaignOpened opened = test::test_opened(0.0);
  opened.budget_auto = true;
  StreamBuilder b("c-0001");
  b.open(opened);
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.measured_run(2, RunPurpose::kCalibration, 1020.0);
  b.measured_run(3, RunPurpose::kCalibration, 980.0);
  b.band_set(1000.0, 0.02, 0.06, 60.0, 2.0);
  b.propose(4, RunPurpose::kSearch,
            {flag_change("--micro-batch-size", "1", "2", ObjectiveClass::kNumeric)});
  b.refuse(4, RefusalReason::kLayer1, "--micro-batch-size is numeric");
  b.measured_run(5, RunPurpose::kSearch, 1100.0,
                 {flag_change("--tensor-model-parallel-size", "2", "1"),
                  flag_change("--recompute-granularity", "", "full")});
  b.measured_run(6, RunPurpose::kSearch, 1130.0, {flag_change("--overlap-grad-reduce", "", "1")});
  b.failed_run(7, RunPurpose::kSearch, FailureClass::kInfra,
               {flag_change("--pipeline-model-parallel-size", "1", "2")});
  b.propose(8, RunPurpose::kRetry, {flag_change("--pipeline-model-parallel-size", "1", "2")}, 7);
  b.admit(8, 8, RunPurpose::kRetry, 8, 2.0);
  b.add(AccessDenied{"/etc/shadow", "deny-by-default"}, "tuner:agent");
  b.add(StopRecorded{StopReason::kTunerStopped, 5, {"tp", "pp"}, "tp comm", "no lever left"});
  b.add(RecipeShipped{5, false, "recipe-5", "hash-5", 1100.0, 0.1, "passed"});
  return b.events();
}

TEST(RenderJson, HasStableKeysWithUnits) {
  const nlohmann::json j = to_json(fold(sample_campaign()));
  EXPECT_EQ(j["campaign_id"], "c-0001");
  EXPECT_EQ(j["settings"]["model"], "llama3-8b");
  EXPECT_EQ(j["baseline"]["band_set"], true);
  EXPECT_DOUBLE_EQ(j["baseline"]["mean_tokens_per_s_per_gpu"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(j["baseline"]["band_fraction"].get<double>(), 0.06);
  EXPECT_EQ(j["leader"]["run_id"], 5);
  EXPECT_EQ(j["leader"]["is_baseline"], false);
  EXPECT_DOUBLE_EQ(j["leader"]["gain_fraction"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(j["budget"]["budget_gpu_hours"].get<double>(), 60.0);
  EXPECT_DOUBLE_EQ(j["budget"]["infra_gpu_hours"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["budget"]["in_flight_gpu_hours"].get<double>(), 2.0);
  EXPECT_EQ(j["stop"]["state"], "shipped");
  EXPECT_EQ(j["stop"]["stop"]["reason"], "tuner-stopped");
  ASSERT_EQ(j["ledger"]["runs"].size(), 7u);
  const nlohmann::json& row = j["ledger"]["runs"][3];
  EXPECT_EQ(row["run_id"], 5);
  EXPECT_EQ(row["verdict"], "new-leader");
  EXPECT_EQ(row["objective_classes"][0], "structural");
  EXPECT_EQ(row["diff"][1]["before"], nullptr);
  EXPECT_EQ(row["diff"][1]["after"], "full");
  EXPECT_EQ(j["ledger"]["runs"][6]["tokens_per_s_per_gpu"], nullptr);
  EXPECT_EQ(j["ledger"]["refused"][0]["reason"], "layer1");
  EXPECT_EQ(j["audit"]["clean"], true);
  EXPECT_EQ(j["audit"]["access_denied"][0]["actor"], "tuner:agent");
  EXPECT_EQ(j["counts"]["launches"], 7);
  EXPECT_EQ(j["counts"]["refusals"], 1);
  EXPECT_EQ(j["counts"]["failures"], 1);
}

TEST(RenderJson, IsByteDeterministic) {
  const std::vector<Envelope> events = sample_campaign();
  const std::string first = to_json(fold(events)).dump();
  const std::vector<Envelope> copy = events;
  EXPECT_EQ(first, to_json(fold(copy)).dump());
}

TEST(RenderJson, ReplacesInvalidUtf8SoDumpNeverThrows) {
  StreamBuilder b;
  b.open();
  b.add(AccessDenied{std::string("/tmp/\xFF\xFE") + "x", "rule \xC3\xA9"}, "tuner:agent");
  const nlohmann::json j = to_json(fold(b.events()));
  std::string dumped;
  ASSERT_NO_THROW(dumped = j.dump());
  EXPECT_EQ(j["audit"]["access_denied"][0]["object"], "/tmp/\xEF\xBF\xBD\xEF\xBF\xBDx");
  EXPECT_EQ(j["audit"]["access_denied"][0]["rule"], "rule \xC3\xA9");
}

TEST(RenderStatusText, SummarisesTheCampaign) {
  expect_golden("status.txt", render_status_text(fold(sample_campaign())));
}

TEST(RenderStatusText, ShowsAnUnopenedCampaign) {
  const std::string text = render_status_text(initial_view());
  EXPECT_EQ(text.substr(0, text.find('\n')), "campaign  (not opened)");
  EXPECT_NE(text.find("leader    baseline: 0.0 tokens/s/GPU, +0.00% over the baseline\n"),
            std::string::npos);
}

TEST(RenderLedgerText, AlignsOneRowPerRunThenTheRefusals) {
  expect_golden("ledger.txt", render_ledger_text(fold(sample_campaign())));
}

TEST(RenderAuditText, ListsFindingsChargesRefusalsAndDenials) {
  expect_golden("audit.txt", render_audit_text(fold(sample_campaign())));
}

TEST(RenderAuditText, ListsEachFindingOnOneLine) {
  StreamBuilder b("c-0002");
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.charge_job(1);
  const std::string text = render_audit_text(fold(b.events()));
  EXPECT_EQ(text.substr(0, text.find("\n\ncharges")),
            "audit of campaign c-0002: 8 events, 1 finding\n"
            "event 8: run 1 charged again (first charge at sequence 7)");
}

}  // namespace
}  // namespace attune
