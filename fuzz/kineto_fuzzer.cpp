// A PyTorch profiler (Kineto) trace is JSON, gzipped or not: the fuzzer's bytes are written to a
// scratch file and go through what `ktune report` does with one: open_trace's content check, the
// streaming conversion (KinetoSource), the analysis and every report format. Damage must end in
// ktune::Error; anything else escaping, a hang or a sanitizer report is a finding.
#include <cstdio>
#include <filesystem>
#include <string>

#include "ktune/analyze/analysis.hpp"
#include "ktune/core/error.hpp"
#include "ktune/report/report.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path trace = ktune::fuzz::scratch_dir("kineto") / "in.json";
  if (FILE* f = std::fopen(trace.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    const auto source = ktune::analyze::open_trace(trace);
    const auto analysis = ktune::analyze::analyze(*source);
    for (const char* format : {"text", "md", "json", "html"})
      (void)ktune::report::find_format(format).render(analysis, {});
  } catch (const ktune::Error&) {
  }
  return 0;
}
