// Simulated annealing on log(time): walk to a random one-parameter neighbour, accept a slower one
// with probability exp(-delta / T), T falling geometrically over the budget. Failures are
// treated as much slower than anything seen.
#include <algorithm>
#include <cmath>

#include "builtin_strategies.hpp"
#include "ktune/tune/strategy.hpp"

namespace ktune::tune {
namespace {

class Annealing final : public Strategy {
 protected:
  void on_begin() override {
    current_.reset();
    pending_.reset();
  }

  std::optional<std::size_t> next() override {
    if (!current_) return random_untried();
    std::vector<std::size_t> options = neighbours(current_->index);
    options.erase(
        std::remove_if(options.begin(), options.end(), [&](std::size_t i) { return was_tried(i); }),
        options.end());
    if (options.empty()) {  // a dead end: restart from the best so far, else anywhere
      if (best() && best()->index != current_->index) {
        current_ = *best();
        current_log_ = std::log(best()->time_ns);
        return next();
      }
      return random_untried();
    }
    return options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng())];
  }

  void on_result(const Evaluation& e) override {
    const double cost = e.status == Status::ok ? std::log(e.time_ns) : worst_log_ + 1.0;
    if (e.status == Status::ok) worst_log_ = std::max(worst_log_, cost);
    if (!current_) {
      if (e.status == Status::ok) current_ = e, current_log_ = cost;
      return;
    }
    const double progress =
        std::min(1.0, static_cast<double>(history().size()) / std::max<std::size_t>(budget(), 1));
    const double t = kStartT * std::pow(kEndT / kStartT, progress);
    const double delta = cost - current_log_;
    if (delta <= 0 || std::uniform_real_distribution<double>(0, 1)(rng()) < std::exp(-delta / t)) {
      current_ = e;
      current_log_ = cost;
    }
  }

 private:
  static constexpr double kStartT = 0.2;  // accepts 20 % slower with probability 1/e at first
  static constexpr double kEndT = 0.005;
  std::optional<Evaluation> current_, pending_;
  double current_log_ = 0;
  double worst_log_ = -1e300;
};

}  // namespace

void detail::register_annealing_strategy() {
  register_strategy({"annealing", "simulated annealing over one-parameter moves",
                     [] { return std::make_unique<Annealing>(); }});
}

}  // namespace ktune::tune
