// Ingest, fleet queries and the queue's claim rules on both store backends.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <tuple>

#include <sqlite3.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../store/store_fixture.hpp"
#include "fleet_test_util.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/core/error.hpp"
#include "ktune/fleet/ingest.hpp"
#include "ktune/fleet/query.hpp"
#include "ktune/fleet/queue.hpp"
#include "ktune/fleet/sketch.hpp"
#include "ktune/store/fleet.hpp"

namespace ktune::test {
namespace {

namespace fs = std::filesystem;
using fleet::QuantileSketch;

class FleetStoreTest : public StoreTest {};

std::vector<std::uint64_t> spread(std::uint64_t base, int n) {
  std::vector<std::uint64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(base + static_cast<std::uint64_t>(i) * base / n);
  return v;
}

TEST_P(FleetStoreTest, SameTraceIngestedTwiceCountsOnceFromAnyPath) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  const fs::path trace = dir() / "a.ktrace";
  write_trace(trace, {{"void gemm_kernel<128>(float*)", spread(10000, 50), 64, 256},
                      {"copy_f32", spread(2000, 30)}});
  const fleet::Tags tags = fleet::parse_tags({"job=train,build=b1", "rank=3"});
  auto r = fleet::ingest_file(f, trace, tags);
  EXPECT_EQ(r.outcome, store::PushOutcome::added);
  EXPECT_EQ(r.kernel_records, 80u);
  EXPECT_EQ(r.aggregates, 2u);
  EXPECT_EQ(fleet::ingest_file(f, trace, tags).outcome, store::PushOutcome::already_ingested);
  fs::copy_file(trace, dir() / "copy-of-a.ktrace");
  EXPECT_EQ(fleet::ingest_file(f, dir() / "copy-of-a.ktrace", {}).outcome,
            store::PushOutcome::already_ingested);
  EXPECT_EQ(f.run_count(), 1);
  const auto totals = f.kernel_totals({});
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].kernel, "void gemm_kernel<128>(float*)");
  EXPECT_EQ(totals[0].calls, 50);
  EXPECT_EQ(totals[0].min_ns, 10000);
  EXPECT_EQ(f.kernel_totals({.build = "b1"}).size(), 2u);
  EXPECT_TRUE(f.kernel_totals({.build = "b2"}).empty());
  EXPECT_EQ(f.kernel_totals({.gpu = "sm_90"}).size(), 2u);
  EXPECT_EQ(f.kernel_totals({.gpu = "NVIDIA H100 80GB HBM3"}).size(), 2u);
  EXPECT_TRUE(f.kernel_totals({.since = "2026-11-24"}).empty());
}

TEST_P(FleetStoreTest, SeveralTracesReadAtOncePushOneRunEach) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  std::vector<fs::path> paths;
  for (int rank = 0; rank < 5; ++rank) {
    paths.push_back(dir() / ("rank" + std::to_string(rank) + ".ktrace"));
    write_trace(paths.back(), {{"k", spread(1000, 10 + rank)}}, 100 + rank);
  }
  paths.push_back(paths[0]);  // the same trace twice in one call: one run
  int seen = 0;
  const auto results = fleet::ingest_files(f, paths, {}, 3, [&](const auto&) { ++seen; });
  EXPECT_EQ(seen, 6);
  EXPECT_EQ(f.run_count(), 5);
  EXPECT_EQ(f.kernel_totals({})[0].calls, 10 + 11 + 12 + 13 + 14);
  int already = 0;
  for (const auto& r : results) already += r.outcome == store::PushOutcome::already_ingested;
  EXPECT_EQ(already, 1);
}

