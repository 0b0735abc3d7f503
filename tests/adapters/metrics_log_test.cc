// The Megatron-LM log reader and the window measurement, on logs in the exact format of
// shared/reference/megatron_lm.md §2 (fixtures under tests/adapters/data/metrics/ were written
// with Megatron's own format strings).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/metrics/measurement.h"
#include "adapters/metrics/megatron_log.h"
#include "adapters/metrics/run_reading.h"

namespace attune {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string fixture(const std::string& name) {
  const std::string path = std::string(ATTUNE_SOURCE_DIR) + "/tests/adapters/data/metrics/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

RunReading read_completed(const std::string& text, MeasureRequest request = {}) {
  return read_run(read_megatron_log(text), JobOutcome{"COMPLETED", false}, request);
}

// The window times of complete_14.log (iterations 4..13): they sum to 40960.0 ms.
const std::vector<double> kWindowTimesMs = {4000.0, 4100.0, 4200.0, 4050.0, 4150.0,
                                            4090.0, 4110.0, 4070.0, 4120.0, 4070.0};
// 10 steps x 256 sequences x 4096 tokens / 40.96 s / 8 GPUs.
constexpr double kCompleteThroughput = 10.0 * 256 * 4096 / 40.96 / 8;

// ---- the reference's example lines -------------------------------------------------------------

// §2.4, verbatim.
constexpr const char* kReferenceIterationLines[] = {
    " [2026-08-22 15:31:07.482913] iteration        1/     500 | consumed samples:          256 | "
    "elapsed time per iteration (ms): 48213.6 | throughput per GPU (TFLOP/s/GPU): 27.4 | learning "
    "rate: 1.500000E-07 | global batch size:   256 | lm loss: 1.217735E+01 | loss scale: 1.0 | "
    "grad norm: 41.273 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    " [2026-08-22 16:02:11.902771] iteration      120/   20000 | consumed samples:       491520 | "
    "elapsed time per iteration (ms): 7315.9 | throughput per GPU (TFLOP/s/GPU): 388.2 | learning "
    "rate: 2.999100E-04 | global batch size:  4096 | lm loss: 4.125531E+00 | "
    "load_balancing_loss: 1.021341E+00 | z_loss: 1.841220E-03 | mtp_1 loss: 4.337926E+00 | loss "
    "scale: 1.0 | grad norm: 0.284 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |",
    " [2026-08-22 15:44:03.007351] iteration       10/    1000 | consumed samples:         5120 | "
    "elapsed time per iteration (ms): 1288.4 | throughput per GPU (TFLOP/s/GPU): 151.9 | learning "
    "rate: 0.000000E+00 | global batch size:   512 | loss scale: 1073741824.0 | number of skipped "
    "iterations:  10 | number of nan iterations:   0 |",
    " [2026-08-22 15:45:15.551906] iteration      100/    1000 | consumed samples:        51200 | "
    "elapsed time per iteration (ms): 1164.2 | throughput per GPU (TFLOP/s/GPU): 168.1 | learning "
    "rate: 4.500000E-05 | global batch size:   512 | lm loss: 6.913441E+00 | loss scale: "
    "131072.0 | grad norm: 1.046 | num zeros: 1299.0 | params norm: 496.206 | number of skipped "
    "iterations:   2 | number of nan iterations:   1 |",
    " [2026-08-22 17:20:44.660215] iteration      300/    2000 | consumed samples:      1228800 | "
    "elapsed time per iteration (ms): 2841.3 | throughput per GPU (TFLOP/s/GPU): 455.6 | energy "
    "per GPU (J/iter/GPU): 1874.2 | power per GPU (W/GPU): 659.6 | learning rate: 2.400000E-04 | "
    "global batch size:  4096 | lm loss: 3.011772E+00 | loss scale: 1.0 | grad norm: 0.199 | "
    "number of skipped iterations:   0 | number of nan iterations:   0 |",
    " [2026-08-22 18:05:12.190458] iteration       40/     100 | consumed samples:        10240 | "
    "elapsed time per iteration (ms): 15639.0 | throughput per GPU (TFLOP/s/GPU): 494.6 | "
    "learning rate: 4.180800E-07 | global batch size:  2048 | lm loss: 1.344240E+01 | "
    "seq_load_balancing_loss: 1.000203E+00 | loss scale: 1.0 | grad norm: 2.870 | number of "
    "skipped iterations:   0 | number of nan iterations:   0 |",
};

IterationLine only_iteration(const std::string& text) {
  const MegatronLog log = read_megatron_log(text);
  EXPECT_EQ(log.iterations.size(), 1u) << text;
  EXPECT_EQ(log.iteration_lines_rejected, 0u) << text;
  return log.iterations.empty() ? IterationLine{} : log.iterations.front();
}

TEST(MetricsLogLines, ReadsEveryFieldOfTheFirstReferenceLine) {
  const IterationLine line = only_iteration(std::string(kReferenceIterationLines[0]) + "\n");
  EXPECT_EQ(line.iteration, 1u);
  EXPECT_EQ(line.train_iters, 500u);
  EXPECT_EQ(line.consumed_samples, 256u);
  EXPECT_DOUBLE_EQ(line.elapsed_ms_per_iteration, 48213.6);
  EXPECT_EQ(line.throughput_tflops_per_gpu, 27.4);
  EXPECT_EQ(line.learning_rate, 1.5e-7);
  EXPECT_EQ(line.global_batch_size, 256u);
  EXPECT_EQ(line.lm_loss, 12.17735);
  EXPECT_TRUE(line.other_losses.empty());
  EXPECT_EQ(line.loss_scale, 1.0);
  EXPECT_EQ(line.grad_norm, 41.273);
  EXPECT_EQ(line.skipped_iterations, 0u);
  EXPECT_EQ(line.nan_iterations, 0u);
  EXPECT_EQ(line.source.depth, 0u);
}

TEST(MetricsLogLines, ReadsMoeAndMtpLossesInPrintOrder) {
  const IterationLine line = only_iteration(std::string(kReferenceIterationLines[1]) + "\n");
  EXPECT_EQ(line.iteration, 120u);
  EXPECT_EQ(line.global_batch_size, 4096u);
  EXPECT_EQ(line.lm_loss, 4.125531);
  EXPECT_THAT(line.other_losses,
              ElementsAre(NamedValue{"load_balancing_loss", 1.021341},
                          NamedValue{"z_loss", 1.841220e-3}, NamedValue{"mtp_1 loss", 4.337926}));
  const IterationLine seq = only_iteration(std::string(kReferenceIterationLines[5]) + "\n");
  EXPECT_THAT(seq.other_losses, ElementsAre(NamedValue{"seq_load_balancing_loss", 1.000203}));
}

TEST(MetricsLogLines, AllSkippedFp16IntervalHasNoLossAndNoGradNorm) {
  const IterationLine line = only_iteration(std::string(kReferenceIterationLines[2]) + "\n");
  EXPECT_EQ(line.lm_loss, std::nullopt);
  EXPECT_EQ(line.grad_norm, std::nullopt);
  EXPECT_EQ(line.loss_scale, 1073741824.0);
  EXPECT_EQ(line.learning_rate, 0.0);
  EXPECT_EQ(line.skipped_iterations, 10u);
}

TEST(MetricsLogLines, OptionalAndForkSegmentsDoNotDisturbTheFields) {
  const IterationLine zeros = only_iteration(std::string(kReferenceIterationLines[3]) + "\n");
  EXPECT_EQ(zeros.grad_norm, 1.046);
  EXPECT_EQ(zeros.skipped_iterations, 2u);
  EXPECT_EQ(zeros.nan_iterations, 1u);
  const IterationLine energy = only_iteration(std::string(kReferenceIterationLines[4]) + "\n");
  EXPECT_EQ(energy.learning_rate, 2.4e-4);
  EXPECT_EQ(energy.lm_loss, 3.011772);
  EXPECT_DOUBLE_EQ(energy.elapsed_ms_per_iteration, 2841.3);
  // Pre-2025 timestamps without microseconds, and no throughput (no --log-throughput).
  const IterationLine old = only_iteration(
      " [2024-03-01 10:00:00] iteration        3/ 7629408 | consumed samples:           96 | "
      "elapsed time per iteration (ms): 24379.9 | learning rate: 1.000000E-05 | global batch "
      "size:    32 | lm loss: 9.000000E+00 | loss scale: 1.0 | grad norm: 3.000 | number of "
      "skipped iterations:   0 | number of nan iterations:   0 |\n");
  EXPECT_EQ(old.throughput_tflops_per_gpu, std::nullopt);
  EXPECT_EQ(old.train_iters, 7629408u);
}

TEST(MetricsLogLines, OtherReferenceLinesAreNotIterationLines) {
  const MegatronLog log = read_megatron_log(
      "(min, max) time across ranks (ms):\n"
      "    forward-backward ...............................: (3301.12, 3305.87)\n"
      " validation loss at iteration 1000 | lm loss value: 2.345678E+00 | lm loss PPL: "
      "1.044035E+01 | \n"
      " validation loss at iteration 1000 on validation set | lm loss value: 2.345678E+00 | \n"
      "exiting program at iteration 14\n"
      "[before the start of training step] datetime: 2026-08-22 15:30:00.118204 \n");
  EXPECT_TRUE(log.iterations.empty());
  EXPECT_EQ(log.iteration_lines_rejected, 0u);
  EXPECT_EQ(log.lines_read, 6u);
  for (const auto& sign : log.first_signs) EXPECT_FALSE(sign.has_value());
}

TEST(MetricsLogLines, ReadsTheReferenceMemoryLines) {
  const MegatronLog log = read_megatron_log(
      "[Rank 0] (after 1 iterations) memory (MB) | allocated: 22441.93 | max allocated: 50917.38 "
      "| reserved: 53618.00 | max reserved: 53618.00\n"
      "[Rank 4] (after 10 iterations) memory (MB) | allocated: 22441.93 | max allocated: "
      "51002.10 | reserved: 53812.00 | max reserved: 53812.00\n"
      "[Rank 0] (after 2 iterations) memory (MB) | allocated: 22441.93 | max allocated: 50990.00 "
      "| reserved: 53700.00 | max reserved: 53700.00 | total device memory used: 60001.00\n");
  ASSERT_EQ(log.memory.size(), 2u);
  EXPECT_EQ(log.memory[0], (RankMemory{0, 50990.00, 53700.00, 2}));
  EXPECT_EQ(log.memory[1], (RankMemory{4, 51002.10, 53812.00, 1}));
  // No layout in the log: one peak per reporting rank, in GiB.
  const PeakMemory peak = peak_memory_of(log);
  EXPECT_EQ(peak.grouping, MemoryGrouping::kRank);
  ASSERT_EQ(peak.peaks.size(), 2u);
  EXPECT_EQ(peak.peaks[0].index, 0u);
  EXPECT_DOUBLE_EQ(peak.peaks[0].max_reserved_gib, 53700.00 / 1024);
  EXPECT_DOUBLE_EQ(peak.peaks[0].max_allocated_gib, 50990.00 / 1024);
  EXPECT_EQ(peak.peaks[1].index, 4u);
  EXPECT_DOUBLE_EQ(peak.peaks[1].max_reserved_gib, 53812.00 / 1024);
}

// ---- a complete run ----------------------------------------------------------------------------

TEST(MetricsWindow, CompleteLogGivesTheHandComputedAggregateThroughput) {
  const RunReading reading = read_completed(fixture("complete_14.log"));
  ASSERT_EQ(reading.kind, ReadingKind::kMeasured) << reading.reason;
  const Measurement& m = *reading.measurement;
  EXPECT_EQ(m.settings, (MeasureSettings{{4, 13}, 4096, 8, 1}));  // seq and GPUs from the block
  EXPECT_NEAR(m.tokens_per_s_per_gpu, kCompleteThroughput, 1e-9 * kCompleteThroughput);
  EXPECT_NEAR(m.tokens_per_s_per_gpu, 32000.0, 1e-6);
  EXPECT_EQ(m.window_step_times_ms, kWindowTimesMs);
  // Deviations from the mean 4096 ms square-sum to 27240 ms^2.
  EXPECT_NEAR(m.window_rsd, std::sqrt(27240.0 / 9.0) / 4096.0, 1e-12);
  EXPECT_THAT(m.series.iterations, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14));
  EXPECT_THAT(m.series.step_times_ms,
              ElementsAre(48213.6, 5120.4, 4301.7, 4000.0, 4100.0, 4200.0, 4050.0, 4150.0, 4090.0,
                          4110.0, 4070.0, 4120.0, 4070.0, 3999.9));
  EXPECT_THAT(m.series.loss_curve,
              ElementsAre(10.9413, 10.7725, 10.3311, 9.9917, 9.6184, 9.3391, 9.0457, 8.8812, 8.6139,
                          8.4721, 8.3024, 8.1876, 8.0911, 7.9850));
  EXPECT_EQ(m.series.nan_iterations, 0u);
  EXPECT_EQ(m.series.skipped_iterations, 0u);
}

TEST(MetricsWindow, TheMeanOfPerStepRatesIsNotTheAnswer) {
  double mean_rate = 0.0;
  for (double ms : kWindowTimesMs) mean_rate += 256.0 * 4096 / (ms / 1000.0) / 8 / 10;
  const RunReading reading = read_completed(fixture("complete_14.log"));
  ASSERT_EQ(reading.kind, ReadingKind::kMeasured);
  EXPECT_GT(std::abs(reading.measurement->tokens_per_s_per_gpu - mean_rate), 1.0);
}

TEST(MetricsWindow, StepsOutsideTheWindowNeverCount) {
  std::vector<std::string> lines = lines_of(fixture("complete_14.log"));
  for (std::string& line : lines) {
    for (const char* outside : {"48213.6", "5120.4", "4301.7", "3999.9"}) {
      const std::string field = std::string("(ms): ") + outside + " |";
      if (const std::size_t at = line.find(field); at != std::string::npos) {
        line.replace(at, field.size(), "(ms): 1.0 |");
      }
    }
  }
  const RunReading reading = read_completed(joined(lines));
  ASSERT_EQ(reading.kind, ReadingKind::kMeasured) << reading.reason;
  EXPECT_THAT(reading.measurement->series.step_times_ms,
              ElementsAre(1.0, 1.0, 1.0, 4000.0, 4100.0, 4200.0, 4050.0, 4150.0, 4090.0, 4110.0,
                          4070.0, 4120.0, 4070.0, 1.0));
  EXPECT_NEAR(reading.measurement->tokens_per_s_per_gpu, kCompleteThroughput, 1e-6);
}

TEST(MetricsWindow, AnotherWindowAndExplicitSeqAndGpus) {
  MeasureRequest request;
  request.window = {5, 14};
  request.seq_length = 2048;
  request.gpus = 16;
  const RunReading reading = read_completed(fixture("complete_14.log"), request);
  ASSERT_EQ(reading.kind, ReadingKind::kMeasured) << reading.reason;
  const double milliseconds =
      4100.0 + 4200.0 + 4050.0 + 4150.0 + 4090.0 + 4110.0 + 4070.0 + 4120.0 + 4070.0 + 3999.9;
  const double expected = 10.0 * 256 * 2048 / (milliseconds / 1000.0) / 16;
  EXPECT_NEAR(reading.measurement->tokens_per_s_per_gpu, expected, 1e-9 * expected);
  EXPECT_EQ(reading.measurement->window_step_times_ms.size(), 10u);
}

TEST(MetricsWindow, AWindowInsideTheWarmUpIsABadRequest) {
  MeasureRequest request;
  request.window = {2, 13};
  const RunReading reading = read_completed(fixture("complete_14.log"), request);
  EXPECT_EQ(reading.kind, ReadingKind::kBadRequest);
  EXPECT_EQ(reading.reason,
            "window 2:13 reaches into Megatron's warm-up (the lines up to iteration 2); start at "
            "3 or later");
  request.window = {3, 13};
  EXPECT_EQ(read_completed(fixture("complete_14.log"), request).kind, ReadingKind::kMeasured);
}

TEST(MetricsWindow, AnEmptyWindowIsABadRequest) {
  MeasureRequest request;
  request.window = {9, 8};
  const RunReading reading = read_completed(fixture("complete_14.log"), request);
  EXPECT_EQ(reading.kind, ReadingKind::kBadRequest);
  EXPECT_EQ(reading.reason, "window 9:8 is empty: it needs 1 <= first <= last");
}

TEST(MetricsWindow, SeqAndGpusAreRequiredWhenTheLogHasNoArgumentsBlock) {
  std::string text;
  for (const std::string& line : lines_of(fixture("complete_14.log"))) {
    if (line.find(" iteration ") != std::string::npos) text += line + "\n";
  }
  RunReading reading = read_completed(text);
  EXPECT_EQ(reading.kind, ReadingKind::kBadRequest);
  EXPECT_EQ(reading.reason,
            "sequence length unknown: not given, and the log's arguments block has no seq_length");
  MeasureRequest request;
  request.seq_length = 4096;
  reading = read_completed(text, request);
  EXPECT_EQ(reading.reason,
            "GPU count unknown: not given, and the log's arguments block has no world_size");
  request.gpus = 8;
  reading = read_completed(text, request);
  ASSERT_EQ(reading.kind, ReadingKind::kMeasured) << reading.reason;
  EXPECT_NEAR(reading.measurement->tokens_per_s_per_gpu, kCompleteThroughput, 1e-6);
}

// With --log-interval 10 a line covers ten iterations and reports their average time.
std::string interval_ten_log() {
  std::string text =
      "------------------------ arguments ------------------------\n"
      "  log_interval .................................... 10\n"
      "  seq_length ...................................... 1024\n"
      "  world_size ...................................... 4\n"
      "-------------------- end of arguments ---------------------\n";
  const std::pair<int, const char*> lines[] = {
      {1, "9000.0"}, {10, "2000.0"}, {20, "1000.0"}, {30, "1500.0"}};
  for (const auto& [iteration, ms] : lines) {
    char line[512];
    std::snprintf(line, sizeof line,
                  " [2026-08-22 15:31:07.482913] iteration %8d/%8d | consumed samples: %12d | "
                  "elapsed time per iteration (ms): %s | learning rate: 1.000000E-05 | global "
                  "batch size: %5d | lm loss: 9.000000E+00 | loss scale: 1.0 | grad norm: 1.000 | "
                  "number of skipped iterations: %3d | number of nan iterations: %3d |\n",
                  iteration, 30, iteration * 64, ms, 64, 0, iteration == 1 ? 1 : 0);
    text += line;
  }
  return text;
}

TEST(MetricsWindow, LogIntervalTenCountsWholeIntervals) {
  MeasureRequest request;
  request.window = {11, 30};
  const RunReading reading = read_completed(interval_ten_log(), request);
  ASSERT_EQ(reading.kind, ReadingKind::kMeasured) << reading.reason;
  const double expected = (20.0 * 64 * 1024) / ((1000.0 * 10 + 1500.0 * 10) / 1000.0) / 4;
  EXPECT_NEAR(reading.measurement->tokens_per_s_per_gpu, expected, 1e-9 * expected);
  EXPECT_EQ(reading.measurement->settings.log_interval, 10u);
  EXPECT_THAT(reading.measurement->window_step_times_ms, ElementsAre(1000.0, 1500.0));
  // Iteration 1's line is not on a boundary: its counters come again in iteration 10's line.
  EXPECT_EQ(reading.measurement->series.nan_iterations, 0u);
}

TEST(MetricsWindow, LogIntervalTenRefusesMisalignedAndWarmUpWindows) {
  MeasureRequest request;
  request.window = {15, 30};
  RunReading reading = read_completed(interval_ten_log(), request);
  EXPECT_EQ(reading.kind, ReadingKind::kBadRequest);
  EXPECT_EQ(reading.reason,
            "window 15:30 does not align with the log interval 10: it must start right after, "
            "and end on, a multiple of 10");
  request.window = {1, 20};
  reading = read_completed(interval_ten_log(), request);
  EXPECT_EQ(reading.kind, ReadingKind::kBadRequest);
  EXPECT_THAT(reading.reason, HasSubstr("warm-up (the lines up to iteration 10); start at 11"));
}

TEST(MetricsWindow, LogIntervalIsInferredWithoutTheBlock) {
  std::string text = interval_ten_log();
  text = text.substr(text.find(" [2026"));
  EXPECT_EQ(log_interval_of(read_megatron_log(text)), 10u);
  EXPECT_EQ(log_interval_of(read_megatron_log(fixture("complete_14.log"))), 1u);
  EXPECT_EQ(log_interval_of(read_megatron_log("")), 1u);
}

// ---- truncated and garbled logs ----------------------------------------------------------------

TEST(MetricsTruncated, ALogCutInsideTheWindowIsNotAMeasurement) {
  const std::string text = fixture("complete_14.log");
  const std::size_t line_11 = text.find("iteration       11/");
  ASSERT_NE(line_11, std::string::npos);
  const std::string cut = text.substr(0, line_11 + 150);  // inside iteration 11's line
  const MegatronLog log = read_megatron_log(cut);
  ASSERT_FALSE(log.iterations.empty());
  EXPECT_EQ(log.iterations.back().iteration, 10u);
  EXPECT_EQ(log.iteration_lines_rejected, 1u);
  const RunReading reading = read_run(log, JobOutcome{}, MeasureRequest{});
  EXPECT_EQ(reading.kind, ReadingKind::kIncomplete);
  EXPECT_EQ(reading.reason, "the log stops at iteration 10, before the window's last step 13");
}

TEST(MetricsTruncated, NoCutPointOfTheLastLineIsMisread) {
  const std::string text = fixture("complete_14.log");
  const MegatronLog whole = read_megatron_log(text);
  const std::size_t begin = text.rfind('\n', text.find("iteration       13/")) + 1;
  const std::size_t end = text.find('\n', begin);
  for (std::size_t cut = begin; cut < end; ++cut) {
    const MegatronLog log = read_megatron_log(text.substr(0, cut));
    ASSERT_FALSE(log.iterations.empty());
    const IterationLine& last = log.iterations.back();
    if (last.iteration == 13) {
      // Only the cut right after the closing '|' is whole, and then it reads exactly.
      EXPECT_EQ(cut, end) << cut;
    } else {
      EXPECT_EQ(last, whole.iterations[11]) << cut;
    }
  }
  // Whole without its newline: the closing '|' shows the end.
  const MegatronLog no_newline = read_megatron_log(text.substr(0, end));
  EXPECT_EQ(no_newline.iterations.back(), whole.iterations[12]);
}

TEST(MetricsTruncated, NoCutPointOfAMemoryLineIsMisread) {
  const std::string line =
      "[Rank 4] (after 10 iterations) memory (MB) | allocated: 22441.93 | max allocated: "
      "51002.10 | reserved: 53812.00 | max reserved: 53812.00";
  for (std::size_t cut = 0; cut < line.size(); ++cut) {
    const MegatronLog log = read_megatron_log(line.substr(0, cut));
    EXPECT_TRUE(log.memory.empty()) << line.substr(0, cut);
  }
  const MegatronLog whole = read_megatron_log(line);
  ASSERT_EQ(whole.memory.size(), 1u);
  EXPECT_EQ(whole.memory[0], (RankMemory{4, 51002.10, 53812.00, 1}));
}

TEST(MetricsTruncated, AGarbledWindowLineLeavesNoCompleteWindow) {
  std::vector<std::string> lines = lines_of(fixture("complete_14.log"));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("iteration        8/") != std::string::npos) {
      // Two ranks wrote at once: the 8th line is cut and the next one glued onto it.
      lines[i] = lines[i].substr(0, 120) + lines[i + 1];
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      break;
    }
  }
  const MegatronLog log = read_megatron_log(joined(lines));
  EXPECT_EQ(log.iteration_lines_rejected, 1u);
  const RunReading reading = read_run(log, JobOutcome{"COMPLETED", false}, MeasureRequest{});
  EXPECT_EQ(reading.kind, ReadingKind::kIncomplete);
  EXPECT_EQ(reading.reason,
            "iteration 8 of window 4:13 is missing from the log (not printed, or cut or garbled)");
}

