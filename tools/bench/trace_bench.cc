// Speed and memory of the Kineto trace analyzer end to end, as `attune trace breakdown --hta`
// runs it: read, inflate, parse, filter and all four HTA analyses (temporal breakdown, comm-comp
// overlap, kernel-type and idle-time breakdown). Two sizes of trace_anchors.md §2.3 and §6: the
// corpus' largest CUDA trace, df_index_resolver (53.7 MB of JSON; HTA 7.15 s, 327 MB), and a
// synthetic ×8 tiling of it built once in a temporary folder (events repeated with ts,
// correlation and ProfilerStep offsets, written as gzip; HTA 83.9 s, 2.0 GB on its 378 MB tiling).
// Counters: MB/s of uncompressed JSON, and the process's peak RSS (getrusage, a high-water mark:
// the larger trace runs last). The corpus folder is $ATTUNE_TRACE_CORPUS, else
// /work/shared/data/kineto-traces; the x8 trace's folder, $ATTUNE_TRACE_BENCH_X8_DIR, else a
// temporary one.
#include <benchmark/benchmark.h>
#include <simdjson.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/profiler/hta_metrics.h"
#include "adapters/profiler/trace_directory.h"
#include "adapters/profiler/trace_file.h"

namespace attune::profiler {
namespace {

constexpr int kTiles = 8;
constexpr double kTileGapUs = 1000;  // between the last event of a tile and the next tile
constexpr std::size_t kWriteChunkBytes = std::size_t{1} << 20;

std::string corpus_folder() {
  const char* from_env = std::getenv("ATTUNE_TRACE_CORPUS");
  return from_env != nullptr ? from_env : "/work/shared/data/kineto-traces";
}

std::string df_index_resolver_folder() { return corpus_folder() + "/df_index_resolver"; }

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// The number after `key` (and optional blanks) in `event`: its text span, or an empty view.
std::string_view number_after(std::string_view event, std::string_view key) {
  std::size_t at = event.find(key);
  if (at == std::string_view::npos) return {};
  at += key.size();
  while (at < event.size() && (event[at] == ' ' || event[at] == '\n')) ++at;
  std::size_t end = at;
  while (end < event.size() && ((event[end] >= '0' && event[end] <= '9') || event[end] == '.')) {
    ++end;
  }
  return event.substr(at, end - at);
}

long long integer_part(std::string_view number) {
  long long value = 0;
  std::from_chars(number.data(), number.data() + number.size(), value);
  return value;
}

// Appends `event` with the whole-µs offset added to its ts, the offset added to its correlation
// and its ProfilerStep number; the fraction of a ts is kept as written.
void append_shifted(std::string& out, std::string_view event, long long ts_offset_us,
                    long long correlation_offset, long long step_offset) {
  struct Edit {
    std::string_view span;
    long long offset;
  };
  std::vector<Edit> edits;
  const auto add = [&](std::string_view span, long long offset) {
    if (!span.empty() && offset != 0) edits.push_back({span, offset});
  };
  add(number_after(event, "\"ts\":"), ts_offset_us);
  add(number_after(event, "\"correlation\":"), correlation_offset);
  add(number_after(event, "\"ProfilerStep#"), step_offset);
  std::sort(edits.begin(), edits.end(),
            [](const Edit& a, const Edit& b) { return a.span.data() < b.span.data(); });
  const char* cursor = event.data();
  for (const Edit& edit : edits) {
    out.append(cursor, edit.span.data());
    const std::size_t dot = edit.span.find('.');
    const std::string_view whole = edit.span.substr(0, dot);
    out += std::to_string(integer_part(whole) + edit.offset);
    if (dot != std::string_view::npos) out += edit.span.substr(dot);
    cursor = edit.span.data() + edit.span.size();
  }
  out.append(cursor, event.data() + event.size());
}

Result<simdjson::padded_string> read_df_index_resolver_text() {
  const std::string path = df_index_resolver_folder() + "/df_index_resolver.json.gz";
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot read");
  Result<std::string> text = gunzip(std::string(std::istreambuf_iterator<char>(in), {}), path);
  if (!text) return make_error(text.error());
  return simdjson::padded_string(*text);
}

// Writes the ×kTiles tiling of the corpus' df_index_resolver trace as one gzip file in `folder`;
// returns its uncompressed size, 0 on failure. Streams the output, so it holds one copy of the
// source text and a write buffer.
std::size_t write_tiled_trace(const std::string& folder) {
  namespace od = simdjson::ondemand;
  Result<simdjson::padded_string> source = read_df_index_resolver_text();
  if (!source) return 0;
  const simdjson::padded_string& text = *source;
  od::parser parser;
  od::document document;
  if (parser.iterate(text).get(document) != simdjson::SUCCESS) return 0;
  od::array events;
  if (document["traceEvents"].get_array().get(events) != simdjson::SUCCESS) return 0;
  std::vector<std::string_view> event_texts;
  double ts_min = 1e300;
  double end_max = -1e300;
  long long correlation_max = 0;
  long long step_max = 0;
  for (auto event_result : events) {
    od::object event;
    std::string_view raw;
    if (event_result.get_object().get(event) != simdjson::SUCCESS) return 0;
    if (event.raw_json().get(raw) != simdjson::SUCCESS) return 0;
    event_texts.push_back(raw);
    const std::string_view ts = number_after(raw, "\"ts\":");
    const std::string_view dur = number_after(raw, "\"dur\":");
    if (!ts.empty()) {
      ts_min = std::min(ts_min, std::strtod(std::string(ts).c_str(), nullptr));
      end_max =
          std::max(end_max, std::strtod(std::string(ts).c_str(), nullptr) +
                                (dur.empty() ? 0 : std::strtod(std::string(dur).c_str(), nullptr)));
    }
    correlation_max =
        std::max(correlation_max, integer_part(number_after(raw, "\"correlation\":")));
    step_max = std::max(step_max, integer_part(number_after(raw, "\"ProfilerStep#")));
  }
  if (event_texts.empty()) return 0;
  const std::string_view whole(text.data(), text.size());
  const std::string_view prefix = whole.substr(0, event_texts.front().data() - whole.data());
  const std::string_view suffix =
      whole.substr(event_texts.back().data() + event_texts.back().size() - whole.data());
  const long long ts_step_us = static_cast<long long>(end_max - ts_min + kTileGapUs);

  const std::string path = folder + "/df_index_resolver_x8.json.gz";
  gzFile out = gzopen(path.c_str(), "wb6");
  if (out == nullptr) return 0;
  std::size_t written = 0;
  std::string buffer;
  const auto flush = [&](bool force) {
    if (!force && buffer.size() < kWriteChunkBytes) return;
    written += buffer.size();
    gzwrite(out, buffer.data(), static_cast<unsigned>(buffer.size()));
    buffer.clear();
  };
  buffer.append(prefix);
  for (int tile = 0; tile < kTiles; ++tile) {
    for (std::size_t i = 0; i < event_texts.size(); ++i) {
      if (tile > 0 || i > 0) buffer += ",\n  ";
      append_shifted(buffer, event_texts[i], tile * ts_step_us, tile * (correlation_max + 1),
                     tile * step_max);
      flush(false);
    }
  }
  buffer.append(suffix);
  flush(true);
  return gzclose(out) == Z_OK ? written : 0;
}

// Read and analyse `folder` once per iteration, as the CLI does.
void run_breakdown(benchmark::State& state, const std::string& folder) {
  std::size_t json_bytes = 0;
  for (auto _ : state) {
    Result<TraceDirectory> directory = read_trace_directory(folder);
    if (!directory) {
      state.SkipWithError(directory.error().c_str());
      return;
    }
    const HtaReport report = analyze_hta(*directory);
    benchmark::DoNotOptimize(report.temporal.data());
    json_bytes = 0;
    for (const RankTrace& trace : directory->ranks) json_bytes += trace.json_bytes;
  }
  state.counters["json_MB"] = static_cast<double>(json_bytes) / 1e6;
  state.counters["MB_per_s"] = benchmark::Counter(
      static_cast<double>(json_bytes) * static_cast<double>(state.iterations()) / 1e6,
      benchmark::Counter::kIsRate);
  state.counters["peak_rss_MB"] = peak_rss_mb();
}

void BM_TraceBreakdownDfIndexResolver(benchmark::State& state) {
  run_breakdown(state, df_index_resolver_folder());
}
BENCHMARK(BM_TraceBreakdownDfIndexResolver)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// The x8 trace lives in a temporary folder removed afterwards, or in $ATTUNE_TRACE_BENCH_X8_DIR,
// kept there and reused, for measuring `attune trace breakdown --hta` on it by hand.
void BM_TraceBreakdownTiledX8(benchmark::State& state) {
  const char* kept = std::getenv("ATTUNE_TRACE_BENCH_X8_DIR");
  const std::filesystem::path folder =
      kept != nullptr ? std::filesystem::path(kept)
                      : std::filesystem::temp_directory_path() /
                            ("attune-trace-bench-x8-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const bool reuse =
      kept != nullptr && std::filesystem::exists(folder / "df_index_resolver_x8.json.gz");
  if (!reuse && write_tiled_trace(folder.string()) == 0) {
    if (kept == nullptr) std::filesystem::remove_all(folder);
    state.SkipWithError("cannot build the x8 trace from df_index_resolver");
    return;
  }
  run_breakdown(state, folder.string());
  if (kept == nullptr) std::filesystem::remove_all(folder);
}
BENCHMARK(BM_TraceBreakdownTiledX8)->Unit(benchmark::kSecond)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace attune::profiler
