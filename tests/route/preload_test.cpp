// libktune_route.so preloaded into a program that calls cuBLASLt (route_probe), on a machine with
// no GPU: the router reads each heuristic query's descriptors, matches the exact one to the
// table's winner, reports the near miss (another leading dimension) and the size it has no winner
// for, and hands the program cuBLASLt's own answers whenever it does not route. A bad table costs
// one sentence, never the program.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <cublasLt.h>
#include <nlohmann/json.hpp>

#include "ktune/core/paths.hpp"
#include "ktune/core/subprocess.hpp"
#include "ktune/route/table.hpp"

namespace ktune::route {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ktune-route-test-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

// The probe's first query: 2816 x 4096 x 1024, bf16, TN, packed.
RouteTable probe_table() {
  bench::GemmProblem p;
  p.trans_a = true;
  p.m = 2816;
  p.n = 4096;
  p.k = 1024;
  p.dtype = DType::bf16;
  store::CacheEntry e;
  e.key.op = bench::gemm_cache_op(p);
  e.key.dtype = bench::gemm_cache_dtype(p);
  e.shape = bench::gemm_cache_shape(p);
  bench::LtAlgoConfig c;
  c.algo_id = 66;
  c.heuristic_rank = 3;
  e.config = c;
  e.config["problem"] = p;
  return RouteTable::from_entries({e});
}

subprocess::Result probe(const std::vector<std::string>& env) {
  std::vector<std::string> argv = {"env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(KTUNE_ROUTE_PROBE);
  subprocess::Options o;
  o.timeout_s = 60;
  return subprocess::run(argv, o);
}

TEST(RoutePreload, WithoutTheRouterTheProgramRunsAsBuilt) {
  const auto r = probe({});
  ASSERT_TRUE(r.exit.ok()) << r.exit.describe() << r.err_tail;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.at("router").get<bool>());
}

TEST(RoutePreload, TheRouterMatchesExactDescriptorsAndPassesTheRest) {
  TempDir dir;
  const fs::path table = dir.path / "table.json";
  write_file_atomic(table, probe_table().to_json().dump());
  const auto plain = nlohmann::json::parse(probe({}).out);
  const auto r = probe(
      {std::string("LD_PRELOAD=") + KTUNE_ROUTE_LIBRARY, "KTUNE_ROUTE_TABLE=" + table.string()});
  ASSERT_TRUE(r.exit.ok()) << r.exit.describe() << r.err_tail;
  const auto j = nlohmann::json::parse(r.out);
  // cuBLASLt's own answers: the probe has no handle (and here no GPU), so the winner cannot be
  // checked against the call and every query passes.
  EXPECT_EQ(j.at("statuses"), plain.at("statuses"));
  const auto& stats = j.at("router");
  ASSERT_TRUE(stats.is_object()) << r.out;
  EXPECT_EQ(stats.at("schema_version"), 1);
  EXPECT_EQ(stats.at("entries").at("cublasLtMatmul").at("calls"), 4);
  EXPECT_EQ(stats.at("entries").at("cublasLtMatmul").at("passed"), 4);
  ASSERT_EQ(stats.at("winners").size(), 1u);
  const auto& w = stats.at("winners")[0];
  EXPECT_EQ(w.at("op"), "gemm_tn");
  EXPECT_EQ(w.at("verdict"), "demoted");  // cuBLASLt could not check it: never routed
  EXPECT_EQ(w.at("routed_calls"), 0);
  // The wider lda reached the exact match and missed, twice (the second answered from the
  // thread's remembered matches, and still counted); the 512^3 query never got that far.
  ASSERT_EQ(stats.at("near_misses").size(), 1u);
  EXPECT_EQ(stats.at("near_misses")[0].at("calls"), 2);
  EXPECT_NE(stats.at("near_misses")[0].at("why").get<std::string>().find("exact leading"),
            std::string::npos);
}

TEST(RoutePreload, ABadTableIsOneSentenceAndTheProgramRunsOn) {
  TempDir dir;
  const fs::path table = dir.path / "table.json";
  write_file_atomic(table, R"({"schema_version": 7})");
  for (const std::string& path : {table.string(), (dir.path / "missing.json").string()}) {
    const auto r =
        probe({std::string("LD_PRELOAD=") + KTUNE_ROUTE_LIBRARY, "KTUNE_ROUTE_TABLE=" + path});
    ASSERT_TRUE(r.exit.ok()) << r.exit.describe();
    EXPECT_NE(r.err_tail.find("every GEMM call passes through"), std::string::npos) << r.err_tail;
    EXPECT_TRUE(nlohmann::json::parse(r.out).at("router").at("winners").empty());
  }
}

TEST(RoutePreload, StatsAreWrittenAtExitWhereAsked) {
  TempDir dir;
  const auto r = probe(
      {std::string("LD_PRELOAD=") + KTUNE_ROUTE_LIBRARY, "KTUNE_ROUTE_STATS=" + dir.path.string()});
  ASSERT_TRUE(r.exit.ok());
  std::size_t files = 0;
  for (const auto& f : fs::directory_iterator(dir.path)) {
    ++files;
    const auto j = nlohmann::json::parse(read_file(f.path()));
    EXPECT_EQ(j.at("entries").at("cublasLtMatmul").at("calls"), 4);
  }
  EXPECT_EQ(files, 1u);
}

}  // namespace
}  // namespace ktune::route
