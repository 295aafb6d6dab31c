#include "forest.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ktune::tune::detail {

void Forest::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                 const ForestOptions& opt, std::mt19937_64& rng) {
  trees_.assign(static_cast<std::size_t>(opt.trees), {});
  const int n = static_cast<int>(x.size());
  if (n == 0) return;
  Fit fit{y, opt, rng, static_cast<std::size_t>(n), x[0].size()};
  fit.x.resize(fit.d * fit.n);
  for (std::size_t r = 0; r < fit.n; ++r)
    for (std::size_t f = 0; f < fit.d; ++f) fit.x[f * fit.n + r] = x[r][f];
  // Each feature's order of all rows, by (value, target); a tree's bootstrap sample takes it over
  // with each row repeated as often as it was drawn.
  std::vector<int> order(fit.d * fit.n);
  for (std::size_t f = 0; f < fit.d; ++f) {
    const auto col = order.begin() + static_cast<std::ptrdiff_t>(f * fit.n);
    std::iota(col, col + n, 0);
    std::sort(col, col + n, [&](int a, int b) {
      const double xa = fit.value(f, a), xb = fit.value(f, b);
      return xa < xb || (xa == xb && y[a] < y[b]);
    });
  }
  fit.sorted.resize(fit.d * fit.n);
  fit.scratch.resize(fit.n);
  std::vector<int> drawn(fit.n);
  std::uniform_int_distribution<int> pick(0, n - 1);
  for (auto& t : trees_) {
    std::vector<int> rows(static_cast<std::size_t>(n));
    std::fill(drawn.begin(), drawn.end(), 0);
    for (auto& r : rows) {  // bootstrap sample
      r = pick(rng);
      ++drawn[r];
    }
    auto out = fit.sorted.begin();
    for (int r : order) out = std::fill_n(out, drawn[r], r);
    build(t, fit, rows, 0, n, 0);
  }
}

// The rows of a node are rows[begin, end), and, for each feature f, the same rows ordered by
// (value of f, target) in sorted[f * n + begin, f * n + end): ordered once per fit, and split with
// the node by a stable partition, so that a node's scan of a feature needs no sort of its own
// (the sort per node and feature was most of a search's time).
int Forest::build(Tree& t, Fit& fit, std::vector<int>& rows, int begin, int end, int depth) {
  const int id = static_cast<int>(t.size());
  t.push_back({});
  double sum = 0;
  for (int i = begin; i < end; ++i) sum += fit.y[rows[i]];
  const int count = end - begin;
  t[id].value = sum / count;
  if (depth >= fit.opt.max_depth || count < 2 * fit.opt.min_leaf) return id;

  const int d = static_cast<int>(fit.d);
  std::vector<int> features(static_cast<std::size_t>(d));
  std::iota(features.begin(), features.end(), 0);
  std::shuffle(features.begin(), features.end(), fit.rng);
  const int tries = std::max(1, static_cast<int>(std::ceil(fit.opt.feature_share * d)));

  // Best split by the reduction of the squared error: maximise sumL^2/nL + sumR^2/nR.
  double best_gain = sum * sum / count + 1e-12;
  int best_feature = -1;
  double best_threshold = 0;
  for (int k = 0; k < tries; ++k) {
    const int f = features[k];
    const int* col = fit.sorted.data() + static_cast<std::size_t>(f) * fit.n;
    double left = 0;
    for (int i = begin; i + 1 < end; ++i) {
      left += fit.y[col[i]];
      const double here = fit.value(f, col[i]), next = fit.value(f, col[i + 1]);
      if (here == next) continue;
      const int nl = i + 1 - begin, nr = count - nl;
      if (nl < fit.opt.min_leaf || nr < fit.opt.min_leaf) continue;
      const double right = sum - left;
      const double gain = left * left / nl + right * right / nr;
      if (gain > best_gain) {
        best_gain = gain;
        best_feature = f;
        best_threshold = 0.5 * (here + next);
      }
    }
  }
  if (best_feature < 0) return id;
  const auto goes_left = [&](int r) { return fit.value(best_feature, r) <= best_threshold; };
  const auto mid = std::partition(rows.begin() + begin, rows.begin() + end, goes_left);
  const int split = static_cast<int>(mid - rows.begin());
  for (std::size_t f = 0; f < fit.d; ++f) {
    int* col = fit.sorted.data() + f * fit.n;
    int kept = begin, moved = 0;
    for (int i = begin; i < end; ++i) {
      const int r = col[i];
      if (goes_left(r))
        col[kept++] = r;
      else
        fit.scratch[moved++] = r;
    }
    std::copy(fit.scratch.begin(), fit.scratch.begin() + moved, col + kept);
  }
  const int l = build(t, fit, rows, begin, split, depth + 1);
  const int r = build(t, fit, rows, split, end, depth + 1);
  t[id].feature = best_feature;
  t[id].threshold = best_threshold;
  t[id].left = l;
  t[id].right = r;
  return id;
}

double Forest::predict_tree(std::size_t tree, const std::vector<double>& x) const {
  const Tree& t = trees_.at(tree);
  int i = 0;
  while (t[i].feature >= 0) i = x[t[i].feature] <= t[i].threshold ? t[i].left : t[i].right;
  return t[i].value;
}

void Forest::predict(const std::vector<double>& x, double& mean, double& stddev) const {
  double s = 0, s2 = 0;
  for (std::size_t tree = 0; tree < trees_.size(); ++tree) {
    const double v = predict_tree(tree, x);
    s += v;
    s2 += v * v;
  }
  const double n = static_cast<double>(trees_.size());
  mean = s / n;
  stddev = std::sqrt(std::max(0.0, s2 / n - mean * mean));
}

}  // namespace ktune::tune::detail