TEST(MetricsTruncated, MalformedSegmentsRejectTheLine) {
  const std::string good = std::string(kReferenceIterationLines[0]);
  const std::string bad[] = {
      // a value that is not a number
      std::string(good).replace(good.find("48213.6"), 7, "48213.6x"),
      // a mandatory field missing
      std::string(good).replace(good.find(" loss scale: 1.0 |"), 18, ""),
      // a field printed twice
      std::string(good).replace(good.find(" loss scale:"), 0, " global batch size:   512 |"),
  };
  for (const std::string& line : bad) {
    const MegatronLog log = read_megatron_log(line + "\n");
    EXPECT_TRUE(log.iterations.empty()) << line;
    EXPECT_EQ(log.iteration_lines_rejected, 1u) << line;
  }
}

TEST(MetricsTruncated, LinesSplitAnywhereAcrossFeedsReadTheSame) {
  const std::string text = fixture("interleaved_ranks.log");
  const MegatronLog whole = read_megatron_log(text);
  for (std::size_t piece : {1u, 7u, 100u, 4096u}) {
    MegatronLogReader reader;
    for (std::size_t at = 0; at < text.size(); at += piece) {
      reader.feed(std::string_view(text).substr(at, piece));
    }
    const MegatronLog log = reader.finish();
    EXPECT_EQ(log.iterations, whole.iterations) << piece;
    EXPECT_EQ(log.memory, whole.memory) << piece;
    EXPECT_EQ(log.arguments, whole.arguments) << piece;
    EXPECT_EQ(log.lines_read, whole.lines_read) << piece;
  }
}

