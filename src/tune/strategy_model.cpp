// Model-guided search ("model"); "hybrid", which alternates its global proposals with local
// ones; and "thompson", the hybrid ranking candidates by a randomly drawn tree of the model in
// place of expected improvement. It starts from a space-filling design (each proposal the farthest
// of 32 random ones from all proposed so far), so that the first evaluations see every region. A
// random forest learns log(time) from every evaluation, on the parameters and the products of their
// pairs (failures as "slower than anything seen", so the model learns where configurations fail
// and stops proposing there); each proposal is the
// candidate with the highest expected improvement; measurements decide. Proposals look globally
// (the whole space when it is small, else a random sample plus the neighbourhoods of the best few,
// so the cost per proposal stays bounded); in the hybrid every third looks only at the incumbent's
// one-parameter neighbourhood (at the five fastest's once the incumbent has stood for 10 results),
// so the search keeps refining the best region even while the model's uncertainty pulls it
// elsewhere. Nothing here is fitted to one recorded space: no per-kernel table, no threshold read
// off a file.
#include <algorithm>
#include <cmath>

#include "builtin_strategies.hpp"
#include "forest.hpp"
#include "ktune/tune/strategy.hpp"

namespace ktune::tune {
namespace {

// How the forest's prediction ranks the candidates.
enum class Acquisition {
  // The highest expected improvement over the best so far (mean and spread across the trees).
  expected_improvement,
  // The best by one tree of the forest, drawn at random for each proposal (Thompson sampling): a
  // draw from the model's uncertainty, so proposals made before the results of the previous ones
  // come back (a session's --prefetch) differ from each other without a rule that says how, and
  // the search explores where the trees disagree.
  thompson,
};

// The hybrid's local step was chosen by leave-one-family-out (logs/2026-11-23-replay-cpu.md):
// decided on two recorded families, checked on the third, each way. Two-parameter moves, random
// interleaving and crossover candidates were tried there too and are not used: none won on the
// held-out family. Nor did, in logs/2026-11-25-replay-cpu.md, a separate forest for the chance of
// failure (EI x P(success) lost 0.014 on the only family with failures), more exploration (the
// spread doubled, or decaying over the budget: gains on pnpoly, losses of 0.007-0.021 on gemm),
// lower confidence bound, a smaller random start or fewer features per split. What did win on
// all three families at once (logs/2026-11-25-replay-cpu.md) is the space-filling start
// in place of a uniformly random one: pnpoly's seeds had settled in the basin that their random
// start happened to sample. The other settings are the model strategy's, fixed a priori.
// For proposals made ahead of their results (logs/2026-11-26-search-replay-2.md), the pending
// ones entered in the fit at the model's own prediction (kriging believer) did not help at window
// 16; Thompson sampling did, on pnpoly and at 200 on gemm, and became a strategy of its own.
// With the H100 families (cuBLASLt, copy, GEMV, hub) it is the default: chosen by most
// leave-one-family-out folds at both windows (logs/2026-11-26-search-replay-3.md), and by every
// fold at window 16 once the forest's mean decided among a tree's tied candidates
// (logs/2026-11-26-search-replay-4.md).
struct ModelOptions {
  Acquisition acquisition = Acquisition::expected_improvement;
  std::size_t init_divisor = 10;  // space-filling start: budget / this, clamped to [5, 20]
  std::size_t local_every = 0;    // every n-th model proposal is local; 0: never ("model")
  // Spaces up to this many configurations are ranked whole at each proposal, larger ones through
  // a random sample of this many. Both are expected improvement's, which evaluates every tree per
  // candidate; Thompson sampling evaluates one (the forest only for the candidates tied on it), so
  // at the same cost per proposal it ranks spaces as many times larger whole, and samples as many
  // times more, as the forest has trees (with 2,048, the default did worse at window 16 on one of
  // three synthetic spaces of 345,600 configurations, and no better on the others:
  // logs/2026-11-27-forest-fit.md).
  std::size_t full_scan_limit = 4096;
  std::size_t random_candidates = 2048;
  std::size_t centres = 5;
  double failure_penalty = 0.7;  // in log(time): ~2x the slowest success
};

class ModelGuided final : public Strategy {
 public:
  explicit ModelGuided(ModelOptions opt) : opt_(opt) {}

