// BaselineBand: the calibration runs' mean throughput and the noise band a candidate must clear.
//
// Owns the fold of calibration measurements into the denominator of every gain (the mean of the
// baseline's tokens/s/GPU) and the band, max(floor, k * rsd). Calibration runs are the runs
// admitted with purpose calibration that were measured. Before a BandSet event the figures are
// live (recomputed from the calibration runs measured so far); from BandSet on, the figures the
// control plane recorded are authoritative. A pure value type: no clock, no I/O, no threads.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "events/event.h"
#include "projections/id_set.h"

namespace attune {

struct CalibrationSample {
  RunId run_id = 0;
  double tokens_per_s_per_gpu = 0.0;

  friend bool operator==(const CalibrationSample&, const CalibrationSample&) = default;
};

struct BaselineBand {
  // Settings from the first CampaignOpened (defaults until then).
  bool opened = false;
  double band_floor_fraction = CampaignOpened{}.band_floor_fraction;
  double band_k = CampaignOpened{}.band_k;

  IdSet calibration_run_ids;               // admitted with purpose calibration
  std::vector<CalibrationSample> samples;  // measured calibration runs, in measurement order

  // Live until band_set, then the BandSet's figures.
  double mean_tokens_per_s_per_gpu = 0.0;
  double rsd_fraction = 0.0;  // sample standard deviation (n - 1) over the mean
  double band_fraction = CampaignOpened{}.band_floor_fraction;

  bool band_set = false;
  std::vector<RunId> band_run_ids;      // the calibration runs the last BandSet names
  std::vector<RunId> left_out_run_ids;  // measured before it, and not named: a run on a slow node
  double mean_launch_gpu_hours = 0.0;   // from the last BandSet; 0 before it

  friend bool operator==(const BaselineBand&, const BaselineBand&) = default;
};

BaselineBand initial_baseline_band();

// Applies one event. Events for runs that were never admitted, and a second measurement of a
// run, are ignored here (the audit reports them).
void evolve(BaselineBand& state, const Envelope& event);

// Mean of the values, summed in order; 0 for no values.
double mean_of(std::span<const double> values);

// Sample standard deviation (n - 1) over the mean; 0 for fewer than two values or a mean <= 0.
double relative_std_dev(std::span<const double> values);

// max(floor, k * rsd).
double band_fraction_of(double floor_fraction, double k, double rsd_fraction);

// A calibration run that alone sets most of the band: leaving it out would more than halve it.
struct CalibrationOutlier {
  RunId run_id = 0;
  double tokens_per_s_per_gpu = 0.0;
  double others_mean = 0.0;             // the other calibration runs' mean
  double band_without_fraction = 0.0;   // the band the other runs give
  bool left_out = false;                // the band was set without it (from a run in its place)
  std::vector<RunId> left_out_run_ids;  // every run the band left out, this one first
};

// Among `samples`, the run whose absence narrows the band max(floor, k * rsd) most, where that
// more than halves it and at least four runs were measured; none otherwise.
std::optional<CalibrationOutlier> flagged_calibration_run(
    std::span<const CalibrationSample> samples, double floor_fraction, double k);

// Among `samples`, the fewest runs, a minority, whose absence more than halves the band (runs on
// slow nodes): a single run as flagged_calibration_run finds it, else the pair, and so on, each
// size taking the set that narrows the band most; empty where no minority does.
std::vector<CalibrationOutlier> flagged_calibration_runs(std::span<const CalibrationSample> samples,
                                                         double floor_fraction, double k);

// The runs the band left out, for a sentence: "calibration run 3", "calibration runs 3 and 5".
std::string left_out_runs_text(const CalibrationOutlier& outlier);

// For a set band: the calibration run it left out, or else the run among those it names that
// alone sets most of it (flagged_calibration_run); none before the band is set.
std::optional<CalibrationOutlier> calibration_outlier(const BaselineBand& band);

}  // namespace attune
