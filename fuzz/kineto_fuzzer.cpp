// A PyTorch profiler (Kineto) trace is JSON, gzipped or not: the fuzzer's bytes are written to a
// scratch file and go through what `ktune report` does with one: open_trace's content check, the
// streaming conversion (KinetoSource), the analysis and every report format. Damage must end in
// ktune::Error; anything else escaping, a hang or a sanitizer report is a finding.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "ktune/analyze/analysis.hpp"
#include "ktune/core/error.hpp"
#include "ktune/report/report.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  struct ScratchDir {
    fs::path path;
    ScratchDir() {
      const fs::path base =
          fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
      path = base / ("ktune-fuzz-kineto-" + std::to_string(::getpid()));
      fs::create_directories(path);
    }
    ~ScratchDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const ScratchDir scratch;
  const fs::path trace = scratch.path / "in.json";
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