TEST(MetricsTruncated, AnOverlongLineIsCutAndReadingGoesOn) {
  MegatronLogReader reader;
  reader.feed(std::string(3 * kLineBytesMax, 'x'));
  reader.feed("\n");
  reader.feed(std::string(kReferenceIterationLines[0]) + "\n");
  const MegatronLog log = reader.finish();
  EXPECT_EQ(log.lines_read, 2u);
  ASSERT_EQ(log.iterations.size(), 1u);
  EXPECT_EQ(log.iterations[0].iteration, 1u);
}

// ---- NaN losses --------------------------------------------------------------------------------

TEST(MetricsNan, TheCurveKeepsNanAndTheCountersAreSummed) {
  // An fp16 run whose iterations 6 and 7 hit NaN: skipped, counted, and printed without a loss
  // (Megatron prints only averages >= 0) and without a grad norm.
  const RunReading reading = read_completed(fixture("nan_losses.log"));
  ASSERT_EQ(reading.kind, ReadingKind::kMeasured) << reading.reason;
  const IterationSeries& series = reading.measurement->series;
  ASSERT_EQ(series.loss_curve.size(), 14u);
  for (std::size_t i = 0; i < 14; ++i) {
    const bool nan_expected = i + 1 == 6 || i + 1 == 7;
    EXPECT_EQ(std::isnan(series.loss_curve[i]), nan_expected) << "iteration " << i + 1;
  }
  EXPECT_EQ(series.loss_curve[4], 9.6184);
  EXPECT_EQ(series.loss_curve[7], 8.8812);
  EXPECT_EQ(series.nan_iterations, 2u);
  EXPECT_EQ(series.skipped_iterations, 2u);
  const MegatronLog log = read_megatron_log(fixture("nan_losses.log"));
  EXPECT_EQ(log.iteration_lines_rejected, 0u);
  EXPECT_EQ(log.iterations[5].nan_iterations, 1u);
  EXPECT_EQ(log.iterations[5].lm_loss, std::nullopt);
  EXPECT_EQ(log.iterations[5].grad_norm, std::nullopt);
  EXPECT_EQ(log.iterations[6].loss_scale, 16384.0);
  // Skipped iterations still took their time: the window counts them.
  EXPECT_NEAR(reading.measurement->tokens_per_s_per_gpu, kCompleteThroughput, 1e-6);
}

