// ktune export TRACE --chrome [-o OUT.json]: the trace as Chrome trace-event JSON for Perfetto UI;
// ktune export --tunableop -o FILE: the cached GEMM winners as PyTorch TunableOp's results file.
#include <cstdio>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/report/chrome_trace.hpp"
#include "ktune/store/store.hpp"
#include "ktune/tune/tunableop.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

constexpr int kExportSchemaVersion = 1;  // of --json: what was written where

struct ExportOptions {
  std::string trace, output, torch_version;
  bool chrome = false, tunableop = false, json = false;
  std::string arch, device_name;  // --tunableop: whose winners (default: every entry)
};

// The summary of what was written: a line on stderr when the file itself went to stdout, else a
// line (or --json) on stdout.
void print_written(const ExportOptions& o, const std::string& line, nlohmann::json counts) {
  if (o.json) {
    counts["format"] = o.chrome ? "chrome" : "tunableop";
    counts["output"] = o.output;
    print_json(std::move(counts), kExportSchemaVersion);
  } else {
    fmt::print(is_stdout(o.output) ? stderr : stdout, "{}\n", line);
  }
}

// The cached cuBLASLt GEMM winners as PyTorch TunableOp's results file.
int export_tunableop(const ExportOptions& o, const GlobalOptions& g) {
  if (!o.trace.empty() || o.chrome)
    throw UsageError(
        "--tunableop exports the cache, not a trace; drop TRACE and --chrome, or export "
        "them in a separate call.");
  if (o.torch_version.empty())
    throw UsageError(
        "--tunableop needs --torch-version (e.g. 2.11.0): TunableOp rejects a file whose "
        "PT_VERSION validator differs from the running PyTorch.");
  auto st = store::Store::open(g.db, store::Access::read_only);
  if (const auto f = st->file(); f && !is_stdout(o.output))
    check_output_path(o.output, {f->string()});
  std::vector<store::CacheEntry> entries;
  store::EntryFilter filter;
  filter.arch = o.arch;
  filter.device_name = o.device_name;
  for (auto& e : st->list_entries(filter))
    if (bench::is_gemm_cache_op(e.key.op)) entries.push_back(std::move(e));
  std::size_t skipped = 0;
  const std::string text =
      tune::tunableop_csv(entries, {{"PT_VERSION", o.torch_version}}, &skipped);
  emit(text, o.output);
  print_written(
      o,
      fmt::format("wrote {}: {} cuBLASLt GEMM winners ({} other gemm entries left out)",
                  is_stdout(o.output) ? "stdout" : o.output, entries.size() - skipped, skipped),
      {{"winners", entries.size() - skipped}, {"left_out", skipped}});
  return 0;
}

const bool registered = register_command(
    {"export",
     "Convert a .ktrace to Chrome trace-event JSON, or the cached GEMM winners to PyTorch "
     "TunableOp's file",
     31, [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto o = std::make_shared<ExportOptions>();
       app.add_option("trace", o->trace, "The .ktrace file written by ktune profile");
       app.add_flag("--chrome", o->chrome,
                    "Chrome trace-event JSON of TRACE (open it in https://ui.perfetto.dev)");
       app.add_flag("--tunableop", o->tunableop,
                    "The cached cuBLASLt GEMM winners as PyTorch TunableOp's results CSV "
                    "(docs/python.md says what PyTorch's CUDA build does with it)");
       add_output_option(app, o->output, "Write the export to this file (default: stdout)");
       app.add_option("--torch-version", o->torch_version,
                      "With --tunableop: the PyTorch version the file is for (its PT_VERSION "
                      "validator)");
       app.add_option("--arch", o->arch, "With --tunableop: only this GPU architecture's winners");
       app.add_option("--device-name", o->device_name,
                      "With --tunableop: only this device's winners");
       app.add_flag("--json", o->json,
                    fmt::format("Print what was written as JSON (schema_version {}); needs -o "
                                "FILE",
                                kExportSchemaVersion));
       return [o, &globals] {
         if (o->json && is_stdout(o->output))
           throw UsageError(
               "--json describes the file export wrote, and the export itself goes to stdout; "
               "add -o FILE.");
         if (o->chrome && o->tunableop)
           throw UsageError(
               "ktune export writes one format at a time; drop --chrome or --tunableop.");
         if (o->tunableop) return export_tunableop(*o, globals);
         if (!o->chrome)
           throw UsageError(
               "ktune export needs a format: TRACE --chrome (Chrome trace JSON) or --tunableop "
               "(the cached GEMM winners).");
         if (o->trace.empty()) throw UsageError("ktune export --chrome needs a TRACE.");
         refuse_stdin(o->trace, "a trace (.ktrace or a PyTorch profiler trace)");
         const auto opened = analyze::open_trace(o->trace);
         analyze::TraceSource& source = *opened;
         report::ChromeTraceCounts c;
         if (is_stdout(o->output)) {
           c = report::write_chrome_trace(source, std::cout);
           std::cout.flush();
         } else {
           check_output_path(o->output, {o->trace});
           c = report::export_chrome_trace(source, o->output);
         }
         print_written(
             *o,
             fmt::format("wrote {}: {} kernels, {} memcpys, {} memsets, {} API calls, {} NVTX "
                         "ranges, {} launch flows",
                         is_stdout(o->output) ? "stdout" : o->output, c.kernels, c.memcpys,
                         c.memsets, c.api_calls, c.nvtx_ranges, c.flows),
             {{"kernels", c.kernels},
              {"memcpys", c.memcpys},
              {"memsets", c.memsets},
              {"api_calls", c.api_calls},
              {"nvtx_ranges", c.nvtx_ranges},
              {"flows", c.flows}});
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
