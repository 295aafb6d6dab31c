#pragma once
// A tuning session: a strategy proposes configurations of a T1 spec, an Evaluator (declared here;
// GpuEvaluator, IsolatedEvaluator and LibraryEvaluator implement it) measures them, and every
// outcome is appended to results.jsonl (one JSON line per evaluation, fsync'ed) before the strategy
// sees it. A session killed at any point resumes from that file: recorded configurations are fed
// back without being measured again. At the end (or on a stop) it writes t4.json, summary.json and
// curve.svg beside the results.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/spec/space.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/tune/outcome.hpp"
#include "ktune/tune/warm_start.hpp"

namespace ktune::tune {

class Strategy;
using ConfigMap = std::map<std::string, Value>;

// The GPU side of a session. evaluate() never throws for a candidate's own failure (that is a
// CandidateOutcome); a throw means the session itself cannot go on.
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // What the GPU side knows of its problem that the host cannot learn without a GPU: a library's
  // candidates (tune/gemm_library.hpp) from which the host makes the session's space; null for a
  // spec, whose space the host reads from the spec itself.
  virtual nlohmann::json describe();
  // Configurations about to be evaluated, in order: a hint to compile them ahead (worker threads).
  virtual void prepare(const std::vector<ConfigMap>& upcoming) { (void)upcoming; }
  // Of `candidates` (prepared, in proposal order), the position of the one to evaluate next: one
  // whose binary is ready, so that a slow compile does not leave the GPU and the other cores
  // idle behind it. No default: a wrapper that did not pass it on kept the session in proposal
  // order (the first GPU run of this measured the hub convolution in order).
  virtual std::size_t next_ready(const std::vector<ConfigMap>& candidates) = 0;
  // Verifies and measures one configuration. `best_ns`: the best full median so far; a candidate
  // clearly slower than it may be screened out (Status::slower).
  virtual CandidateOutcome evaluate(const ConfigMap& config, std::optional<double> best_ns) = 0;
};

struct SessionOptions {
  std::string strategy;  // empty: default_strategy_name()
  std::uint64_t seed = 1;
  std::size_t budget = 100;  // evaluations, failures and resumed ones included
  double time_limit_s = 0;   // wall clock of this process's search; 0: none
  std::size_t prefetch = 8;  // configurations proposed (and compiled) ahead of measurement
  std::map<std::string, std::int64_t> shape;  // overrides of the spec's shape variables
  // Created if missing. Empty: nothing is written and the summary is the only result (replay
  // runs many sessions over a recorded space this way).
  std::filesystem::path out_dir;
  bool resume = false;  // continue from out_dir/results.jsonl (else it must not exist)
  const std::atomic<bool>* interrupt = nullptr;  // set (e.g. by SIGINT): stop after this one
  // The queue claim (its attempt number, which grows with each claim of a job) running this
  // session; 0: none. Its lines in results.jsonl carry it, after a line that fences off the
  // earlier claims: a worker frozen past its lease that wakes and appends is ignored by every
  // reader (read_results), so the job's results are those of the claims that held it.
  std::int64_t claim = 0;
  std::function<double()> clock_s;  // seconds; default: a steady clock (replay: simulated)
  // What is known from other GPUs or shapes of the same op (warm_start.hpp): the first proposals
  // follow it. Empty: a cold start.
  WarmStartSources warm;
};

// One line of results.jsonl.
struct SessionRecord {
  std::size_t sequence = 0;  // 0-based evaluation number
  ConfigMap config;
  CandidateOutcome result;
  double elapsed_s = 0;  // since the session (this process) started; resumed lines keep theirs
  std::string timestamp;
};

enum class StopCause { budget, time, exhausted, interrupted, fatal };
// Time to solution: the first fully measured, verified result within `within` (0.01: 1 %) of the
// search's final best, as evaluations (its sequence + 1, failures counted) and seconds since the
// session started (a resumed result keeps the seconds of the process that measured it).
struct TimeToSolution {
  double within = 0;
  std::size_t evaluations = 0;
  double elapsed_s = 0;
};
const char* to_string(StopCause c);