// A bad trace early in the list skipped every valid one after it. Now each bad one is its
// result's sentence, and every valid one is pushed, whatever the order and the thread count.
TEST_P(FleetStoreTest, BadTracesInAListCostNoValidOne) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  std::ofstream(dir() / "not-a-trace.ktrace") << "hello";
  std::vector<fs::path> paths = {dir() / "missing.ktrace", dir() / "not-a-trace.ktrace"};
  for (int rank = 0; rank < 4; ++rank) {
    paths.push_back(dir() / ("rank" + std::to_string(rank) + ".ktrace"));
    write_trace(paths.back(), {{"k", spread(1000, 10)}}, 100 + rank);
  }
  for (unsigned threads : {1u, 3u}) {
    int seen = 0;
    const auto results = fleet::ingest_files(f, paths, {}, threads, [&](const auto&) { ++seen; });
    EXPECT_EQ(seen, 6);
    EXPECT_NE(results[0].error.find("missing.ktrace"), std::string::npos) << results[0].error;
    EXPECT_NE(results[1].error.find("is neither a .ktrace nor a PyTorch profiler trace"),
              std::string::npos)
        << results[1].error;
    for (std::size_t i = 2; i < results.size(); ++i) EXPECT_EQ(results[i].error, "") << i;
    EXPECT_EQ(f.run_count(), 4);
  }
}

// One process that used two GPUs of one model: its aggregates were keyed by device ordinal and the
// table by GPU name, so the push failed on the table's key (and the traces after it were skipped).
TEST_P(FleetStoreTest, OneProcessOnTwoGpusOfOneModelIsOneRowPerKernel) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  write_trace(dir() / "two.ktrace",
              {{.name = "k", .durations_ns = spread(1000, 10), .device = 0},
               {.name = "k", .durations_ns = spread(3000, 6), .device = 1},
               {.name = "other", .durations_ns = spread(500, 4), .device = 1}},
              77, "2026-11-23T10:00:00Z", true, std::nullopt, /*gpus=*/2);
  const auto r = fleet::ingest_file(f, dir() / "two.ktrace", {});
  EXPECT_EQ(r.outcome, store::PushOutcome::added);
  EXPECT_EQ(r.aggregates, 2u);
  const auto totals = f.kernel_totals({.gpu = "NVIDIA H100 80GB HBM3"});
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].kernel, "k");
  EXPECT_EQ(totals[0].calls, 16);
  EXPECT_EQ(totals[0].min_ns, 1000);
  const auto sketches = f.sketches({}, {"k"});
  ASSERT_EQ(sketches.size(), 1u);
  EXPECT_EQ(QuantileSketch::from_hex(sketches[0].sketch).count(), 16u);
}

// Two `ingest` runs of the same traces at once: on PostgreSQL both found a run absent and both
// inserted it, and the loser died on the duplicate key and skipped the rest of its list.
TEST_P(FleetStoreTest, ConcurrentIngestsOfTheSameTracesBothSucceed) {
  std::vector<fs::path> paths;
  for (int rank = 0; rank < 8; ++rank) {
    paths.push_back(dir() / ("r" + std::to_string(rank) + ".ktrace"));
    write_trace(paths.back(), {{"k", spread(1000, 20)}, {"j", spread(50, 20)}}, 300 + rank);
  }
  std::vector<fleet::IngestResult> a, b;
  {
    auto run = [&](std::vector<fleet::IngestResult>& out) {
      auto st = store::Store::open(url());
      store::FleetStore f(*st);
      out = fleet::ingest_files(f, paths, {}, 1);
    };
    std::thread ta(run, std::ref(a)), tb(run, std::ref(b));
    ta.join();
    tb.join();
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(a[i].error, "") << i;
    EXPECT_EQ(b[i].error, "") << i;
    EXPECT_NE(a[i].outcome == store::PushOutcome::added, b[i].outcome == store::PushOutcome::added)
        << i;
  }
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  EXPECT_EQ(f.run_count(), 8);
  EXPECT_EQ(f.kernel_totals({})[0].calls, 8 * 20);
}

