#include "ktune/tune/session.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/tune/t4.hpp"

namespace ktune::tune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

ProblemSpec copy_spec() {
  return ProblemSpec::load(fs::path(KTUNE_SOURCE_DIR) / "kernels/copy/copy.json");
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() /
           fmt::format("ktune-session-{}-{}-{}", name, ::getpid(), ++counter());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

CandidateOutcome outcome(Status status, double time_ns, double noise_ns, std::size_t samples,
                         bool full, std::string detail) {
  CandidateOutcome o;
  o.status = status;
  o.set_time(time_ns, noise_ns, samples);
  o.full = full;
  o.detail = std::move(detail);
  return o;
}

// Stands in for the GPU: a fixed time per configuration and planted failures of every kind,
// screening out candidates more than 5 % slower than the best so far, as the GPU evaluator does.
class FakeEvaluator : public Evaluator {
 public:
  std::size_t calls = 0;
  std::size_t throw_after = SIZE_MAX;  // simulates a crash (kill) after this many evaluations
  // (BLOCK, ITEMS) with VEC=1, SKIP_TAIL=0 faults
  std::optional<std::pair<std::int64_t, std::int64_t>> fatal_at;
  std::vector<std::string> evaluated;
  std::size_t prepared = 0;
  double* clock = nullptr;  // advanced one second per evaluation when set

  void prepare(const std::vector<ConfigMap>& upcoming) override { prepared += upcoming.size(); }
  std::size_t next_ready(const std::vector<ConfigMap>&) override { return 0; }  // in order

  CandidateOutcome evaluate(const ConfigMap& c, std::optional<double> best_ns) override {
    if (calls == throw_after) throw std::runtime_error("killed");
    ++calls;
    if (clock) *clock += 1.0;
    json j = json::object();
    for (const auto& [k, v] : c) j[k] = v;
    evaluated.push_back(j.dump());
    const std::int64_t block = c.at("BLOCK").as_int(), vec = c.at("VEC").as_int(),
                       items = c.at("ITEMS").as_int(), skip = c.at("SKIP_TAIL").as_int();
    CandidateOutcome r;
    if (fatal_at && block == fatal_at->first && items == fatal_at->second && vec == 1 && !skip) {
      r.status = Status::launch_failed;
      r.context_lost = true;
      r.detail = "CUDA_ERROR_ILLEGAL_ADDRESS";
      return r;
    }
    if (vec == 2 && items == 1) return outcome(Status::compile_failed, 0, 0, 0, false, "planted");
    if (block == 1024 && items == 8)
      return outcome(Status::resources_exceeded, 0, 0, 0, false, "regs");
    if (block == 128 && vec == 4 && items == 8)
      return outcome(Status::launch_failed, 0, 0, 0, false, "x");
    if (block == 512 && vec == 1 && items == 8)
      return outcome(Status::timeout, 0, 0, 0, false, "hung");
    if (skip == 1) return outcome(Status::wrong_result, 0, 0, 0, false, "tail unwritten");
    // A smooth landscape with one optimum at BLOCK=256, VEC=4, ITEMS=4.
    const auto sq = [](double v) { return v * v; };
    const double t = 1000 + 40 * sq(std::log2(block) - 8) + 60 * sq(std::log2(vec) - 2) +
                     25 * sq(std::log2(items) - 2);
    if (best_ns && t > *best_ns * 1.05) return outcome(Status::slower, t, 0, 3, false, "slower");
    return outcome(Status::ok, t, 2, 20, true, "verified");
  }
};

SessionOptions options(const fs::path& dir, const std::string& strategy, std::size_t budget) {
  SessionOptions o;
  o.strategy = strategy;
  o.seed = 7;
  o.budget = budget;
  o.out_dir = dir;
  o.prefetch = 4;
  return o;
}

std::vector<json> lines_of(const fs::path& p) {
  std::vector<json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

// A session where nothing passed says what most candidates died of, with the first one's reason
// (the hub's dedispersion as shipped: every candidate read past its 1-element input).
TEST(Session, CommonFailureNamesTheMostFrequentStatusAndItsFirstReason) {
  SessionSummary s;
  EXPECT_EQ(common_failure(s), "");
  const auto add = [&](Status st, const std::string& detail) {
    SessionRecord r;
    r.result.status = st;
    r.result.detail = detail;
    s.records.push_back(r);
    ++s.counts[st];
    ++s.evaluations;
  };
  add(Status::compile_failed, "too much shared data");
  add(Status::launch_failed, "CUDA_ERROR_ILLEGAL_ADDRESS in the first launch");
  add(Status::launch_failed, "CUDA_ERROR_ILLEGAL_ADDRESS again");
  EXPECT_EQ(common_failure(s),
            ": 2 of 3 launch_failed (first: CUDA_ERROR_ILLEGAL_ADDRESS in the first launch)");
  add(Status::launch_failed, std::string(500, 'x'));
  EXPECT_LT(common_failure(s).size(), 260u);  // a long reason is cut
}

// A space whose valid set is past what an index keeps is searched through a sample of it, and
// the summary says how large the whole is (every parameter's values counted, not estimated).
TEST(Session, SearchesASampleOfASpaceTooLargeToKeep) {
  ProblemSpec spec = copy_spec();
  for (int i = 0; i < 21; ++i) {
    Parameter p;
    p.name = fmt::format("UNUSED_{}", i);
    p.type = "int";
    p.values = {Value(1), Value(2), Value(4), Value(8)};
    spec.parameters.push_back(p);
  }
  TempDir dir("sampled");
  FakeEvaluator ev;
  const SessionSummary s = Session(spec, options(dir.path, "random", 12), ev).run();
  EXPECT_EQ(s.evaluations, 12u);
  EXPECT_EQ(s.space_size, kSampledConfigurations);
  ASSERT_TRUE(s.sampled_from);
  EXPECT_EQ(*s.sampled_from, 96.0 * 0x1p42);  // copy's 96 valid, times 4^21
  const json summary = json::parse(read_file(dir.path / "summary.json"));
  EXPECT_EQ(summary["space_sampled_from"], 96.0 * 0x1p42);
  // The sample is the same on every run, so a resumed search finds every recorded configuration.
  SessionOptions o = options(dir.path, "random", 20);
  o.resume = true;
  FakeEvaluator more;
  const SessionSummary resumed = Session(spec, o, more).run();
  EXPECT_EQ(resumed.resumed, 12u);
  EXPECT_EQ(resumed.evaluations, 20u);
  EXPECT_EQ(more.calls, 8u);
}

TEST(Session, RecordsEveryOutcomeAndFindsTheOptimum) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("all");
  FakeEvaluator ev;
  Session session(spec, options(dir.path, "exhaustive", 1000), ev);
  const SessionSummary s = session.run();
  EXPECT_EQ(s.stop, StopCause::exhausted);
  EXPECT_EQ(s.space_size, 96u);
  EXPECT_EQ(s.evaluations, 96u);
  EXPECT_EQ(ev.calls, 96u);
  EXPECT_EQ(ev.prepared, 96u);  // every fresh configuration was offered for compiling ahead
  for (Status st : kAllStatuses) EXPECT_GT(s.counts.at(st), 0u) << to_string(st);
  ASSERT_TRUE(s.best);
  EXPECT_EQ(s.best->config.at("BLOCK").as_int(), 256);
  EXPECT_EQ(s.best->config.at("VEC").as_int(), 4);
  EXPECT_EQ(s.best->config.at("ITEMS").as_int(), 4);
  EXPECT_DOUBLE_EQ(s.best->result.time_ns(), 1000);

  const auto lines = lines_of(Session::results_path(dir.path));
  ASSERT_EQ(lines.size(), 96u);
  std::set<std::string> statuses;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["schema_version"], 1);
    EXPECT_EQ(lines[i]["sequence"], i);
    statuses.insert(lines[i]["status"].get<std::string>());
  }
  EXPECT_EQ(statuses,
            (std::set<std::string>{"ok", "compile_failed", "launch_failed", "resources_exceeded",
                                   "wrong_result", "slower", "timeout"}));
  for (const char* f : {"t4.json", "summary.json", "curve.svg"})
    EXPECT_TRUE(fs::exists(dir.path / f)) << f;
}