TEST(MetricsNan, NanAndInfPrintedAsValuesReadAsSuch) {
  // Python formats NaN as `NAN` with {:.6E} and `nan` with {:.3f}, as forks that print every
  // loss do; a bf16 step's grad norm can be nan or inf.
  std::string line = kReferenceIterationLines[0];
  line.replace(line.find("1.217735E+01"), 12, "NAN");
  line.replace(line.find("41.273"), 6, "inf");
  const IterationLine read = only_iteration(line + "\n");
  ASSERT_TRUE(read.lm_loss.has_value());
  EXPECT_TRUE(std::isnan(*read.lm_loss));
  EXPECT_EQ(read.grad_norm, std::numeric_limits<double>::infinity());
  line.replace(line.find("grad norm: inf"), 14, "grad norm: nan");
  EXPECT_TRUE(std::isnan(*only_iteration(line + "\n").grad_norm));
}

// ---- interleaved ranks -------------------------------------------------------------------------

TEST(MetricsInterleaved, TorchPrefixedRanksGiveTheSameMeasurement) {
  const RunReading plain = read_completed(fixture("complete_14.log"));
  const RunReading mixed = read_completed(fixture("interleaved_ranks.log"));
  ASSERT_EQ(mixed.kind, ReadingKind::kMeasured) << mixed.reason;
  ASSERT_EQ(plain.kind, ReadingKind::kMeasured);
  EXPECT_EQ(mixed.measurement->tokens_per_s_per_gpu, plain.measurement->tokens_per_s_per_gpu);
  EXPECT_EQ(mixed.measurement->series.step_times_ms, plain.measurement->series.step_times_ms);
  EXPECT_EQ(mixed.measurement->arguments, plain.measurement->arguments);
  EXPECT_EQ(mixed.measurement->peak_memory.peaks.size(), 2u);

  const MegatronLog log = read_megatron_log(fixture("interleaved_ranks.log"));
  ASSERT_EQ(log.iterations.size(), 14u);  // rank 6 printed every iteration too: never twice
  for (const IterationLine& line : log.iterations) {
    EXPECT_EQ(line.source.depth, 1u);
    EXPECT_EQ(line.source.ranks[0], 7u);  // the last rank's lines, not rank 6's
  }
}

