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
  std::uniform_int_distribution<int> pick(0, n - 1);
  for (auto& t : trees_) {
    std::vector<int> rows(static_cast<std::size_t>(n));
    for (auto& r : rows) r = pick(rng);  // bootstrap sample
    build(t, rows, 0, n, 0, x, y, opt, rng);
  }
}

int Forest::build(Tree& t, std::vector<int>& rows, int begin, int end, int depth,
                  const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                  const ForestOptions& opt, std::mt19937_64& rng) {
  const int id = static_cast<int>(t.size());
  t.push_back({});
  double sum = 0;
  for (int i = begin; i < end; ++i) sum += y[rows[i]];
  const int count = end - begin;
  t[id].value = sum / count;
  if (depth >= opt.max_depth || count < 2 * opt.min_leaf) return id;

  const int d = static_cast<int>(x[0].size());
  std::vector<int> features(static_cast<std::size_t>(d));
  std::iota(features.begin(), features.end(), 0);
  std::shuffle(features.begin(), features.end(), rng);
  const int tries = std::max(1, static_cast<int>(std::ceil(opt.feature_share * d)));

  // Best split by the reduction of the squared error: maximise sumL^2/nL + sumR^2/nR.
  double best_gain = sum * sum / count + 1e-12;
  int best_feature = -1;
  double best_threshold = 0;
  std::vector<std::pair<double, double>> col(static_cast<std::size_t>(count));
  for (int k = 0; k < tries; ++k) {
    const int f = features[k];
    for (int i = 0; i < count; ++i) col[i] = {x[rows[begin + i]][f], y[rows[begin + i]]};
    std::sort(col.begin(), col.end());
    double left = 0;
    for (int i = 0; i + 1 < count; ++i) {
      left += col[i].second;
      if (col[i].first == col[i + 1].first) continue;
      const int nl = i + 1, nr = count - nl;
      if (nl < opt.min_leaf || nr < opt.min_leaf) continue;
      const double right = sum - left;
      const double gain = left * left / nl + right * right / nr;
      if (gain > best_gain) {
        best_gain = gain;
        best_feature = f;
        best_threshold = 0.5 * (col[i].first + col[i + 1].first);
      }
    }
  }
  if (best_feature < 0) return id;
  const auto mid = std::partition(rows.begin() + begin, rows.begin() + end,
                                  [&](int r) { return x[r][best_feature] <= best_threshold; });
  const int split = static_cast<int>(mid - rows.begin());
  const int l = build(t, rows, begin, split, depth + 1, x, y, opt, rng);
  const int r = build(t, rows, split, end, depth + 1, x, y, opt, rng);
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
