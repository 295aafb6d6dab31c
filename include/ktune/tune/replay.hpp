#pragma once
// Replay: a strategy searches a recorded space with no GPU. Each evaluation returns the recorded
// time (failures count as spent evaluations); a run scores best-time-in-space / best-time-found.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/spec/space.hpp"
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
  double best_time_ns_ = 0;
  std::size_t unrecorded_ = 0;
};

// One search of `budget` evaluations; returns best_time_ns() / best found (0 if nothing ran).
// `first`: warm-start proposals (Strategy::propose_first), none by default. `window`: proposals
// are made up to this many ahead of their results, as `ktune tune` compiles ahead (--prefetch);
// 1 proposes each after the previous result.
double replay_once(const RecordedSpace& space, Strategy& strategy, std::uint64_t seed,
                   std::size_t budget, const std::vector<std::size_t>& first = {},
                   std::size_t window = 1);

struct ReplayResult {
  std::size_t budget = 0;
  double mean_fraction_of_optimum = 0;
  double random_mean_fraction_of_optimum = 0;  // random search with the same seeds
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

constexpr int kReplaySchemaVersion = 2;  // 2: "window" is "prefetch", as the flag
// {"schema_version", "strategy", "space", "seeds", "prefetch", "results": [{"budget",
// "mean_fraction_of_optimum", "random_mean_fraction_of_optimum"}]}
nlohmann::json replay_json(const std::string& strategy, const std::string& space, std::size_t seeds,
                           std::size_t window, const std::vector<ReplayResult>& results);

}  // namespace ktune::tune