TEST(MetricsInterleaved, TheHighestRankWinsWhicheverComesFirst) {
  const std::string line = kReferenceIterationLines[0];
  const std::string other = std::string(line).replace(line.find("48213.6"), 7, "99999.9");
  const MegatronLog low_first = read_megatron_log("[rank3]:" + other + "\n[rank7]:" + line + "\n");
  const MegatronLog high_first = read_megatron_log("[rank7]:" + line + "\n[rank3]:" + other + "\n");
  for (const MegatronLog* log : {&low_first, &high_first}) {
    ASSERT_EQ(log->iterations.size(), 1u);
    EXPECT_DOUBLE_EQ(log->iterations[0].elapsed_ms_per_iteration, 48213.6);
  }
}

// srun -l labels (space-padded), torchrun role prefixes and a collector's timestamps.
std::string relabelled(const std::string& text) {
  std::string out;
  for (const std::string& line : lines_of(text)) {
    std::string rank = " 0";
    if (line.find(" iteration ") != std::string::npos) rank = " 1";
    if (line.starts_with("[Rank ")) rank = line[6] >= '4' ? " 1" : " 0";
    const std::string local = line.starts_with("[Rank ") ? std::string(1, line[6]) : "0";
    out += "2026-08-22T15:31:07.123456Z " + rank + ": [default" +
           (line.find(" iteration ") != std::string::npos ? "3" : local) + "]:" + line + "\n";
    out += "2026-08-22T15:31:07.123457Z  0: [default1]:NCCL INFO comm 0x5581 rank 1 nranks 8\n";
  }
  return out;
}

