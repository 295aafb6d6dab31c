// Reading recorded spaces: T4 streamed, Kernel Tuner caches, spaces too large for 64-bit ranks.
#include "ktune/tune/replay.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "datasets.hpp"
#include "ktune/core/error.hpp"
#include "ktune/tune/kt_cache.hpp"
#include "ktune/tune/strategy.hpp"
#include "ktune/tune/t4.hpp"

namespace ktune::tune {
namespace {

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p;
}

// Regression: 65 two-valued parameters overflow a 64-bit rank (2^65 configurations), the first
// parameter's digit fell off the top, and of these 257 configurations two shared a rank: the space
// read as 256.
TEST(RecordedSpaceRead, ManyParametersKeepEveryConfiguration) {
  T4File f;
  f.source = "wide";
  auto add = [&](std::vector<int> ones) {
    T4Record r;
    for (int p = 0; p < 65; ++p) r.configuration[fmt::format("p{:02}", p)] = 0;
    for (int p : ones) r.configuration[fmt::format("p{:02}", p)] = 1;
    r.time_ns = 1000.0 + static_cast<double>(f.results.size());
    f.results.push_back(r);
  };
  add({});                                // all zero, and p00=1 alone used to share its rank
  for (int p = 0; p < 65; ++p) add({p});  // one-hot: every parameter takes both values
  for (int p = 1; p < 65 && f.results.size() < 257; ++p)
    for (int q = p + 1; q < 65 && f.results.size() < 257; ++q) add({p, q});
  ASSERT_EQ(f.results.size(), 257u);
  const auto space = RecordedSpace::from_records(f);
  EXPECT_FALSE(space->space().ranks_fit());
  ASSERT_EQ(space->index().size(), 257u);
  for (std::size_t i = 0; i < 257; ++i) {
    EXPECT_EQ(space->index().find(space->index().at(i)), i);
    const auto c = space->space().from_values(f.results[i].configuration);
    ASSERT_TRUE(c);
    const auto pos = space->index().find(*c);
    ASSERT_TRUE(pos) << i;
    EXPECT_EQ(space->evaluate(*pos).time_ns, f.results[i].time_ns);
  }
  EXPECT_THROW((void)space->space().rank(space->index().at(0)), Error);
  EXPECT_DOUBLE_EQ(replay_once(*space, *make_strategy("exhaustive"), 1, 300).fraction_of_optimum,
                   1.0);  // all 257
}

TEST(RecordedSpaceRead, StreamedT4MatchesTheWholeFileReading) {
  const auto path = test::fixtures_dir() / "statuses_T4.json";
  std::ifstream in(path);
  const T4File whole = parse_t4(nlohmann::json::parse(in), path.string());
  std::vector<T4Record> streamed;
  EXPECT_EQ(for_each_t4_record(path,
                               [&](T4Record&& r, std::size_t i) {
                                 EXPECT_EQ(i, streamed.size());
                                 streamed.push_back(std::move(r));
                               }),
            1.0);
  ASSERT_EQ(streamed.size(), whole.results.size());
  for (std::size_t i = 0; i < streamed.size(); ++i) {
    EXPECT_EQ(streamed[i].status, whole.results[i].status) << i;
    EXPECT_EQ(streamed[i].time_ns, whole.results[i].time_ns) << i;
    EXPECT_EQ(streamed[i].configuration, whole.results[i].configuration) << i;
  }
}

TEST(RecordedSpaceRead, TimeUnitAfterTheResultsStillApplies) {
  const auto p = write_temp("late_unit_T4.json", R"({"results": [
    {"configuration": {"x": 1}, "measurements": [{"name": "time", "value": 3}]},
    {"configuration": {"x": 2}, "measurements": [{"name": "time", "value": 2}]}],
    "metadata": {"timeunit": "seconds"}})");
  const T4File f = read_t4(p);
  ASSERT_EQ(f.results.size(), 2u);
  EXPECT_DOUBLE_EQ(f.results[1].time_ns, 2e9);
  EXPECT_DOUBLE_EQ(RecordedSpace::load(p)->best_time_ns(), 2e9);
  std::filesystem::remove(p);
}

