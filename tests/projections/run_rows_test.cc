#include "projections/run_rows.h"

#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "projections/campaign_view.h"
#include "projections/text_table.h"
#include "stream_builder.h"

namespace attune {
namespace {

using test::flag_change;
using test::StreamBuilder;

const std::string kArrow = "\xE2\x86\x92";

// Sets the parent of the proposal with this id in the stream.
void set_parent(StreamBuilder& b, ProposalId proposal, RunId parent) {
  for (Envelope& e : b.mutable_events()) {
    if (auto* p = std::get_if<CandidateProposed>(&e.body); p && p->proposal_id == proposal) {
      p->parent_run_id = parent;
    }
  }
}

// Calibration run 1 at 1000, run 2 (tp 2→1) at 1200 from the baseline, run 3 from run 2 (also
// pp 4→8) at 1250, run 4 from run 2 an OOM, then run 2 shipped.
StreamBuilder campaign() {
  StreamBuilder b;
  CampaignOpened opened = test::test_opened();
  opened.gpu_count = 8;
  b.open(opened);
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.band_set(1000.0, 0.01, 0.03);
  b.measured_run(2, RunPurpose::kSearch, 1200.0,
                 {flag_change("--tensor-model-parallel-size", "2", "1")});
  b.measured_run(3, RunPurpose::kSearch, 1250.0,
                 {flag_change("--tensor-model-parallel-size", "2", "1"),
                  flag_change("--pipeline-model-parallel-size", "4", "8")});
  b.failed_run(4, RunPurpose::kSearch, FailureClass::kOom,
               {flag_change("--tensor-model-parallel-size", "2", "1"),
                flag_change("--recompute-granularity", "", "full")});
  set_parent(b, 3, 2);
  set_parent(b, 4, 2);
  RecipeShipped shipped;
  shipped.run_id = 2;
  shipped.is_baseline = false;
  shipped.tokens_per_sec_per_gpu = 1200.0;
  shipped.gain_fraction = 0.2;
  b.add(StopRecorded{});
  b.add(shipped);
  return b;
}

TEST(ChangeBetween, NamesOnlyWhatTheChildChangesAgainstItsParent) {
  const std::vector<SettingChange> parent = {flag_change("--tensor-model-parallel-size", "2", "1")};
  const std::vector<SettingChange> child = {
      flag_change("--tensor-model-parallel-size", "2", "1"),
      flag_change("--pipeline-model-parallel-size", "4", "8")};
  EXPECT_EQ(change_between(parent, child), "--pipeline-model-parallel-size 4" + kArrow + "8");
  // A setting the child returns to the baseline's value is a change too.
  EXPECT_EQ(change_between(child, parent), "--pipeline-model-parallel-size 8" + kArrow + "4");
  EXPECT_EQ(change_between(parent, parent), "no change");
}

TEST(ShortChange, ShortensParallelDegreesAndDropsDashes) {
  EXPECT_EQ(short_change("--decoder-last-pipeline-num-layers 10" + kArrow +
                         "2; --pipeline-model-parallel-size 4" + kArrow +
                         "8; --overlap-grad-reduce (set)" + kArrow + "(none)"),
            "pp 4" + kArrow + "8; pp-last 10" + kArrow + "2; overlap-grad-reduce (set)" + kArrow +
                "(none)");
  // Only at the start of a change: a value holding "--" is left as it is.
  EXPECT_EQ(short_change("--x a--b"), "x a--b");
}

TEST(RunRows, EachRunShowsItsParentItsOwnChangeAndItsFigures) {
  const CampaignView view = fold(campaign().events());
  // 1e9 FLOPs per token on a 1000-TFLOP/s GPU: MFU = tokens/s/GPU x 1e-6.
  const std::vector<RunRow> rows = run_rows(view, Efficiency{1e9, 1000.0, 2.0});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_FALSE(rows[0].parent.has_value());
  EXPECT_EQ(rows[0].change, "baseline");
  EXPECT_EQ(rows[1].parent, 0u);
  EXPECT_EQ(rows[1].change, "--tensor-model-parallel-size 2" + kArrow + "1");
  EXPECT_EQ(rows[2].parent, 2u);
  EXPECT_EQ(rows[2].change, "--pipeline-model-parallel-size 4" + kArrow + "8");
  EXPECT_EQ(rows[3].change, "--recompute-granularity (none)" + kArrow + "full");
  EXPECT_EQ(rows[3].failure_class, FailureClass::kOom);
  EXPECT_FALSE(rows[3].mfu.has_value());
  EXPECT_FALSE(rows[3].gain_fraction.has_value());
  ASSERT_TRUE(rows[1].mfu.has_value());
  EXPECT_NEAR(*rows[1].mfu, 1200.0 * 1e9 / 1e15, 1e-12);
  EXPECT_NEAR(*rows[1].tflops_per_gpu, 1.2, 1e-12);
  EXPECT_NEAR(*rows[1].gain_fraction, 0.2, 1e-12);
  EXPECT_TRUE(rows[1].shipped);
  EXPECT_FALSE(rows[2].shipped);
  EXPECT_NEAR(rows[1].gpu_hours, 8 * 0.25, 1e-9);
}

TEST(RunRows, UnknownFlopsOrPeakLeaveMfuOut) {
  const CampaignView view = fold(campaign().events());
  for (const RunRow& row : run_rows(view, Efficiency{0.0, 1000.0, 0.0})) {
    EXPECT_FALSE(row.mfu.has_value());
    EXPECT_FALSE(row.tflops_per_gpu.has_value());
  }
  for (const RunRow& row : run_rows(view, Efficiency{1e9, 0.0, 0.0})) {
    EXPECT_FALSE(row.mfu.has_value());
  }
}

TEST(Economics, PaybackRepaysTheTuningGpuHours) {
  const CampaignView view = fold(campaign().events());
  const Economics e = economics_of(view, Efficiency{1e9, 1000.0, 2.0});
  // Four runs of 8 GPUs x 0.25 h.
  EXPECT_NEAR(e.tuning_gpu_hours, 8.0, 1e-9);
  EXPECT_NEAR(*e.tuning_usd, 16.0, 1e-9);
  // 1200 vs 1000: T hours on 8 GPUs save 8 x T x 0.2 GPU-hours; 8 = 1.6 T.
  ASSERT_TRUE(e.payback_hours.has_value());
  EXPECT_NEAR(*e.payback_hours, 5.0, 1e-9);
  // $2 per GPU-hour at 1000 tokens/s/GPU: 3.6e6 tokens per GPU-hour.
  EXPECT_NEAR(*e.baseline_usd_per_million_tokens, 2.0 / 3.6, 1e-12);
  EXPECT_NEAR(*e.shipped_usd_per_million_tokens, 2.0 / 3.6 / 1.2, 1e-12);
  EXPECT_NEAR(*e.baseline_mfu, 1e-3, 1e-12);
  EXPECT_NEAR(*e.shipped_mfu, 1.2e-3, 1e-12);
}

TEST(Economics, NoPriceNoDollarsAndABaselineShipNoPayback) {
  StreamBuilder b;
  b.open();
  b.measured_run(1, RunPurpose::kCalibration, 1000.0);
  b.band_set(1000.0, 0.01, 0.03);
  b.add(StopRecorded{});
  b.add(RecipeShipped{});
  const Economics e = economics_of(fold(b.events()), Efficiency{1e9, 1000.0, 0.0});
  EXPECT_FALSE(e.tuning_usd.has_value());
  EXPECT_FALSE(e.shipped_usd_per_million_tokens.has_value());
  EXPECT_FALSE(e.payback_hours.has_value());
  EXPECT_TRUE(e.shipped_is_baseline);
  EXPECT_NE(render_economics_text(e).find("none: the baseline ships"), std::string::npos);
}

std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) widest = std::max(widest, display_width(line));
  return widest;
}