// PostgreSQL refuses text that is not UTF-8, and its error carried the whole multi-row INSERT
// (2 KB of placeholders). Names from the traced program are stored with U+FFFD in their place.
TEST_P(FleetStoreTest, KernelNamesThatAreNotUtf8AreIngested) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  write_trace(dir() / "bytes.ktrace", {{"kern\xFF\xFE"
                                        "el",
                                        spread(1000, 5)},
                                       {"ok", {5}}});
  EXPECT_EQ(fleet::ingest_file(f, dir() / "bytes.ktrace", {}).outcome, store::PushOutcome::added);
  const auto totals = f.kernel_totals({});
  ASSERT_EQ(totals.size(), 2u);
  if (GetParam() == BackendKind::postgres) {
    EXPECT_EQ(totals[0].kernel,
              "kern\xEF\xBF\xBD\xEF\xBF\xBD"
              "el");
  }
}

TEST_P(FleetStoreTest, CutShortTraceIsReplacedByItsCompleteCopy) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  write_trace(dir() / "part.ktrace", {{"k", spread(1000, 10)}}, 7, "2026-11-23T10:00:00Z", false);
  write_trace(dir() / "whole.ktrace", {{"k", spread(1000, 40)}}, 7, "2026-11-23T10:00:00Z", true);
  EXPECT_EQ(fleet::ingest_file(f, dir() / "part.ktrace", {}).outcome, store::PushOutcome::added);
  EXPECT_EQ(fleet::ingest_file(f, dir() / "whole.ktrace", {}).outcome,
            store::PushOutcome::replaced);
  EXPECT_EQ(fleet::ingest_file(f, dir() / "part.ktrace", {}).outcome,
            store::PushOutcome::already_ingested);
  EXPECT_EQ(f.kernel_totals({})[0].calls, 40);
}

// ktune profile --period: each window of one process is a trace, and a run, of its own.
TEST_P(FleetStoreTest, EachPeriodicWindowIsARunOfItsOwn) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  for (std::uint64_t w : {0, 1, 2})
    write_trace(dir() / ("t.w" + std::to_string(w) + ".ktrace"), {{"k", spread(1000, 10)}}, 9,
                "2026-11-23T10:00:00Z", true, w);
  for (std::uint64_t w : {0, 1, 2})
    EXPECT_EQ(fleet::ingest_file(f, dir() / ("t.w" + std::to_string(w) + ".ktrace"), {}).outcome,
              store::PushOutcome::added);
  EXPECT_EQ(fleet::ingest_file(f, dir() / "t.w1.ktrace", {}).outcome,
            store::PushOutcome::already_ingested);
  EXPECT_EQ(f.run_count(), 3);
  EXPECT_EQ(f.kernel_totals({})[0].calls, 30);
}

// Ingest reads a trace in stored order: the aggregates must not depend on the records' order.
TEST(FleetAggregate, RecordOrderDoesNotMatter) {
  std::vector<trace::KernelRecord> records;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    trace::KernelRecord k;
    k.name = i % 3 ? "_Z4gemmv" : "copy";
    k.demangled_name = i % 3 ? "gemm()" : "";
    k.grid_x = 1 + i % 2;
    k.start_ns = 1000 + 10 * static_cast<std::uint64_t>(i);
    k.end_ns = k.start_ns + 100 + rng() % 5000;
    records.push_back(k);
  }
  auto aggregates = [](const std::vector<trace::KernelRecord>& rs) {
    fleet::RunAggregator a;
    for (const auto& k : rs) a.add(k);
    trace::TraceMetadata m;
    m.pid = 1;
    m.started_at = "2026-11-25T00:00:00Z";
    auto out = a.finish(m, "memory", {}).aggregates;
    std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
      return std::tie(x.kernel, x.grid) < std::tie(y.kernel, y.grid);
    });
    return out;
  };
  const auto in_order = aggregates(records);
  std::shuffle(records.begin(), records.end(), rng);
  const auto shuffled = aggregates(records);
  ASSERT_EQ(in_order.size(), 4u);  // two kernels, two grids each
  ASSERT_EQ(shuffled.size(), in_order.size());
  EXPECT_EQ(in_order[0].kernel, "copy");  // no demangled name: the name as recorded
  EXPECT_EQ(in_order[2].kernel, "gemm()");
  for (std::size_t i = 0; i < in_order.size(); ++i) {
    EXPECT_EQ(shuffled[i].calls, in_order[i].calls);
    EXPECT_EQ(shuffled[i].total_ns, in_order[i].total_ns);
    EXPECT_EQ(shuffled[i].min_ns, in_order[i].min_ns);
    EXPECT_EQ(shuffled[i].max_ns, in_order[i].max_ns);
    EXPECT_EQ(shuffled[i].sketch, in_order[i].sketch);
  }
}