// Compiling ahead, a session evaluates whichever pending candidate the evaluator has ready, not the
// oldest: one slow compile at the head left the GPU and the other cores idle behind it (the hub
// convolution's 4x4 tiles take 7 s of NVRTC, its 1x1 tiles 0.4 s).
class ReadyLastEvaluator : public FakeEvaluator {
 public:
  std::vector<std::size_t> offered;
  std::vector<std::string> ready;
  std::size_t next_ready(const std::vector<ConfigMap>& candidates) override {
    offered.push_back(candidates.size());
    json j = json::object();
    for (const auto& [k, v] : candidates.back()) j[k] = v;
    ready.push_back(j.dump());
    return candidates.size() - 1;
  }
};

TEST(Session, EvaluatesTheCandidateTheEvaluatorHasReady) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("ready");
  ReadyLastEvaluator ev;
  const SessionSummary s = Session(spec, options(dir.path, "exhaustive", 1000), ev).run();
  EXPECT_EQ(s.stop, StopCause::exhausted);
  EXPECT_EQ(s.evaluations, 96u);  // every configuration once, in whatever order
  ASSERT_EQ(ev.evaluated.size(), 96u);
  EXPECT_EQ(std::set<std::string>(ev.evaluated.begin(), ev.evaluated.end()).size(), 96u);
  EXPECT_EQ(ev.offered.front(), 4u);  // the whole window (prefetch 4) is offered
  for (std::size_t i = 0; i < ev.ready.size(); ++i) EXPECT_EQ(ev.evaluated[i], ev.ready[i]) << i;
  const auto lines = lines_of(Session::results_path(dir.path));
  ASSERT_EQ(lines.size(), 96u);
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i]["sequence"], i);
  ASSERT_TRUE(s.best);
  EXPECT_DOUBLE_EQ(s.best->result.time_ns(), 1000);
}