TEST(RenderRuns, TheTableFitsTheWidthAndTheWideOneHoldsEveryChangeWhole) {
  StreamBuilder b = campaign();
  std::vector<SettingChange> many;
  for (int i = 0; i < 12; ++i) {
    many.push_back(flag_change("--some-long-flag-name-" + std::to_string(i), "1", "2"));
  }
  b.measured_run(5, RunPurpose::kSearch, 900.0, many);
  const std::vector<RunRow> rows = run_rows(fold(b.events()), Efficiency{1e9, 1000.0, 2.0});
  const std::string narrow = render_runs_text(rows, 100, false);
  EXPECT_LE(widest_line(narrow), 100u) << narrow;
  EXPECT_NE(narrow.find("…"), std::string::npos);
  EXPECT_NE(narrow.find("* shipped"), std::string::npos);
  const std::string wrapped = render_runs_text(rows, 100, true);
  EXPECT_LE(widest_line(wrapped), 100u) << wrapped;
  EXPECT_NE(wrapped.find("some-long-flag-name-11"), std::string::npos) << wrapped;
  const std::string wide = render_runs_text(rows, 0, false);
  EXPECT_GT(widest_line(wide), 100u);
  EXPECT_NE(wide.find("--some-long-flag-name-11 1" + kArrow + "2"), std::string::npos);
}

