#pragma once
// A small random forest regressor (bagged CART trees with random feature subsets): the cost model
// of the model-guided strategy. Its spread across trees serves as the uncertainty.
#include <cstdint>
#include <random>
#include <vector>

namespace ktune::tune::detail {

struct ForestOptions {
  int trees = 24;
  int max_depth = 14;
  int min_leaf = 2;            // samples per leaf
  double feature_share = 0.7;  // features tried per split
};

class Forest {
 public:
  // x: n rows of d features, y: n targets. Deterministic for a given rng state.
  void fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
           const ForestOptions& opt, std::mt19937_64& rng);
  // Mean and standard deviation of the trees' predictions.
  void predict(const std::vector<double>& x, double& mean, double& stddev) const;
  // One tree's prediction (tree < trees()): a draw from the forest's spread.
  double predict_tree(std::size_t tree, const std::vector<double>& x) const;
  std::size_t trees() const { return trees_.size(); }

 private:
  struct Node {
    int feature = -1;  // -1: leaf
    double threshold = 0, value = 0;
    int left = -1, right = -1;
  };
  using Tree = std::vector<Node>;
  // What every node of one fit reads: the features by column, and each feature's order of rows.
  struct Fit {
    const std::vector<double>& y;
    const ForestOptions& opt;
    std::mt19937_64& rng;
    std::size_t n = 0, d = 0;
    std::vector<double> x;             // x[f * n + row]
    std::vector<int> sorted, scratch;  // sorted[f * n + i]: see build()
    double value(std::size_t f, int row) const { return x[f * n + static_cast<std::size_t>(row)]; }
  };
  int build(Tree& t, Fit& fit, std::vector<int>& rows, int begin, int end, int depth);
  std::vector<Tree> trees_;
};

}  // namespace ktune::tune::detail