 protected:
  void on_begin() override {
    x_.clear();
    y_.clear();
    failed_rows_.clear();
    best_ok_.clear();
    fitted_rows_ = 0;
    feature_cache_.clear();
    choose_features();
  }

  std::optional<std::size_t> next() override {
    const std::size_t initial =
        std::clamp<std::size_t>(budget() / std::max<std::size_t>(opt_.init_divisor, 1), 5, 20);
    if (history().size() < initial || !best()) return spread_untried();

    const std::size_t step = history().size() - initial;
    if (refit_due()) {
      std::vector<double> y = y_;
      double worst = -INFINITY;
      for (double v : y_) worst = std::max(worst, v);  // failures hold -inf, successes their log
      for (std::size_t r : failed_rows_) y[r] = worst + opt_.failure_penalty;
      detail::ForestOptions fo;
      forest_.fit(x_, y, fo, rng());
      fitted_rows_ = x_.size();
    }

    std::vector<std::size_t> cands;
    if (opt_.local_every > 0 && step % opt_.local_every == opt_.local_every - 1)
      cands = local_candidates();
    if (cands.empty()) cands = global_candidates();

    const double best_log = std::log(best()->time_ns);
    std::optional<std::size_t> choice;
    std::vector<double> f;
    if (opt_.acquisition == Acquisition::thompson) return thompson_choice(cands);
    double best_score = -1;
    for (std::size_t i : cands) {
      double mu, sd;
      forest_.predict(candidate_features(i, f), mu, sd);
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
      // The few fastest so far, the centres of the global candidates' neighbourhoods.
      best_ok_.insert(
          std::upper_bound(best_ok_.begin(), best_ok_.end(), std::make_pair(e.time_ns, e.index)),
          {e.time_ns, e.index});
      if (best_ok_.size() > opt_.centres) best_ok_.pop_back();
    } else {
      failed_rows_.push_back(y_.size());
      y_.push_back(-INFINITY);  // replaced by the penalty at each fit
    }
  }

 private:
  // The best candidate by one tree drawn at random. A tree is piecewise constant, so its best
  // value is shared by a whole leaf of candidates (hundreds in a large space); the first of them
  // in scan order, as this took before, put every proposal in one corner of the drawn region (in
  // a space scanned whole, the lowest index). The draw picks the region; within it the forest's
  // mean decides, and chance among equal means (logs/2026-11-26-search-replay-4.md).
  std::optional<std::size_t> thompson_choice(const std::vector<std::size_t>& cands) {
    const std::size_t tree =
        std::uniform_int_distribution<std::size_t>(0, forest_.trees() - 1)(rng());
    std::vector<double> f;
    double least = INFINITY;
    std::vector<std::size_t> tied;
    for (std::size_t i : cands) {
      const double v = forest_.predict_tree(tree, candidate_features(i, f));
      if (v < least) least = v, tied.clear();
      if (v == least) tied.push_back(i);
    }
    std::optional<std::size_t> choice;
    double best_mean = INFINITY;
    std::size_t equal = 0;
    for (std::size_t i : tied) {
      double mu, sd;
      forest_.predict(candidate_features(i, f), mu, sd);
      if (mu < best_mean)
        best_mean = mu, choice = i, equal = 1;
      else if (mu == best_mean &&
               std::uniform_int_distribution<std::size_t>(0, equal++)(rng()) == 0)
        choice = i;  // each of the equal ones with the same chance
    }
    return choice;
  }