TEST(RecordedSpaceRead, MalformedT4NamesTheFileAndField) {
  const auto p = write_temp("bad_T4.json", R"({"results": [{"configuration": {"x": 1}}, 7]})");
  try {
    (void)read_t4(p);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("results[1]: must be an object"), std::string::npos)
        << e.what();
  }
  const auto q = write_temp("none_T4.json", R"({"metadata": {}})");
  EXPECT_THROW((void)read_t4(q), Error);
  std::filesystem::remove(p);
  std::filesystem::remove(q);
}

// A 2 MB .json.gz that inflated to 2 GiB made replay take 4.2 GB: the streaming reader held what
// lay between records (and any other top-level field) whole. Now other fields are dropped as they
// are parsed and the stretch between records is bounded, with one sentence.
TEST(RecordedSpaceRead, WhatLiesBetweenRecordsIsBounded) {
  const auto p =
      std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "-between_T4.json.gz");
  const std::string record =
      R"({"configuration": {"x": 1}, "measurements": [{"name": "time", "value": 3}]})";
  auto write_gz = [&](const std::string& head, std::size_t filler_mib, const std::string& tail) {
    gzFile f = gzopen(p.c_str(), "wb1");
    gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
    const std::string mib(1 << 20, ' ');
    for (std::size_t i = 0; i < filler_mib; ++i)
      gzwrite(f, mib.data(), static_cast<unsigned>(mib.size()));
    gzwrite(f, tail.data(), static_cast<unsigned>(tail.size()));
    gzclose(f);
  };
  write_gz(R"({"results": [)" + record + ",", 80, record + "]}");
  try {
    (void)read_t4(p);
    FAIL() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 64 MiB between two of its records"),
              std::string::npos)
        << e.what();
  }
  // Another top-level field, however long, is parsed and dropped, never held.
  write_gz(R"({"environment": [)", 0,
           std::string(R"("x",)") + R"("y"], "results": [)" + record + "]}");
  EXPECT_EQ(read_t4(p).results.size(), 1u);
  std::filesystem::remove(p);
}

// Found by the t4 fuzzer (fuzz/corpus/t4/measurement_name_not_a_string): a measurement whose
// "name" is not a string escaped as nlohmann's type_error and crashed replay. It is another
// measurement, not the time.
TEST(RecordedSpaceRead, AMeasurementNamedByANonStringIsNotTheTime) {
  const auto t4 = parse_t4(nlohmann::json::parse(R"({"results": [
      {"configuration": {"x": 1}, "measurements": [{"name": ["time"], "value": 5},
                                                   {"name": "time", "value": 2}]},
      {"configuration": {"x": 2}, "measurements": [{"name": 7, "value": 1}]}]})"),
                           "t4.json");
  const auto plain = parse_t4(nlohmann::json::parse(R"({"results": [
      {"configuration": {"x": 1}, "measurements": [{"name": "time", "value": 2}]}]})"),
                              "t4.json");
  ASSERT_EQ(t4.results.size(), 2u);
  EXPECT_DOUBLE_EQ(t4.results[0].time_ns, plain.results[0].time_ns);
}

