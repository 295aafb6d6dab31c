// ktune tune SPEC: searches a kernel's configuration space on the GPU (tune::Session driving a
// tune::GpuEvaluator in a child process that a crashing candidate cannot take down), writes
// results.jsonl, t4.json, summary.json, curve.svg and winner.json to --output, and offers the
// verified winner to the cache. --resume DIR continues a killed or interrupted session; --dry-run
// checks a spec without a GPU.
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
#include "ktune/bench/gemm_problem.hpp"
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
#include "ktune/tune/run.hpp"
#include "ktune/tune/spec_problem.hpp"
#include "ktune/tune/strategy.hpp"
#include "print_json.hpp"
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
  std::string inductor_kernel;     // an Inductor kernel module (c<hash>.py)
  bool cuda_graph = false;         // ... timed as CUDA-graph replays
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

// session.json: what --resume needs to run the same search again (a spec's path, or the library
// problem).
nlohmann::json session_file(const TuneArgs& a, const std::map<std::string, std::int64_t>& shape,
                            const std::optional<bench::GemmProblem>& library) {
  nlohmann::json j = {{"schema_version", kSessionFileSchemaVersion},
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
  if (library) {
    j["library"] = a.library;
    j["problem"] = *library;
  } else if (!a.inductor_kernel.empty()) {
    j["inductor_kernel"] = fs::absolute(a.inductor_kernel).string();
    j["cuda_graph"] = a.cuda_graph;
  } else {
    j["spec"] = fs::absolute(a.spec).string();
  }
  return j;
}

// Restores the search settings of `dir`; explicit --budget/--time still apply. A library session
// gives back its problem.
std::optional<bench::GemmProblem> load_session_file(TuneArgs& a, const fs::path& dir,
                                                    bool budget_given, bool time_given,
                                                    std::map<std::string, std::int64_t>& shape) {
  const fs::path path = dir / "session.json";
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(
        fmt::format("--resume {}: no session.json there; point --resume at the --output "
                    "folder of an earlier ktune tune.",
                    dir.string()));
  nlohmann::json j;
  std::optional<bench::GemmProblem> library;
  try {
    j = nlohmann::json::parse(read_file(path));
    if (j.at("schema_version").get<int>() != kSessionFileSchemaVersion)
      throw Error(fmt::format("schema_version {} is not {}", j.at("schema_version").dump(),
                              kSessionFileSchemaVersion));
    if (j.contains("library")) {
      a.library = j.at("library").get<std::string>();
      library = j.at("problem").get<bench::GemmProblem>();
    } else if (j.contains("inductor_kernel")) {
      a.inductor_kernel = j.at("inductor_kernel").get<std::string>();
      a.cuda_graph = j.at("cuda_graph").get<bool>();
    } else {
      a.spec = j.at("spec").get<std::string>();
    }
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
  return library;
}

std::string describe(const tune::ConfigMap& c) {
  std::string out;
  for (const auto& [k, v] : c) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v.repr());
  return out;
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

// Runs the job through the front door with Ctrl-C asking the session to stop after the current
// candidate, and progress on a terminal. `on_start`, when given, runs once the session's candidates
// are known (before the first evaluation).
tune::Outcome run_job(tune::Job job,
                      std::function<void(const tune::LibraryCandidates*)> on_start = {}) {
  job.session.interrupt = &g_interrupted;
  g_interrupted = false;
  struct SigintGuard {
    void (*previous)(int) = std::signal(SIGINT, on_sigint);
    ~SigintGuard() { std::signal(SIGINT, previous); }
  } guard;
  std::optional<Progress> progress;
  std::size_t done = 0;
  std::optional<double> best;
  job.on_start = [&](std::size_t planned, const tune::LibraryCandidates* candidates) {
    if (on_start) on_start(candidates);
    progress.emplace("tune", planned);
  };
  job.on_result = [&](const tune::CandidateOutcome& r) {
    ++done;
    if (r.status == tune::Status::ok && r.full && (!best || r.time_ns() < *best))
      best = r.time_ns();
    if (progress)
      progress->update(done, best ? fmt::format("best {:.2f} us", *best / 1e3) : "no valid yet");
  };
  struct FinishProgress {
    std::optional<Progress>& p;
    ~FinishProgress() {
      if (p) p->finish();
    }
  } finish{progress};
  return tune::run(job);
}

struct StoredWinner {
  std::optional<store::PutResult> put;
  std::string db;  // the store's description
};

// The winner is written beside the results first, so a store that refuses it loses nothing.
// `ops`: the op's bucket policy and default, declared when the store has none yet.
StoredWinner store_winner(const TuneArgs& a, const store::CacheEntry& winner,
                          const std::optional<store::OpSpec>& ops, const fs::path& out,
                          const GlobalOptions& g) {
  StoredWinner w;
  write_file_atomic(out / "winner.json", nlohmann::json(winner).dump(2) + "\n");
  if (a.no_cache) return w;
  try {
    auto st = store::Store::open(g.db);
    w.db = st->describe();
    if (ops && !st->get_op(ops->op)) st->put_op(*ops);
    w.put = st->put_entry(winner);
  } catch (const Error& e) {
    throw Error(fmt::format("{} The winner is kept in {}; offer it again with ktune cache put {}.",
                            e.what(), (out / "winner.json").string(),
                            (out / "winner.json").string()));
  }
  return w;
}

void print_summary(const tune::SessionSummary& s, const StoredWinner& w, const fs::path& out,
                   unsigned compile_threads, std::size_t restarts) {
  fmt::print(
      "tuned {} ({}): {} evaluations ({} now, {} resumed) in {:.1f} s, {:.2f} "
      "evaluations/s, stop: {}\n",
      s.op, s.spec, s.evaluations, s.evaluated_now, s.resumed, s.elapsed_s, s.evaluations_per_s,
      tune::to_string(s.stop));
  if (s.sampled_from)
    fmt::print(
        "space: a random sample of {} of its about {:.3g} valid configurations (more than "
        "ktune keeps)\n",
        s.space_size, *s.sampled_from);
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
               s.best->result.time_ns() / 1e3, s.best->result.noise_ns() / 1e3,
               s.best->result.samples(), s.best->result.detail);
  for (const tune::TimeToSolution& t : s.to_solution)
    fmt::print("within {:.0f} % of the best after {} evaluations, {:.1f} s\n", t.within * 100,
               t.evaluations, t.elapsed_s);
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

// Checks shared by every search before the GPU is touched.
void check_search_args(TuneArgs& a) {
  if (a.strategy.empty()) a.strategy = tune::default_strategy_name();
  tune::make_strategy(a.strategy);  // an unknown name fails here
  if (a.budget == 0 && a.time_s <= 0)
    throw UsageError("--budget 0 with no --time never stops; give a budget or a time limit.");
  if (!(a.candidate_timeout_s > 0))
    throw UsageError("--candidate-timeout must be a positive number of seconds.");
}

// A session folder this run creates is removed again when the run fails before any candidate was
// recorded: a failed `ktune tune` leaves nothing behind (the results of one that ran are kept).
class FreshOutDir {
 public:
  explicit FreshOutDir(const fs::path& out, bool resume)
      : out_(out), fresh_(!resume && !fs::exists(out)) {}
  FreshOutDir(const FreshOutDir&) = delete;
  FreshOutDir& operator=(const FreshOutDir&) = delete;
  ~FreshOutDir() {
    if (!fresh_ || kept_) return;
    std::error_code ec;
    const fs::path results = tune::Session::results_path(out_);
    if (fs::exists(results, ec) && fs::file_size(results, ec) > 0 && !ec) return;
    fs::remove_all(out_, ec);
  }
  void keep() { kept_ = true; }

 private:
  fs::path out_;
  bool fresh_;
  bool kept_ = false;
};

// A fresh session's folder, refused when it holds one; its session.json for --resume.
void start_out_dir(const TuneArgs& a, const fs::path& out,
                   const std::map<std::string, std::int64_t>& shape,
                   const std::optional<bench::GemmProblem>& library) {
  if (!a.resume.empty()) return;
  if (fs::exists(tune::Session::results_path(out)))
    throw Error(
        fmt::format("{} already holds a session; continue it with --resume {} or pick "
                    "another --output.",
                    out.string(), out.string()));
  fs::create_directories(out);
  write_file_atomic(out / "session.json", session_file(a, shape, library).dump(2) + "\n");
}

tune::SessionOptions session_options(const TuneArgs& a, const fs::path& out) {
  tune::SessionOptions o;
  o.strategy = a.strategy;
  o.seed = a.seed;
  o.budget = a.budget == 0 ? SIZE_MAX : a.budget;
  o.time_limit_s = a.time_s;
  o.out_dir = out;
  o.prefetch = a.prefetch;
  o.resume = !a.resume.empty();
  return o;
}

// What `ktune tune` prints and returns once a session has ended, whatever it searched.
int finish(const TuneArgs& a, const tune::SessionSummary& s, const StoredWinner& w,
           const fs::path& out, const nlohmann::json& extra, unsigned compile_threads,
           std::size_t restarts) {
  if (a.json) {
    nlohmann::json j = tune::session_summary_json(s);
    j["out"] = out.string();
    if (w.put)
      j["cache"] = {
          {"winner", w.put->winner}, {"reason", w.put->reason}, {"bucket", w.put->bucket}};
    for (const auto& [k, v] : extra.items()) j[k] = v;
    print_json(j);
  } else {
    print_summary(s, w, out, compile_threads, restarts);
  }
  if (s.stop == tune::StopCause::interrupted) {
    std::fprintf(stderr, "ktune: interrupted; continue with: ktune tune --resume %s\n",
                 out.string().c_str());
    return 130;
  }
  if (!s.best) {
    std::fprintf(stderr,
                 "ktune: no configuration of %s passed verification%s; see %s for each reason.\n",
                 s.spec.c_str(), tune::common_failure(s).c_str(),
                 tune::Session::results_path(out).string().c_str());
    return 1;
  }
  return 0;
}

// ktune tune --library cublaslt --op gemm_nn --shape m=..,n=..,k=..[,batch=..] --dtype bf16: a
// session over cuBLASLt's algorithms for one problem. Usage errors are found before the GPU is
// touched; the GPU side (candidates, measurement) lives in the isolated measuring process.
int run_library_tune(TuneArgs a, std::optional<bench::GemmProblem> problem, bool budget_given,
                     const GlobalOptions& g) {
  if (a.library != "cublaslt")
    throw UsageError(
        fmt::format("--library '{}' is not a GEMM library ktune searches; use --library "
                    "cublaslt.",
                    a.library));
  if (!a.spec.empty())
    throw UsageError(
        "--library searches a library's algorithms, not a SPEC; drop the SPEC or drop "
        "--library.");
  if (!problem) problem = tune::library_problem(a.op, parse_shape_variables(a.shape, 0), a.dtype);
  if (!budget_given && a.resume.empty()) a.budget = 120;
  check_search_args(a);
  if (a.prefetch == 0) a.prefetch = 1;  // nothing compiles: propose as results come
  const fs::path out = !a.resume.empty() ? fs::path(a.resume)
                       : !a.out.empty()  ? fs::path(a.out)
                                        : fs::path(default_out_dir(bench::gemm_cache_op(*problem)));
  FreshOutDir out_guard(out, !a.resume.empty());
  tune::LibrarySearchOptions options;
  options.seed = a.seed;
  options.pipeline.contender_margin = a.margin;
  options.pipeline.full.apply_overrides(a.stop);
  if (a.resume.empty() && fs::exists(tune::Session::results_path(out)))
    throw Error(
        fmt::format("{} already holds a session; continue it with --resume {} or pick "
                    "another --output.",
                    out.string(), out.string()));
  // The GPU is touched only in the measuring child, forked before any CUDA call of this process;
  // the folder is made once the candidates are known (a machine without a GPU leaves none).
  tune::Job job;
  job.target = tune::LibraryGemm{*problem, options};
  job.session = session_options(a, out);
  job.device = g.device;
  job.isolation.candidate_timeout_s = a.candidate_timeout_s;
  job.environment = [device = g.device] { return runtime::detect_environment(device); };
  job.host = host_identity();
  const tune::Outcome o = run_job(std::move(job), [&](const tune::LibraryCandidates* c) {
    start_out_dir(a, out, {}, problem);
    if (!a.json)
      fmt::print(stderr,
                 "cuBLASLt {}: {} candidates ({} from the heuristic, {} enumerated configurations "
                 "checked, {} refused by cuBLASLt or over the workspace)\n",
                 c->cublaslt_version, c->configs.size(), c->heuristic, c->offered, c->rejected);
  });
  const tune::SessionSummary& s = o.session;
  if (s.stop == tune::StopCause::interrupted) out_guard.keep();  // its message names --resume
  StoredWinner w;
  nlohmann::json extra = {{"problem", *problem},
                          {"cublaslt_version", o.candidates->cublaslt_version}};
  if (o.winner) {
    w = store_winner(a, *o.winner, std::nullopt, out, g);
    if (o.default_ns) extra["default_median_ns"] = *o.default_ns;
    if (!a.json && o.default_ns && o.default_won)
      fmt::print(
          "default (cuBLASLt's first choice, what PyTorch runs): {:.2f} us, the winner{}; cached "
          "as such, so ktune run leaves these calls their own algorithm\n",
          *o.default_ns / 1e3,
          s.best->result.time_ns() == *o.default_ns
              ? ""
              : fmt::format(" (the fastest other, {:.2f} us, is within the spread of the two)",
                            s.best->result.time_ns() / 1e3));
    else if (!a.json && o.default_ns)
      fmt::print(
          "default (cuBLASLt's first choice, what PyTorch runs): {:.2f} us; winner {:.2f} "
          "us, {:.3f}x, {:.0f} TFLOP/s\n",
          *o.default_ns / 1e3, o.winner->median_ns / 1e3, *o.default_ns / o.winner->median_ns,
          o.winner->throughput / 1e12);
  }
  return finish(a, s, w, out, extra, 0, o.restarts);
}

// ktune tune --inductor-kernel c<hash>.py [--cuda-graph]: a session over the configurations of a
// Triton kernel Inductor generated, measured by ktune.inductor's serve program (its own
// candidates first, Inductor's choice the first of them); the winner is filed for
// ktune.inductor.use().
int run_inductor_tune(TuneArgs a, bool budget_given, const GlobalOptions& g) {
  if (!a.spec.empty() || !a.library.empty())
    throw UsageError(
        "--inductor-kernel tunes a Triton kernel module, not a SPEC or a library; give only one.");
  std::error_code ec;
  if (!fs::is_regular_file(a.inductor_kernel, ec))
    throw UsageError(fmt::format(
        "--inductor-kernel {} is not a file; give a kernel module of Inductor's cache (its "
        "c<hash>.py; `ktune report` names each kernel's module).",
        a.inductor_kernel));
  if (!budget_given && a.resume.empty()) a.budget = 200;
  check_search_args(a);
  if (a.prefetch == 0) a.prefetch = std::max(1u, std::thread::hardware_concurrency());
  const std::string stem = fs::path(a.inductor_kernel).stem().string();
  const fs::path out = !a.resume.empty() ? fs::path(a.resume)
                       : !a.out.empty()  ? fs::path(a.out)
                                         : fs::path(default_out_dir("inductor-" + stem));
  FreshOutDir out_guard(out, !a.resume.empty());
  start_out_dir(a, out, {}, std::nullopt);
  tune::Job job;
  job.target = tune::InductorKernel{fs::absolute(a.inductor_kernel), a.cuda_graph, "", "", "", {}};
  job.session = session_options(a, out);
  job.device = g.device;
  job.isolation.candidate_timeout_s = a.candidate_timeout_s;
  job.environment = [device = g.device] { return runtime::detect_environment(device); };
  job.host = host_identity();
  const tune::Outcome o = run_job(std::move(job));
  const tune::SessionSummary& s = o.session;
  if (s.stop == tune::StopCause::interrupted) out_guard.keep();  // its message names --resume
  const tune::InductorDescription& d = *o.inductor;
  nlohmann::json extra = {{"kernel", d.name},
                          {"kind", d.kind},
                          {"lookup_hash", d.lookup_hash},
                          {"source_hash", d.source_hash},
                          {"torch", d.torch},
                          {"triton", d.triton},
                          {"timing", d.timing},
                          {"candidates", d.configs.size()},
                          {"inductor_candidates", d.inductor.size()}};
  if (!a.json)
    fmt::print(
        "{} ({}, {}): {} configurations, {} of them Inductor's; timed with {}; PyTorch {}, "
        "Triton {}\n",
        d.name, d.kind, d.dtype, d.configs.size(), d.inductor.size(),
        d.timing == "cuda_graph" ? "CUDA-graph replays" : "CUDA events", d.torch, d.triton);
  StoredWinner w;
  if (o.winner) {
    w = store_winner(a, *o.winner, std::nullopt, out, g);
    if (o.default_ns) extra["default_median_ns"] = *o.default_ns;
    extra["winner_median_ns"] = o.winner->median_ns;
    extra["default_won"] = o.default_won;
    if (!a.json && o.default_ns)
      fmt::print(
          "Inductor's choice: {:.2f} us; winner {:.2f} us, {:.3f}x{}\n", *o.default_ns / 1e3,
          o.winner->median_ns / 1e3, *o.default_ns / o.winner->median_ns,
          o.default_won ? " (Inductor's choice kept: no other is faster beyond the spread)" : "");
    else if (!a.json)
      fmt::print("Inductor's choice: not measured (unknown or failed); winner {:.2f} us\n",
                 o.winner->median_ns / 1e3);
  }
  return finish(a, s, w, out, extra, 0, o.restarts);
}

int run_tune(TuneArgs a, bool budget_given, bool time_given, const GlobalOptions& g) {
  // Every usage error is found before the GPU is touched. A library GEMM's batch strides may be 0.
  std::map<std::string, std::int64_t> shape =
      parse_shape_variables(a.shape, a.library.empty() ? 1 : 0);
  fs::path out;
  std::optional<bench::GemmProblem> library;
  if (!a.resume.empty()) {
    out = a.resume;
    library = load_session_file(a, out, budget_given, time_given, shape);
  }
  if (!a.inductor_kernel.empty()) return run_inductor_tune(a, budget_given, g);
  if (!a.library.empty() || !a.op.empty() || !a.dtype.empty()) {
    if (a.library.empty())
      throw UsageError(
          "--op and --dtype go with --library (e.g. --library cublaslt --op gemm_tn); a SPEC "
          "names its own op and dtype.");
    return run_library_tune(a, library, budget_given, g);
  }
  if (a.spec.empty())
    throw UsageError(
        "ktune tune needs a SPEC (a T1 JSON file), --library cublaslt or --resume DIR; see "
        "ktune tune --help.");
  const tune::ProblemSpec spec = load_spec(a.spec, a.grid);
  if (a.dry_run) return dry_run(spec, shape, a.arch, a.json);
  check_search_args(a);
  (void)spec.constants(shape);  // unknown shape variables fail here
  (void)tune::make_problem(spec, tune::default_config(spec), shape);  // so do unrunnable specs
  if (out.empty()) out = a.out.empty() ? default_out_dir(spec.ktune.op) : a.out;

  bench::PipelineSettings settings;
  settings.full = bench::PipelineSettings::tuning_full();
  settings.contender_margin = a.margin;
  settings.full.apply_overrides(a.stop);
  const unsigned compile_threads = std::max(1u, std::thread::hardware_concurrency());
  settings.compile_threads = compile_threads;
  // One proposal per core in flight keeps every core compiling. More only delays what the
  // strategy learns: in replay (logs/2026-11-25-replay-cpu.md) proposing 32 ahead instead of 16
  // cost 0.018 of the optimum on gemm at 100 evaluations.
  if (a.prefetch == 0) a.prefetch = compile_threads;
  FreshOutDir out_guard(out, !a.resume.empty());
  start_out_dir(a, out, shape, std::nullopt);
  std::vector<std::unique_ptr<tune::RecordedSpace>> recorded;
  tune::Job job;
  job.target = tune::SpecKernel{&spec, settings};
  job.session = session_options(a, out);
  job.session.warm = warm_sources(a, spec.ktune.op, g.db, recorded);
  job.session.shape = shape;
  job.device = g.device;
  job.isolation.candidate_timeout_s = a.candidate_timeout_s;
  job.environment = [device = g.device] { return runtime::detect_environment(device); };
  job.host = host_identity();
  const tune::Outcome o = run_job(std::move(job));
  if (o.session.stop == tune::StopCause::interrupted) out_guard.keep();  // its message: --resume
  StoredWinner w;
  if (o.winner) w = store_winner(a, *o.winner, o.op, out, g);
  return finish(a, o.session, w, out, nlohmann::json::object(), compile_threads, o.restarts);
}

const bool registered = register_command(
    {"tune", "Search a kernel's configurations on the GPU and cache the verified winner", 50,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto a = std::make_shared<TuneArgs>();
       app.footer(
           "Exit codes: 0 a verified winner (or a clean --dry-run), 1 the run failed or no "
           "configuration passed verification (or --dry-run found a problem), 2 usage, 130 "
           "interrupted (continue with --resume DIR).");
       app.add_option("spec", a->spec, "T1 tuning spec (JSON)");
       app.add_option("--shape", a->shape, "Shape variables NAME=VALUE,... (e.g. n=4096,k=8192)");
       std::string strategies;
       for (const auto& s : tune::registered_strategies())
         strategies += (strategies.empty() ? "" : ", ") + s.name;
       app.add_option("--strategy", a->strategy,
                      fmt::format("Search strategy: {} (default {})", strategies,
                                  tune::default_strategy_name()))
           ->check(parsed_by([](const std::string& v) { tune::make_strategy(v); }));
       auto* budget = app.add_option(
           "--budget", a->budget,
           fmt::format("Evaluations, failures included (default {}; 0: no limit)", a->budget));
       auto* time = app.add_option("--time", a->time_s, "Wall-clock limit in seconds (0: none)");
       app.add_option("--seed", a->seed, fmt::format("Strategy seed (default {})", a->seed));
       app.add_option("-o,--output", a->out,
                      "The session's folder (default ktune-tune-<op>-<timestamp>)");
       add_deprecated_alias(app, "--out", "-o/--output", a->out);
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
                      "--shape m=..,n=..,k=..[,batch=..] and --dtype; `ktune report` prints the "
                      "command for each GEMM a program ran)");
       app.add_option("--op", a->op,
                      "With --library: gemm_<layout>[_<epilogue>], layout nn|nt|tn|tt (op(A), "
                      "op(B), BLAS column-major), epilogue bias|relu|relu_bias|gelu|gelu_bias "
                      "(e.g. gemm_tn_bias: torch.nn.Linear with a bias)");
       app.add_option("--dtype", a->dtype,
                      "With --library: f16 (default), bf16, f32 or tf32 (f32 data multiplied in "
                      "TF32)");
       app.add_option("--inductor-kernel", a->inductor_kernel,
                      "Tune a Triton kernel module Inductor generated (its c<hash>.py; `ktune "
                      "report` names each one), measured by python3 -m ktune.inductor serve "
                      "($KTUNE_PYTHON picks the interpreter)");
       app.add_flag("--cuda-graph", a->cuda_graph,
                    "With --inductor-kernel: time candidates as CUDA-graph replays, as a program "
                    "compiled with mode=\"reduce-overhead\" runs them");
       app.add_flag("--json", a->json,
                    fmt::format("Print the summary as JSON (schema_version {})",
                                tune::kSessionSummarySchemaVersion));
       return [a, budget, time, &globals] {
         return run_tune(*a, budget->count() > 0, time->count() > 0, globals);
       };
     }});

}  // namespace
}  // namespace ktune::cli