// Replay runs many sessions over a recorded space: with no output folder a session keeps its
// results in the summary and writes nothing (not even into the working directory).
TEST(Session, WithoutAnOutputFolderWritesNothing) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("nowhere");
  fs::create_directories(dir.path);
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path);
  FakeEvaluator ev;
  SessionSummary s;
  try {
    s = Session(spec, options("", "random", 9), ev).run();
  } catch (...) {
    fs::current_path(cwd);
    throw;
  }
  fs::current_path(cwd);
  EXPECT_EQ(s.evaluations, 9u);
  EXPECT_EQ(s.records.size(), 9u);
  EXPECT_TRUE(fs::is_empty(dir.path));
  SessionOptions resume = options("", "random", 9);
  resume.resume = true;
  EXPECT_THROW(Session(spec, resume, ev), Error);
}

TEST(Session, StopsAtTheBudget) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("budget");
  FakeEvaluator ev;
  const SessionSummary s = Session(spec, options(dir.path, "random", 7), ev).run();
  EXPECT_EQ(s.stop, StopCause::budget);
  EXPECT_EQ(ev.calls, 7u);
  EXPECT_EQ(lines_of(Session::results_path(dir.path)).size(), 7u);
}

TEST(Session, StopsAtTheTimeLimit) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("time");
  FakeEvaluator ev;
  double now = 0;
  ev.clock = &now;
  SessionOptions o = options(dir.path, "random", 50);
  o.time_limit_s = 5.5;  // each fake evaluation takes one second
  o.clock_s = [&] { return now; };
  const SessionSummary s = Session(spec, o, ev).run();
  EXPECT_EQ(s.stop, StopCause::time);
  EXPECT_EQ(ev.calls, 6u);
  EXPECT_EQ(s.evaluations, 6u);
  EXPECT_NEAR(s.evaluations_per_s, 1.0, 1e-9);
}

