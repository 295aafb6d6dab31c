// ktune export TRACE --chrome OUT.json: the trace as Chrome trace-event JSON for Perfetto UI.
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/report/chrome_trace.hpp"
#include "ktune/store/store.hpp"
#include "ktune/tune/tunableop.hpp"

namespace ktune::cli {
namespace {

struct ExportOptions {
  std::string trace, chrome, tunableop, torch_version;
  std::string arch, device_name;  // --tunableop: whose winners (default: every entry)
};

// The cached cuBLASLt GEMM winners as PyTorch TunableOp's results file.
int export_tunableop(const ExportOptions& o, const GlobalOptions& g) {
  if (!o.trace.empty() || !o.chrome.empty())
    throw Error(
        "--tunableop exports the cache, not a trace; drop TRACE and --chrome, or export "
        "them in a separate call.");
  if (o.torch_version.empty())
    throw Error(
        "--tunableop needs --torch-version (e.g. 2.11.0): TunableOp rejects a file whose "
        "PT_VERSION validator differs from the running PyTorch.");
  auto st = store::Store::open(g.db, store::Access::read_only);
  if (const auto f = st->file()) check_output_path(o.tunableop, {f->string()});
  std::vector<store::CacheEntry> entries;
  store::EntryFilter filter;
  filter.arch = o.arch;
  filter.device_name = o.device_name;
  for (auto& e : st->list_entries(filter))
    if (bench::is_gemm_cache_op(e.key.op)) entries.push_back(std::move(e));
  std::size_t skipped = 0;
  const std::string text =
      tune::tunableop_csv(entries, {{"PT_VERSION", o.torch_version}}, &skipped);
  write_file_atomic(o.tunableop, text);
  fmt::print("wrote {}: {} cuBLASLt GEMM winners ({} other gemm entries left out)\n", o.tunableop,
             entries.size() - skipped, skipped);
  return 0;
}

const bool registered = register_command(
    {"export",
     "Convert a .ktrace to Chrome trace-event JSON, or the cached GEMM winners to PyTorch "
     "TunableOp's file",
     31, [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto o = std::make_shared<ExportOptions>();
       app.add_option("trace", o->trace, "The .ktrace file written by ktune profile");
       app.add_option("--chrome", o->chrome,
                      "Write Chrome trace-event JSON here (open it in https://ui.perfetto.dev)");
       app.add_option("--tunableop", o->tunableop,
                      "Write the cached cuBLASLt GEMM winners as PyTorch TunableOp's results CSV "
                      "(docs/python.md says what PyTorch's CUDA build does with it)");
       app.add_option("--torch-version", o->torch_version,
                      "With --tunableop: the PyTorch version the file is for (its PT_VERSION "
                      "validator)");
       app.add_option("--arch", o->arch, "With --tunableop: only this GPU architecture's winners");
       app.add_option("--device-name", o->device_name,
                      "With --tunableop: only this device's winners");
       return [o, &globals] {
         if (!o->tunableop.empty()) return export_tunableop(*o, globals);
         if (o->trace.empty())
           throw Error("ktune export needs a TRACE (with --chrome OUT.json) or --tunableop FILE.");
         if (o->chrome.empty())
           throw Error("ktune export needs an output format; add --chrome OUT.json.");
         check_output_path(o->chrome, {o->trace});
         const auto source = analyze::open_trace(o->trace);
         const report::ChromeTraceCounts c = report::export_chrome_trace(*source, o->chrome);
         fmt::print(
             "wrote {}: {} kernels, {} memcpys, {} memsets, {} API calls, {} NVTX ranges, {} "
             "launch flows\n",
             o->chrome, c.kernels, c.memcpys, c.memsets, c.api_calls, c.nvtx_ranges, c.flows);
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
