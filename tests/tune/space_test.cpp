#include "ktune/spec/space.hpp"

#include <gtest/gtest.h>

#include <set>

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