TEST(Session, StopsWhenInterrupted) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("interrupt");
  FakeEvaluator ev;
  std::atomic<bool> flag{true};
  SessionOptions o = options(dir.path, "random", 50);
  o.interrupt = &flag;
  const SessionSummary s = Session(spec, o, ev).run();
  EXPECT_EQ(s.stop, StopCause::interrupted);
  EXPECT_EQ(ev.calls, 0u);
  EXPECT_TRUE(fs::exists(dir.path / "summary.json"));
}

TEST(Session, ResumeDoesNotReevaluateAndReachesTheSameWinner) {
  const ProblemSpec spec = copy_spec();
  TempDir whole("whole"), split("split");
  FakeEvaluator full_ev;
  const SessionSummary uninterrupted =
      Session(spec, options(whole.path, "model", 40), full_ev).run();

  FakeEvaluator first;
  first.throw_after = 13;  // the process dies in the middle of a prefetched batch
  EXPECT_THROW(Session(spec, options(split.path, "model", 40), first).run(), std::runtime_error);
  ASSERT_EQ(lines_of(Session::results_path(split.path)).size(), 13u);

  FakeEvaluator second;
  SessionOptions o = options(split.path, "model", 40);
  o.resume = true;
  const SessionSummary resumed = Session(spec, o, second).run();
  EXPECT_EQ(resumed.resumed, 13u);
  EXPECT_EQ(second.calls, 27u);
  std::set<std::string> before(first.evaluated.begin(), first.evaluated.end());
  for (const auto& c : second.evaluated) EXPECT_FALSE(before.count(c)) << c << " measured twice";
  ASSERT_TRUE(uninterrupted.best && resumed.best);
  EXPECT_EQ(resumed.best->config, uninterrupted.best->config);
  EXPECT_EQ(lines_of(Session::results_path(split.path)).size(), 40u);
  // The same search, record by record.
  ASSERT_EQ(resumed.records.size(), uninterrupted.records.size());
  for (std::size_t i = 0; i < resumed.records.size(); ++i)
    EXPECT_EQ(resumed.records[i].config, uninterrupted.records[i].config) << i;
}

TEST(Session, FatalCandidateStopsWithAResumeHintAndIsNotRetried) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("fatal");
  FakeEvaluator ev;
  ev.fatal_at = std::make_pair(512, 2);
  SessionOptions o = options(dir.path, "exhaustive", 1000);
  try {
    Session(spec, o, ev).run();
    FAIL() << "expected the session to stop";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--resume " + dir.path.string()), std::string::npos)
        << e.what();
  }
  const auto lines = lines_of(Session::results_path(dir.path));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back()["status"], "launch_failed");
  EXPECT_TRUE(lines.back()["fatal"].get<bool>());
  EXPECT_EQ(lines.back()["config"],
            json::parse(R"({"BLOCK":512,"ITEMS":2,"SKIP_TAIL":0,"VEC":1})"));
  EXPECT_EQ(json::parse(read_file(dir.path / "summary.json"))["stop"], "fatal");

  FakeEvaluator again;
  again.fatal_at = ev.fatal_at;  // it would fault again if it were retried
  o.resume = true;
  const SessionSummary s = Session(spec, o, again).run();
  EXPECT_EQ(s.stop, StopCause::exhausted);
  EXPECT_EQ(s.evaluations, 96u);
  EXPECT_EQ(again.calls + lines.size(), 96u);
}

TEST(Session, RefusesToOverwriteWithoutResume) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("twice");
  FakeEvaluator ev;
  Session(spec, options(dir.path, "random", 3), ev).run();
  EXPECT_THROW(Session(spec, options(dir.path, "random", 3), ev).run(), Error);
}

TEST(Session, TornLastLineIsIgnoredButABadMiddleLineIsNamed) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("torn");
  FakeEvaluator ev;
  Session(spec, options(dir.path, "random", 4), ev).run();
  const fs::path results = Session::results_path(dir.path);
  { std::ofstream(results, std::ios::app) << "{\"schema_version\": 1, \"seq"; }
  EXPECT_EQ(read_results(results).size(), 4u);
  { std::ofstream(results, std::ios::app) << "\n{}\n"; }
  try {
    read_results(results);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("results.jsonl:5"), std::string::npos) << e.what();
  }
}

