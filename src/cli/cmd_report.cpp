// ktune report TRACE: kernels by GPU time, busy/idle, gap causes, storms, NVTX, tuning backlog.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "ktune/analyze/analysis.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/report/report.hpp"

namespace ktune::cli {
namespace {

struct ReportOptions {
  std::string trace, format = "text", by = "name", output;
  std::size_t top = 25;
};

const bool registered = register_command(
    {"report", "Summarise a .ktrace: top kernels, GPU busy/idle, gap causes, what to tune next", 30,
     [](CLI::App& app, const GlobalOptions&) -> Runner {
       auto o = std::make_shared<ReportOptions>();
       app.add_option("trace", o->trace, "The .ktrace file written by ktune profile")->required();
       app.add_option("--format", o->format,
                      "text (terminal), md (pull requests), json (schema_version " +
                          std::to_string(report::kReportSchemaVersion) +
                          ") or html (one self-contained file)")
           ->capture_default_str();
       app.add_option("--by", o->by,
                      "Group kernels by name, or by name+launch (grid, block, shared memory, "
                      "registers)")
           ->capture_default_str();
       app.add_option("--top", o->top, "Kernel rows in text, md and html (json lists all)")
           ->capture_default_str()
           ->check(CLI::Range(0, 1'000'000));  // unchecked, "-1" wrapped to 2^64 - 1
       app.add_option("-o,--output", o->output, "Write to this file instead of stdout");
       return [o] {
         if (!o->output.empty()) check_output_path(o->output, {o->trace});
         const report::Format& format = report::find_format(o->format);
         analyze::AnalysisOptions options;
         options.group_by = analyze::parse_group_by(o->by);
         analyze::KtraceSource source(o->trace);
         const analyze::Analysis analysis = analyze::analyze(source, options);
         const std::string text = format.render(analysis, {o->top});
         if (o->output.empty())
           std::fwrite(text.data(), 1, text.size(), stdout);
         else
           write_file_atomic(o->output, text);
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
