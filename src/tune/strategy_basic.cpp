// The two baselines: every configuration in order, and uniform sampling without replacement.
#include "builtin_strategies.hpp"
#include "ktune/tune/strategy.hpp"

namespace ktune::tune {
namespace {

class Exhaustive final : public Strategy {
 protected:
  void on_begin() override { next_ = 0; }
  std::optional<std::size_t> next() override {
    while (next_ < space().size() && was_tried(next_)) ++next_;
    if (next_ >= space().size()) return std::nullopt;
    return next_++;
  }

 private:
  std::size_t next_ = 0;
};

class RandomSearch final : public Strategy {
 protected:
  std::optional<std::size_t> next() override { return random_untried(); }
};

}  // namespace

void detail::register_basic_strategies() {
  register_strategy({"exhaustive", "every valid configuration in enumeration order",
                     [] { return std::make_unique<Exhaustive>(); }});
  register_strategy({"random", "uniform sampling of valid configurations without replacement",
                     [] { return std::make_unique<RandomSearch>(); }});
}

}  // namespace ktune::tune
