// libFuzzer target for the trace parser: arbitrary bytes, plain JSON or gzip, through the same
// parse the analyzer applies to a trace file's contents. It must return a record set or a
// one-line error, never crash, hang or read out of bounds (built with ASan and UBSan). Seeds:
// tests/fuzz/seeds (small Kineto snippets). Built and run by tests/CMakeLists.txt when clang++ is
// found (the `fuzz` test label).
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/profiler/trace_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const attune::Result<attune::profiler::RankTrace> trace =
      attune::profiler::parse_trace_bytes(bytes, "fuzz.json");
  if (trace.ok()) {
    // Every kept record points into the name and argument tables.
    for (const attune::profiler::TraceEvent& e : trace->events) {
      assert(e.name_id < trace->names.size());
      assert(e.comm_args < trace->comm_args.size());
      assert(e.index < trace->event_count);
    }
    assert(trace->events.size() <= trace->event_count);
  } else {
    assert(trace.error().find('\n') == std::string::npos);
  }
  return 0;
}