// Runs pushed as aggregates: the ranking, shares and merged quantiles against the exact ones.
TEST_P(FleetStoreTest, TopRanksByFleetTimeWithMergedQuantiles) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  std::mt19937_64 rng(1);
  std::vector<double> all_big;
  for (int run = 0; run < 12; ++run) {
    store::FleetRun r;
    r.run_id = "run" + std::to_string(run);
    r.started_at = "2026-11-23T00:00:00Z";
    r.build = run < 6 ? "A" : "B";
    std::vector<store::FleetAggregate> aggs;
    for (const auto& [name, median] :
         {std::pair{"big_kernel", 50000.0}, {"copy_f32", 3000.0}, {"tiny", 800.0}}) {
      QuantileSketch s;
      store::FleetAggregate a{name, "1,1,1", "128,1,1", "H100", "sm_90", "580", "13.0"};
      a.min_ns = INT64_MAX;
      const int n = name == std::string("tiny") ? 200 : 100;  // tiny: most calls, least time
      for (int i = 0; i < n; ++i) {
        const double scale = (name == std::string("big_kernel") && run >= 6) ? 1.2 : 1.0;
        const auto d = static_cast<std::int64_t>(median * scale *
                                                 std::lognormal_distribution<double>(0, 0.2)(rng));
        s.add(static_cast<double>(d));
        if (name == std::string("big_kernel")) all_big.push_back(static_cast<double>(d));
        ++a.calls;
        a.total_ns += d;
        a.min_ns = std::min(a.min_ns, d);
        a.max_ns = std::max(a.max_ns, d);
      }
      a.sketch = s.to_hex();
      aggs.push_back(a);
    }
    ASSERT_EQ(f.push_run(r, aggs), store::PushOutcome::added);
  }
  const auto specs = fleet::spec_catalog({fs::path(KTUNE_SOURCE_DIR) / "kernels"});
  const auto rep = fleet::top(*st, {}, 2, specs);
  ASSERT_EQ(rep.rows.size(), 2u);
  EXPECT_EQ(rep.kernels, 3u);
  EXPECT_EQ(rep.rows[0].kernel, "big_kernel");
  EXPECT_EQ(rep.rows[1].kernel, "copy_f32");
  EXPECT_EQ(rep.rows[0].calls, 1200);
  EXPECT_EQ(rep.rows[0].runs, 12);
  double share = 0;
  for (const auto& r : fleet::top(*st, {}, 0, specs).rows) share += r.share;
  EXPECT_NEAR(share, 1.0, 1e-12);
  std::sort(all_big.begin(), all_big.end());
  for (auto [q, got] : {std::pair{0.5, rep.rows[0].p50_ns}, {0.95, rep.rows[0].p95_ns}}) {
    const double exact = all_big[static_cast<std::size_t>(q * (all_big.size() - 1))];
    EXPECT_LE(std::abs(got - exact), 0.01 * exact) << q;
  }
  // copy_f32 is the built-in copy spec's kernel and nothing is tuned yet: the backlog.
  ASSERT_EQ(rep.backlog.size(), 1u);
  EXPECT_EQ(rep.backlog[0].kernel, "copy_f32");
  EXPECT_EQ(rep.backlog[0].spec->op, "copy");
  const auto j = fleet::to_json(rep);
  EXPECT_EQ(j["schema_version"], fleet::kTopSchemaVersion);
  for (const char* key : {"filter", "total_ns", "calls", "kernels", "rows", "backlog"})
    EXPECT_TRUE(j.contains(key)) << key;
  for (const char* key : {"kernel", "display_name", "calls", "total_ns", "share", "p50_ns",
                          "p95_ns", "p99_ns", "min_ns", "max_ns", "runs", "spec", "tuned"})
    EXPECT_TRUE(j["rows"][0].contains(key)) << key;
  EXPECT_EQ(j["rows"].size(), 2u);

  // Once the cache holds a copy winner, copy_f32 leaves the backlog.
  store::CacheEntry e;
  e.key = {"copy", "f32", "268435456", "sm_90", "H100", "13.0", 0};
  e.shape = {268435456};
  e.config = {{"BLOCK", 256}};
  e.median_ns = 1000;
  e.samples = 10;
  e.provenance.created_at = "2026-11-23T00:00:00Z";
  st->put_entry(e);
  EXPECT_TRUE(fleet::top(*st, {}, 2, specs).backlog.empty());

  const auto d = fleet::diff(*st, "A", "B");
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[0].kernel, "big_kernel");
  ASSERT_TRUE(d.rows[0].change.has_value());
  EXPECT_NEAR(*d.rows[0].change, 0.2, 0.05);
  const auto dj = fleet::to_json(d);
  EXPECT_EQ(dj["schema_version"], fleet::kDiffSchemaVersion);
  for (const char* key :
       {"kernel", "display_name", "calls_a", "calls_b", "p50_a_ns", "p50_b_ns", "change"})
    EXPECT_TRUE(dj["rows"][0].contains(key)) << key;
  EXPECT_THROW(fleet::diff(*st, "A", "A"), Error);
  EXPECT_THROW(fleet::diff(*st, "X", "Y"), Error);
}

