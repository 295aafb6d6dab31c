// A .ktrace is a SQLite file: the fuzzer's bytes are written to a scratch file, which goes through
// what `ktune report` and `ktune export` do: KtraceReader (metadata, row checks, decoding), the
// analysis, every report format and the Chrome export. A damaged trace must end in ktune::Error
// (or a report that warns); anything else escaping, a hang or a sanitizer report is a finding.
#include <cstdio>
#include <filesystem>
#include <string>

#include "ktune/analyze/analysis.hpp"
#include "ktune/core/error.hpp"
#include "ktune/report/chrome_trace.hpp"
#include "ktune/report/report.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path& dir = ktune::fuzz::scratch_dir("ktrace");
  const fs::path trace = dir / "in.ktrace";
  std::error_code ec;
  fs::remove(trace.string() + "-journal", ec);  // a journal left by the last input would replay
  if (FILE* f = std::fopen(trace.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    ktune::analyze::KtraceSource source(trace);
    for (auto by : {ktune::analyze::GroupBy::name, ktune::analyze::GroupBy::name_and_launch}) {
      ktune::analyze::AnalysisOptions options;
      options.group_by = by;
      const auto analysis = ktune::analyze::analyze(source, options);
      for (const char* format : {"text", "md", "json", "html"})
        (void)ktune::report::find_format(format).render(analysis, {});
    }
    (void)ktune::report::export_chrome_trace(source, dir / "out.json");
  } catch (const ktune::Error&) {
  }
  return 0;
}