// Issue 44: a queue worker frozen past its lease appended to the results after the next claim
// resumed them. Each claim fences off the lines of earlier ones written after its own start.
TEST(Session, LinesOfAnEarlierClaimWrittenAfterALaterOneAreNotTheJobs) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("fenced");
  FakeEvaluator ev;
  SessionOptions first = options(dir.path, "random", 3);
  first.claim = 1;
  Session(spec, first, ev).run();
  const fs::path results = Session::results_path(dir.path);
  const std::vector<json> claim1 = lines_of(results);
  ASSERT_EQ(claim1.size(), 4u);  // the claim's line, then its records
  EXPECT_EQ(claim1[0], json({{"schema_version", 1}, {"claim", 1}}));
  EXPECT_EQ(claim1[1]["claim"], 1);
  SessionOptions second = options(dir.path, "random", 5);
  second.claim = 2;
  second.resume = true;
  const SessionSummary s = Session(spec, second, ev).run();
  EXPECT_EQ(s.resumed, 3u);
  // The frozen claim 1 wakes and appends one more evaluation: no reader counts it.
  { std::ofstream(results, std::ios::app) << claim1[3].dump() << "\n"; }
  const auto records = read_results(results);
  EXPECT_EQ(records.size(), 5u);
  std::set<std::string> configs;
  for (const auto& r : records) configs.insert(json(r.config).dump());
  EXPECT_EQ(configs.size(), 5u);
}

// Time to solution counts what could be the best: a faster screened time or a failure does not
// end it, and each threshold takes the first result within it of the final best.
TEST(Session, TimeToSolutionIsTheFirstFullResultNearTheFinalBest) {
  std::vector<SessionRecord> records(6);
  const double times[] = {5e3, 3e3, 1e3, 0, 2.03e3, 2e3};
  for (std::size_t k = 0; k < records.size(); ++k) {
    records[k].sequence = k;
    records[k].elapsed_s = 10.0 * static_cast<double>(k);
    records[k].result.set_time(times[k], 0, 0);
    records[k].result.full = true;
  }
  records[2].result.full = false;  // screened: a rough time, never the best
  records[2].result.status = Status::slower;
  records[3].result.status = Status::launch_failed;
  const auto t = time_to_solution(records);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0].within, 0.01);
  EXPECT_EQ(t[0].evaluations, 6u);  // 2.03 is 1.5 % off 2.00
  EXPECT_DOUBLE_EQ(t[0].elapsed_s, 50.0);
  EXPECT_DOUBLE_EQ(t[1].within, 0.02);
  EXPECT_EQ(t[1].evaluations, 5u);
  EXPECT_DOUBLE_EQ(t[1].elapsed_s, 40.0);
  EXPECT_TRUE(time_to_solution({records[3]}).empty());  // nothing timed
}