TEST_P(FleetStoreTest, JobQueuedOnceClaimedOnceAndTakenAgainWhenItsLeaseRunsOut) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  const auto spec = copy_spec(dir() / "specs", 1 << 20);
  const auto job = fleet::make_job({spec.string(), {}, "", "", 10, 0}, 1000);
  EXPECT_EQ(f.add_job(job), store::FleetStore::AddOutcome::added);
  EXPECT_EQ(f.add_job(fleet::make_job({spec.string(), {}, "", "", 99, 5}, 2000)),
            store::FleetStore::AddOutcome::exists);
  EXPECT_EQ(f.add_job(fleet::make_job({spec.string(), {}, "sm_90", "", 10, 0}, 1000)),
            store::FleetStore::AddOutcome::added);
  ASSERT_EQ(f.jobs().size(), 2u);
  EXPECT_EQ(f.pending_jobs(), 2);

  const auto a = f.claim("w1", "sm_80", "12.0", 1000, 10'000, 3);  // only the any-arch job fits
  ASSERT_TRUE(a);
  EXPECT_EQ(a->id, job.id);
  EXPECT_EQ(a->attempt, 1);
  EXPECT_FALSE(f.claim("w2", "sm_80", "12.0", 1000, 10'500, 3));  // held, lease not over
  EXPECT_TRUE(f.heartbeat(a->id, 1, 12'000, 4));
  EXPECT_FALSE(f.claim("w2", "sm_80", "12.0", 1000, 11'500, 3));
  const auto b = f.claim("w2", "sm_80", "12.0", 1000, 12'001, 3);  // w1 went quiet
  ASSERT_TRUE(b);
  EXPECT_EQ(b->attempt, 2);
  EXPECT_EQ(b->worker, "w2");
  EXPECT_FALSE(f.heartbeat(a->id, 1, 20'000, 5));  // w1's claim is fenced off
  EXPECT_FALSE(f.finish(a->id, 1, true, 13'000, 5, {{"median_ns", 1}}, ""));
  EXPECT_TRUE(f.finish(b->id, 2, true, 13'000, 10, {{"median_ns", 2}}, ""));
  const auto done = f.job(job.id);
  EXPECT_EQ(done->state, "done");
  EXPECT_EQ(done->result["median_ns"], 2);
  EXPECT_EQ(done->evaluations, 10);
  EXPECT_EQ(f.pending_jobs(), 1);

  // A job whose workers keep dying is failed after max_attempts claims.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(f.claim("w", "sm_90", "13.0", 10, 20'000 + i * 100, 2));
  EXPECT_FALSE(f.claim("w", "sm_90", "13.0", 10, 30'000, 2));
  EXPECT_EQ(f.pending_jobs(), 0);
  const auto jobs = fleet::jobs_json(f.jobs(), 40'000);
  EXPECT_EQ(jobs["schema_version"], fleet::kQueueSchemaVersion);
  EXPECT_EQ(jobs["jobs"][1]["state"], "failed");
  for (const char* key : {"id", "state", "worker", "age_s", "evaluations", "budget", "op", "bucket",
                          "arch", "toolkit", "attempt", "result", "error"})
    EXPECT_TRUE(jobs["jobs"][0].contains(key)) << key;
}

// The GEMM problems of --gemm-shapes traces: ingested with their GPU time, ranked by it across
// runs, in the backlog until the cache holds a winner of their key, and queued as library jobs
// (deduplicated by that key) by from-backlog.
TEST_P(FleetStoreTest, GemmProblemsAreIngestedRankedAndQueuedAsLibraryJobs) {
  // Lines of tests/fixtures/cublaslt/h100-bf16.log: 0 x @ W (gemm_nn), 7 torch.bmm (gemm_tn,
  // batch 8), 2 F.linear with a bias (gemm_tn_bias).
  write_gemm_trace(dir() / "a.ktrace", {{0, 10}, {7, 4}}, 50'000, 100);
  write_gemm_trace(dir() / "b.ktrace", {{0, 6}, {2, 2}}, 50'000, 200);
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  for (const char* t : {"a.ktrace", "b.ktrace"}) {
    const auto r = fleet::ingest_file(f, dir() / t, {});
    EXPECT_EQ(r.outcome, store::PushOutcome::added);
    EXPECT_EQ(r.gemms, 2u) << t;
  }
  fleet::TopReport rep = fleet::top(*st, {}, 20, {});
  ASSERT_EQ(rep.gemms.size(), 3u);
  const auto& nn = rep.gemms[0].total;  // 16 calls of 50 us, in two runs
  EXPECT_EQ(nn.op, "gemm_nn");
  EXPECT_EQ(nn.dtype, "bf16");
  EXPECT_EQ(nn.shape, nlohmann::json({384, 256, 512, 1}));
  EXPECT_EQ(nn.calls, 16);
  EXPECT_EQ(nn.gpu_ns, 16 * 50'000);
  EXPECT_EQ(nn.runs, 2);
  EXPECT_EQ(nn.arch, "sm_90");
  EXPECT_EQ(rep.gemms[1].total.op, "gemm_tn");  // 4 calls
  EXPECT_EQ(rep.gemms[1].total.shape, nlohmann::json({128, 128, 64, 8}));
  EXPECT_NEAR(rep.gemms[0].share, 16.0 / 22.0, 1e-9);
  EXPECT_EQ(rep.gemm_backlog.size(), 3u);
  EXPECT_EQ(rep.gemms[0].tune_command,
            "ktune tune --library cublaslt --op gemm_nn --shape m=384,n=256,k=512 --dtype bf16");

  // A winner of gemm_nn's key on sm_90 takes it out of the backlog.
  store::CacheEntry e;
  e.key = {"gemm_nn", "bf16", "", "sm_90", "NVIDIA H100 80GB HBM3", "13.0", 580};
  e.shape = {384, 256, 512, 1};
  e.config = {{"library", "cublaslt"}, {"algo_id", 66}};
  e.median_ns = 40'000;
  e.samples = 10;
  st->put_entry(e);
  rep = fleet::top(*st, {}, 20, {});
  EXPECT_TRUE(rep.gemms[0].tuned);
  ASSERT_EQ(rep.gemm_backlog.size(), 2u);
  const auto reqs = fleet::backlog_requests(rep, "sm_90", "", 40);
  ASSERT_EQ(reqs.size(), 2u);
  std::vector<std::string> ops;
  for (const auto& req : reqs) {
    ASSERT_TRUE(req.gemm);
    const store::FleetJob job = fleet::make_job(req, 1000);
    EXPECT_EQ(job.library, "cublaslt");
    EXPECT_TRUE(job.spec.empty());
    EXPECT_EQ(f.add_job(job), store::FleetStore::AddOutcome::added);
    EXPECT_EQ(f.add_job(fleet::make_job(req, 2000)),
              store::FleetStore::AddOutcome::exists);  // queued once per key
    ops.push_back(job.op + " " + job.bucket);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"gemm_tn 128x128x64x8", "gemm_tn_bias 384x256x512x1"}));
  const auto jobs = f.jobs();
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& j : jobs) {
    EXPECT_EQ(j.library, "cublaslt");
    const auto p = j.shape.get<bench::GemmProblem>();  // the problem, as logged
    EXPECT_EQ(p.batch, j.op == "gemm_tn" ? 8 : 1);
    EXPECT_EQ(p.stride_a, j.op == "gemm_tn" ? 8192 : -1);
  }
  const auto listing = fleet::jobs_json(jobs, 3000);
  EXPECT_EQ(listing["jobs"][0]["library"], "cublaslt");
  const auto top_json = fleet::to_json(rep);
  EXPECT_EQ(top_json["schema_version"], fleet::kTopSchemaVersion);
  for (const char* key : {"op", "dtype", "shape", "arch", "problem", "calls", "gpu_ns", "runs",
                          "share", "tuned", "tune_command"})
    EXPECT_TRUE(top_json["gemms"][0].contains(key)) << key;
  EXPECT_EQ(top_json["gemm_backlog"].size(), 2u);
}

// A backlog kernel is queued at the shape it ran, read from its costliest launch shape through its
// spec (the queue used to tune every spec kernel at the spec's default shape).
TEST_P(FleetStoreTest, ASpecKernelIsQueuedAtTheShapeItsLaunchesImply) {
  FakeKernel main{"matmul", spread(400'000, 20)};
  main.grid_x = 64;  // the default configuration (block 16 x 4, tile 1): N = 1024, M = 768
  main.grid_y = 192;
  main.block_x = 16;
  main.block_y = 4;
  FakeKernel small{"matmul", spread(10'000, 5)};  // another shape, far less time
  small.grid_x = 8;
  small.block_x = 16;
  small.block_y = 4;
  write_trace(dir() / "m.ktrace", {main, small});
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  fleet::ingest_file(f, dir() / "m.ktrace", {});
  const fleet::KnownSpec spec{
      (fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/tuning/matmul_T1.json").string(), "matmul",
      "matmul", "f32"};
  const auto rep = fleet::top(*st, {}, 20, {spec});
  ASSERT_EQ(rep.backlog.size(), 1u);
  EXPECT_EQ(rep.backlog[0].grid, "64,192,1");
  EXPECT_EQ(rep.backlog[0].block, "16,4,1");
  const auto reqs = fleet::backlog_requests(rep, "", "", 30);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].shape,
            (std::map<std::string, std::int64_t>{{"K", 256}, {"M", 768}, {"N", 1024}}));
  const auto job = fleet::make_job(reqs[0], 1000);
  EXPECT_EQ(job.bucket, "513-1024x705-768x256");  // N pow2, M multiple of 64, K exact
}

// A store a ktune without the fleet made, opened read-only (no migration): no runs, no jobs, and
// no SQL error about missing tables.
TEST(FleetStoreSchema, OlderStoreReadOnlyHasNoFleetRatherThanAnError) {
  const fs::path path =
      fs::temp_directory_path() / ("ktune_fleet_old_" + std::to_string(::getpid()) + ".db");
  fs::remove(path);
  store::Store::open(path.string());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db,
                   "DROP TABLE fleet_runs; DROP TABLE fleet_aggregates; DROP TABLE fleet_jobs; "
                   "UPDATE ktune_meta SET value = '2' WHERE key = 'schema_version'",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  auto st = store::Store::open(path.string(), store::Access::read_only);
  store::FleetStore f(*st);
  EXPECT_TRUE(f.kernel_totals({}).empty());
  EXPECT_TRUE(f.jobs().empty());
  EXPECT_EQ(f.run_count(), 0);
  EXPECT_TRUE(fleet::top(*st, {}, 20, {}).rows.empty());
  st.reset();
  fs::remove(path);
}

// ingest reads a PyTorch profiler trace as it reads a .ktrace: every kernel counted once.
TEST_P(FleetStoreTest, IngestReadsAPyTorchProfilerTrace) {
  auto st = store::Store::open(url());
  store::FleetStore f(*st);
  const auto r = fleet::ingest_file(
      f, fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/torch/torch_block.json", {});
  EXPECT_EQ(r.kernel_records, 45u);
  EXPECT_EQ(r.aggregates, 15u);  // 14 names, one of them at two launch shapes
  EXPECT_EQ(f.run_count(), 1);
  EXPECT_FALSE(fleet::top(*st, {}, 20, {}).rows.empty());
}

// fleet top cut full names at 45 characters: seven rows read
// "void at::native::vectorized_elementwise_kerne...". Rows show the middle form, distinct.
TEST(FleetNames, RowsShowTheMiddleFormDistinct) {
  const std::string gelu =
      "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
      "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
      "const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
      "at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)";
  const std::string mul =
      "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
      "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >("
      "int, at::detail::Array<char*, 3>)";
  fleet::TopReport rep;
  rep.rows = {{gelu}, {mul}, {"void a::k<a::Op>(int)"}, {"void b::k<b::Op>(int)"}};
  const auto names = fleet::display_names(rep);
  EXPECT_EQ(names(gelu), "vectorized_elementwise_kernel<GeluCUDAKernelImpl>");
  EXPECT_EQ(names(mul), "vectorized_elementwise_kernel<MulFunctor>");
  EXPECT_NE(names("void a::k<a::Op>(int)"), names("void b::k<b::Op>(int)"));
  const auto j = fleet::to_json(rep);
  EXPECT_EQ(j["rows"][0]["display_name"], "vectorized_elementwise_kernel<GeluCUDAKernelImpl>");
  EXPECT_EQ(j["rows"][0]["kernel"], gelu);  // programs keep the full name
  EXPECT_EQ(fleet::display_names(rep, analyze::NameStyle::full)(gelu), gelu);
}

TEST(FleetIngest, BadTagsAndBadTracesAreOneSentence) {
  EXPECT_THROW(fleet::parse_tags({"job"}), Error);
  EXPECT_THROW(fleet::parse_tags({"=x"}), Error);
  const auto t = fleet::parse_tags({"job=j,build=b,team=x"});
  EXPECT_EQ(t.all["team"], "x");
}

KTUNE_BOTH_BACKENDS(FleetStoreTest);

}  // namespace
}  // namespace ktune::test
