// libFuzzer target for the Megatron-LM log reader and the failure classifier: arbitrary bytes,
// fed in two pieces split anywhere and read as a job's two files (.out then .err), then
// classified. It must never crash, hang or read out of bounds (built with ASan and UBSan), and
// what it reads must hold together: the same whatever the split, iterations ascending, every sign
// in a file that was read. Seeds: tests/fuzz/log-seeds (lines of real logs). Built and run by
// tests/CMakeLists.txt when clang++ is found (the `fuzz` test label).
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/metrics/failure_class.h"
#include "adapters/metrics/megatron_log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
  const std::size_t file_split = size < 2 ? size : (split + data[size - 1]) % (size + 1);
  attune::MegatronLogReader reader;
  reader.start_file("job.out");
  const std::size_t first_end = std::min(split, file_split);
  reader.feed(bytes.substr(0, first_end));
  reader.feed(bytes.substr(first_end, file_split - first_end));
  reader.start_file("job.err");
  reader.feed(bytes.substr(file_split));
  const attune::MegatronLog log = reader.finish();
  // Where the bytes were split never changes what is read.
  attune::MegatronLogReader whole;
  whole.start_file("job.out");
  whole.feed(bytes.substr(0, file_split));
  whole.start_file("job.err");
  whole.feed(bytes.substr(file_split));
  const attune::MegatronLog same = whole.finish();
  assert(same.iterations == log.iterations);
  assert(same.memory == log.memory);
  assert(same.arguments == log.arguments);
  assert(same.signs == log.signs);
  assert(same.nodes == log.nodes);
  assert(same.lines_read == log.lines_read);
  for (std::size_t i = 1; i < log.iterations.size(); ++i) {
    assert(log.iterations[i - 1].iteration < log.iterations[i].iteration);
  }
  assert(log.files.size() == 2);
  for (const attune::SignLine& sign : log.signs) {
    assert(sign.line_number >= 1);
    assert(sign.file < log.files.size());
    assert(sign.text.size() <= attune::kSignLineBytesMax);
  }
  for (const char* state : {"", "FAILED", "TIMEOUT", "CANCELLED"}) {
    const std::optional<attune::Failure> failure =
        attune::classify_failure(log, attune::JobOutcome{state, false, false});
    if (!failure) continue;
    assert(failure->alternatives.size() <= attune::kAlternativesMax);
    assert(!attune::failure_class_text(*failure).empty());
  }
  return 0;
}
