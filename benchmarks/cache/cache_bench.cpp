// cache_bench: what the cache costs an application.
//   1. TunedConfigs::lookup in process (bound: median <= 100 ns), beside its baseline Store::lookup
//      on the embedded SQLite store;
//   2. Store::lookup on PostgreSQL over loopback (bound: p99 <= 1 ms), when --pg URL is given;
//   3. on a GPU: first launch of a variant whose binary is already on disk (bound: <= 5 ms).
// Prints a JSON document (schema_version 1) to --json FILE and summary lines last.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/paths.hpp"
#include "ktune/core/stats.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/runtime/jit_launcher.hpp"
#include "ktune/runtime/tuned_configs.hpp"
#include "ktune/store/store.hpp"

using namespace ktune;
using Clock = std::chrono::steady_clock;

namespace {

const store::Environment kEnv{"sm_90", "NVIDIA H100 80GB HBM3", "13.0", 580};

// 8 ops x 2 dtypes x 64 shapes: a large application's worth of tuned kernels.
store::Pack make_pack(const std::string& op_prefix) {
  store::Pack pack;
  for (int op = 0; op < 8; ++op) {
    const std::string name = fmt::format("{}op{}", op_prefix, op);
    pack.ops.push_back(
        {name, {{store::DimRule{store::BucketKind::pow2}}}, nlohmann::json{{"block", 128}}});
    for (const char* dtype : {"f16", "f32"})
      for (int s = 0; s < 64; ++s) {
        store::CacheEntry e;
        e.key = {name, dtype, "", kEnv.arch, kEnv.device_name, kEnv.toolkit, kEnv.driver_major};
        e.shape = {std::int64_t{1} << (s % 16 + 4), std::int64_t{1} << (s / 16 + 6)};
        e.config = {{"block", 32 << (s % 5)}, {"unroll", s % 4 + 1}};
        e.median_ns = 1000 + s;
        e.samples = 30;
        pack.entries.push_back(e);
      }
  }
  return pack;
}

double ns_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string pg_url, json_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--pg")
      pg_url = argv[i + 1];
    else if (a == "--json")
      json_path = argv[i + 1];
  }
  if (pg_url.empty())
    if (const char* u = std::getenv("KTUNE_TEST_PG_URL")) pg_url = u;
  nlohmann::json out{{"schema_version", 1}, {"benchmark", "cache"}};
  std::vector<std::string> summary;

  // 1. In-process lookup: batches of 1000 exact hits over varying shapes, per-lookup median.
  const store::Pack pack = make_pack("");
  const runtime::TunedConfigs tc(pack, kEnv);
  std::vector<std::vector<std::int64_t>> shapes;
  for (int s = 0; s < 64; ++s)
    shapes.push_back(
        {(std::int64_t{1} << (s % 16 + 4)) - 1, (std::int64_t{1} << (s / 16 + 6)) - 3});
  std::vector<double> per_lookup;
  std::size_t sink = 0;
  for (int batch = 0; batch < 2000; ++batch) {
    const auto t0 = Clock::now();
    for (int i = 0; i < 1000; ++i) {
      const auto& sh = shapes[static_cast<std::size_t>(i) % shapes.size()];
      const auto a = tc.lookup(i % 2 ? "op3" : "op5", i % 3 ? "f32" : "f16", sh);
      sink += static_cast<std::size_t>(a.match);
    }
    per_lookup.push_back(ns_since(t0) / 1000);
  }
  const Summary mem = summarize(per_lookup);
  out["inprocess_lookup_ns"] = mem;
  summary.push_back(
      fmt::format("in-process lookup   median {:.1f} ns  p95 {:.1f} ns  (bound 100 ns: {})",
                  mem.median, mem.p95, mem.median <= 100 ? "PASS" : "FAIL"));

  // Baseline: the same lookups through the embedded SQLite store.
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("ktune_cache_bench_{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto bench_store = [&](store::Store& s, const std::string& prefix, int n) {
    s.import_pack(make_pack(prefix), true);
    std::vector<double> t;
    for (int i = 0; i < n; ++i) {
      const auto& sh = shapes[static_cast<std::size_t>(i) % shapes.size()];
      const auto t0 = Clock::now();
      const auto r = s.lookup({prefix + (i % 2 ? "op3" : "op5"), i % 3 ? "f32" : "f16", sh, kEnv});
      t.push_back(ns_since(t0));
      sink += static_cast<std::size_t>(r.match);
    }
    return t;
  };
  auto p99 = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return quantile_sorted(t, 0.99);
  };
  {
    auto s = store::Store::open((dir / "bench.db").string());
    const auto samples = bench_store(*s, "", 2000);
    const Summary lite = summarize(samples);
    out["sqlite_lookup_ns"] = lite;
    out["sqlite_lookup_p99_ns"] = p99(samples);
    summary.push_back(fmt::format(
        "baseline SQLite     median {:.1f} us  p99 {:.1f} us  ({:.0f}x the in-process median)",
        lite.median / 1e3, p99(samples) / 1e3, lite.median / mem.median));
  }
  std::filesystem::remove_all(dir);

  // 2. PostgreSQL over loopback.
  if (!pg_url.empty()) {
    auto s = store::Store::open(pg_url);
    const std::string prefix = fmt::format("bench{}_", ::getpid());
    store::EntryFilter mine;
    const auto samples = bench_store(*s, prefix, 3000);
    const Summary pg = summarize(samples);
    const double pg_p99 = p99(samples);
    for (int op = 0; op < 8; ++op) {
      mine.op = fmt::format("{}op{}", prefix, op);
      mine.include_invalidated = true;
      s->remove_entries(mine);
    }
    out["postgres_lookup_ns"] = pg;
    out["postgres_lookup_p99_ns"] = pg_p99;
    summary.push_back(
        fmt::format("PostgreSQL lookup   median {:.1f} us  p99 {:.1f} us  (bound 1 ms: {})",
                    pg.median / 1e3, pg_p99 / 1e3, pg_p99 <= 1e6 ? "PASS" : "FAIL"));
  } else {
    out["postgres_lookup_ns"] = nullptr;
    summary.push_back("PostgreSQL lookup   skipped: no --pg URL or KTUNE_TEST_PG_URL");
  }

  // 3. JIT first launch of a variant whose cubin is already in the disk cache.
  if (cuda::gpu_available()) {
    static const char* kSrc = R"(
extern "C" __global__ void scale(float* x, float a, unsigned n) {
  unsigned i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) x[i] *= a;
})";
    cuda::PrimaryContext ctx(0);
    const auto env = runtime::detect_environment(0);
    const nlohmann::json config{{"block", 256}};
    runtime::JitLauncher(kSrc, "scale", env.arch).variant(config);  // fills the disk cache
    cuda::DeviceBuffer buf(1 << 20);
    cuda::Stream stream;
    std::vector<double> t;
    for (int rep = 0; rep < 20; ++rep) {
      const auto t0 = Clock::now();
      runtime::JitLauncher fresh(kSrc, "scale", env.arch);  // a new process's first launch
      CUdeviceptr p = buf.get();
      float a = 1.0f;
      unsigned n = (1 << 20) / 4;
      void* args[] = {&p, &a, &n};
      fresh.launch(config, {n / 256}, {256}, stream.get(), args);
      stream.synchronize();
      t.push_back(ns_since(t0));
    }
    const Summary jit = summarize(t);
    out["jit_first_launch_ns"] = jit;
    summary.push_back(
        fmt::format("JIT first launch    median {:.3f} ms  max {:.3f} ms  (bound 5 ms: {})",
                    jit.median / 1e6, jit.max / 1e6, jit.median <= 5e6 ? "PASS" : "FAIL"));
  } else {
    out["jit_first_launch_ns"] = nullptr;
    summary.push_back("JIT first launch    skipped: no GPU");
  }

  out["sink"] = sink;  // keeps the lookups from being optimised away
  if (!json_path.empty()) write_file_atomic(json_path, out.dump(2) + "\n");
  for (const auto& line : summary) std::printf("%s\n", line.c_str());
  return 0;
}