// A space ktune recorded is mostly screened-out records, each slower than the best found before it
// in the recording's order, with the screen's time. Replayed in another order, a strategy that
// meets only those must still see their times: the hub convolution's recorded sample (261 of 269
// timed records screened out) scored 0.57 for random search at 100 of 345 when they counted as
// failures.
TEST(RecordedSpaceRead, ScreenedOutRecordsKeepTheirTimes) {
  const auto t4 = parse_t4(nlohmann::json::parse(R"({"results": [
      {"configuration": {"x": 1}, "status": "ok", "measurements": [{"name": "time", "value": 1}]},
      {"configuration": {"x": 2}, "status": "slower", "measurements": [{"name": "time", "value": 2}]},
      {"configuration": {"x": 3}, "status": "slower", "measurements": [{"name": "time", "value": 4}]},
      {"configuration": {"x": 4}, "status": "launch_failed", "invalidity": "runtime",
       "measurements": [{"name": "time", "value": "launch_failed"}]}]})"),
                           "t4.json");
  ASSERT_EQ(t4.results[1].status, Status::slower);
  const auto space = RecordedSpace::from_records(t4);
  const Evaluation e = space->evaluate(1);
  EXPECT_EQ(e.status, Status::slower);
  EXPECT_DOUBLE_EQ(e.time_ns, t4.results[1].time_ns);
  // Budget 2 of 4: a run that never meets x=1 still scores by its best timed record.
  double lowest = 1;
  for (std::size_t seed = 0; seed < 20; ++seed)
    lowest = std::min(lowest,
                      replay_once(*space, *make_strategy("random"), seed, 2).fraction_of_optimum);
  EXPECT_GE(lowest, 0.25);
  EXPECT_LT(lowest, 1.0);
}

// A space ktune recorded on the GPU is mostly screened-out records ("slower", with the screen's
// time): the strategies learned nothing from them in a replay (taken for failures, where the
// session passes their times on), so on the H100 hotspot sample the model strategies all ended at
// their space-filling start. A search must see such a space as it sees the same times marked ok.
TEST(ReplayScreenedOut, StrategiesLearnFromScreenedOutTimes) {
  auto bowl = [](Status rest) {
    T4File f;
    f.source = "bowl";
    for (int x = 0; x < 32; ++x)
      for (int y = 0; y < 32; ++y) {
        T4Record r;
        r.configuration["x"] = x;
        r.configuration["y"] = y;
        r.time_ns = 1000.0 + (x - 21) * (x - 21) + 3.0 * (y - 9) * (y - 9);
        r.status = x == 21 && y == 9 ? Status::ok : rest;
        f.results.push_back(r);
      }
    return RecordedSpace::from_records(f);
  };
  const auto timed = bowl(Status::ok), screened = bowl(Status::slower);
  for (const char* name : {"thompson", "hybrid", "annealing", "genetic", "portfolio"})
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      const auto a = replay_once(*timed, *make_strategy(name), seed, 60, {}, 4);
      const auto b = replay_once(*screened, *make_strategy(name), seed, 60, {}, 4);
      EXPECT_DOUBLE_EQ(a.fraction_of_optimum, b.fraction_of_optimum) << name << " seed " << seed;
      EXPECT_EQ(a.evaluations_to_1pct, b.evaluations_to_1pct) << name << " seed " << seed;
    }
}

// Four configurations x = 0..3, proposed in that order by "exhaustive", with these recorded compile
// times (seconds; none: not recorded) and times 4, 3, 2, 1 us.
std::unique_ptr<RecordedSpace> compile_space(const std::vector<std::optional<double>>& compile_s) {
  T4File f;
  f.source = "compiles";
  for (int x = 0; x < 4; ++x) {
    T4Record r;
    r.configuration["x"] = x;
    r.time_ns = 1e3 * (4 - x);
    if (compile_s[x]) r.compile_ns = *compile_s[x] * 1e9;
    f.results.push_back(r);
  }
  return RecordedSpace::from_records(f);
}

// The session's order of evaluation over a recorded space, window `window`.
std::vector<std::int64_t> evaluation_order(const RecordedSpace& space, std::size_t window,
                                           std::uint64_t seed, SessionSummary* summary = nullptr) {
  RecordedEvaluator ev(space, seed, static_cast<unsigned>(window / 2));
  SearchTarget target;
  target.space = &space.index();
  SessionOptions o;
  o.strategy = "exhaustive";
  o.seed = seed;
  o.budget = 4;
  o.prefetch = window;
  o.clock_s = [&ev] { return ev.clock_s(); };
  const SessionSummary s = Session(target, o, ev).run();
  std::vector<std::int64_t> order;
  for (const auto& r : s.records) order.push_back(r.config.at("x").as_int());
  if (summary) *summary = s;
  return order;
}

