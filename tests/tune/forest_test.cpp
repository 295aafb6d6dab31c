#include "forest.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ktune::tune::detail {
namespace {

// The plainest CART with the forest's rules: each node sorts its rows by (value, target) for
// each feature it tries. It draws from the generator in the forest's order (the bootstrap, then a
// shuffle of the features per node), so with the same seed it must grow the very same trees.
struct ReferenceTree {
  struct Node {
    int feature = -1;
    double threshold = 0, value = 0;
    int left = -1, right = -1;
  };
  std::vector<Node> nodes;

  int build(std::vector<int> rows, int depth, const std::vector<std::vector<double>>& x,
            const std::vector<double>& y, const ForestOptions& opt, std::mt19937_64& rng) {
    const int id = static_cast<int>(nodes.size());
    nodes.push_back({});
    double sum = 0;
    for (int r : rows) sum += y[r];
    const int count = static_cast<int>(rows.size());
    nodes[id].value = sum / count;
    if (depth >= opt.max_depth || count < 2 * opt.min_leaf) return id;
    const int d = static_cast<int>(x[0].size());
    std::vector<int> features(d);
    std::iota(features.begin(), features.end(), 0);
    std::shuffle(features.begin(), features.end(), rng);
    const int tries = std::max(1, static_cast<int>(std::ceil(opt.feature_share * d)));
    double best_gain = sum * sum / count + 1e-12, best_threshold = 0;
    int best_feature = -1;
    for (int k = 0; k < tries; ++k) {
      std::vector<std::pair<double, double>> col;
      for (int r : rows) col.emplace_back(x[r][features[k]], y[r]);
      std::sort(col.begin(), col.end());
      double left = 0;
      for (int i = 0; i + 1 < count; ++i) {
        left += col[i].second;
        const int nl = i + 1, nr = count - nl;
        if (col[i].first == col[i + 1].first || nl < opt.min_leaf || nr < opt.min_leaf) continue;
        const double gain = left * left / nl + (sum - left) * (sum - left) / nr;
        if (gain > best_gain) {
          best_gain = gain;
          best_feature = features[k];
          best_threshold = 0.5 * (col[i].first + col[i + 1].first);
        }
      }
    }
    if (best_feature < 0) return id;
    const auto mid = std::partition(rows.begin(), rows.end(),
                                    [&](int r) { return x[r][best_feature] <= best_threshold; });
    const int l = build({rows.begin(), mid}, depth + 1, x, y, opt, rng);
    const int r = build({mid, rows.end()}, depth + 1, x, y, opt, rng);
    nodes[id] = {best_feature, best_threshold, nodes[id].value, l, r};
    return id;
  }

  double predict(const std::vector<double>& x) const {
    int i = 0;
    while (nodes[i].feature >= 0)
      i = x[nodes[i].feature] <= nodes[i].threshold ? nodes[i].left : nodes[i].right;
    return nodes[i].value;
  }
};

// Rows with many ties: each feature takes a handful of values, and some rows repeat.
void tied_rows(std::uint64_t seed, std::vector<std::vector<double>>& x, std::vector<double>& y) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> level(0, 5);
  std::normal_distribution<double> noise(0, 0.1);
  for (int i = 0; i < 150; ++i) {
    if (i % 7 == 6) {  // a repeated configuration, measured again
      x.push_back(x[i - 3]);
      y.push_back(y[i - 3] + noise(rng));
      continue;
    }
    std::vector<double> row(5);
    for (auto& v : row) v = level(rng);
    row[4] = std::log(1 + row[0]) + std::log(1 + row[1]);  // a product's logarithm
    y.push_back(std::sin(row[0]) + 0.5 * row[1] * row[2] + noise(rng));
    x.push_back(std::move(row));
  }
}

TEST(Forest, GrowsTheTreesOfAPlainSplitSearchThatSortsEachNode) {
  for (std::uint64_t seed : {1, 2, 3}) {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    tied_rows(seed, x, y);
    ForestOptions opt;
    opt.trees = 8;
    std::mt19937_64 rng(seed + 100), reference_rng(seed + 100);
    Forest forest;
    forest.fit(x, y, opt, rng);

    std::uniform_int_distribution<int> pick(0, static_cast<int>(x.size()) - 1);
    for (std::size_t t = 0; t < forest.trees(); ++t) {
      std::vector<int> rows(x.size());
      for (auto& r : rows) r = pick(reference_rng);
      ReferenceTree reference;
      reference.build(rows, 0, x, y, opt, reference_rng);
      for (const auto& row : x) EXPECT_EQ(forest.predict_tree(t, row), reference.predict(row));
      for (double a = -0.5; a < 6; a += 0.5)  // between the seen values too
        for (double b = -0.5; b < 6; b += 0.5) {
          const std::vector<double> probe{a, b, 2.5, 1.0, std::log(1 + a) + std::log(1 + b)};
          EXPECT_EQ(forest.predict_tree(t, probe), reference.predict(probe));
        }
    }
    EXPECT_EQ(rng(), reference_rng()) << "the generator is left where the plain search leaves it";
  }
}

TEST(Forest, LearnsAStepAndIsSureOfItAwayFromTheStep) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i < 200; ++i) {
    x.push_back({u(rng), u(rng)});  // the first feature is noise
    y.push_back(x.back()[1] > 0.5 ? 3.0 : 1.0);
  }
  Forest forest;
  forest.fit(x, y, ForestOptions{}, rng);
  double mean, sd;
  forest.predict({0.3, 0.1}, mean, sd);
  EXPECT_NEAR(mean, 1.0, 1e-9);
  EXPECT_LT(sd, 1e-9);
  forest.predict({0.6, 0.9}, mean, sd);
  EXPECT_NEAR(mean, 3.0, 1e-9);
}

}  // namespace
}  // namespace ktune::tune::detail
