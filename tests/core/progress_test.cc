// The progress lines a campaign prints, from its events.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/core/campaign_driver.h"

namespace attune {
namespace {

// The lines the band's event prints once the last calibration run is measured: the runs of
// `throughputs`, and `in_place` where the band waits for a run in an outlier's place.
std::vector<std::string> band_lines(const std::vector<double>& throughputs,
                                    std::optional<double> in_place = std::nullopt) {
  Campaign campaign(
      CampaignSetup{.calibration_runs = static_cast<std::uint32_t>(throughputs.size())});
  campaign.calibrate(throughputs);
  if (in_place) campaign.calibrate({*in_place});
  for (const Envelope& envelope : campaign.news()) {
    if (std::holds_alternative<BandSet>(envelope.body)) {
      return progress_lines(campaign.state(), envelope);
    }
  }
  ADD_FAILURE() << "no band set";
  return {};
}

// The lines as one text, each wrapped line's continuations joined back to it.
std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (std::string line : lines) {
    for (std::size_t at = line.find("\n  "); at != std::string::npos; at = line.find("\n  ")) {
      line.replace(at, 3, " ");
    }
    text += line + "\n";
  }
  return text;
}

// One run on a slow node sets most of the band: the line names it and the band without it.
TEST(Progress, ACalibrationRunThatAloneWidensTheBandIsNamed) {
  const std::vector<std::string> lines =
      band_lines({5630.0, 5640.0, 4830.0, 5540.0, 5660.0}, 5600.0);
  const std::string text = joined(lines);
  EXPECT_NE(text.find("band set: baseline 5614.0"), std::string::npos) << text;
  EXPECT_NE(text.find("calibration run 3 measured 4830.0 tokens/s/GPU, 14.0% below"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(nodes n1,n2)"), std::string::npos) << text;
  EXPECT_NE(text.find("The baseline ran once more on other nodes, and the band, 3.00%, and the "
                      "baseline's mean leave that run out"),
            std::string::npos)
      << text;
  // Each printed line fits the terminal.
  for (const std::string& line : lines) {
    std::size_t start = 0;
    for (std::size_t end = line.find('\n'); start < line.size();
         start = end + 1, end = line.find('\n', start)) {
      if (end == std::string::npos) end = line.size();
      EXPECT_LE(end - start, 100u) << line;
    }
  }
}

// A failed search run's line gives its class and the cause its failure names, within the width.
TEST(Progress, AFailedRunsLineNamesItsClassAndCause) {
  Campaign campaign;
  campaign.calibrate({1000.0, 1000.0, 1000.0});
  const RunId run =
      campaign.launch(RunPurpose::kSearch, campaign.with("--pipeline-model-parallel-size", "4"));
  campaign.run_for(run, 0.25,
                   RunFailed{0, FailureClass::kCrash, "nvshmem initialization failed", "",
                             FailureCause::kTransportStart});
  std::string text;
  for (const Envelope& envelope : campaign.news()) {
    for (const std::string& line : progress_lines(campaign.state(), envelope)) text += line + "\n";
  }
  EXPECT_NE(text.find("| crash (transport-start) |"), std::string::npos) << text;
  for (std::size_t start = 0, end = text.find('\n'); end != std::string::npos;
       start = end + 1, end = text.find('\n', start)) {
    EXPECT_LE(end - start, 100u) << text.substr(start, end - start);
  }
}

// A spread shared by every run, or a band at its floor, names no run.
TEST(Progress, AnEvenSpreadOrAFloorBandNamesNoRun) {
  for (const std::vector<double>& throughputs :
       std::vector<std::vector<double>>{{1000.0, 1040.0, 960.0, 1020.0, 980.0},
                                        {1000.0, 1001.0, 999.0, 1000.0, 1002.0},
                                        {1000.0, 1000.0, 800.0}}) {
    const std::string text = joined(band_lines(throughputs));
    EXPECT_NE(text.find("band set"), std::string::npos) << text;
    EXPECT_EQ(text.find("calibration run"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace attune