// Replay runs the session's loop: with compiles ahead (window 4: two compile workers) the next
// configuration measured is the one whose compile finished first, as on the GPU. replay_once
// measured them first in, first out (0, 1, 2, 3) whatever their compiles took.
TEST(ReplaySession, MeasuresWhicheverCompileFinishesFirst) {
  // Workers: x0 0-8 s; x1 0-1 s, then x2 1-3 s, then x3 3-3.5 s.
  const auto space = compile_space({8.0, 1.0, 2.0, 0.5});
  SessionSummary s;
  EXPECT_EQ(evaluation_order(*space, 4, 0, &s), (std::vector<std::int64_t>{1, 2, 3, 0}));
  // The session's clock is the simulated one: the first result comes when x1 has compiled.
  EXPECT_GT(s.records[0].elapsed_s, 1.0);
  EXPECT_LT(s.records[0].elapsed_s, 1.1);
  EXPECT_GT(s.records[3].elapsed_s, 8.0);
  EXPECT_DOUBLE_EQ(s.compile_s_mean, (8.0 + 1.0 + 2.0 + 0.5) / 4);
  // One at a time, the order is the proposals'.
  EXPECT_EQ(evaluation_order(*space, 1, 0), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

// Where the recording has no compile times they are drawn from the seed, between half and twice
// the median of those it has (1 s when none): one seed, one order; other seeds, other orders.
TEST(ReplaySession, UnrecordedCompileTimesFollowTheSeed) {
  const auto none = compile_space({std::nullopt, std::nullopt, std::nullopt, std::nullopt});
  std::set<std::vector<std::int64_t>> orders;
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    SessionSummary s;
    const auto order = evaluation_order(*none, 4, seed, &s);
    EXPECT_EQ(order, evaluation_order(*none, 4, seed)) << seed;
    orders.insert(order);
    for (const auto& r : s.records) {
      EXPECT_GE(r.result.compile_s, 0.5);
      EXPECT_LE(r.result.compile_s, 2.0);
    }
  }
  EXPECT_GT(orders.size(), 2u);
  // Half recorded: the others are drawn around the recorded median (10 s).
  const auto half = compile_space({10.0, std::nullopt, 10.0, std::nullopt});
  SessionSummary s;
  evaluation_order(*half, 4, 3, &s);
  for (const auto& r : s.records) {
    EXPECT_GE(r.result.compile_s, 5.0);
    EXPECT_LE(r.result.compile_s, 20.0);
  }
}

// The recorded evaluator screens as the pipeline does (bench::is_contender): a timed
// configuration more than 3 % slower than the best so far is "slower", measured by the screen
// only, and the rest are measured in full.
TEST(ReplaySession, ScreensAgainstTheBestAsThePipelineDoes) {
  const auto space = compile_space({0.0, 0.0, 0.0, 0.0});
  RecordedEvaluator ev(*space, 1, 1);
  const CandidateOutcome first = ev.evaluate({{"x", Value(2)}}, std::nullopt);  // 2 us
  EXPECT_EQ(first.status, Status::ok);
  EXPECT_TRUE(first.full);
  EXPECT_DOUBLE_EQ(first.time_ns(), 2e3);
  const double t0 = ev.clock_s();
  const CandidateOutcome slower = ev.evaluate({{"x", Value(0)}}, 2e3);  // 4 us
  EXPECT_EQ(slower.status, Status::slower);
  EXPECT_FALSE(slower.full);
  EXPECT_DOUBLE_EQ(slower.time_ns(), 4e3);
  const double screen_s = ev.clock_s() - t0;
  const CandidateOutcome faster = ev.evaluate({{"x", Value(3)}}, 2e3);  // 1 us
  EXPECT_EQ(faster.status, Status::ok);
  EXPECT_TRUE(faster.full);
  EXPECT_GT(ev.clock_s() - t0 - screen_s, screen_s);  // a full measurement costs more
  EXPECT_THROW(ev.evaluate({{"x", Value(7)}}, std::nullopt), Error);  // not in the space
}

TEST(RecordedSpaceRead, CompileTimesFromT4AndKernelTunerCaches) {
  const auto t4 = parse_t4(nlohmann::json::parse(R"({"metadata": {"timeunit": "seconds"},
      "results": [
      {"configuration": {"x": 1}, "times": {"compilation": 0.25, "runtimes": [1e-6]}},
      {"configuration": {"x": 2}, "measurements": [{"name": "time", "value": 2e-6}]}]})"),
                           "t4.json");
  ASSERT_TRUE(t4.results[0].compile_ns);
  EXPECT_DOUBLE_EQ(*t4.results[0].compile_ns, 0.25e9);
  EXPECT_FALSE(t4.results[1].compile_ns);
  const auto space = RecordedSpace::from_records(t4);
  EXPECT_DOUBLE_EQ(space->compile_s(0).value(), 0.25);
  EXPECT_FALSE(space->compile_s(1));
  // ktune writes what it recorded, in the file's milliseconds, and reads it back.
  const nlohmann::json j = t4_result_json(t4.results[0], "now");
  EXPECT_DOUBLE_EQ(j["times"]["compilation"].get<double>(), 250.0);
  EXPECT_FALSE(t4_result_json(t4.results[1], "now").contains("times"));
  const KtCache c = parse_kt_cache(nlohmann::json::parse(R"({"tune_params_keys": ["x"],
      "tune_params": {"x": [1, 2]}, "cache": {"1": {"x": 1, "time": 1.0, "compile_time": 75.5},
      "2": {"x": 2, "time": 2.0}}})"),
                                   "mem");
  ASSERT_TRUE(c.records[0].compile_ns);
  EXPECT_DOUBLE_EQ(*c.records[0].compile_ns, 75.5e6);
  EXPECT_FALSE(c.records[1].compile_ns);
}