TEST(Session, T4AndSummaryShapesArePinned) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("shape");
  FakeEvaluator ev;
  const SessionSummary s = Session(spec, options(dir.path, "exhaustive", 30), ev).run();

  const json summary = json::parse(read_file(dir.path / "summary.json"));
  std::set<std::string> keys;
  for (const auto& [k, v] : summary.items()) keys.insert(k);
  EXPECT_EQ(
      keys,
      (std::set<std::string>{
          "schema_version",  "spec",           "op",      "strategy",      "seed",
          "budget",          "time_limit_s",   "shape",   "space_size",    "space_sampled_from",
          "evaluations",     "evaluated_now",  "resumed", "elapsed_s",     "evaluations_per_s",
          "compiled",        "compile_s_mean", "stop",    "status_counts", "best",
          "time_to_solution"}));
  EXPECT_EQ(summary["schema_version"], kSessionSummarySchemaVersion);
  EXPECT_EQ(summary["schema_version"], 2);
  EXPECT_EQ(summary["op"], "copy");
  EXPECT_TRUE(summary["space_sampled_from"].is_null());  // the whole space is indexed
  EXPECT_EQ(summary["strategy"], "exhaustive");
  EXPECT_EQ(summary["evaluations"], 30);
  EXPECT_EQ(summary["stop"], "budget");
  EXPECT_EQ(summary["status_counts"].size(), 7u);
  std::size_t total = 0;
  for (const auto& [k, v] : summary["status_counts"].items()) total += v.get<std::size_t>();
  EXPECT_EQ(total, 30u);
  ASSERT_TRUE(summary["best"].is_object());
  EXPECT_EQ(summary["best"]["config"]["BLOCK"], s.best->config.at("BLOCK").as_int());
  EXPECT_DOUBLE_EQ(summary["best"]["time_ns"].get<double>(), s.best->result.time_ns());
  ASSERT_EQ(summary["time_to_solution"].size(), 2u);
  for (const auto& t : summary["time_to_solution"]) {
    std::set<std::string> tkeys;
    for (const auto& [k, v] : t.items()) tkeys.insert(k);
    EXPECT_EQ(tkeys, (std::set<std::string>{"within", "evaluations", "elapsed_s"}));
    EXPECT_GE(t["evaluations"].get<std::size_t>(), 1u);
    EXPECT_LE(t["evaluations"].get<std::size_t>(), s.best->sequence + 1);
  }
  EXPECT_DOUBLE_EQ(summary["time_to_solution"][0]["within"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(summary["time_to_solution"][1]["within"].get<double>(), 0.02);

  const json t4 = json::parse(read_file(dir.path / "t4.json"));
  EXPECT_EQ(t4["schema_version"], kT4SchemaVersion);
  EXPECT_EQ(t4["metadata"]["timeunit"], "milliseconds");
  ASSERT_EQ(t4["results"].size(), 30u);
  // It reads back through ktune's own T4 reader: same statuses, same times.
  const T4File back = read_t4(dir.path / "t4.json");
  ASSERT_EQ(back.results.size(), 30u);
  for (std::size_t i = 0; i < 30; ++i) {
    EXPECT_EQ(back.results[i].status, s.records[i].result.status) << i;
    EXPECT_EQ(back.results[i].configuration, s.records[i].config) << i;
    if (back.results[i].status == Status::ok)
      EXPECT_NEAR(back.results[i].time_ns, s.records[i].result.time_ns(), 1e-6) << i;
  }
}

TEST(Session, CurveIsAWellFormedSvgWithTheBestSoFarPath) {
  const ProblemSpec spec = copy_spec();
  TempDir dir("svg");
  FakeEvaluator ev;
  Session(spec, options(dir.path, "random", 25), ev).run();
  const std::string svg = read_file(dir.path / "curve.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  const auto path = svg.find("<path id=\"best-so-far\" d=\"M");
  EXPECT_NE(path, std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // Tags balance: every opened element is closed or self-closing.
  std::size_t open = 0, close = 0, self = 0;
  for (std::size_t p = svg.find('<'); p != std::string::npos; p = svg.find('<', p + 1)) {
    const std::size_t end = svg.find('>', p);
    ASSERT_NE(end, std::string::npos);
    if (svg[p + 1] == '/')
      ++close;
    else if (svg[end - 1] == '/')
      ++self;
    else
      ++open;
  }
  EXPECT_EQ(open, close);
  EXPECT_GT(self, 0u);
}

TEST(Session, SvgWithoutAnyValidConfigurationSaysSo) {
  SessionSummary s;
  s.op = "x & y";
  s.strategy = "random";
  SessionRecord r;
  r.result.status = Status::compile_failed;
  s.records.push_back(r);
  const std::string svg = best_so_far_svg(s);
  EXPECT_NE(svg.find("no verified configuration yet"), std::string::npos);
  EXPECT_NE(svg.find("x &amp; y"), std::string::npos);
  EXPECT_EQ(svg.find("best-so-far\""), std::string::npos);
}

}  // namespace
}  // namespace ktune::tune
