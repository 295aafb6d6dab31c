#pragma once
// Chrome trace-event JSON (the object form) that Perfetto UI and chrome://tracing open: kernels,
// memcpys and memsets on one track per (GPU, stream); CUDA API calls and NVTX ranges on one track
// per host thread; a flow arrow ("s" -> "f") from each launch call to the GPU work it started.
// Streams records from the source to the file, so a large trace is never held whole.
#include <cstddef>
#include <filesystem>
#include <ostream>

#include "ktune/analyze/source.hpp"

namespace ktune::report {

inline constexpr int kChromeTraceSchemaVersion = 1;

// How many events of each kind were written; tests compare them with the trace's record counts.
struct ChromeTraceCounts {
  std::size_t kernels = 0, memcpys = 0, memsets = 0, api_calls = 0, nvtx_ranges = 0;
  std::size_t flows = 0;  // pairs: one "s" and one "f" each
};

// Event times are microseconds from the trace's first record (three decimals: nanoseconds exact).
ChromeTraceCounts write_chrome_trace(analyze::TraceSource& source, std::ostream& out);

// Writes through write_file_atomic (core/paths.hpp): the output is checked, written to a temporary
// sibling and renamed into place; ktune::Error naming the path if it cannot be written.
ChromeTraceCounts export_chrome_trace(analyze::TraceSource& source,
                                      const std::filesystem::path& path);

}  // namespace ktune::report