constexpr const char* kCache = R"({
  "device_name": "Test GPU", "kernel_name": "k",
  "tune_params_keys": ["bx", "mode", "f"],
  "tune_params": {"bx": [32, 64, 128], "mode": ["a", "b"], "f": [0.5, 1.0]},
  "cache": {
    "32,a,0.5": {"bx": 32, "mode": "a", "f": 0.5, "time": 2.0},
    "64,a,0.5": {"bx": 64, "mode": "a", "f": 0.5, "time": 1.5},
    "128,a,0.5": {"bx": 128, "mode": "a", "f": 0.5, "time": "InvalidConfig"},
    "32,b,0.5": {"bx": 32, "mode": "b", "f": 0.5, "time": "CompilationFailedConfig"},
    "64,b,0.5": {"bx": 64, "mode": "b", "f": 0.5, "time": "RuntimeFailedConfig"},
    "128,b,0.5": {"bx": 128, "mode": "b", "f": 0.5, "time": "SomethingNew"},
    "64,b,1.0": {"time": 0.75}
  }})";

// `replay` time grew with the square of --budget under the default strategy (1,000 took 15 s,
// 2,000 over 60 s): the forest was refitted on every result at every proposal. 2,000 proposals over
// a 4,096-point space now take a few seconds, and still find the optimum's neighbourhood.
TEST(ReplayCost, ALargeBudgetCostsAboutLinearly) {
  T4File f;
  f.source = "bowl";
  for (int x = 0; x < 64; ++x)
    for (int y = 0; y < 64; ++y) {
      T4Record r;
      r.configuration["x"] = x;
      r.configuration["y"] = y;
      r.time_ns = 1000.0 + (x - 40) * (x - 40) + 3.0 * (y - 20) * (y - 20) + (x * 7 + y * 13) % 5;
      f.results.push_back(r);
    }
  const auto space = RecordedSpace::from_records(f);
  const auto start = std::chrono::steady_clock::now();
  const double score =
      replay_once(*space, *make_strategy(default_strategy_name()), 7, 2000).fraction_of_optimum;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);
  EXPECT_GT(score, 0.99);
}

