// ktune tune SPEC: searches a kernel's configuration space on the GPU (tune::Session driving a
// tune::GpuEvaluator in a child process that a crashing candidate cannot take down), writes
// results.jsonl, t4.json, summary.json, curve.svg and winner.json to --out, and offers the verified
// winner to the cache. --resume DIR continues a killed or interrupted session; --dry-run checks a
// spec without a GPU.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "dry_run.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/core/progress.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/store/store.hpp"
#include "ktune/tune/gemm_library.hpp"
#include "ktune/tune/gpu_evaluator.hpp"
#include "ktune/tune/isolated_evaluator.hpp"
#include "ktune/tune/replay.hpp"
#include "ktune/tune/spec_problem.hpp"
#include "ktune/tune/strategy.hpp"
#include "spec_options.hpp"

namespace ktune::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kSessionFileSchemaVersion = 1;

struct TuneArgs {
  std::string spec, shape, strategy, out, resume, stop, grid, arch = "sm_90";
  std::vector<std::string> warm_from;  // T4 files or Kernel Tuner caches of other GPUs or shapes
  bool cold = false;                   // ignore what the store knows
  std::size_t budget = tune::SessionOptions{}.budget;
  double time_s = 0;
  std::uint64_t seed = tune::SessionOptions{}.seed;
  double margin = bench::PipelineSettings{}.contender_margin;
  std::size_t prefetch = 0;  // 0: twice the compile threads
  double candidate_timeout_s = tune::IsolationSettings{}.candidate_timeout_s;
  bool json = false, no_cache = false, dry_run = false;
  std::string library, op, dtype;  // --library cublaslt --op gemm|gemm_bias --dtype f16|bf16
};

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
  g_interrupted.store(true);
}

std::string default_out_dir(const std::string& op) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return fmt::format("ktune-tune-{}-{}", op, stamp);
}

// session.json: what --resume needs to run the same search again.
nlohmann::json session_file(const TuneArgs& a, const std::map<std::string, std::int64_t>& shape) {
  return {{"schema_version", kSessionFileSchemaVersion},
          {"spec", fs::absolute(a.spec).string()},
          {"strategy", a.strategy},
          {"seed", a.seed},
          {"budget", a.budget},
          {"time_limit_s", a.time_s},
          {"shape", shape},
          {"contender_margin", a.margin},
          {"prefetch", a.prefetch},
          {"stop", a.stop},
          {"grid", a.grid},
          {"candidate_timeout_s", a.candidate_timeout_s},
          {"created_at", utc_now_iso8601()}};
}

// Restores the search settings of `dir`; explicit --budget/--time still apply.
void load_session_file(TuneArgs& a, const fs::path& dir, bool budget_given, bool time_given,
                       std::map<std::string, std::int64_t>& shape) {
  const fs::path path = dir / "session.json";
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(
        fmt::format("--resume {}: no session.json there; point --resume at the --out "
                    "directory of an earlier ktune tune.",
                    dir.string()));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
    if (j.at("schema_version").get<int>() != kSessionFileSchemaVersion)
      throw Error(fmt::format("schema_version {} is not {}", j.at("schema_version").dump(),
                              kSessionFileSchemaVersion));
    a.spec = j.at("spec").get<std::string>();
    a.strategy = j.at("strategy").get<std::string>();
    a.seed = j.at("seed").get<std::uint64_t>();
    a.margin = j.value("contender_margin", a.margin);
    a.prefetch = j.value("prefetch", a.prefetch);
    a.stop = j.value("stop", a.stop);
    a.grid = j.value("grid", a.grid);
    a.candidate_timeout_s = j.value("candidate_timeout_s", a.candidate_timeout_s);
    shape = j.at("shape").get<std::map<std::string, std::int64_t>>();
    if (!budget_given) a.budget = j.at("budget").get<std::size_t>();
    if (!time_given) a.time_s = j.at("time_limit_s").get<double>();
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("{}: {}; it was written by ktune tune, restore it or start a new "
                    "session.",
                    path.string(), e.what()));
  }
}

// Prints progress on a terminal while delegating to the GPU evaluator.
class ProgressEvaluator : public tune::Evaluator {
 public:
  ProgressEvaluator(tune::Evaluator& inner, std::size_t budget)
      : inner_(inner), progress_("tune", budget) {}
  void prepare(const std::vector<tune::ConfigMap>& upcoming) override { inner_.prepare(upcoming); }
  std::size_t next_ready(const std::vector<tune::ConfigMap>& candidates) override {
    return inner_.next_ready(candidates);
  }
  tune::CandidateResult evaluate(const tune::ConfigMap& c, std::optional<double> best) override {
    tune::CandidateResult r = inner_.evaluate(c, best);
    ++done_;
    if (r.status == tune::Status::ok && r.full && (!best || r.time_ns < *best)) best = r.time_ns;
    progress_.update(done_, best ? fmt::format("best {:.2f} us", *best / 1e3) : "no valid yet");
    return r;
  }
  void finish() { progress_.finish(); }