TEST(MetricsInterleaved, SrunLabelsTorchrunPrefixesAndTimestamps) {
  const RunReading plain = read_completed(fixture("complete_14.log"));
  const std::string text = relabelled(fixture("complete_14.log"));
  const RunReading labelled = read_completed(text);
  ASSERT_EQ(labelled.kind, ReadingKind::kMeasured) << labelled.reason;
  EXPECT_EQ(labelled.measurement->tokens_per_s_per_gpu, plain.measurement->tokens_per_s_per_gpu);
  EXPECT_EQ(labelled.measurement->series.loss_curve, plain.measurement->series.loss_curve);
  EXPECT_EQ(labelled.measurement->arguments, plain.measurement->arguments);
  const MegatronLog log = read_megatron_log(text);
  EXPECT_EQ(log.iterations.front().source.depth, 2u);
  EXPECT_EQ(log.iterations.front().source.ranks[0], 1u);
  EXPECT_EQ(log.iterations.front().source.ranks[1], 3u);
  EXPECT_EQ(log.memory, read_megatron_log(fixture("complete_14.log")).memory);
}

TEST(MetricsInterleaved, PyTorchRankPrefixWithASpace) {
  const MegatronLog log = read_megatron_log(
      "[rank0]: ------------------------ arguments ------------------------\n"
      "[rank0]:   seq_length ...................................... 4096\n"
      "[rank0]: -------------------- end of arguments ---------------------\n");
  EXPECT_TRUE(log.arguments.complete);
  EXPECT_EQ(log.arguments.unsigned_value("seq_length"), 4096u);
  EXPECT_THAT(log.arguments.lines,
              ElementsAre("  seq_length ...................................... 4096"));
}

// ---- memory report -----------------------------------------------------------------------------

TEST(MetricsMemory, RanksMapToPipelineStagesFromTheLayout) {
  // world 8, PP 2, order tp-cp-ep-dp-pp: ranks 0-3 are stage 0, ranks 4-7 stage 1.
  const PeakMemory peak = peak_memory_of(read_megatron_log(fixture("complete_14.log")));
  EXPECT_EQ(peak.grouping, MemoryGrouping::kStage);
  ASSERT_EQ(peak.peaks.size(), 2u);
  EXPECT_EQ(peak.peaks[0].index, 0u);
  EXPECT_DOUBLE_EQ(peak.peaks[0].max_reserved_gib, 56021.00 / 1024);  // rank 1, after 2 iters
  EXPECT_DOUBLE_EQ(peak.peaks[0].max_allocated_gib, (50917.38 + 1201.5) / 1024);
  EXPECT_EQ(peak.peaks[1].index, 1u);
  EXPECT_DOUBLE_EQ(peak.peaks[1].max_reserved_gib, 60827.00 / 1024);  // rank 5
}

TEST(MetricsMemory, ANonDefaultRankOrderFallsBackToRanks) {
  std::string text = fixture("complete_14.log");
  const std::string flag = "use_tp_pp_dp_mapping ............................ False";
  text.replace(text.find(flag), flag.size(),
               "use_tp_pp_dp_mapping ............................ True");
  const PeakMemory peak = peak_memory_of(read_megatron_log(text));
  EXPECT_EQ(peak.grouping, MemoryGrouping::kRank);
  ASSERT_EQ(peak.peaks.size(), 4u);
  EXPECT_EQ(peak.peaks[3].index, 5u);
}

// ---- arguments block ---------------------------------------------------------------------------

TEST(MetricsArguments, RawLinesAndParsedValues) {
  const ArgumentsBlock& block = read_megatron_log(fixture("complete_14.log")).arguments;
  EXPECT_TRUE(block.complete);
  ASSERT_EQ(block.lines.size(), 31u);
  EXPECT_EQ(block.lines.front(), "  bf16 ............................................ True");
  EXPECT_EQ(block.values.size(), 31u);
  EXPECT_EQ(block.values.at("seq_length"), "4096");
  EXPECT_EQ(block.values.at("data_path"), "['/data/pile_text_document']");
  EXPECT_EQ(block.values.at("recompute_granularity"), "None");
  EXPECT_EQ(block.values.at("min_lr"), "3e-05");
  // A name of 48 characters or more gets no dots.
  EXPECT_EQ(block.values.at("decoder_first_pipeline_num_layers_which_is_a_very_long_argument_name"),
            "None");
  EXPECT_EQ(block.unsigned_value("world_size"), 8u);
  EXPECT_EQ(block.unsigned_value("recompute_granularity"), std::nullopt);
  EXPECT_EQ(block.unsigned_value("no_such_argument"), std::nullopt);
}