TEST(KtCache, ReadsParametersRecordsAndFailureStrings) {
  const KtCache c = parse_kt_cache(nlohmann::json::parse(kCache), "mem");
  EXPECT_EQ(c.device_name, "Test GPU");
  ASSERT_EQ(c.parameters.size(), 3u);
  EXPECT_EQ(c.parameters[0].name, "bx");
  EXPECT_EQ(c.parameters[1].values[1], Value("b"));
  ASSERT_EQ(c.records.size(), 7u);
  std::map<std::string, const KtRecord*> by_desc;
  for (const auto& r : c.records)
    by_desc[fmt::format("{},{},{}", r.configuration[0], r.configuration[1], r.configuration[2])] =
        &r;
  EXPECT_DOUBLE_EQ(by_desc.at("1,0,0")->time_ns, 1.5e6);  // milliseconds
  EXPECT_EQ(by_desc.at("2,0,0")->status, Status::resources_exceeded);
  EXPECT_EQ(by_desc.at("0,1,0")->status, Status::compile_failed);
  EXPECT_EQ(by_desc.at("1,1,0")->status, Status::launch_failed);
  EXPECT_EQ(by_desc.at("2,1,0")->status, Status::launch_failed);  // unknown string: a failure
  EXPECT_EQ(by_desc.at("2,1,0")->detail, "SomethingNew");
  EXPECT_DOUBLE_EQ(by_desc.at("1,1,1")->time_ns, 0.75e6);  // values read from the key
}

TEST(KtCache, LoadTellsItFromT4AndTheSpaceIsTheRecordedConfigurations) {
  const auto p = write_temp("cache.json", kCache);
  const auto space = RecordedSpace::load(p);
  EXPECT_EQ(space->index().size(), 7u);  // not the 12 of the Cartesian product
  EXPECT_DOUBLE_EQ(space->best_time_ns(), 0.75e6);
  EXPECT_EQ(space->space().parameters()[0].name, "bx");  // tune_params_keys order
  std::filesystem::remove(p);
}

TEST(KtCache, MalformedCacheNamesTheField) {
  auto j = nlohmann::json::parse(kCache);
  j["cache"]["32,a,0.5"]["bx"] = 48;
  try {
    (void)parse_kt_cache(j, "mem.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mem.json: field cache[\"32,a,0.5\"].bx"),
              std::string::npos)
        << e.what();
  }
  j = nlohmann::json::parse(kCache);
  j.erase("tune_params");
  EXPECT_THROW((void)parse_kt_cache(j, "mem.json"), Error);
}

TEST(KtCache, RecordedGemmAndPnpolyCaches) {
  KTUNE_REQUIRE_DATASETS();
  const auto gemm = RecordedSpace::load(test::datasets_dir() / "tuning/kt_gemm/RTX_3090.json.gz");
  EXPECT_EQ(gemm->index().size(), 17956u);
  const auto pnpoly =
      RecordedSpace::load(test::datasets_dir() / "tuning/kt_pnpoly/RTX_Titan.json.gz");
  EXPECT_EQ(pnpoly->index().size(), 4092u);
  std::size_t failed = 0;
  for (std::size_t i = 0; i < pnpoly->index().size(); ++i)
    failed += pnpoly->evaluate(i).status != Status::ok;
  EXPECT_EQ(failed, 342u);  // "RuntimeFailedConfig" records
}

// Regression: a thread count far above what the system grants used to abort the process
// ("terminate called without an active exception"); now the work runs on the threads it gets.
TEST(ReplayThreads, HugeThreadCountStillRuns) {
  T4File f;
  for (int i = 0; i < 20; ++i) {
    T4Record r;
    r.configuration["x"] = i;
    r.time_ns = 10.0 + i;
    f.results.push_back(r);
  }
  const auto space = RecordedSpace::from_records(f);
  const auto one = replay(*space, "random", {5}, 4, 1);
  const auto many = replay(*space, "random", {5}, 4, 100000);
  EXPECT_EQ(one[0].mean_fraction_of_optimum, many[0].mean_fraction_of_optimum);
}

}  // namespace
}  // namespace ktune::tune
