// ktune fleet top | diff: the fleet's ranking of kernels by GPU time (share, calls, p50/p95 from
// merged sketches, the tuning backlog) and each kernel's p50 change between two builds.
#include <algorithm>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "fleet_options.hpp"
#include "ktune/analyze/kernel_name.hpp"
#include "ktune/core/error.hpp"
#include "ktune/fleet/query.hpp"
#include "ktune/store/store.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

struct FleetArgs {
  std::string since, gpu, job;
  std::vector<std::string> builds, specs;
  std::size_t limit = 20;
  bool json = false;
  std::string names = "middle";
};

std::string short_name(const std::string& s, std::size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

// Kernel names as the report shows them (--names), each row's in a column as wide as the longest.
struct ShownNames {
  analyze::NameTable table;
  std::size_t width = 6;
  template <class Report>
  ShownNames(const Report& rep, const std::string& style)
      : table(fleet::display_names(rep, analyze::parse_name_style(style))) {
    for (const auto& r : rep.rows) width = std::max(width, table(r.kernel).size());
    width = std::min<std::size_t>(width, 100);  // longer (--names full) ones run past it
  }
};

std::string us(double ns) {
  return fmt::format("{:.2f}", ns / 1e3);
}

int run_top(const FleetArgs& a, const GlobalOptions& g) {
  if (a.builds.size() > 1) throw UsageError("ktune fleet top takes at most one --build.");
  store::FleetFilter f{since_timestamp(a.since), a.gpu, a.builds.empty() ? "" : a.builds[0], a.job};
  const auto st = open_for_listing(g.db);  // none yet: nothing ran, an empty ranking
  const auto rep = st ? fleet::top(*st, f, a.limit, fleet::spec_catalog(spec_dirs(a.specs)))
                      : fleet::TopReport{f};
  const ShownNames names(rep, a.names);  // a bad --names fails before anything is printed
  if (a.json) {
    print_json(fleet::to_json(rep));
    return 0;
  }
  print_text("fleet: {} kernels, {} launches, {:.3f} s of GPU time{}\n", rep.kernels, rep.calls,
             rep.total_ns / 1e9, f.build.empty() ? "" : fmt::format(" (build {})", f.build));
  print_text("{:>4} {:>7} {:>12} {:>11} {:>10} {:>10} {:>5}  {:<{}}  {}\n", "#", "share", "calls",
             "total_s", "p50_us", "p95_us", "runs", "kernel", names.width, "tuning");
  for (std::size_t i = 0; i < rep.rows.size(); ++i) {
    const auto& r = rep.rows[i];
    const std::string tuning = r.spec ? (r.tuned ? "tuned (" : "backlog (") + r.spec->op + ")" : "";
    print_text("{:>4} {:>6.1f}% {:>12} {:>11.4f} {:>10} {:>10} {:>5}  {:<{}}  {}\n", i + 1,
               100 * r.share, r.calls, r.total_ns / 1e9, us(r.p50_ns), us(r.p95_ns), r.runs,
               names.table(r.kernel), names.width, tuning);
  }
  if (!rep.gemms.empty()) {
    print_text("GEMM problems (cuBLASLt, from --gemm-shapes traces):\n");
    print_text("{:>4} {:<20} {:<6} {:<22} {:<6} {:>7} {:>10} {:>11} {:>5}  {}\n", "#", "op",
               "dtype", "m,n,k,batch", "arch", "share", "calls", "gpu_s", "runs", "tuning");
    std::size_t i = 0;
    for (const auto& r : rep.gemms) {
      if (a.limit != 0 && i >= a.limit) break;
      const auto& t = r.total;
      std::string shape;
      for (const auto& d : t.shape) shape += (shape.empty() ? "" : ",") + d.dump();
      print_text("{:>4} {:<20} {:<6} {:<22} {:<6} {:>6.1f}% {:>10} {:>11.4f} {:>5}  {}\n", ++i,
                 t.op, t.dtype, shape, t.arch, 100 * r.share, t.calls, t.gpu_ns / 1e9, t.runs,
                 r.tuned                  ? "tuned"
                 : r.tune_command.empty() ? ""
                                          : "backlog");
    }
  }
  if (!rep.backlog.empty() || !rep.gemm_backlog.empty()) {
    print_text(
        "tuning backlog ({} kernel{} a known spec tunes and {} GEMM problem{}, no winner in "
        "the cache; ktune queue from-backlog queues them):\n",
        rep.backlog.size(), rep.backlog.size() == 1 ? "" : "s", rep.gemm_backlog.size(),
        rep.gemm_backlog.size() == 1 ? "" : "s");
    for (const auto& r : rep.backlog)
      print_text("  {:>6.1f}%  {}  {}\n", 100 * r.share, names.table(r.kernel), r.spec->path);
    for (const auto& r : rep.gemm_backlog)
      print_text("  {:>6.1f}%  {}  {}\n", 100 * r.share, "GEMM " + r.total.op + " " + r.total.dtype,
                 r.tune_command);
  }
  return 0;
}

int run_diff(const FleetArgs& a, const GlobalOptions& g) {
  if (a.builds.size() != 2)
    throw UsageError("ktune fleet diff needs exactly two builds: --build A --build B.");
  auto st = store::Store::open(g.db, store::Access::read_only);
  const auto rep =
      fleet::diff(*st, a.builds[0], a.builds[1], {since_timestamp(a.since), a.gpu, "", a.job});
  const ShownNames names(rep, a.names);
  if (a.json) {
    print_json(fleet::to_json(rep));
    return 0;
  }
  print_text("{:>12} {:>12} {:>9}  {}\n", "p50_us " + short_name(rep.build_a, 5),
             "p50_us " + short_name(rep.build_b, 5), "change", "kernel");
  for (const auto& r : rep.rows)
    print_text("{:>12} {:>12} {:>9}  {}\n", r.calls_a ? us(r.p50_a_ns) : "-",
               r.calls_b ? us(r.p50_b_ns) : "-",
               r.change ? fmt::format("{:+.1f}%", 100 * *r.change) : (r.calls_a ? "gone" : "new"),
               names.table(r.kernel));
  return 0;
}

const bool registered = register_command(
    {"fleet", "Rank kernels by the fleet's GPU time; compare builds", 33,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto a = std::make_shared<FleetArgs>();
       app.require_subcommand(1);
       auto common = [&](CLI::App* sub) {
         sub->add_option("--since", a->since, "Runs started since: 2026-11-20, 24h, 7d");
         sub->add_option("--gpu", a->gpu, "Only this GPU: a device name or an arch (sm_90)");
         sub->add_option("--job", a->job, "Only runs tagged with this job");
         sub->add_option("--names", a->names,
                         "Kernel names: middle (the base name and what tells its instances "
                         "apart), base or full (the whole demangled name)")
             ->capture_default_str();
         sub->add_flag("--json", a->json,
                       fmt::format("JSON output (schema_version {})", fleet::kTopSchemaVersion));
       };
       auto* top = app.add_subcommand("top", "Kernels ranked by fleet GPU time, and the backlog");
       common(top);
       top->add_option("--build", a->builds, "Only runs tagged with this build");
       top->add_option("--limit", a->limit, "Rows to show (default 20; 0: all)");
       add_specs_option(*top, a->specs);
       auto* diff = app.add_subcommand("diff", "Each kernel's p50 change from build A to B");
       common(diff);
       diff->add_option("--build", a->builds, "The two builds, A then B (give --build twice)");
       return [a, top, &globals] {
         return top->parsed() ? run_top(*a, globals) : run_diff(*a, globals);
       };
     }});

}  // namespace
}  // namespace ktune::cli