  // How many candidates cost what this many do under expected improvement: Thompson sampling
  // evaluates one tree per candidate where expected improvement evaluates them all.
  std::size_t at_equal_cost(std::size_t candidates) const {
    return opt_.acquisition == Acquisition::thompson
               ? candidates * static_cast<std::size_t>(detail::ForestOptions{}.trees)
               : candidates;
  }
  std::size_t scan_limit() const { return at_equal_cost(opt_.full_scan_limit); }

  static double expected_improvement(double gain, double sd) {
    if (sd <= 1e-12) return std::max(gain, 0.0);
    const double z = gain / sd;
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    return gain * cdf + sd * pdf;
  }

  // A configuration's features: each parameter's value (its position in the list where it is
  // not a number), then the product of each pair of parameters whose values are all positive
  // numbers, as the logarithm (a sum). A tree splits on one feature at a time, and what a kernel's
  // time follows is often a product: threads per block (block_size_x * block_size_y), a tile's
  // area, work per thread times threads. Learned from the factors alone that takes a staircase of
  // splits that a search of a hundred results cannot afford (logs/2026-11-27-search-replay-6.md).
  void features(const Configuration& c, std::vector<double>& f) const {
    f.resize(c.size());
    for (std::size_t p = 0; p < c.size(); ++p) f[p] = value_[p][c[p]];
    for (const auto& [a, b] : products_) f.push_back(log_value_[a][c[a]] + log_value_[b][c[b]]);
  }

  // Each parameter value's feature, and its logarithm where the product of its parameter with
  // another is a feature, looked up rather than computed for each candidate (a large space's
  // sample is tens of thousands per proposal). The pairs whose products are features: every pair
  // of parameters with more than one value, all of them positive numbers. Past kMaxProducts pairs
  // (a space of 12 or more such parameters), a random choice of them, drawn once per search, so
  // that the model's cost per proposal stays bounded.
  void choose_features() {
    constexpr std::size_t kMaxProducts = 64;
    std::vector<std::size_t> numeric;
    const auto& params = space().space().parameters();
    value_.assign(params.size(), {});
    log_value_.assign(params.size(), {});
    for (std::size_t p = 0; p < params.size(); ++p) {
      bool positive = params[p].values.size() > 1;
      for (std::size_t i = 0; i < params[p].values.size(); ++i) {
        const Value& v = params[p].values[i];
        value_[p].push_back((v.is_number() || v.kind() == Value::Kind::boolean)
                                ? v.as_double()
                                : static_cast<double>(i));
        positive = positive && v.is_number() && v.as_double() > 0;
      }
      if (!positive) continue;
      numeric.push_back(p);
      for (double v : value_[p]) log_value_[p].push_back(std::log(v));
    }
    products_.clear();
    for (std::size_t a = 0; a < numeric.size(); ++a)
      for (std::size_t b = a + 1; b < numeric.size(); ++b)
        products_.emplace_back(numeric[a], numeric[b]);
    if (products_.size() > kMaxProducts) {
      std::shuffle(products_.begin(), products_.end(), rng());
      products_.resize(kMaxProducts);
    }
  }

  // A candidate's features. Those of a small space (the whole of which is scanned at every
  // proposal) are computed once per search: decoding every configuration again at each proposal
  // was most of a replay's time.
  const std::vector<double>& candidate_features(std::size_t i, std::vector<double>& scratch) {
    const std::size_t n = space().size();
    if (n > scan_limit()) {
      features(space().at(i), scratch);
      return scratch;
    }
    if (feature_cache_.empty()) {
      feature_cache_.resize(n);
      for (std::size_t k = 0; k < n; ++k) features(space().at(k), feature_cache_[k]);
    }
    return feature_cache_[i];
  }

