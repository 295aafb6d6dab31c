#include "ktune/spec/space.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "datasets.hpp"
#include "ktune/tune/t4.hpp"

namespace ktune::tune {
namespace {

Parameter param(std::string name, std::vector<Value> values) {
  Parameter p;
  p.name = std::move(name);
  p.type = "int";
  p.values = std::move(values);
  return p;
}

Constraint constraint(std::string_view text) {
  return Constraint{Expression::parse(text), {}};
}

TEST(Space, EnumeratesOnlyValidConfigurationsInRankOrder) {
  const SearchSpace s({param("a", {1, 2, 4, 8}), param("b", {1, 2, 3}), param("c", {0, 1})},
                      {constraint("a * b <= 8"), constraint("c == 0 or a > 1")});
  std::vector<Configuration> seen;
  s.for_each([&](const Configuration& c) {
    seen.push_back(c);
    return true;
  });
  // Brute force over the Cartesian product agrees.
  std::vector<Configuration> brute;
  for (std::uint64_t r = 0; r < s.cartesian_size(); ++r)
    if (s.valid(s.unrank(r))) brute.push_back(s.unrank(r));
  EXPECT_EQ(seen, brute);
  EXPECT_EQ(s.count(), 15u);  // 9 (a, b) pairs with a*b <= 8, x2 for c, minus c=1 where a == 1
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_LT(s.rank(seen[i - 1]), s.rank(seen[i]));
  EXPECT_EQ(s.describe(seen[0]), "a=1, b=1, c=0");
}

TEST(Space, RankRoundTripAndLookup) {
  const SearchSpace s({param("a", {1, 2, 4}), param("b", {10, 20})}, {constraint("a != 2")});
  const IndexedSpace idx(s);
  ASSERT_EQ(idx.size(), 4u);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    EXPECT_EQ(s.unrank(s.rank(idx.at(i))), idx.at(i));
    EXPECT_EQ(idx.find(idx.at(i)), i);
  }
  EXPECT_FALSE(idx.find({1, 0}));  // a == 2 is invalid
  EXPECT_FALSE(idx.find({7, 0}));  // out of range
  const auto c = s.from_values({{"a", Value(4.0)}, {"b", Value(20)}});
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (Configuration{2, 1}));
  EXPECT_FALSE(s.from_values({{"a", Value(3)}, {"b", Value(20)}}));
  EXPECT_EQ(s.to_json(*c).dump(), R"({"a":4,"b":20})");
}

TEST(Space, ConstraintsMayReadConstants) {
  MapScope constants;
  constants.set("N", 96);
  const SearchSpace s({param("bx", {16, 32, 64})}, {constraint("N % bx == 0")}, &constants);
  EXPECT_EQ(s.count(), 2u);
  EXPECT_THROW(SearchSpace({param("bx", {16})}, {constraint("M % bx == 0")}), Error);
}

TEST(Space, ConstraintFalseForAllStopsAtOnce) {
  const SearchSpace s({param("a", {1, 2})}, {constraint("1 > 2")});
  EXPECT_EQ(s.count(), 0u);
}

