#pragma once
// Search strategies (KTT's contract): a strategy proposes the next configuration given the results
// so far; every proposal is evaluated and its outcome, failures included, is fed back. Strategies
// are registered by name and reproducible: the same space, seed and results give the same
// proposals.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "ktune/spec/space.hpp"
#include "ktune/tune/outcome.hpp"

namespace ktune::tune {

// One finished evaluation. `index` is the configuration's position in the IndexedSpace.
struct Evaluation {
  std::size_t index = 0;
  Status status = Status::ok;
  double time_ns = 0;  // meaningful only when has_time(status): ok or slower
};

// Time to solution: the position (0-based, in evaluation order) of the first of `times` within
// `within` (0.01: 1 %) of the least of them, i.e. when a search got that close to the best it
// would end with; nullopt when none is finite and positive (nothing was timed).
std::optional<std::size_t> first_within(const std::vector<double>& times, double within);

// When a search ends, besides the space running out: after `max_evaluations` (failures count),
// and, for a session on a GPU, before measuring once `time_limit_s` of wall clock has passed or
// `interrupt` is set. Replay and the tuning session both stop by it.
struct StopCondition {
  std::size_t max_evaluations = 100;
  double time_limit_s = 0;                       // 0: none
  const std::atomic<bool>* interrupt = nullptr;  // set (e.g. by SIGINT): stop
  bool done(std::size_t evaluations) const { return evaluations >= max_evaluations; }
  bool out_of_time(double elapsed_s) const { return time_limit_s > 0 && elapsed_s >= time_limit_s; }
  bool interrupted() const { return interrupt && interrupt->load(); }
};

class Strategy {
 public:
  virtual ~Strategy() = default;

  // Starts a search over `space` (which must outlive it). `budget` is the planned number of
  // evaluations; strategies may use it to pace themselves (annealing's schedule).
  void begin(const IndexedSpace& space, std::uint64_t seed, std::size_t budget);
  // The next configuration (an IndexedSpace position) never proposed before in this search, or
  // nullopt when every configuration has been tried.
  std::optional<std::size_t> propose();
  // Feeds back the outcome of a proposed configuration. A screened-out one ("slower") ran
  // correctly and its rough time ranks it: the strategy sees it as a timed result (status ok), in
  // a session on the GPU and in a replay of the records such sessions leave alike.
  void observe(Evaluation e);
  // Warm start (call after begin()): the next proposals are these positions, in order, skipping
  // any already tried; then the strategy proper takes over, their results in its history like any
  // others. warm_start_order() (warm_start.hpp) makes such a list from other GPUs' or shapes'
  // results.
  void propose_first(std::vector<std::size_t> positions);
  // Another searcher proposed this position (a portfolio's other member): never propose it. A
  // result observed counts as proposed too.
  void exclude(std::size_t index) { tried_.insert(index); }

  const std::vector<Evaluation>& history() const { return history_; }
  std::size_t tried() const { return tried_.size(); }

 protected:
  // Hooks. next() may return a position already tried (or nullopt); propose() then falls back to
  // a uniformly random untried one, so a strategy never wastes an evaluation on a repeat.
  virtual void on_begin() {}
  virtual std::optional<std::size_t> next() = 0;
  virtual void on_result(const Evaluation&) {}

  const IndexedSpace& space() const { return *space_; }
  std::mt19937_64& rng() { return rng_; }
  std::size_t budget() const { return budget_; }
  bool was_tried(std::size_t index) const { return tried_.count(index) != 0; }
  std::optional<std::size_t> random_untried();
  // A space-filling pick: of up to 32 random untried configurations, the one farthest from every
  // configuration already proposed (each parameter's value position scaled to [0, 1]).
  std::optional<std::size_t> spread_untried();
  // Valid configurations that differ from `index` in one parameter (all its other values).
  std::vector<std::size_t> neighbours(std::size_t index) const;
  // The best successful evaluation so far, if any.
  const Evaluation* best() const { return best_ ? &history_[*best_] : nullptr; }

 private:
  const IndexedSpace* space_ = nullptr;
  std::mt19937_64 rng_;
  std::size_t budget_ = 0;
  std::unordered_set<std::size_t> tried_;
  std::vector<Evaluation> history_;
  std::optional<std::size_t> best_;
  std::vector<std::size_t> untried_order_;  // lazily shuffled fallback for small spaces
  std::vector<std::size_t> first_;          // propose_first's list, consumed from first_next_
  std::size_t first_next_ = 0;
};

struct StrategyInfo {
  std::string name;
  std::string summary;
  std::function<std::unique_ptr<Strategy>()> make;
};

// Registers a strategy at static-init time; the list is what --strategy accepts.
bool register_strategy(StrategyInfo info);
const std::vector<StrategyInfo>& registered_strategies();
// Throws ktune::Error naming the unknown strategy and listing the known ones.
std::unique_ptr<Strategy> make_strategy(const std::string& name);
// The strategy `ktune tune` and `ktune replay` use unless told otherwise.
const char* default_strategy_name();

}  // namespace ktune::tune
