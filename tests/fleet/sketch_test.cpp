// The quantile sketch against exact quantiles of the same data: several distributions, merges of
// many parts, and its serialised forms.
#include "ktune/fleet/sketch.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"

namespace ktune::fleet {
namespace {

// The sketch's rank convention: the value at index floor(q * (n - 1)) of the sorted data.
double exact_quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

void expect_within_accuracy(const QuantileSketch& s, const std::vector<double>& data,
                            const char* what) {
  for (double q : {0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    const double exact = exact_quantile(data, q);
    const double got = s.quantile(q);
    EXPECT_LE(std::abs(got - exact), s.relative_accuracy() * exact * (1 + 1e-9))
        << what << " q=" << q << " exact " << exact << " sketch " << got;
  }
}

std::vector<double> draw(const char* kind, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(n);
  std::string k = kind;
  for (auto& x : v) {
    if (k == "uniform")
      x = std::uniform_real_distribution<double>(1e3, 1e5)(rng);
    else if (k == "lognormal")
      x = std::lognormal_distribution<double>(9.0, 1.5)(rng);  // ~8 us median, decades of tail
    else if (k == "bimodal")  // a kernel whose shape or cache state splits its times in two
      x = std::bernoulli_distribution(0.3)(rng) ? std::normal_distribution<double>(2e5, 1e4)(rng)
                                                : std::normal_distribution<double>(5e3, 2e2)(rng);
    else  // pareto: heavy tail
      x = 2e3 / std::pow(1 - std::uniform_real_distribution<double>(0, 1)(rng), 1 / 1.5);
  }
  return v;
}

TEST(QuantileSketch, QuantilesWithinRelativeAccuracyOfExact) {
  for (const char* kind : {"uniform", "lognormal", "bimodal", "pareto"}) {
    const auto data = draw(kind, 20000, 7);
    QuantileSketch s;
    for (double x : data) s.add(x);
    EXPECT_EQ(s.count(), data.size());
    expect_within_accuracy(s, data, kind);
  }
}

TEST(QuantileSketch, MergeOfManyPartsEqualsSketchOfTheWhole) {
  for (const char* kind : {"lognormal", "bimodal", "pareto"}) {
    const auto data = draw(kind, 30000, 11);
    QuantileSketch whole;
    for (double x : data) whole.add(x);
    // 300 parts of uneven size, merged in a tree and in a line: both give the whole's sketch.
    std::vector<QuantileSketch> parts;
    std::mt19937_64 rng(3);
    std::size_t i = 0;
    while (i < data.size()) {
      const std::size_t n = std::min<std::size_t>(data.size() - i, 1 + rng() % 200);
      QuantileSketch p;
      for (std::size_t k = 0; k < n; ++k) p.add(data[i + k]);
      parts.push_back(p);
      i += n;
    }
    QuantileSketch line;
    for (const auto& p : parts) line.merge(p);
    EXPECT_TRUE(line == whole) << kind;
    while (parts.size() > 1) {
      std::vector<QuantileSketch> next;
      for (std::size_t k = 0; k + 1 < parts.size(); k += 2) {
        next.push_back(parts[k]);
        next.back().merge(parts[k + 1]);
      }
      if (parts.size() % 2) next.push_back(parts.back());
      parts = next;
    }
    EXPECT_TRUE(parts[0] == whole) << kind;
    expect_within_accuracy(parts[0], data, kind);
  }
}

TEST(QuantileSketch, ZerosAndWeightsAndEmpty) {
  QuantileSketch s;
  EXPECT_EQ(s.quantile(0.5), 0);
  s.add(0, 10);  // zero-length records count, below every bucket
  s.add(1000, 30);
  EXPECT_EQ(s.count(), 40u);
  EXPECT_EQ(s.quantile(0.1), 0);
  EXPECT_NEAR(s.quantile(0.5), 1000, 10);
  EXPECT_NEAR(s.quantile(1), 1000, 10);
}

TEST(QuantileSketch, BytesHexAndJsonRoundTrip) {
  const auto data = draw("lognormal", 5000, 5);
  QuantileSketch s;
  for (double x : data) s.add(x);
  s.add(0, 3);
  EXPECT_TRUE(QuantileSketch::from_bytes(s.to_bytes()) == s);
  EXPECT_TRUE(QuantileSketch::from_hex(s.to_hex()) == s);
  EXPECT_TRUE(QuantileSketch::from_json(s.to_json()) == s);
  EXPECT_EQ(s.to_json().at("schema_version"), kSketchSchemaVersion);
  EXPECT_LT(s.to_bytes().size(), 2000u);  // a few hundred buckets of varints
  const QuantileSketch empty;
  EXPECT_TRUE(QuantileSketch::from_bytes(empty.to_bytes()) == empty);
}

TEST(QuantileSketch, BadInputIsOneSentence) {
  QuantileSketch s;
  s.add(500);
  std::string b = s.to_bytes();
  EXPECT_THROW(QuantileSketch::from_bytes(b.substr(0, b.size() - 1)), Error);
  EXPECT_THROW(QuantileSketch::from_bytes(b + "x"), Error);
  EXPECT_THROW(QuantileSketch::from_hex("zz"), Error);
  EXPECT_THROW(QuantileSketch::from_bytes(""), Error);
  try {
    QuantileSketch::from_hex("0", "fleet_aggregates.sketch of run 7");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fleet_aggregates.sketch of run 7"), std::string::npos);
  }
  QuantileSketch other(0.02);
  EXPECT_THROW(s.merge(other), Error);
}

}  // namespace
}  // namespace ktune::fleet