struct SessionSummary {
  std::string spec, op, strategy;
  std::uint64_t seed = 0;
  std::size_t budget = 0;
  double time_limit_s = 0;
  std::map<std::string, std::int64_t> shape;
  std::size_t space_size = 0;  // valid configurations searched
  // When those are a random sample of a valid set too large to keep: that set's size.
  std::optional<double> sampled_from;
  std::size_t evaluations = 0;  // records in results.jsonl used by this search
  std::size_t evaluated_now = 0, resumed = 0;
  double elapsed_s = 0;          // this process's search
  double evaluations_per_s = 0;  // evaluated_now / elapsed_s
  double compile_s_mean = 0;     // over this process's candidates that were compiled
  std::size_t compiled = 0;      // how many of them
  StopCause stop = StopCause::budget;
  std::map<Status, std::size_t> counts;
  std::optional<SessionRecord> best;        // fastest fully measured, verified configuration
  std::vector<TimeToSolution> to_solution;  // within 1 % and 2 % of best; empty without a best
  std::vector<SessionRecord> records;       // in evaluation order
};

inline constexpr int kSessionSchemaVersion = 1;         // session.json, results.jsonl lines
inline constexpr int kSessionSummarySchemaVersion = 2;  // summary.json, `ktune tune --json`

// What a session searches when it is not a spec's space: an explicit set of configurations (a
// library's algorithm candidates), with the names its summary and T4 file carry.
struct SearchTarget {
  std::string source;  // what the search is of: a spec's path, "cuBLASLt"
  std::string op;
  std::map<std::string, std::int64_t> shape;  // recorded in the summary
  const IndexedSpace* space = nullptr;        // must outlive the session
  // Positions proposed first, in this order (a library's own ranking), before the strategy's.
  std::vector<std::size_t> first;
};

class Session {
 public:
  // `spec` must outlive the session.
  Session(const ProblemSpec& spec, SessionOptions options, Evaluator& evaluator);
  // `target.space` must outlive the session.
  Session(SearchTarget target, SessionOptions options, Evaluator& evaluator);
  // Searches with `strategy` (the caller's, e.g. a strategy under study in replay) in place of
  // make_strategy(options.strategy). It must outlive the session.
  Session(SearchTarget target, SessionOptions options, Evaluator& evaluator, Strategy& strategy);
  // Runs to a stop and writes the files. A fatal candidate is recorded and the files written, then
  // ktune::Error tells the user to --resume. Other exceptions (evaluator or I/O) propagate with
  // every finished evaluation already on disk.
  SessionSummary run();

  static std::filesystem::path results_path(const std::filesystem::path& dir);

 private:
  const ProblemSpec* spec_ = nullptr;
  SearchTarget target_;
  SessionOptions opt_;
  Evaluator& evaluator_;
  Strategy* strategy_ = nullptr;  // null: make_strategy(opt_.strategy)
};

// Reads results.jsonl. A torn last line (a crash mid-write) is ignored; any other bad line throws
// ktune::Error naming the file and line.
std::vector<SessionRecord> read_results(const std::filesystem::path& path);

nlohmann::json record_json(const SessionRecord& r);
SessionRecord record_from_json(const nlohmann::json& j);
// {"schema_version": "1.0.0", "metadata": {...}, "results": [...]}: readable by read_t4.
nlohmann::json session_t4_json(const SessionSummary& s);
// {"schema_version": 2, "spec", "op", "strategy", "seed", "budget", "time_limit_s", "shape",
//  "space_size", "evaluations", "evaluated_now", "resumed", "elapsed_s", "evaluations_per_s",
//  "compiled", "compile_s_mean", "stop", "status_counts", "best": {"sequence", "config",
//  "time_ns", "noise_ns", "samples", "detail"} | null, "time_to_solution": [{"within",
//  "evaluations", "elapsed_s"}] (within 0.01 and 0.02; empty without a best)}
nlohmann::json session_summary_json(const SessionSummary& s);
// SessionSummary::to_solution of these records (in evaluation order).
std::vector<TimeToSolution> time_to_solution(const std::vector<SessionRecord>& records);

// When nothing passed: ": 40 of 40 launch_failed (first: ...)", the failure most candidates
// share, so a spec that cannot work (buffers smaller than the kernel reads, a missing symbol)
// reads as one sentence; "" when nothing was evaluated.
std::string common_failure(const SessionSummary& s);
// The record a search over a library's or compiler's candidates caches: the session's best, unless
// the default (the candidate the program runs without ktune; null: none measured) is slower by no
// more than the larger spread (noise_ns) of the two. A gain the measurement cannot tell from noise
// is no gain, and the default cached says "the program's own choice is the winner". nullptr when
// nothing was verified.
const SessionRecord* kept_winner(const SessionSummary& session,
                                 const SessionRecord* default_record);
// Self-contained SVG: the best-so-far time against evaluation number, with every timed point.
std::string best_so_far_svg(const SessionSummary& s);

}  // namespace ktune::tune
