#include "ktune/tune/strategy.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "builtin_strategies.hpp"
#include "ktune/core/error.hpp"

namespace ktune::tune {

std::optional<std::size_t> first_within(const std::vector<double>& times, double within) {
  const auto timed = [](double t) { return std::isfinite(t) && t > 0; };
  double best = INFINITY;
  for (double t : times)
    if (timed(t)) best = std::min(best, t);
  if (!std::isfinite(best)) return std::nullopt;
  for (std::size_t k = 0; k < times.size(); ++k)
    if (timed(times[k]) && times[k] <= best * (1 + within)) return k;
  return std::nullopt;  // unreachable: the best itself qualifies
}

void Strategy::begin(const IndexedSpace& space, std::uint64_t seed, std::size_t budget) {
  space_ = &space;
  rng_.seed(seed);
  budget_ = budget;
  tried_.clear();
  history_.clear();
  best_.reset();
  untried_order_.clear();
  first_.clear();
  first_next_ = 0;
  on_begin();
}

void Strategy::propose_first(std::vector<std::size_t> positions) {
  first_ = std::move(positions);
  first_next_ = 0;
}

std::optional<std::size_t> Strategy::random_untried() {
  const std::size_t n = space_->size();
  if (tried_.size() >= n) return std::nullopt;
  if (tried_.size() * 2 < n) {  // mostly untried: rejection sampling costs ~2 draws
    std::uniform_int_distribution<std::size_t> pick(0, n - 1);
    for (;;) {
      const std::size_t i = pick(rng_);
      if (!tried_.count(i)) return i;
    }
  }
  std::vector<std::size_t> left;
  left.reserve(n - tried_.size());
  for (std::size_t i = 0; i < n; ++i)
    if (!tried_.count(i)) left.push_back(i);
  return left[std::uniform_int_distribution<std::size_t>(0, left.size() - 1)(rng_)];
}

std::optional<std::size_t> Strategy::spread_untried() {
  // Best-candidate sampling. More draws push the design into the corners of the space: with 256 a
  // model started from them lost 0.03 on a smooth bowl whose optimum lies inside
  // (logs/2026-11-25-replay-cpu.md).
  constexpr int kDraws = 32;
  if (tried_.empty()) return random_untried();
  const auto& params = space_->space().parameters();
  std::vector<double> span(params.size());  // value positions run 0..span: scaled to [0, 1]
  for (std::size_t p = 0; p < params.size(); ++p)
    span[p] = std::max<double>(1, static_cast<double>(params[p].values.size()) - 1);
  std::vector<Configuration> proposed;
  proposed.reserve(tried_.size());
  for (std::size_t i : tried_) proposed.push_back(space_->at(i));
  std::optional<std::size_t> farthest;
  double farthest_d = -1;
  for (int k = 0; k < kDraws; ++k) {
    const auto i = random_untried();
    if (!i) break;
    const Configuration c = space_->at(*i);
    double nearest = INFINITY;
    for (const auto& q : proposed) {
      double d = 0;
      for (std::size_t p = 0; p < c.size(); ++p) {
        const double x = (static_cast<double>(c[p]) - static_cast<double>(q[p])) / span[p];
        d += x * x;
      }
      nearest = std::min(nearest, d);
    }
    if (nearest > farthest_d) farthest_d = nearest, farthest = i;
  }
  return farthest;
}

std::optional<std::size_t> Strategy::propose() {
  if (!space_) throw Error("Strategy::propose called before begin(); call begin() first.");
  if (tried_.size() >= space_->size()) return std::nullopt;
  while (first_next_ < first_.size()) {
    const std::size_t i = first_[first_next_++];
    if (i < space_->size() && !tried_.count(i)) {
      tried_.insert(i);
      return i;
    }
  }
  std::optional<std::size_t> i = next();
  if (!i || *i >= space_->size() || tried_.count(*i)) i = random_untried();
  if (i) tried_.insert(*i);
  return i;
}

void Strategy::observe(Evaluation e) {
  if (e.status == Status::slower && e.time_ns > 0) e.status = Status::ok;
  tried_.insert(e.index);
  history_.push_back(e);
  if (e.status == Status::ok && (!best_ || e.time_ns < history_[*best_].time_ns))
    best_ = history_.size() - 1;
  on_result(e);
}

std::vector<std::size_t> Strategy::neighbours(std::size_t index) const {
  std::vector<std::size_t> out;
  const Configuration c = space_->at(index);
  const auto& params = space_->space().parameters();
  Configuration n = c;
  for (std::size_t p = 0; p < params.size(); ++p) {
    for (std::uint32_t v = 0; v < params[p].values.size(); ++v) {
      if (v == c[p]) continue;
      n[p] = v;
      if (auto pos = space_->find(n)) out.push_back(*pos);
    }
    n[p] = c[p];
  }
  return out;
}

namespace {
std::vector<StrategyInfo>& registry() {
  static std::vector<StrategyInfo> r;
  return r;
}
}  // namespace

bool register_strategy(StrategyInfo info) {
  registry().push_back(std::move(info));
  return true;
}

const std::vector<StrategyInfo>& registered_strategies() {
  // Built-ins are registered here rather than from static initialisers: this is a static
  // library, and the linker would drop a strategy file nothing else refers to.
  static const bool builtins = [] {
    detail::register_builtin_strategies();
    return true;
  }();
  (void)builtins;
  return registry();
}

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& s : registered_strategies()) {
    if (s.name == name) return s.make();
    names.push_back(s.name);
  }
  throw Error(
      fmt::format("unknown strategy '{}'; choose one of: {}.", name, fmt::join(names, ", ")));
}

const char* default_strategy_name() {
  return "portfolio";
}

}  // namespace ktune::tune
