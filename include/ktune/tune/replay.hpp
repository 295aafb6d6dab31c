#pragma once
// Replay: a strategy searches a recorded space with no GPU, through the tuning session's own loop
// (session.hpp) with an evaluator that answers from the recording. Each evaluation returns the
// recorded time (failures count as spent evaluations); a run scores best-time-in-space /
// best-time-found.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/bench/pipeline.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/tune/session.hpp"
#include "ktune/tune/strategy.hpp"
#include "ktune/tune/t4.hpp"

namespace ktune::tune {

struct KtCache;

// Recorded results (a T4 file or a Kernel Tuner cache) laid over a space. Without a T1 file the
// space is exactly the recorded configurations; with one it is the T1 space, and configurations
// the file lacks evaluate as failures (LaunchFailed, "not recorded").
class RecordedSpace {
 public:
  // T4 (streamed, one record in memory at a time) or a Kernel Tuner cache, told apart by content.
  static std::unique_ptr<RecordedSpace> load(const std::filesystem::path& file,
                                             const std::optional<std::filesystem::path>& t1 = {});
  // For tests and synthetic studies: records given directly.
  static std::unique_ptr<RecordedSpace> from_records(T4File records,
                                                     std::optional<ProblemSpec> spec = {});
  static std::unique_ptr<RecordedSpace> from_kt_cache(const KtCache& cache,
                                                      std::optional<ProblemSpec> spec = {});

  const IndexedSpace& index() const { return *index_; }
  const SearchSpace& space() const { return *space_; }
  // The recorded outcome of a configuration (IndexedSpace position).
  Evaluation evaluate(std::size_t index) const;
  // The recorded time that built its binary (0: it was cached); nullopt when not recorded.
  std::optional<double> compile_s(std::size_t index) const;
  double best_time_ns() const { return best_time_ns_; }   // best valid time in the whole file
  std::size_t unrecorded() const { return unrecorded_; }  // T1 configurations the file lacks
  const std::string& source() const { return source_; }

 private:
  class Builder;
  RecordedSpace() = default;
  std::string source_;
  std::unique_ptr<MapScope> constants_;
  std::unique_ptr<SearchSpace> space_;
  std::unique_ptr<IndexedSpace> index_;
  std::vector<Evaluation> outcome_;  // per IndexedSpace position
  std::vector<double> compile_ns_;   // per position; NaN where not recorded
  double best_time_ns_ = 0;
  std::size_t unrecorded_ = 0;
};

// A session's evaluator that answers from a recorded space on a simulated clock, so that replay
// runs the session's loop as it runs on a GPU: compiles ahead, and the next configuration measured
// is the one whose compile finished first (next_ready). Compiles run on `compile_threads`
// simulated workers in the order they are prepared; each takes the configuration's recorded
// compile time, or, where the recording has none, the median of the space's recorded ones (1 s
// when it has none) times a factor between 1/2 and 2 drawn from `seed` and the configuration.
// Measuring takes what the pipeline's stop rules (`settings`) would spend on the recorded time,
// and screens as the pipeline does: a timed configuration clearly slower than the best so far
// ends as Status::slower. Deterministic: a seed gives one order.
class RecordedEvaluator final : public Evaluator {
 public:
  RecordedEvaluator(const RecordedSpace& space, std::uint64_t seed, unsigned compile_threads,
                    bench::PipelineSettings settings = tuning_settings());
  void prepare(const std::vector<ConfigMap>& upcoming) override;
  std::size_t next_ready(const std::vector<ConfigMap>& candidates) override;
  CandidateOutcome evaluate(const ConfigMap& config, std::optional<double> best_ns) override;
  // The simulated clock, seconds since the evaluator started: the session's clock in replay.
  double clock_s() const { return now_s_; }

  // A session's pipeline settings (its screen and the tuning full rule).
  static bench::PipelineSettings tuning_settings();

 private:
  std::size_t position(const ConfigMap& config) const;
  double compile_s(std::size_t position) const;
  // When the compile of `position` finishes, starting it now if it was never prepared.
  double ready_s(std::size_t position);

  const RecordedSpace& space_;
  std::uint64_t seed_;
  bench::PipelineSettings settings_;
  double median_compile_s_ = 1;
  double now_s_ = 0;
  std::vector<double> worker_free_s_;            // when each compile worker is next idle
  std::map<std::size_t, double> compiled_at_s_;  // prepared position -> its compile's end
};

// One search, scored.
struct ReplayRun {
  std::uint64_t seed = 0;
  double fraction_of_optimum = 0;  // best_time_ns() / best found; 0 if nothing succeeded
  // Time to solution: evaluations (counting failures) after which the best found was within 1 % /
  // 2 % of the run's own final best; 0 if nothing succeeded.
  std::size_t evaluations_to_1pct = 0, evaluations_to_2pct = 0;
};

// One session of `budget` evaluations over the recorded space (RecordedEvaluator, seeded with
// `seed` too). `first`: warm-start proposals (SearchTarget::first), none by default. `window`:
// the session's prefetch, proposals made up to this many ahead of their results as `ktune tune`
// compiles ahead, on window / 2 compile workers (at least 1); 1 proposes each after the previous
// result.
ReplayRun replay_once(const RecordedSpace& space, Strategy& strategy, std::uint64_t seed,
                      std::size_t budget, const std::vector<std::size_t>& first = {},
                      std::size_t window = 1);

struct ReplayResult {
  std::size_t budget = 0;
  double mean_fraction_of_optimum = 0;
  double random_mean_fraction_of_optimum = 0;  // random search with the same seeds
  std::vector<ReplayRun> runs;                 // the strategy's, one per seed, in seed order
};

// Seeds 0..seeds-1 for each budget, run on `threads` threads (results do not depend on it).
// `progress(done, total)` is called after each run. `warm_order` (warm_start_order()): the
// strategy's first warm_start_count(budget) proposals follow it; random search stays cold.
// `window`: as replay_once's.
std::vector<ReplayResult> replay(const RecordedSpace& space, const std::string& strategy,
                                 const std::vector<std::size_t>& budgets, std::size_t seeds,
                                 unsigned threads = 1,
                                 const std::function<void(std::size_t, std::size_t)>& progress = {},
                                 const std::vector<std::size_t>& warm_order = {},
                                 std::size_t window = 1);

// 3: per-seed runs and the evaluations to within 1 % and 2 % of each run's final best;
// 2: "window" is "prefetch", as the flag.
constexpr int kReplaySchemaVersion = 3;
// {"schema_version", "strategy", "space", "seeds", "prefetch", "results": [{"budget",
// "mean_fraction_of_optimum", "random_mean_fraction_of_optimum", "mean_evaluations_to_1pct",
// "mean_evaluations_to_2pct", "runs": [{"seed", "fraction_of_optimum", "evaluations_to_1pct",
// "evaluations_to_2pct"}]}]}
nlohmann::json replay_json(const std::string& strategy, const std::string& space, std::size_t seeds,
                           std::size_t window, const std::vector<ReplayResult>& results);

}  // namespace ktune::tune