 private:
  tune::Evaluator& inner_;
  Progress progress_;
  std::size_t done_ = 0;
};

std::string describe(const tune::ConfigMap& c) {
  std::string out;
  for (const auto& [k, v] : c) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v.repr());
  return out;
}

// ktune tune --library cublaslt --op gemm --shape m=..,n=..,k=.. --dtype bf16: library selection.
// Usage errors are found before the GPU is touched.
int run_library_tune(const TuneArgs& a, bool budget_given, const GlobalOptions& g) {
  if (a.library != "cublaslt")
    throw Error(
        fmt::format("--library '{}' is not a GEMM library ktune searches; use --library "
                    "cublaslt.",
                    a.library));
  if (!a.spec.empty() || !a.resume.empty())
    throw Error(
        "--library searches a library's algorithms, not a SPEC; drop the SPEC (or "
        "--resume) or drop --library.");
  if (a.op != "gemm" && a.op != "gemm_bias")
    throw Error(
        fmt::format("--library cublaslt needs --op gemm (D = A^T B) or --op gemm_bias (with "
                    "the bias epilogue), not '{}'.",
                    a.op));
  const std::map<std::string, std::int64_t> shape = parse_shape_variables(a.shape);
  for (const char* dim : {"m", "n", "k"})
    if (!shape.contains(dim))
      throw Error(
          fmt::format("--shape lacks {}; give --shape m=M,n=N,k=K (BLAS sizes: D is m x n, "
                      "k the reduction).",
                      dim));
  if (shape.size() != 3)
    throw Error(
        "--shape for --library cublaslt takes exactly m, n and k (e.g. m=4096,n=2048,k=4096).");
  bench::LtGemmShape problem;
  problem.m = shape.at("m");
  problem.n = shape.at("n");
  problem.k = shape.at("k");
  problem.bias = a.op == "gemm_bias";
  problem.dtype = cuda::parse_dtype(a.dtype.empty() ? "f16" : a.dtype);
  if (problem.dtype != cuda::DType::f16 && problem.dtype != cuda::DType::bf16)
    throw Error(fmt::format("--dtype {} is not searched; cuBLASLt GEMMs are tuned in f16 or bf16.",
                            a.dtype));
  if (problem.m <= 0 || problem.n <= 0 || problem.k <= 0)
    throw Error("--shape sizes m, n and k must be positive.");
  tune::LibrarySearchOptions options;
  if (budget_given) options.budget = a.budget;
  options.seed = a.seed;
  options.full.apply_overrides(a.stop);
  const bool quiet = a.json;
  const tune::LibrarySearchResult r =
      tune::search_cublaslt(problem, options, g.device, [quiet](const std::string& line) {
        if (!quiet) fmt::print(stderr, "{}\n", line);
      });
  const store::CacheEntry winner = tune::library_winner_entry(
      r, runtime::detect_environment(g.device), host_identity(), options.budget);
  std::optional<store::PutResult> put;
  if (!a.no_cache) {
    auto st = store::Store::open(g.db);
    put = st->put_entry(winner);
  }
  if (a.json) {
    nlohmann::json j = r;
    if (put)
      j["cache"] = {{"winner", put->winner}, {"reason", put->reason}, {"bucket", put->bucket}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  std::map<std::string, std::size_t> statuses;
  for (const auto& c : r.candidates) ++statuses[c.status];
  fmt::print(
      "cuBLASLt {} {} {}x{}x{} (TN{}): {} candidates ({} ok, {} rejected by cuBLASLt, {} "
      "wrong, {} failed), {:.1f} s\n",
      r.cublaslt_version, winner.key.dtype, problem.m, problem.n, problem.k,
      problem.bias ? ", bias" : "", r.candidates.size(), statuses["ok"], statuses["rejected"],
      statuses["wrong"], statuses["failed"], r.seconds);
  fmt::print("default (heuristic 1): algo {} tile {} stages {} split-K {}: {:.2f} us\n",
             r.default_time.config.value("algo_id", 0), r.default_time.config.value("tile", 0),
             r.default_time.config.value("stages", 0), r.default_time.config.value("splitk", 1),
             r.default_time.time_ns.median / 1e3);
  fmt::print(
      "winner ({}{}): algo {} tile {} stages {} split-K {} swizzle {} reduction {}: {:.2f} "
      "us, {:.3f}x the default, {:.0f} TFLOP/s\n",
      r.winner.source, r.winner.heuristic_rank ? fmt::format(" {}", r.winner.heuristic_rank) : "",
      r.winner.algo_id, r.winner.tile, r.winner.stages, r.winner.splitk, r.winner.swizzle,
      r.winner.reduction, r.winner_time.time_ns.median / 1e3,
      r.default_time.time_ns.median / r.winner_time.time_ns.median,
      r.winner_time.flop_per_s() / 1e12);
  if (put) fmt::print("cache: {} ({})\n", put->winner ? "stored" : "not stored", put->reason);
  return 0;
}

// Warm start: the op's winners the store holds for other GPUs or shapes, and --warm-from files
// (kept alive in `recorded`).
tune::WarmStartSources warm_sources(const TuneArgs& a, const std::string& op, const std::string& db,
                                    std::vector<std::unique_ptr<tune::RecordedSpace>>& recorded) {
  tune::WarmStartSources warm;
  if (a.cold) return warm;
  for (const auto& file : a.warm_from) {
    recorded.push_back(tune::RecordedSpace::load(file));
    warm.spaces.push_back(recorded.back().get());
  }
  try {
    auto st = store::Store::open(db, store::Access::read_only);
    for (const auto& e : st->list_entries({.op = op})) {
      std::map<std::string, tune::Value> config;
      for (const auto& [k, v] : e.config.items()) config[k] = v.get<tune::Value>();
      warm.winners.push_back(std::move(config));
    }
  } catch (const Error&) {
    // No store yet (or none readable): a cold start, as on a first run.
  }
  return warm;
}

// Runs the session with Ctrl-C asking it to stop after the current candidate.
tune::SessionSummary run_session(const tune::ProblemSpec& spec, tune::SessionOptions o,
                                 ProgressEvaluator& ev) {
  o.interrupt = &g_interrupted;
  g_interrupted = false;
  struct SigintGuard {
    void (*previous)(int) = std::signal(SIGINT, on_sigint);
    ~SigintGuard() { std::signal(SIGINT, previous); }
  } guard;
  struct FinishProgress {
    ProgressEvaluator& ev;
    ~FinishProgress() { ev.finish(); }
  } finish{ev};
  return tune::Session(spec, o, ev).run();
}

struct StoredWinner {
  std::optional<store::PutResult> put;
  std::string db;  // the store's description
};

// The winner is written beside the results first, so a store that refuses it loses nothing.
StoredWinner store_winner(const TuneArgs& a, const tune::ProblemSpec& spec,
                          const tune::SessionSummary& s, const fs::path& out,
                          const GlobalOptions& g) {
  StoredWinner w;
  if (!s.best) return w;
  const store::CacheEntry winner =
      tune::winner_entry(spec, s, runtime::detect_environment(g.device), host_identity());
  write_file_atomic(out / "winner.json", nlohmann::json(winner).dump(2) + "\n");
  if (a.no_cache) return w;
  try {
    auto st = store::Store::open(g.db);
    w.db = st->describe();
    const store::OpSpec ops = tune::op_spec(spec);
    if (!st->get_op(ops.op)) st->put_op(ops);
    w.put = st->put_entry(winner);
  } catch (const Error& e) {
    throw Error(fmt::format("{} The winner is kept in {}; offer it again with ktune cache put {}.",
                            e.what(), (out / "winner.json").string(),
                            (out / "winner.json").string()));
  }
  return w;
}

void print_summary(const tune::ProblemSpec& spec, const tune::SessionSummary& s,
                   const StoredWinner& w, const fs::path& out, unsigned compile_threads,
                   std::size_t restarts) {
  fmt::print(
      "tuned {} ({}): {} evaluations ({} now, {} resumed) in {:.1f} s, {:.2f} "
      "evaluations/s, stop: {}\n",
      spec.ktune.op, spec.source, s.evaluations, s.evaluated_now, s.resumed, s.elapsed_s,
      s.evaluations_per_s, tune::to_string(s.stop));
  if (s.compiled > 0)
    fmt::print(
        "compiling: {} binaries, {:.2f} s each on average; {} threads compile at most "
        "{:.1f} configurations/s (the ceiling)\n",
        s.compiled, s.compile_s_mean, compile_threads,
        compile_threads / std::max(s.compile_s_mean, 1e-9));
  std::string counts;
  for (tune::Status st : tune::kAllStatuses)
    if (s.counts.count(st))
      counts +=
          fmt::format("{}{} {}", counts.empty() ? "" : ", ", tune::to_string(st), s.counts.at(st));
  fmt::print("outcomes: {}\n", counts);
  if (s.best)
    fmt::print("best: {}  median {:.2f} us (+-{:.2f}, {} samples), {}\n", describe(s.best->config),
               s.best->result.time_ns / 1e3, s.best->result.noise_ns / 1e3, s.best->result.samples,
               s.best->result.detail);
  if (w.put)
    fmt::print("cache: {} ({}), bucket {} in {}\n", w.put->winner ? "stored as winner" : "kept",
               w.put->reason, w.put->bucket, w.db);
  if (restarts > 0)
    fmt::print(
        "isolation: the measuring process was restarted {} time{} after a candidate "
        "crashed, hung or lost the GPU context\n",
        restarts, restarts == 1 ? "" : "s");
  fmt::print("files: {}/{{results.jsonl,t4.json,summary.json,curve.svg{}}}\n", out.string(),
             s.best ? ",winner.json" : "");
}

int run_tune(TuneArgs a, bool budget_given, bool time_given, const GlobalOptions& g) {
  if (!a.library.empty() || !a.op.empty() || !a.dtype.empty()) {
    if (a.library.empty())
      throw Error(
          "--op and --dtype go with --library (e.g. --library cublaslt --op gemm); a SPEC "
          "names its own op and dtype.");
    return run_library_tune(a, budget_given, g);
  }
  // Every usage error is found before the GPU is touched.
  std::map<std::string, std::int64_t> shape = parse_shape_variables(a.shape);
  fs::path out;
  if (!a.resume.empty()) {
    out = a.resume;
    load_session_file(a, out, budget_given, time_given, shape);
  }
  if (a.spec.empty())
    throw Error("ktune tune needs a SPEC (a T1 JSON file) or --resume DIR; see ktune tune --help.");
  const tune::ProblemSpec spec = load_spec(a.spec, a.grid);
  if (a.dry_run) return dry_run(spec, shape, a.arch, a.json);
  if (a.strategy.empty()) a.strategy = tune::default_strategy_name();
  tune::make_strategy(a.strategy);  // an unknown name fails here
  if (a.budget == 0 && a.time_s <= 0)
    throw Error("--budget 0 with no --time never stops; give a budget or a time limit.");
  if (!(a.candidate_timeout_s > 0))
    throw Error("--candidate-timeout must be a positive number of seconds.");
  (void)spec.constants(shape);  // unknown shape variables fail here
  (void)tune::make_problem(spec, tune::default_config(spec), shape);  // so do unrunnable specs
  if (out.empty()) out = a.out.empty() ? default_out_dir(spec.ktune.op) : a.out;

  bench::PipelineSettings settings;
  settings.full = bench::PipelineSettings::tuning_full();
  settings.contender_margin = a.margin;
  settings.full.apply_overrides(a.stop);
  const unsigned compile_threads = std::max(1u, std::thread::hardware_concurrency());
  // One proposal per core in flight keeps every core compiling. More only delays what the
  // strategy learns: in replay (logs/2026-11-25-replay-cpu.md) proposing 32 ahead instead of 16
  // cost 0.018 of the optimum on gemm at 100 evaluations.
  if (a.prefetch == 0) a.prefetch = compile_threads;
  // The GPU is touched only in the child, which is forked before any CUDA call of this process.
  tune::IsolatedEvaluator gpu(
      [&spec, &shape, settings, device = g.device] {
        return std::make_unique<tune::GpuEvaluator>(spec, shape, settings, device);
      },
      {.candidate_timeout_s = a.candidate_timeout_s});
  ProgressEvaluator ev(gpu, a.budget);

  if (a.resume.empty()) {
    if (fs::exists(tune::Session::results_path(out)))
      throw Error(
          fmt::format("{} already holds a session; continue it with --resume {} or pick "
                      "another --out.",
                      out.string(), out.string()));
    fs::create_directories(out);
    write_file_atomic(out / "session.json", session_file(a, shape).dump(2) + "\n");
  }
  std::vector<std::unique_ptr<tune::RecordedSpace>> recorded;
  tune::SessionOptions o;
  o.warm = warm_sources(a, spec.ktune.op, g.db, recorded);
  o.strategy = a.strategy;
  o.seed = a.seed;
  o.budget = a.budget == 0 ? SIZE_MAX : a.budget;
  o.time_limit_s = a.time_s;
  o.shape = shape;
  o.out_dir = out;
  o.prefetch = a.prefetch;
  o.resume = !a.resume.empty();
  const tune::SessionSummary s = run_session(spec, std::move(o), ev);
  const StoredWinner w = store_winner(a, spec, s, out, g);

  if (a.json) {
    nlohmann::json j = tune::session_summary_json(s);
    j["out"] = out.string();
    if (w.put)
      j["cache"] = {
          {"winner", w.put->winner}, {"reason", w.put->reason}, {"bucket", w.put->bucket}};
    fmt::print("{}\n", j.dump(2));
  } else {
    print_summary(spec, s, w, out, compile_threads, gpu.restarts());
  }
  if (s.stop == tune::StopCause::interrupted) {
    std::fprintf(stderr, "ktune: interrupted; continue with: ktune tune --resume %s\n",
                 out.string().c_str());
    return 130;
  }
  if (!s.best) {
    std::fprintf(stderr,
                 "ktune: no configuration of %s passed verification%s; see %s for each reason.\n",
                 spec.source.c_str(), tune::common_failure(s).c_str(),
                 tune::Session::results_path(out).string().c_str());
    return 1;
  }
  return 0;
}

const bool registered = register_command(
    {"tune", "Search a kernel's configurations on the GPU and cache the verified winner", 50,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto a = std::make_shared<TuneArgs>();
       app.add_option("spec", a->spec, "T1 tuning spec (JSON)");
       app.add_option("--shape", a->shape, "Shape variables NAME=VALUE,... (e.g. n=4096,k=8192)");
       std::string strategies;
       for (const auto& s : tune::registered_strategies())
         strategies += (strategies.empty() ? "" : ", ") + s.name;
       app.add_option("--strategy", a->strategy,
                      fmt::format("Search strategy: {} (default {})", strategies,
                                  tune::default_strategy_name()));
       auto* budget = app.add_option(
           "--budget", a->budget,
           fmt::format("Evaluations, failures included (default {}; 0: no limit)", a->budget));
       auto* time = app.add_option("--time", a->time_s, "Wall-clock limit in seconds (0: none)");
       app.add_option("--seed", a->seed, fmt::format("Strategy seed (default {})", a->seed));
       app.add_option("--out", a->out, "Output directory (default ktune-tune-<op>-<timestamp>)");
       app.add_option("--resume", a->resume, "Continue the session in this directory");
       app.add_option("--margin", a->margin,
                      fmt::format("Fully measure screened candidates within this fraction of the "
                                  "best (default {:g})",
                                  a->margin));
       app.add_option("--prefetch", a->prefetch,
                      "Configurations proposed and compiled ahead of measurement (default: one "
                      "per CPU thread)");
       app.add_option("--candidate-timeout", a->candidate_timeout_s,
                      fmt::format("Seconds one candidate may take to compile and measure before "
                                  "it is stopped as a timeout (default {:g})",
                                  a->candidate_timeout_s));
       add_grid_option(app, a->grid);
       app.add_option("--warm-from", a->warm_from,
                      "T4 files or Kernel Tuner caches of this op on other GPUs or shapes: the "
                      "first proposals follow what ran well there (the store's winners of the op "
                      "are used too)");
       app.add_flag("--cold", a->cold, "Ignore what is known from other GPUs or shapes");
       app.add_flag("--dry-run", a->dry_run,
                    "Check the spec without a GPU: every expression over the whole space, the "
                    "argument sizes, and an NVRTC compile of the default configuration");
       app.add_option("--arch", a->arch,
                      "GPU architecture for --dry-run's compile (default sm_90)");
       app.add_option("--stop", a->stop,
                      "Full-measurement stop-rule overrides, e.g. min_gpu_time_s=0.2 (" +
                          stop_rule_defaults(bench::PipelineSettings::tuning_full()) + ")");
       app.add_flag("--no-cache", a->no_cache, "Do not offer the winner to the cache");
       app.add_option("--library", a->library,
                      "Search a library's GEMM algorithms instead of a SPEC: cublaslt (with --op, "
                      "--shape m=..,n=..,k=.. and --dtype)");
       app.add_option("--op", a->op,
                      "With --library: gemm (D = A^T B) or gemm_bias (plus the bias epilogue)");
       app.add_option("--dtype", a->dtype, "With --library: f16 (default) or bf16");
       app.add_flag("--json", a->json,
                    fmt::format("Print the summary as JSON (schema_version {})",
                                tune::kSessionSchemaVersion));
       return [a, budget, time, &globals] {
         return run_tune(*a, budget->count() > 0, time->count() > 0, globals);
       };
     }});

}  // namespace
}  // namespace ktune::cli
