// A portfolio ("portfolio"): member strategies search together, and the budget goes to whichever
// of them is improving. Every result is fed to every member, so each learns from all evaluations;
// each proposal comes from one member, drawn by probability matching (adaptive pursuit): a
// member's share follows how often its recent proposals improved on the best result known when
// they came back, never below a floor, so a member that stalls keeps being tried and one that
// finds improvements gets more of the budget. Proposals already made by another member, and
// still waiting for their result, are excluded from every member, so a window of proposals ahead
// of results (a session's --prefetch) is spread over the members and never repeats. The start is
// the model strategies' space-filling design, shared.
//
// The members: one random-forest model ranked two ways, as a portfolio of acquisition functions
// (GP-Hedge's idea), expected improvement ("hybrid"), which exploits what the model is sure of,
// and Thompson sampling ("thompson"), which samples the model's uncertainty a tree at a time; and
// uniform random search ("random"), which trusts no model. Both model members share one failure
// of kind: the forest judges a configuration it has no data near by the data it has, and where
// that misleads (an optimum walled in by failing configurations, a basin the start missed, a
// space unlike any the settings were chosen on) no amount of ranking by it proposes there: the
// search stalls at a fraction of the optimum that random search would pass. Random's proposals
// land where the model would never look; while they do not improve, its share stays at the
// floor (a tenth of the budget); once they do, the pursuit moves the budget to it, and every
// result it finds is the models' data too. Issue 45's held-out spaces showed the cost of having
// no such member: `thompson` alone stalled on two of four Kernel Tuner convolution caches, and
// the portfolio of the two model members had the better worst family
// (logs/2026-11-28-search-replay-8.md has the tables that made this the default, judged by the
// worst family and the worst GPU). Nothing here is read off a recorded space: the members are the
// registered strategies as they are, the floor and the learning rate are the usual settings of
// probability matching.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "builtin_strategies.hpp"
#include "ktune/tune/strategy.hpp"

namespace ktune::tune {
namespace {

struct PortfolioOptions {
  std::vector<std::string> members;
  double floor = 0.1;  // each member's least share of the proposals
  double rate = 0.2;   // how fast a member's quality follows its rewards
};

class Portfolio final : public Strategy {
 public:
  explicit Portfolio(PortfolioOptions opt) : opt_(std::move(opt)) {}

 protected:
  void on_begin() override {
    members_.clear();
    quality_.assign(opt_.members.size(), 1.0);
    origin_.clear();
    best_log_ = INFINITY;
    for (const auto& name : opt_.members) {
      members_.push_back(make_strategy(name));
      members_.back()->begin(space(), rng()(), budget());
    }
  }

  std::optional<std::size_t> next() override {
    const std::size_t initial = std::clamp<std::size_t>(budget() / 10, 5, 20);
    std::optional<std::size_t> choice;
    std::size_t from = members_.size();  // the start belongs to no member
    if (history().size() < initial || !best()) {
      choice = spread_untried();
    } else {
      from = pick_member();
      for (int attempt = 0; attempt < 4 && !choice; ++attempt) {
        const auto i = members_[from]->propose();
        if (!i) break;
        if (!was_tried(*i)) choice = i;
      }
    }
    if (!choice) return std::nullopt;  // propose() falls back to a random untried one
    for (std::size_t m = 0; m < members_.size(); ++m)
      if (m != from) members_[m]->exclude(*choice);
    origin_[*choice] = from;
    return choice;
  }

  void on_result(const Evaluation& e) override {
    for (auto& m : members_) m->observe(e);
    const auto it = origin_.find(e.index);
    const std::size_t from = it == origin_.end() ? members_.size() : it->second;
    if (it != origin_.end()) origin_.erase(it);
    const bool improved = e.status == Status::ok && std::log(e.time_ns) < best_log_;
    if (e.status == Status::ok) best_log_ = std::min(best_log_, std::log(e.time_ns));
    if (from < members_.size())
      quality_[from] += opt_.rate * ((improved ? 1.0 : 0.0) - quality_[from]);
  }

 private:
  std::size_t pick_member() {
    const std::size_t k = members_.size();
    double total = 0;
    for (double q : quality_) total += q;
    const double spare = std::max(0.0, 1.0 - opt_.floor * static_cast<double>(k));
    double u = std::uniform_real_distribution<double>(0, 1)(rng());
    for (std::size_t m = 0; m < k; ++m) {
      const double p =
          opt_.floor + spare * (total > 0 ? quality_[m] / total : 1.0 / static_cast<double>(k));
      if (u < p) return m;
      u -= p;
    }
    return k - 1;
  }

  const PortfolioOptions opt_;
  std::vector<std::unique_ptr<Strategy>> members_;
  std::vector<double> quality_;                          // per member, in [0, 1]
  std::unordered_map<std::size_t, std::size_t> origin_;  // pending proposal -> member
  double best_log_ = INFINITY;
};

}  // namespace

void detail::register_portfolio_strategy() {
  register_strategy(
      {"portfolio",
       "thompson, hybrid (expected improvement) and random search together on "
       "shared results; the budget goes to whichever is improving (default)",
       [] {
         return std::make_unique<Portfolio>(PortfolioOptions{{"thompson", "hybrid", "random"}});
       }});
}

}  // namespace ktune::tune
