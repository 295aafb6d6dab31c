// A steady-state genetic algorithm over value indices: tournament selection among the best
// evaluated configurations, uniform crossover, per-gene mutation; offspring that are invalid or
// already tried are re-drawn, so no evaluation is spent on them.
#include <algorithm>
#include <cmath>

#include "builtin_strategies.hpp"
#include "ktune/tune/strategy.hpp"

namespace ktune::tune {
namespace {

class Genetic final : public Strategy {
 protected:
  void on_begin() override { pool_.clear(); }

  std::optional<std::size_t> next() override {
    if (pool_.size() < kPopulation) return random_untried();  // the first generation
    const auto& params = space().space().parameters();
    const double mutation = 1.0 / static_cast<double>(params.size());
    std::uniform_real_distribution<double> u(0, 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const Configuration a = space().at(tournament());
      const Configuration b = space().at(tournament());
      Configuration child(a.size());
      for (std::size_t p = 0; p < a.size(); ++p) {
        child[p] = u(rng()) < 0.5 ? a[p] : b[p];
        if (u(rng()) < mutation) {
          const auto n = static_cast<std::int64_t>(params[p].values.size());
          // Mostly a step to an adjacent value, sometimes a jump anywhere.
          std::int64_t v = child[p];
          if (u(rng()) < 0.7)
            v += u(rng()) < 0.5 ? -1 : 1;
          else
            v = std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng());
          child[p] = static_cast<std::uint32_t>(std::clamp<std::int64_t>(v, 0, n - 1));
        }
      }
      if (auto pos = space().find(child); pos && !was_tried(*pos)) return pos;
    }
    return random_untried();
  }

  void on_result(const Evaluation& e) override {
    // Keep the best kPopulation evaluations as the breeding pool; failures never breed.
    if (e.status != Status::ok) return;
    pool_.push_back(e);
    std::sort(pool_.begin(), pool_.end(),
              [](const Evaluation& x, const Evaluation& y) { return x.time_ns < y.time_ns; });
    if (pool_.size() > kPopulation) pool_.resize(kPopulation);
  }

 private:
  std::size_t tournament() {
    std::uniform_int_distribution<std::size_t> pick(0, pool_.size() - 1);
    std::size_t best = pick(rng());
    for (int k = 1; k < 3; ++k) best = std::min(best, pick(rng()));  // pool_ is sorted
    return pool_[best].index;
  }

  static constexpr std::size_t kPopulation = 16;
  std::vector<Evaluation> pool_;
};

}  // namespace

void detail::register_genetic_strategy() {
  register_strategy({"genetic", "genetic algorithm: tournament selection, crossover, mutation",
                     [] { return std::make_unique<Genetic>(); }});
}

}  // namespace ktune::tune