  // The local step's candidates: the incumbent's one-parameter neighbourhood, untried. Once
  // kStalled results in a row have not improved on the incumbent, the neighbourhoods of the few
  // fastest so far (the global candidates' centres) together: the incumbent's own has been ranked
  // at every local step since and has not paid, and a search held in one basin (in a constrained
  // space, one whose one-parameter neighbours are mostly invalid) spends a third of its proposals
  // there. Chosen at window 16 over every recorded family (logs/2026-11-27-search-replay-7.md):
  // better at 100 on each, no worse at 200 beyond noise (at window 1, a little worse on the hub
  // at 100, within noise). Skipping the local step instead lost at 200 on gemm; two-parameter
  // moves did no better.
  std::vector<std::size_t> local_candidates() const {
    constexpr std::ptrdiff_t kStalled = 10;
    std::vector<std::size_t> out;
    const auto add = [&](std::size_t centre) {
      for (std::size_t i : neighbours(centre))
        if (!was_tried(i)) out.push_back(i);
    };
    const std::ptrdiff_t results_since_best = &history().back() - best();
    if (results_since_best < kStalled)
      add(best()->index);
    else
      for (const auto& [time_ns, index] : best_ok_) add(index);
    return out;
  }

  std::vector<std::size_t> global_candidates() {
    std::vector<std::size_t> out;
    const std::size_t n = space().size();
    if (n <= scan_limit()) {
      for (std::size_t i = 0; i < n; ++i)
        if (!was_tried(i)) out.push_back(i);
      return out;
    }
    std::uniform_int_distribution<std::size_t> pick(0, n - 1);
    const std::size_t draws = at_equal_cost(opt_.random_candidates);
    for (std::size_t k = 0; k < draws; ++k) {
      const std::size_t i = pick(rng());
      if (!was_tried(i)) out.push_back(i);
    }
    for (const auto& [time_ns, index] : best_ok_)
      for (std::size_t i : neighbours(index))
        if (!was_tried(i)) out.push_back(i);
    return out;
  }

  // The forest is refitted at every proposal while the results are few (up to 512: every budget
  // the replay logs measured, 100 to 400, proposes as before), then each time the data grew by a
  // sixteenth: refitting on all n results at every proposal made a session's cost grow with the
  // square of its budget (replay: 1,000 took 15 s, 2,000 over 60 s), and one more result among
  // thousands changes the model little.
  bool refit_due() const {
    constexpr std::size_t kEveryStepUpTo = 512;
    if (fitted_rows_ == 0 || x_.size() <= kEveryStepUpTo) return true;
    return x_.size() >= fitted_rows_ + fitted_rows_ / 16;
  }

  const ModelOptions opt_;
  detail::Forest forest_;
  std::vector<std::vector<double>> x_;
  std::vector<double> y_;
  std::vector<std::size_t> failed_rows_;
  std::vector<std::pair<double, std::size_t>> best_ok_;        // (time_ns, index), fastest first
  std::size_t fitted_rows_ = 0;                                // rows of the last fit
  std::vector<std::vector<double>> feature_cache_;             // per position, small spaces only
  std::vector<std::pair<std::size_t, std::size_t>> products_;  // parameter pairs, as features
  std::vector<std::vector<double>> value_, log_value_;         // [parameter][value position]
};

}  // namespace

void detail::register_model_strategy() {
  register_strategy({"model",
                     "random-forest cost model proposes by expected improvement; measurements "
                     "decide",
                     [] { return std::make_unique<ModelGuided>(ModelOptions{}); }});
  register_strategy({"hybrid",
                     "random-forest model, expected improvement; global proposals alternate with "
                     "one-parameter moves around the best so far",
                     [] {
                       ModelOptions o;
                       o.local_every = 3;
                       return std::make_unique<ModelGuided>(o);
                     }});
  register_strategy({"thompson",
                     "the hybrid with Thompson sampling: each proposal the best by one tree of the "
                     "random forest drawn at random",
                     [] {
                       ModelOptions o;
                       o.local_every = 3;
                       o.acquisition = Acquisition::thompson;
                       return std::make_unique<ModelGuided>(o);
                     }});
}

}  // namespace ktune::tune