TEST(RenderRuns, CsvQuotesAndJsonKeepsTypes) {
  const std::vector<RunRow> rows = run_rows(fold(campaign().events()), Efficiency{});
  const std::string csv = render_runs_csv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\r')),
            "run_id,purpose,parent_run_id,change,change_from_baseline,failure_class,"
            "tokens_per_s_per_gpu,tflops_per_gpu,mfu,gpu_hours,verdict,gain_fraction,profiled,"
            "shipped,failure_cause");
  EXPECT_NE(csv.find("\r\n4,search,2,"), std::string::npos) << csv;
  // The failed run's cause ends its row; a measured run's row ends without one.
  EXPECT_NE(csv.find(",oom,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",false,out-of-memory\r\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",false,true,\r\n"), std::string::npos) << csv;  // run 2, shipped
  // The wide table names the failure's class and cause.
  const std::string wide = render_runs_text(rows, 0, false);
  EXPECT_NE(wide.find("oom (out-of-memory)"), std::string::npos) << wide;
  const nlohmann::json json = runs_to_json(rows);
  ASSERT_EQ(json.size(), 4u);
  EXPECT_TRUE(json[0]["parent_run_id"].is_null());
  EXPECT_TRUE(json[3]["tokens_per_s_per_gpu"].is_null());
  EXPECT_EQ(json[3]["failure_class"], "oom");
  EXPECT_EQ(json[3]["failure_cause"], "out-of-memory");  // RunFailed's cause, carried through
  EXPECT_TRUE(json[1]["failure_cause"].is_null());       // a measured run has none
  EXPECT_TRUE(json[1]["tokens_per_s_per_gpu"].is_number());
  EXPECT_TRUE(json[1]["mfu"].is_null());  // no FLOPs given
}

TEST(WrapWords, EveryLineFitsAndNoWordIsLost) {
  const std::string text =
      "stop (tuner-stopped): leader run 15 at 80.8% over the baseline; no single-lever candidate "
      "is expected to clear the band (3%); best remaining data-parallel-width expected 0.65%";
  const std::string wrapped = wrap_words(text, 40, "  ");
  EXPECT_LE(widest_line(wrapped), 40u) << wrapped;
  std::string rejoined;
  std::istringstream in(wrapped);
  for (std::string line; std::getline(in, line);) {
    const std::size_t first = line.find_first_not_of(' ');
    rejoined += (rejoined.empty() ? "" : " ") + line.substr(first);
  }
  EXPECT_EQ(rejoined, text);
  EXPECT_EQ(wrap_words("short", 40, "  "), "short");
  EXPECT_EQ(wrap_words("a\nb", 40, "  "), "a\nb");
  // Spaces within a line are kept as written; a break drops them.
  EXPECT_EQ(wrap_words("recipe    " + std::string(20, 'r') + "  and more", 32, "          "),
            "recipe    " + std::string(20, 'r') + "\n          and more");
  // A word longer than a line is cut, not lost.
  const std::string long_word(95, 'x');
  const std::string cut = wrap_words(long_word, 40, "  ");
  EXPECT_LE(widest_line(cut), 40u);
  std::string letters;
  for (char c : cut) letters += c == 'x' ? "x" : "";
  EXPECT_EQ(letters, long_word);
}

TEST(WrapWords, CountsCodePointsAndSurvivesIndentsWiderThanTheLine) {
  // Arrows are three bytes and one column.
  std::string arrows;
  for (int i = 0; i < 30; ++i) arrows += "tp 2" + kArrow + "1 ";
  const std::string wrapped = wrap_words(arrows, 20, "  ");
  EXPECT_LE(widest_line(wrapped), 20u) << wrapped;
  EXPECT_NE(wrapped.find("\n  tp"), std::string::npos) << wrapped;
  // A line indented past the width still ends (its words move under the indent).
  const std::string deep = std::string(30, ' ') + "word " + std::string(30, 'w');
  const std::string out = wrap_words(deep, 20, "  ");
  EXPECT_LE(widest_line(out), 20u) << out;
  EXPECT_NE(out.find("word"), std::string::npos);
  EXPECT_EQ(wrap_words(std::string(30, ' '), 20, "  "), "");
}

TEST(CutToWidth, CountsCodePointsAndEndsWithAnEllipsis) {
  EXPECT_EQ(cut_to_width("tp 2" + kArrow + "1", 6), "tp 2" + kArrow + "1");
  EXPECT_EQ(cut_to_width("tp 2" + kArrow + "1; pp", 6), "tp 2" + kArrow + "…");
  EXPECT_EQ(display_width(cut_to_width(std::string(50, 'a'), 10)), 10u);
}

}  // namespace
}  // namespace attune
