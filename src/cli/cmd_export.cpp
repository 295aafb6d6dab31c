// ktune export TRACE --chrome OUT.json: the trace as Chrome trace-event JSON for Perfetto UI.
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/report/chrome_trace.hpp"

namespace ktune::cli {
namespace {

struct ExportOptions {
  std::string trace, chrome;
};

const bool registered = register_command(
    {"export", "Convert a .ktrace to Chrome trace-event JSON (Perfetto UI, chrome://tracing)", 31,
     [](CLI::App& app, const GlobalOptions&) -> Runner {
       auto o = std::make_shared<ExportOptions>();
       app.add_option("trace", o->trace, "The .ktrace file written by ktune profile")->required();
       app.add_option("--chrome", o->chrome,
                      "Write Chrome trace-event JSON here (open it in https://ui.perfetto.dev)");
       return [o] {
         if (o->chrome.empty())
           throw Error("ktune export needs an output format; add --chrome OUT.json.");
         check_output_path(o->chrome, {o->trace});
         analyze::KtraceSource source(o->trace);
         const report::ChromeTraceCounts c = report::export_chrome_trace(source, o->chrome);
         fmt::print(
             "wrote {}: {} kernels, {} memcpys, {} memsets, {} API calls, {} NVTX ranges, {} "
             "launch flows\n",
             o->chrome, c.kernels, c.memcpys, c.memsets, c.api_calls, c.nvtx_ranges, c.flows);
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