TEST(MetricsArguments, TheReferenceExampleLineParses) {
  const MegatronLog log = read_megatron_log(
      "------------------------ arguments ------------------------\n"
      "  micro_batch_size ................................ 1\n");
  EXPECT_FALSE(log.arguments.complete);  // no end line yet
  EXPECT_EQ(log.arguments.unsigned_value("micro_batch_size"), 1u);
}

TEST(MetricsArguments, ACutLastLineIsNotTakenAndWrongDotsAreNotArguments) {
  const MegatronLog log = read_megatron_log(
      "------------------------ arguments ------------------------\n"
      "  micro_batch_size ........ 1\n"
      "  seq_length ...................................... 40");  // cut from 4096
  EXPECT_FALSE(log.arguments.complete);
  EXPECT_TRUE(log.arguments.values.empty());
}

TEST(MetricsArguments, ALaterBlockReplacesTheEarlierOne) {
  const MegatronLog log = read_megatron_log(
      "------------------------ arguments ------------------------\n"
      "  seq_length ...................................... 4096\n"
      "-------------------- end of arguments ---------------------\n"
      "------------------------ arguments ------------------------\n"
      "  seq_length ...................................... 8192\n"
      "-------------------- end of arguments ---------------------\n");
  EXPECT_EQ(log.arguments.lines.size(), 1u);
  EXPECT_EQ(log.arguments.unsigned_value("seq_length"), 8192u);
}

// ---- property: the aggregate is the hand formula, whatever else the log holds -----------------

struct GeneratedStep {
  std::uint64_t tenths_ms = 0;  // elapsed time per iteration in tenths of a millisecond
  std::uint64_t global_batch = 0;
};

std::string generated_line(std::uint64_t iteration, std::uint64_t total, const GeneratedStep& s) {
  char line[1024];
  std::snprintf(line, sizeof line,
                " [2026-08-22 15:31:07.482913] iteration %8llu/%8llu | consumed samples: %12llu | "
                "elapsed time per iteration (ms): %llu.%llu | throughput per GPU (TFLOP/s/GPU): "
                "%.1f | learning rate: %.6E | global batch size: %5llu | lm loss: %.6E | loss "
                "scale: %.1f | grad norm: %.3f | number of skipped iterations: %3d | number of nan "
                "iterations: %3d |",
                static_cast<unsigned long long>(iteration), static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(iteration * s.global_batch),
                static_cast<unsigned long long>(s.tenths_ms / 10),
                static_cast<unsigned long long>(s.tenths_ms % 10), 400.0 + iteration, 1.5e-7,
                static_cast<unsigned long long>(s.global_batch), 11.0 - 0.1 * iteration, 1.0, 0.5,
                0, 0);
  return line;
}

RC_GTEST_PROP(MetricsProperty, ThroughputIsTheHandFormulaWhateverElseTheLogHolds, ()) {
  const auto total = *rc::gen::inRange<std::uint64_t>(4, 40);
  const auto first = *rc::gen::inRange<std::uint64_t>(3, total + 1);
  const auto last = *rc::gen::inRange<std::uint64_t>(first, total + 1);
  const auto seq = *rc::gen::inRange<std::uint64_t>(1, 65537);
  const auto gpus = *rc::gen::inRange<std::uint64_t>(1, 4097);
  const auto last_rank = *rc::gen::inRange<std::uint32_t>(1, 1024);
  std::vector<GeneratedStep> steps;
  for (std::uint64_t i = 0; i < total; ++i) {
    steps.push_back({*rc::gen::inRange<std::uint64_t>(1, 10'000'000),
                     *rc::gen::inRange<std::uint64_t>(1, 65536)});
  }

  double tokens = 0.0;
  double seconds = 0.0;
  for (std::uint64_t i = first; i <= last; ++i) {
    tokens += static_cast<double>(steps[i - 1].global_batch * seq);
    seconds += static_cast<double>(steps[i - 1].tenths_ms) / 10.0 / 1000.0;
  }
  const double expected = tokens / seconds / static_cast<double>(gpus);

  std::string clean;
  std::string noisy;
  const std::string prefix = "[rank" + std::to_string(last_rank) + "]:";
  for (std::uint64_t i = 1; i <= total; ++i) {
    const std::string line = prefix + generated_line(i, total, steps[i - 1]) + "\n";
    clean += line;
    const int noise = *rc::gen::inRange(0, 6);
    if (noise == 1) {  // a lower rank prints the same iteration with other figures
      GeneratedStep other{*rc::gen::inRange<std::uint64_t>(1, 10'000'000), 7};
      noisy +=
          "[rank" + std::to_string(last_rank - 1) + "]:" + generated_line(i, total, other) + "\n";
    } else if (noise == 2) {  // a memory report and NCCL chatter from other ranks
      noisy += "[rank0]:[Rank 0] (after " + std::to_string(i) +
               " iterations) memory (MB) | allocated: 100.00 | max allocated: 200.00 | "
               "reserved: 300.00 | max reserved: 400.00\n[rank2]:node-1:22:22 [2] NCCL INFO "
               "Using network IB\n";
    } else if (noise == 3) {  // a cut copy of this very line, then garbage
      const auto cut = *rc::gen::inRange<std::size_t>(0, line.size() - 3);
      noisy += line.substr(0, cut) + "\n" + *rc::gen::string<std::string>() + "\n";
    }
    noisy += line;
  }

  MeasureRequest request;
  request.window = {first, last};
  request.seq_length = seq;
  request.gpus = gpus;
  for (const std::string* text : {&clean, &noisy}) {
    const RunReading reading = read_run(read_megatron_log(*text), JobOutcome{}, request);
    RC_ASSERT(reading.kind == ReadingKind::kMeasured);
    RC_ASSERT(std::abs(reading.measurement->tokens_per_s_per_gpu - expected) <= 1e-12 * expected);
    RC_ASSERT(reading.measurement->window_step_times_ms.size() == last - first + 1);
  }
}

// ---- older and other forms ---------------------------------------------------------------------

