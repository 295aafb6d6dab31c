// ktune report TRACE: kernels by GPU time, busy/idle, gap causes, storms, NVTX, tuning backlog, and
// with the counter tier the roofline verdicts. ktune report OLD NEW compares NEW with OLD.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/analyze/analysis.hpp"
#include "ktune/analyze/merge.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/report/ceilings.hpp"
#include "ktune/report/report.hpp"
#include "ktune/trace/options.hpp"

namespace ktune::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> traces;
  std::string format = "text", by = "name", output, names = "middle";
  std::string inductor;  // a scan of Inductor's kernels; "": the one beside the trace, if any
  std::size_t top = 25;
  bool merge = false;
  std::string from;                 // --from DURATION; "" when not given
  std::optional<std::size_t> skip;  // --skip N
};

// Ties Inductor's Triton kernels to the trace's: from `scan`, else the scan ktune profile kept
// beside the trace.
void attach_inductor_scan(analyze::Analysis& a, const std::string& trace, const std::string& scan) {
  const auto file =
      scan.empty() ? analyze::inductor_scan_for(trace) : std::optional<std::filesystem::path>(scan);
  if (!file) return;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(*file));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{} is not JSON ({}); run the scan again or remove the file.",
                            file->string(), e.what()));
  }
  analyze::attach_triton_kernels(a, analyze::parse_inductor_scan(j, file->string()));
}

analyze::Analysis analyze_file(const std::string& path, analyze::AnalysisOptions options,
                               const std::string& db, const std::string& scan = "") {
  const auto source = analyze::open_trace(path);
  options.ceilings = report::report_ceilings(source->metadata(), db);
  analyze::Analysis a = analyze::analyze(*source, options);
  attach_inductor_scan(a, path, scan);
  return a;
}

const bool registered = register_command(
    {"report",
     "Summarise a .ktrace or a PyTorch profiler trace: top kernels, GPU busy/idle, gap causes, "
     "roofline verdicts, what to "
     "tune next",
     30, [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto o = std::make_shared<ReportOptions>();
       app.add_option(
              "traces", o->traces,
              "The .ktrace file written by ktune profile, or a PyTorch profiler trace (the JSON "
              "export_chrome_trace writes, .json or .json.gz); with two, OLD NEW: NEW is "
              "reported and compared with OLD; with --merge, the ranks of one job")
           ->required();
       app.add_flag("--merge", o->merge,
                    "Report the traces as the ranks of one job (run.*.ktrace), each rank's GPUs "
                    "as devices of their own");
       app.add_option("--format", o->format,
                      "text (terminal), md or markdown (pull requests), json (schema_version " +
                          std::to_string(report::kReportSchemaVersion) +
                          "), html (one self-contained file) or contract (the profile contract "
                          "in markdown)")
           ->capture_default_str()
           ->transform(CLI::Validator(
               [](std::string& v) {
                 if (v == "markdown") v = "md";  // gate check's spelling
                 return std::string();
               },
               ""))
           ->check(parsed_by([](const std::string& v) { report::find_format(v); }));
       add_json_flag_for_format(app, o->format, "Print JSON");
       app.add_option("--by", o->by,
                      "Group kernels by name, by name+launch (grid, block, shared memory, "
                      "registers), or by op: GPU time by the PyTorch op that launched them "
                      "(a trace of ktune profile --ops)")
           ->capture_default_str()
           ->check(parsed_by([](const std::string& v) { analyze::parse_group_by(v); }));
       app.add_option("--names", o->names,
                      "Kernel names in tables and HTML: middle (the base name and what tells its "
                      "instances apart), base (templates and arguments elided) or full (the whole "
                      "demangled name); JSON has the full name and the middle form")
           ->capture_default_str()
           ->check(parsed_by([](const std::string& v) { analyze::parse_name_style(v); }));
       app.add_option("--top", o->top, "Kernel rows in text, md and html (0: all; json lists all)")
           ->capture_default_str()
           ->check(CLI::Range(0, 1'000'000));  // unchecked, "-1" wrapped to 2^64 - 1
       app.add_option("--inductor", o->inductor,
                      "The scan of torch.compile's Triton kernels (python3 -m ktune.inductor scan; "
                      "default: OUT.inductor.json beside the trace, which ktune profile writes)");
       auto* from =
           app.add_option("--from", o->from,
                          "Report from this long after the trace's first record on (\"2.5s\", "
                          "\"300ms\", bare seconds), the times the report's At columns show; "
                          "0: the whole trace. Default: from the end of the detected warm-up")
               ->check(parsed_by([](const std::string& v) {
                 if (!trace::parse_duration_s(v))
                   throw Error(
                       fmt::format("--from '{}' is not a duration; give one such "
                                   "as 2.5s, 300ms or 0.",
                                   v));
               }));
       app.add_option("--skip", o->skip,
                      "Leave out the first N kernels launched as warm-up (0: the whole trace); "
                      "default: the detected warm-up")
           ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000'000'000}))
           ->excludes(from);
       add_output_option(app, o->output, "Write the report to this file instead of stdout");
       return [o, &globals] {
         for (const std::string& trace : o->traces) refuse_stdin(trace, "a .ktrace (SQLite)");
         if (!is_stdout(o->output))
           for (const std::string& trace : o->traces) check_output_path(o->output, {trace});
         const report::Format& format = report::find_format(o->format);
         report::RenderOptions render;
         render.top_kernels = o->top == 0 ? SIZE_MAX : o->top;
         render.names = analyze::parse_name_style(o->names);
         analyze::AnalysisOptions options;
         options.group_by = analyze::parse_group_by(o->by);
         if (!o->from.empty())
           options.from_ns = static_cast<std::int64_t>(*trace::parse_duration_s(o->from) * 1e9);
         options.skip_kernels = o->skip;
         if (o->merge) {
           std::vector<std::unique_ptr<analyze::TraceSource>> ranks;
           for (const std::string& path : o->traces)
             ranks.push_back(analyze::open_trace(path));  // a PyTorch profiler trace too
           analyze::MergedSource source(std::move(ranks));
           options.ceilings = report::report_ceilings(source.metadata(), globals.db);
           analyze::Analysis a = analyze::analyze(source, options);
           attach_inductor_scan(a, o->traces.front(), o->inductor);
           emit(format.render(a, render), o->output);
           return 0;
         }
         if (o->traces.size() > 2)
           throw UsageError(
               fmt::format("ktune report takes one trace, or two (OLD NEW), not {}; to "
                           "report the ranks of one job together, add --merge.",
                           o->traces.size()));
         std::optional<analyze::Analysis> baseline;
         if (o->traces.size() == 2) {
           baseline = analyze_file(o->traces[0], options, globals.db);
           render.baseline = &*baseline;
         }
         const analyze::Analysis analysis =
             analyze_file(o->traces.back(), options, globals.db, o->inductor);
         emit(format.render(analysis, render), o->output);
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