TEST(Space, TenMillionPointsWithoutGigabytes) {
  std::vector<Parameter> ps;
  for (const char* n : {"a", "b", "c", "d", "e", "f", "g"})
    ps.push_back(param(n, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  const SearchSpace s(ps, {constraint("(a + g) % 2 == 0"), constraint("b <= c or d < 9")});
  EXPECT_EQ(s.cartesian_size(), 10'000'000u);
  const IndexedSpace idx(s);
  // (a+g) even: half; b <= c or d < 9 fails for b > c and d == 9: 45/100 * 1/10 of the rest.
  EXPECT_EQ(idx.size(), 5'000'000u - 5'000'000u * 45 / 1000);
  EXPECT_EQ(idx.find(idx.at(idx.size() / 2)), idx.size() / 2);
  // Ranks only: 8 bytes a point, ~38 MB here.
  EXPECT_LE(idx.size() * sizeof(std::uint64_t), 64u << 20);
}

// Every valid configuration by brute force: the Cartesian product filtered by valid(), which checks
// each constraint on the whole configuration. This is what the enumeration must reproduce.
std::vector<Configuration> brute_force(const SearchSpace& s) {
  std::vector<Configuration> out;
  for (std::uint64_t r = 0; r < s.cartesian_size(); ++r)
    if (s.valid(s.unrank(r))) out.push_back(s.unrank(r));
  return out;
}

std::vector<Configuration> enumerated(const SearchSpace& s) {
  std::vector<Configuration> out;
  s.for_each([&](const Configuration& c) {
    out.push_back(c);
    return true;
  });
  return out;
}

TEST(Space, RandomSpacesEnumerateAsTheirFilteredProduct) {
  // Constraints that tie parameters into groups, chain them, read the same parameter twice, and
  // leave some parameters free, declared in any order: the groups' walk must interleave them back
  // into lexicographic order.
  std::mt19937_64 rng(45);
  const char* const templates[] = {
      "{0} <= {1}",           "{0} * {1} <= 6",   "({0} + {1} + {2}) % 3 != 0",
      "{0} != 2 or {1} == 1", "{0} - {1} != {2}", "{0} == {0}"};
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE(trial);
    const std::size_t n = 3 + rng() % 5;
    std::vector<Parameter> ps;
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<Value> values;
      for (std::size_t v = 0, k = 1 + rng() % 4; v < k; ++v) values.emplace_back(int(v + 1));
      ps.push_back(param(fmt::format("p{}", i), values));
    }
    std::vector<Constraint> cs;
    std::string text;
    for (std::size_t k = 0, m = rng() % 5; k < m; ++k) {
      const std::string t = templates[rng() % std::size(templates)];
      const std::string e =
          fmt::format(fmt::runtime(t), fmt::format("p{}", rng() % n), fmt::format("p{}", rng() % n),
                      fmt::format("p{}", rng() % n));
      cs.push_back(constraint(e));
      text += e + "; ";
    }
    SCOPED_TRACE(text);
    const SearchSpace s(ps, cs);
    const auto expected = brute_force(s);
    EXPECT_EQ(enumerated(s), expected);
    EXPECT_EQ(s.count(), expected.size());
    const IndexedSpace idx(s);
    ASSERT_EQ(idx.size(), expected.size());
    EXPECT_FALSE(idx.sampled());
    for (std::size_t i = 0; i < idx.size(); ++i) EXPECT_EQ(idx.at(i), expected[i]);
  }
}

TEST(Space, VisitingStopsWhenAsked) {
  const SearchSpace s({param("a", {1, 2, 3}), param("b", {1, 2, 3})}, {constraint("a != b")});
  std::vector<Configuration> seen;
  s.for_each([&](const Configuration& c) {
    seen.push_back(c);
    return seen.size() < 2;
  });
  EXPECT_EQ(seen, (std::vector<Configuration>{{0, 1}, {0, 2}}));
}

// 21 parameters like BAT's FFT (9 of 3 values, 8 of 4, 4 of 5: 8.1e11 products), declared
// interleaved, with restrictions that leave 635,250 valid ones: the space is built from its
// restrictions, one group at a time, not filtered out of its product.
SearchSpace restricted_fft_like() {
  std::vector<Parameter> ps;
  std::vector<Constraint> cs;
  std::string product = "1";
  for (int i = 0; i < 9; ++i) {
    ps.push_back(param(fmt::format("a{}", i), {0, 1, 2}));
    if (i < 8) ps.push_back(param(fmt::format("u{}", i), {1, 2, 4, 8}));
    if (i < 4) ps.push_back(param(fmt::format("v{}", i), {1, 2, 4, 8, 16}));
    if (i > 0) cs.push_back(constraint(fmt::format("a{} <= a{}", i, i - 1)));
    if (i > 0 && i < 4) cs.push_back(constraint(fmt::format("v{} <= v{}", i, i - 1)));
    if (i < 8) product += fmt::format(" * u{}", i);
  }
  cs.push_back(constraint(product + " <= 8"));
  return SearchSpace(ps, cs);
}