TEST(MetricsOlderForms, A2020LineWithoutSamplesOrBatchIsRead) {
  const MegatronLog log = read_megatron_log(
      " iteration       10/  120000 | elapsed time per iteration (ms): 1993.9 | learning rate: "
      "0.000E+00 | loss scale: 8388608.0 | number of skipped iterations:   5 | number of nan "
      "iterations:   0 |\n"
      "after 10 iterations memory (MB) | allocated: 10250.5693359375 | max allocated: "
      "12606.06201171875 | reserved: 17482.0 | max reserved: 17482.0\n");
  ASSERT_EQ(log.iterations.size(), 1U);
  EXPECT_EQ(log.iterations[0].elapsed_ms_per_iteration, 1993.9);
  EXPECT_EQ(log.iterations[0].global_batch_size, 0U);
  EXPECT_EQ(log.iterations[0].skipped_iterations, 5U);
  ASSERT_EQ(log.memory.size(), 1U);
  EXPECT_EQ(log.memory[0].max_reserved_mb, 17482.0);
}

TEST(MetricsOlderForms, TheArgumentsBlockGivesTheBatchAnOlderLineDoesNotPrint) {
  std::string text =
      "------------------------ arguments ------------------------\n"
      "  global_batch_size ............................... 16\n"
      "-------------------- end of arguments ---------------------\n";
  for (int i = 1; i <= 13; ++i) {
    text += " iteration " + std::to_string(i) +
            "/ 100 | elapsed time per iteration (ms): 500.0 | learning rate: 1.0E-04 | loss "
            "scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n";
  }
  MeasureRequest request;
  request.seq_length = 1024;
  request.gpus = 2;
  const RunReading reading = read_run(read_megatron_log(text), JobOutcome{}, request);
  ASSERT_EQ(reading.kind, ReadingKind::kMeasured) << reading.reason;
  EXPECT_DOUBLE_EQ(reading.measurement->tokens_per_s_per_gpu, 16.0 * 1024 / 0.5 / 2);
  // Without the block the batch is unknown, and the window is no measurement.
  const std::string lines_only = text.substr(text.find(" iteration "));
  EXPECT_EQ(read_run(read_megatron_log(lines_only), JobOutcome{}, request).kind,
            ReadingKind::kIncomplete);
}

TEST(MetricsOlderForms, The2019AndNemoFormsAreRead) {
  const MegatronLog old = read_megatron_log(
      " iteration      200/   20000 | elapsed time per iteration (ms): 313.1 | learning rate "
      "2.020E-06 | lm loss 9.444483E+00 | nsp loss 2.486780E-01 |\n");
  ASSERT_EQ(old.iterations.size(), 1U);
  EXPECT_EQ(old.iterations[0].elapsed_ms_per_iteration, 313.1);
  EXPECT_EQ(old.iterations[0].lm_loss, 9.444483);
  const MegatronLog nemo = read_megatron_log(
      "0: Training epoch 0, iteration 8/29 | lr: 5.389e-06 | global_batch_size: 512 | "
      "global_step: 8 | reduced_train_loss: 10.22 | train_step_timing in s: 27.01 | "
      "consumed_samples: 4608 | TFLOPS_per_GPU: 48.58\n");
  ASSERT_EQ(nemo.iterations.size(), 1U);
  EXPECT_DOUBLE_EQ(nemo.iterations[0].elapsed_ms_per_iteration, 27010.0);
  EXPECT_EQ(nemo.iterations[0].global_batch_size, 512U);
  // A modern line that mixes in a 2019 segment is garbled, not old.
  EXPECT_TRUE(read_megatron_log(
                  std::string(kReferenceIterationLines[0])
                      .replace(std::string(kReferenceIterationLines[0]).find("learning rate:"), 14,
                               "learning rate") +
                  "\n")
                  .iterations.empty());
}

TEST(MetricsOlderForms, AForksRepeatedLossKeyIsSkippedAndMegatronsOwnIsNot) {
  const std::string line = kReferenceIterationLines[0];
  const std::size_t at = line.find(" loss scale:");
  const std::string fork = std::string(line).insert(at, " mtp_1 loss: 2.5 | mtp_1 loss: 2.6 |");
  const MegatronLog read = read_megatron_log(fork + "\n");
  ASSERT_EQ(read.iterations.size(), 1U) << fork;
  ASSERT_FALSE(read.iterations[0].other_losses.empty());
  EXPECT_EQ(read.iterations[0].other_losses.back().value, 2.5) << "the first one counts";
  const std::string twice = std::string(line).insert(at, " lm loss: 1.0 |");
  EXPECT_TRUE(read_megatron_log(twice + "\n").iterations.empty()) << twice;
}

TEST(MetricsOlderForms, ALineCutAfterItsTimeAndEndedByANewlineCounts) {
  const std::string line = kReferenceIterationLines[0];
  const std::size_t cut = line.find("| loss scale") + 6;  // inside the loss scale segment
  const MegatronLog ended = read_megatron_log(line.substr(0, cut) + "\n");
  ASSERT_EQ(ended.iterations.size(), 1U);
  EXPECT_TRUE(ended.iterations[0].cut);
  // Without its newline it may still be being written: not counted.
  EXPECT_TRUE(read_megatron_log(line.substr(0, cut)).iterations.empty());
}

}  // namespace
}  // namespace attune

namespace attune {
namespace {

// A forged or damaged elapsed time (1e-320 ms, or a year) is not a measurement: it would print an
// infinite or vanishing throughput.
TEST(MetricsWindow, AnImplausibleElapsedTimeIsNotAMeasurement) {
  for (const char* forged : {"1e-320", "0.0000001", "1e12"}) {
    std::string text = fixture("complete_14.log");
    const std::string from = "elapsed time per iteration (ms): 4100.0";
    text.replace(text.find(from), from.size(),
                 std::string("elapsed time per iteration (ms): ") + forged);
    const RunReading reading = read_completed(text);
    EXPECT_NE(reading.kind, ReadingKind::kMeasured) << forged;
    if (reading.measurement) {
      EXPECT_TRUE(std::isfinite(reading.measurement->tokens_per_s_per_gpu)) << forged;
    }
  }
}

}  // namespace
}  // namespace attune
