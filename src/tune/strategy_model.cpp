// Model-guided search: a random forest learns log(time) from the evaluations so far and proposes
// the candidate with the highest expected improvement; measurements decide. Candidates are all
// untried configurations of a small space, or a random sample plus the neighbourhoods of the best
// ones in a large space, so the cost per proposal stays bounded however large the space is.
#include <algorithm>
#include <cmath>

#include "builtin_strategies.hpp"
#include "forest.hpp"
#include "ktune/tune/strategy.hpp"

namespace ktune::tune {
namespace {

class ModelGuided final : public Strategy {
 protected:
  void on_begin() override {
    x_.clear();
    y_.clear();
    failed_rows_.clear();
  }

  std::optional<std::size_t> next() override {
    const std::size_t initial = std::clamp<std::size_t>(budget() / 10, 5, 20);
    if (history().size() < initial || !best()) return random_untried();

    // Failures become "slower than the slowest success" so the model steers away from them.
    std::vector<double> y = y_;
    double worst = -INFINITY;
    for (double v : y_) worst = std::max(worst, v);  // failures hold -inf, successes their log
    for (std::size_t r : failed_rows_) y[r] = worst + kFailurePenalty;
    detail::ForestOptions opt;
    forest_.fit(x_, y, opt, rng());

    const double best_log = std::log(best()->time_ns);
    std::optional<std::size_t> choice;
    double best_score = -1;
    std::vector<double> f;
    for (std::size_t i : candidates()) {
      features(space().at(i), f);
      double mu, sd;
      forest_.predict(f, mu, sd);
      const double score = expected_improvement(best_log - mu, sd);
      if (score > best_score) best_score = score, choice = i;
    }
    return choice;
  }

  void on_result(const Evaluation& e) override {
    std::vector<double> f;
    features(space().at(e.index), f);
    x_.push_back(std::move(f));
    if (e.status == Status::ok) {
      y_.push_back(std::log(e.time_ns));
    } else {
      failed_rows_.push_back(y_.size());
      y_.push_back(-INFINITY);  // replaced by the penalty at each fit
    }
  }

 private:
  static constexpr double kFailurePenalty = 0.7;  // in log(time): ~2x the slowest success
  static constexpr std::size_t kFullScanLimit = 4096;
  static constexpr std::size_t kRandomCandidates = 2048;
  static constexpr std::size_t kLocalCentres = 5;

  static double expected_improvement(double gain, double sd) {
    if (sd <= 1e-12) return std::max(gain, 0.0);
    const double z = gain / sd;
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    return gain * cdf + sd * pdf;
  }

  void features(const Configuration& c, std::vector<double>& f) const {
    const auto& params = space().space().parameters();
    f.resize(c.size());
    for (std::size_t p = 0; p < c.size(); ++p) {
      const Value& v = params[p].values[c[p]];
      f[p] = (v.is_number() || v.kind() == Value::Kind::Bool) ? v.as_double()
                                                              : static_cast<double>(c[p]);
    }
  }

  std::vector<std::size_t> candidates() {
    std::vector<std::size_t> out;
    const std::size_t n = space().size();
    if (n <= kFullScanLimit) {
      for (std::size_t i = 0; i < n; ++i)
        if (!was_tried(i)) out.push_back(i);
      return out;
    }
    std::uniform_int_distribution<std::size_t> pick(0, n - 1);
    for (std::size_t k = 0; k < kRandomCandidates; ++k) {
      const std::size_t i = pick(rng());
      if (!was_tried(i)) out.push_back(i);
    }
    // The neighbourhoods of the best few: where the optimum most likely is.
    std::vector<const Evaluation*> ok;
    for (const auto& e : history())
      if (e.status == Status::ok) ok.push_back(&e);
    const std::size_t centres = std::min(kLocalCentres, ok.size());
    std::partial_sort(
        ok.begin(), ok.begin() + centres, ok.end(),
        [](const Evaluation* a, const Evaluation* b) { return a->time_ns < b->time_ns; });
    for (std::size_t k = 0; k < centres; ++k)
      for (std::size_t i : neighbours(ok[k]->index))
        if (!was_tried(i)) out.push_back(i);
    return out;
  }

  detail::Forest forest_;
  std::vector<std::vector<double>> x_;
  std::vector<double> y_;
  std::vector<std::size_t> failed_rows_;
};

}  // namespace

void detail::register_model_strategy() {
  register_strategy({"model",
                     "random-forest cost model proposes by expected improvement; measurements "
                     "decide (default)",
                     [] { return std::make_unique<ModelGuided>(); }});
}

}  // namespace ktune::tune