TEST(Space, TwentyOneParametersAndEightHundredBillionProductsEnumerateQuickly) {
  const auto start = std::chrono::steady_clock::now();
  const SearchSpace s = restricted_fft_like();
  EXPECT_EQ(s.parameters().size(), 21u);
  EXPECT_EQ(s.cartesian_size(), 806'215'680'000u);
  EXPECT_EQ(s.groups().size(), 3u);  // the a's, the u's and the v's
  // Non-increasing a's: C(11, 2) = 55; u's with a product <= 8: 165; non-increasing v's:
  // C(8, 4) = 70 (counted by Python over each group's own product).
  EXPECT_EQ(s.count(), 55u * 165u * 70u);
  const IndexedSpace idx(s);
  ASSERT_EQ(idx.size(), 635'250u);
  EXPECT_FALSE(idx.sampled());
  EXPECT_TRUE(idx.valid_count_exact());
  for (std::size_t i = 0; i < idx.size(); i += 997) {
    EXPECT_TRUE(s.valid(idx.at(i))) << s.describe(idx.at(i));
    if (i > 0) EXPECT_LT(s.rank(idx.at(i - 1)), s.rank(idx.at(i)));
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
}

TEST(Space, ALargeValidSetIsSampledNotWalked) {
  // 9.6e7 products, nearly all valid, every parameter read by one constraint: enumerating it took
  // over a minute with no output. The estimate sees the valid set is past what an index keeps, so
  // the index is a random sample of valid configurations, drawn in seconds.
  std::vector<Parameter> ps;
  std::string sum = "p0";
  for (int i = 0; i < 6; ++i) {
    ps.push_back(param(fmt::format("p{}", i), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    if (i > 0) sum += fmt::format(" + p{}", i);
  }
  std::vector<Value> wide;
  for (int v = 0; v < 96; ++v) wide.emplace_back(v);
  ps.push_back(param("p6", wide));
  const auto start = std::chrono::steady_clock::now();
  const SearchSpace s(ps, {constraint(sum + " + p6 != 3")});
  EXPECT_EQ(s.cartesian_size(), 96'000'000u);
  const IndexedSpace idx(s);
  EXPECT_TRUE(idx.sampled());
  EXPECT_FALSE(idx.valid_count_exact());
  EXPECT_EQ(idx.size(), kSampledConfigurations);
  EXPECT_NEAR(idx.valid_count(), 9.6e7, 0.1 * 9.6e7);
  for (std::size_t i = 0; i < idx.size(); i += 1021) EXPECT_TRUE(s.valid(idx.at(i)));
  EXPECT_EQ(idx.find(idx.at(12345)), 12345u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
  // The same sample every time, so a resumed search finds its configurations where they were.
  const IndexedSpace again(s);
  ASSERT_EQ(again.size(), idx.size());
  EXPECT_EQ(again.at(777), idx.at(777));
}

TEST(Space, AnUnconstrainedSpaceIsCountedAtOnceAndSampled) {
  std::vector<Parameter> ps;
  for (int i = 0; i < 21; ++i) ps.push_back(param(fmt::format("p{}", i), {1, 2, 4, 8}));
  const SearchSpace s(ps, {});
  EXPECT_EQ(s.count(), std::uint64_t{1} << 42);
  EXPECT_EQ(s.estimated_count(), 0x1p42);
  const IndexedSpace idx(s);
  EXPECT_TRUE(idx.sampled());
  EXPECT_TRUE(idx.valid_count_exact());
  EXPECT_EQ(idx.valid_count(), 0x1p42);
  EXPECT_EQ(idx.size(), kSampledConfigurations);
  // The walk has no dead ends, so the caller's visitor bounds its time.
  std::size_t seen = 0;
  s.for_each([&](const Configuration& c) {
    EXPECT_EQ(c.back(), seen);
    return ++seen < 3;
  });
  EXPECT_EQ(seen, 3u);
}

TEST(Space, DrawGivesValidConfigurationsOrNone) {
  const SearchSpace s = restricted_fft_like();
  std::uint64_t rng = 7;
  for (int i = 0; i < 200; ++i) {
    const auto c = s.draw(rng);
    ASSERT_TRUE(c);
    EXPECT_TRUE(s.valid(*c)) << s.describe(*c);
  }
  const SearchSpace none({param("a", {1, 2}), param("b", {1, 2})}, {constraint("a + b > 9")});
  EXPECT_FALSE(none.draw(rng));
  EXPECT_EQ(IndexedSpace(none).size(), 0u);
}

TEST(Space, DedispersionSpaceMatchesEveryRecordedT4File) {
  KTUNE_REQUIRE_DATASETS();
  const ProblemSpec spec = ProblemSpec::load(test::dedispersion_dir() / "T1.json");
  const MapScope constants = spec.constants();
  const SearchSpace space = SearchSpace::from_spec(spec, &constants);
  const IndexedSpace idx(space);
  EXPECT_EQ(idx.size(), 11130u);
  for (const char* gpu : {"A100", "A4000", "A6000", "MI250X", "W6600", "W7800"}) {
    SCOPED_TRACE(gpu);
    const T4File t4 = read_t4(test::dedispersion_dir() / (std::string(gpu) + "_T4.json.gz"));
    ASSERT_EQ(t4.results.size(), 11130u);
    std::set<std::size_t> positions;
    for (const auto& r : t4.results) {
      const auto c = space.from_values(r.configuration);
      ASSERT_TRUE(c) << "a recorded configuration is not in the T1 space";
      const auto pos = idx.find(*c);
      ASSERT_TRUE(pos) << space.describe(*c) << " violates a constraint";
      positions.insert(*pos);
    }
    EXPECT_EQ(positions.size(), 11130u);  // all distinct, so exactly the enumerated set
  }
}

}  // namespace
}  // namespace ktune::tune
