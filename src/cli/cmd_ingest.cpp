// ktune ingest TRACE... [--tag job=...,build=...,rank=...]: pushes each trace's per-kernel
// aggregates (count, total, min, max, quantile sketch per kernel, launch shape and GPU) into the
// store as one run; a trace already ingested counts once.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/core/error.hpp"
#include "ktune/fleet/ingest.hpp"
#include "ktune/store/store.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

constexpr int kIngestSchemaVersion = 1;

}  // namespace

void add_ingest_options(CLI::App& app, IngestOptions& o) {
  app.add_option("--tag", o.tags,
                 "job=...,build=...,rank=... (and any other KEY=VALUE) recorded with the "
                 "run; fleet top/diff filter on build and job");
  app.add_option("--jobs,-j", o.jobs,
                 "Traces read at once (default: one per CPU); pushes take turns");
}

int run_ingest(const std::vector<std::string>& traces, const IngestOptions& a,
               const GlobalOptions& g) {
  if (traces.empty())
    throw UsageError(
        "ktune ingest needs at least one trace: a .ktrace or a PyTorch profiler trace.");
  for (const std::string& t : traces)
    refuse_stdin(t, "a trace (.ktrace or a PyTorch profiler trace)");
  const fleet::Tags tags = fleet::parse_tags(a.tags);
  auto st = store::Store::open(g.db);
  store::FleetStore fleet(*st);
  nlohmann::json runs = nlohmann::json::array();
  std::uint64_t records = 0;
  double seconds = 0;
  const auto start = std::chrono::steady_clock::now();
  const unsigned threads = a.jobs ? a.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::size_t failed = 0;
  fleet::ingest_files(
      fleet, {traces.begin(), traces.end()}, tags, threads, [&](const fleet::IngestResult& r) {
        if (!r.error.empty()) {
          ++failed;
          runs.push_back({{"path", r.path}, {"error", r.error}});
          std::fprintf(stderr, "ktune: %s: not ingested: %s\n", r.path.c_str(), r.error.c_str());
          return;
        }
        records += r.kernel_records;
        runs.push_back({{"path", r.path},
                        {"run_id", r.run_id},
                        {"outcome", fleet::to_string(r.outcome)},
                        {"kernel_records", r.kernel_records},
                        {"aggregates", r.aggregates},
                        {"gemm_problems", r.gemms},
                        {"read_s", r.read_s},
                        {"push_s", r.push_s}});
        if (!a.json)
          fmt::print("{}: {} ({} launches, {} aggregates{}, run {})\n", r.path,
                     fleet::to_string(r.outcome), r.kernel_records, r.aggregates,
                     r.gemms ? fmt::format(", {} GEMM problems", r.gemms) : "", r.run_id);
      });
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (a.json)
    print_json({{"store", st->describe()}, {"runs", runs}}, kIngestSchemaVersion);
  else
    fmt::print("{} trace{} into {}: {} launches in {:.2f} s\n", traces.size() - failed,
               traces.size() - failed == 1 ? "" : "s", st->describe(), records, seconds);
  if (failed)
    throw Error(fmt::format(
        "{} of {} traces could not be ingested (each is named above with the reason); the "
        "others were, so fix or remove those and run ktune ingest again.",
        failed, traces.size()));
  return 0;
}

namespace {

const bool registered = register_command(
    {"ingest",
     "Push per-kernel aggregates of traces (.ktrace or PyTorch profiler JSON) into the (fleet) "
     "store",
     32, [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto traces = std::make_shared<std::vector<std::string>>();
       auto a = std::make_shared<IngestOptions>();
       app.add_option("traces", *traces,
                      ".ktrace files or PyTorch profiler traces (.json, .json.gz)")
           ->required();
       add_ingest_options(app, *a);
       app.add_flag("--json", a->json,
                    fmt::format("JSON output (schema_version {})", kIngestSchemaVersion));
       return [traces, a, &globals] { return run_ingest(*traces, *a, globals); };
     }});

}  // namespace
}  // namespace ktune::cli
