// fleet_bench: ingest throughput (a .ktrace of N kernel records read, aggregated and pushed) and
// `fleet top` latency over R runs holding L launches in all, against the store given by --db.
// Prints one line per figure and, with --json FILE, the figures as JSON (schema_version 1).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/paths.hpp"
#include "ktune/fleet/ingest.hpp"
#include "ktune/fleet/query.hpp"
#include "ktune/fleet/sketch.hpp"
#include "ktune/store/fleet.hpp"
#include "ktune/trace/ktrace.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
// This process's CPU time: on a shared machine, wall time also counts other programs' turns.
double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Args {
  std::string db, json, workdir = "/tmp/ktune-fleet-bench";
  std::int64_t trace_records = 2'000'000, runs = 1000, launches = 10'000'000, kernels = 100;
  int shapes = 3, repeats = 5;
};

std::string kernel_name(std::int64_t k) {
  return fmt::format("void ktune_bench::kernel_{:03d}<float, 128, 4>(float const*, float*, long)",
                     k);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--db")
      a.db = v;
    else if (k == "--json")
      a.json = v;
    else if (k == "--workdir")
      a.workdir = v;
    else if (k == "--trace-records")
      a.trace_records = std::stoll(v);
    else if (k == "--runs")
      a.runs = std::stoll(v);
    else if (k == "--launches")
      a.launches = std::stoll(v);
    else if (k == "--kernels")
      a.kernels = std::stoll(v);
    else if (k == "--repeats")
      a.repeats = std::stoi(v);
    else {
      std::fprintf(stderr, "fleet_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.db.empty()) {
    std::fprintf(stderr,
                 "usage: fleet_bench --db URL [--trace-records N] [--runs R] "
                 "[--launches L] [--kernels K] [--json FILE]\n");
    return 2;
  }
  namespace fs = std::filesystem;
  fs::create_directories(a.workdir);
  nlohmann::json out = {{"schema_version", 1}, {"store", a.db}};
  try {
    auto st = ktune::store::Store::open(a.db);
    ktune::store::FleetStore fleet(*st);
    std::mt19937_64 rng(42);

    // --- ingest: one trace of trace_records launches, Zipf-like over kernels and shapes ---
    auto write_trace = [&](const fs::path& path, std::int64_t records) {
      ktune::trace::TraceMetadata m;
      m.pid = static_cast<std::int64_t>(rng() % 1000000);
      m.started_at = ktune::utc_now_iso8601();
      m.complete = true;
      m.command_line = {"fleet_bench", std::to_string(rng())};
      ktune::Identity id;
      id.host.hostname = "bench";
      ktune::DeviceIdentity d;
      d.name = "NVIDIA H100 80GB HBM3";
      d.cc_major = 9;
      id.devices.push_back(d);
      m.identity = id;
      ktune::trace::KtraceWriter w(path, m);
      std::uint64_t t = 1000;
      for (std::int64_t i = 0; i < records; ++i) {
        ktune::trace::KernelRecord r;
        const auto k =
            static_cast<std::int64_t>(std::pow(static_cast<double>(rng() % 1000000) / 1e6, 3) *
                                      static_cast<double>(a.kernels));
        r.name = kernel_name(k);
        r.grid_x = 132 * (1 + static_cast<int>(rng() % a.shapes));
        r.grid_y = r.grid_z = r.block_y = r.block_z = 1;
        r.block_x = 128;
        r.start_ns = t;
        r.end_ns = t + 2000 + rng() % 50000;
        r.correlation_id = static_cast<std::uint32_t>(i + 1);
        t = r.end_ns + 500;
        w.add(r);
        if (i % 100000 == 99999) w.commit();
      }
    };
    const fs::path trace = fs::path(a.workdir) / "ingest.ktrace";
    write_trace(trace, a.trace_records);
    const auto t0 = Clock::now();
    const double c0 = cpu_s();
    const auto r =
        ktune::fleet::ingest_file(fleet, trace, ktune::fleet::parse_tags({"build=bench"}));
    const double ingest_s = since(t0), ingest_cpu_s = cpu_s() - c0;
    const double rate = static_cast<double>(r.kernel_records) / ingest_s;
    fmt::print(
        "ingest: {} kernel records in {:.3f} s wall, {:.3f} s CPU (read+aggregate {:.3f} s, "
        "push {:.4f} s of {} aggregates): {:.2f} M records per second wall, {:.2f} M per "
        "CPU second\n",
        r.kernel_records, ingest_s, ingest_cpu_s, r.read_s, r.push_s, r.aggregates, rate / 1e6,
        static_cast<double>(r.kernel_records) / ingest_cpu_s / 1e6);
    out["ingest"] = {{"kernel_records", r.kernel_records},
                     {"seconds", ingest_s},
                     {"cpu_s", ingest_cpu_s},
                     {"read_s", r.read_s},
                     {"push_s", r.push_s},
                     {"aggregates", r.aggregates},
                     {"records_per_s", rate}};

    // The trace reader's share: one visit of the kernels as ingest makes it (stored order), and
    // one in start order as reports make it, each record only counted.
    for (const auto order :
         {ktune::trace::VisitOrder::stored, ktune::trace::VisitOrder::by_start}) {
      const bool stored = order == ktune::trace::VisitOrder::stored;
      const auto tr = Clock::now();
      const double cr = cpu_s();
      const ktune::trace::KtraceReader reader(trace);
      std::uint64_t n = 0;
      reader.kernels(
          [&](const ktune::trace::KernelRecord&) { ++n; }, order,
          stored ? ktune::trace::KernelColumns::launch : ktune::trace::KernelColumns::all);
      const double wall = since(tr), cpu = cpu_s() - cr;
      fmt::print(
          "read only ({}): {} records in {:.3f} s wall, {:.3f} s CPU: {:.2f} M records per "
          "second wall\n",
          stored ? "launch columns in stored order, as ingest reads"
                 : "every column in start order, as reports read",
          n, wall, cpu, static_cast<double>(n) / wall / 1e6);
      out[stored ? "read_stored" : "read_by_start"] = {
          {"kernel_records", n}, {"seconds", wall}, {"cpu_s", cpu}};
    }

    // The fleet's own share of ingest, without the trace reader: the same records from memory,
    // aggregated and pushed as a second run.
    {
      const ktune::trace::KtraceReader reader(trace);
      ktune::trace::TraceMetadata metadata = reader.metadata();
      metadata.pid += 1;  // another run
      std::vector<ktune::trace::KernelRecord> records;
      reader.kernels([&](const ktune::trace::KernelRecord& k) { records.push_back(k); },
                     ktune::trace::VisitOrder::stored);
      const auto tm = Clock::now();
      const double cm = cpu_s();
      ktune::fleet::RunAggregator aggregator;
      for (const auto& k : records) aggregator.add(k);
      auto agg = aggregator.finish(metadata, "memory", {});
      fleet.push_run(agg.run, agg.aggregates);
      const double wall = since(tm), cpu = cpu_s() - cm;
      const auto n = static_cast<double>(agg.kernel_records);
      fmt::print(
          "aggregate+push from memory: {} records in {:.3f} s wall, {:.3f} s CPU: {:.2f} M "
          "records per second wall, {:.2f} M per CPU second\n",
          agg.kernel_records, wall, cpu, n / wall / 1e6, n / cpu / 1e6);
      out["aggregate_from_memory"] = {
          {"kernel_records", agg.kernel_records}, {"seconds", wall}, {"cpu_s", cpu}};
    }

    // Several traces at once, one reader per CPU (a node ingests its ranks' traces together).
    {
      const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
      std::vector<fs::path> paths;
      for (unsigned i = 0; i < 2 * threads; ++i) {
        paths.push_back(fs::path(a.workdir) / fmt::format("rank{}.ktrace", i));
        write_trace(paths.back(), a.trace_records / (2 * threads));
      }
      const auto tp = Clock::now();
      const double cp = cpu_s();
      std::uint64_t n = 0;
      for (const auto& res : ktune::fleet::ingest_files(fleet, paths, {}, threads))
        n += res.kernel_records;
      const double wall = since(tp), cpu = cpu_s() - cp;
      fmt::print(
          "ingest of {} traces with {} reader threads: {} records in {:.3f} s wall, {:.3f} "
          "s CPU: {:.2f} M records per second\n",
          paths.size(), threads, n, wall, cpu, static_cast<double>(n) / wall / 1e6);
      out["ingest_parallel"] = {{"traces", paths.size()}, {"threads", threads},
                                {"kernel_records", n},    {"seconds", wall},
                                {"cpu_s", cpu},           {"records_per_s", n / wall}};
    }

    // --- top: `runs` runs of launches/runs launches each, pushed as aggregates ---
    const std::int64_t per_run = a.launches / a.runs;
    std::int64_t rows = 0, launches = 0;
    double push_s = 0, push_cpu_s = 0;
    for (std::int64_t run = 0; run < a.runs; ++run) {
      ktune::store::FleetRun fr;
      fr.run_id = fmt::format("bench-run-{}", run);
      fr.started_at = "2026-11-23T00:00:00Z";
      fr.build = run % 2 ? "b2" : "b1";
      fr.job = fmt::format("job-{}", run / 10);
      std::vector<ktune::store::FleetAggregate> aggs;
      std::vector<std::int64_t> counts(static_cast<std::size_t>(a.kernels * a.shapes), 0);
      for (std::int64_t i = 0; i < per_run; ++i) {
        const auto k =
            static_cast<std::int64_t>(std::pow(static_cast<double>(rng() % 1000000) / 1e6, 3) *
                                      static_cast<double>(a.kernels));
        ++counts[static_cast<std::size_t>(k * a.shapes +
                                          static_cast<std::int64_t>(rng() % a.shapes))];
      }
      for (std::int64_t c = 0; c < static_cast<std::int64_t>(counts.size()); ++c) {
        const std::int64_t n = counts[static_cast<std::size_t>(c)];
        if (n == 0) continue;
        ktune::fleet::QuantileSketch s;
        ktune::store::FleetAggregate ag{kernel_name(c / a.shapes),
                                        fmt::format("{},1,1", 132 * (1 + c % a.shapes)),
                                        "128,1,1",
                                        "NVIDIA H100 80GB HBM3",
                                        "sm_90",
                                        "580.159.04",
                                        "13.0"};
        ag.min_ns = INT64_MAX;
        const double median = 2000.0 * (1 + static_cast<double>(c % 37));
        for (std::int64_t i = 0; i < n; ++i) {
          const auto d = static_cast<std::int64_t>(
              median * std::exp(0.2 * std::normal_distribution<double>()(rng)));
          s.add(static_cast<double>(d));
          ag.total_ns += d;
          ag.min_ns = std::min(ag.min_ns, d);
          ag.max_ns = std::max(ag.max_ns, d);
        }
        ag.calls = n;
        ag.sketch = s.to_hex();
        aggs.push_back(std::move(ag));
        launches += n;
      }
      rows += static_cast<std::int64_t>(aggs.size());
      const auto tp = Clock::now();
      const double cp = cpu_s();
      fleet.push_run(fr, aggs);
      push_s += since(tp);
      push_cpu_s += cpu_s() - cp;
    }
    fmt::print(
        "pushed {} runs, {} launches as {} aggregate rows in {:.2f} s wall, {:.2f} s CPU "
        "({:.0f} rows/s wall)\n",
        a.runs, launches, rows, push_s, push_cpu_s, static_cast<double>(rows) / push_s);
    out["push"] = {{"runs", a.runs},
                   {"launches", launches},
                   {"rows", rows},
                   {"seconds", push_s},
                   {"cpu_s", push_cpu_s}};

    const auto specs = ktune::fleet::spec_catalog({});
    std::vector<double> top_s, top_cpu_s, top_build_s, diff_s;
    ktune::fleet::TopReport rep;
    for (int i = 0; i < a.repeats; ++i) {
      auto t = Clock::now();
      const double ct = cpu_s();
      rep = ktune::fleet::top(*st, {}, 20, specs);
      top_s.push_back(since(t));
      top_cpu_s.push_back(cpu_s() - ct);
      t = Clock::now();
      (void)ktune::fleet::top(*st, {.build = "b1"}, 20, specs);
      top_build_s.push_back(since(t));
      t = Clock::now();
      (void)ktune::fleet::diff(*st, "b1", "b2");
      diff_s.push_back(since(t));
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    fmt::print(
        "fleet top over {} launches ({} runs: {} pushed + the ingest runs): median {:.3f} s wall, "
        "{:.3f} s "
        "CPU in this process (of {}; min {:.3f}, max {:.3f}); --build b1: {:.3f} s; diff b1 b2: "
        "{:.3f} s\n",
        rep.calls, fleet.run_count(), a.runs, median(top_s), median(top_cpu_s), a.repeats,
        *std::min_element(top_s.begin(), top_s.end()),
        *std::max_element(top_s.begin(), top_s.end()), median(top_build_s), median(diff_s));
    fmt::print("top kernel: {} share {:.1f}% p50 {:.2f} us p95 {:.2f} us\n", rep.rows[0].kernel,
               100 * rep.rows[0].share, rep.rows[0].p50_ns / 1e3, rep.rows[0].p95_ns / 1e3);
    out["top"] = {{"launches", rep.calls},
                  {"median_s", median(top_s)},
                  {"median_cpu_s", median(top_cpu_s)},
                  {"all_s", top_s},
                  {"build_filter_median_s", median(top_build_s)},
                  {"diff_median_s", median(diff_s)}};
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fleet_bench: %s\n", e.what());
    return 1;
  }
  if (!a.json.empty()) ktune::write_file_atomic(a.json, out.dump(2) + "\n");
  return 0;
}
