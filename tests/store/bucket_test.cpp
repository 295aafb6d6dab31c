#include "ktune/store/bucket.hpp"

#include <limits>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"

namespace ktune::store {
namespace {

std::string name_of(const BucketPolicy& p, std::vector<std::int64_t> shape) {
  return bucket_name(bucket_of(p, shape));
}

TEST(Bucket, ExactIsTheDefault) {
  EXPECT_EQ(name_of({}, {4096, 4096, 1000}), "4096x4096x1000");
}

TEST(Bucket, PowerOfTwoCoversTheOctaveBelow) {
  BucketPolicy p{{DimRule{BucketKind::pow2}}};
  EXPECT_EQ(name_of(p, {1}), "1");
  EXPECT_EQ(name_of(p, {2}), "2");
  EXPECT_EQ(name_of(p, {3}), "3-4");
  EXPECT_EQ(name_of(p, {4096}), "2049-4096");
  EXPECT_EQ(name_of(p, {4097, 17}), "4097-8192x17-32");  // one rule applies to every dim
}

TEST(Bucket, MultiplePadsUp) {
  BucketPolicy p{{DimRule{BucketKind::multiple, 128}, DimRule{}}};
  EXPECT_EQ(name_of(p, {1, 7}), "1-128x7");
  EXPECT_EQ(name_of(p, {128, 7}), "1-128x7");
  EXPECT_EQ(name_of(p, {129, 7}), "129-256x7");
  EXPECT_EQ(name_of(p, {129, 7, 9}), "129-256x7x9");  // undeclared dims are exact
}

// Sizes near the top of int64 once spun for ever (pow2: the next power of two overflowed) or
// named negative buckets (multiple: size + m - 1 overflowed).
TEST(Bucket, SizesNearTheTopOfInt64ShareAnOpenTopBucket) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t k62 = std::int64_t{1} << 62;
  BucketPolicy pow2{{DimRule{BucketKind::pow2}}};
  EXPECT_EQ(name_of(pow2, {k62}), fmt::format("{}-{}", k62 / 2 + 1, k62));
  EXPECT_EQ(name_of(pow2, {k62 + 1}), fmt::format("{}-inf", k62 + 1));
  EXPECT_EQ(name_of(pow2, {kMax}), fmt::format("{}-inf", k62 + 1));
  BucketPolicy mult{{DimRule{BucketKind::multiple, 1000}}};
  const std::int64_t last = kMax / 1000 * 1000;  // the highest multiple that fits
  EXPECT_EQ(name_of(mult, {last}), fmt::format("{}-{}", last - 999, last));
  EXPECT_EQ(name_of(mult, {last + 1}), fmt::format("{}-inf", last + 1));
  EXPECT_EQ(name_of(mult, {kMax}), fmt::format("{}-inf", last + 1));
  BucketPolicy huge{{DimRule{BucketKind::multiple, kMax}}};  // one bucket: every size
  EXPECT_EQ(name_of(huge, {kMax}), "1-inf");
  EXPECT_EQ(name_of(huge, {1}), "1-inf");
}

TEST(Bucket, ExplicitRangesWithAnOpenTop) {
  BucketPolicy p{{DimRule{BucketKind::ranges, 0, {256, 1024}}}};
  EXPECT_EQ(name_of(p, {1}), "1-256");
  EXPECT_EQ(name_of(p, {256}), "1-256");
  EXPECT_EQ(name_of(p, {257}), "257-1024");
  EXPECT_EQ(name_of(p, {1025}), "1025-inf");
}

TEST(Bucket, PolicyJsonRoundTripsAndRejectsNonsense) {
  BucketPolicy p{{DimRule{BucketKind::pow2}, DimRule{BucketKind::multiple, 64},
                  DimRule{BucketKind::ranges, 0, {8, 16}}}};
  const nlohmann::json j = p;
  EXPECT_EQ(j.dump(), R"({"dims":[{"kind":"pow2"},{"kind":"multiple","multiple":64},)"
                      R"({"bounds":[8,16],"kind":"ranges"}]})");
  EXPECT_EQ(nlohmann::json(j.get<BucketPolicy>()), j);
  EXPECT_THROW(nlohmann::json::parse(R"({"dims":[{"kind":"log"}]})").get<BucketPolicy>(), Error);
  EXPECT_THROW(validate(BucketPolicy{{DimRule{BucketKind::multiple, 0}}}, "spec"), Error);
  EXPECT_THROW(validate(BucketPolicy{{DimRule{BucketKind::ranges, 0, {16, 8}}}}, "spec"), Error);
}

TEST(Bucket, DistanceIsInOctaves) {
  const std::vector<std::int64_t> a{1024, 64}, b{4096, 32};
  EXPECT_DOUBLE_EQ(shape_distance(a, b), 3.0);
  EXPECT_DOUBLE_EQ(shape_distance(a, a), 0.0);
}

TEST(Bucket, ShapesMustBePositive) {
  EXPECT_THROW(validate_shape(std::vector<std::int64_t>{}, "q"), Error);
  EXPECT_THROW(validate_shape(std::vector<std::int64_t>{4, -1}, "q"), Error);
  EXPECT_NO_THROW(validate_shape(std::vector<std::int64_t>{4, 1}, "q"));
}

TEST(Bucket, NamedSizesFollowTheDeclaredDimensionNames) {
  const BucketPolicy named{{DimRule{.name = "m"}, DimRule{.name = "k"}}};
  const std::vector<NamedSize> sizes{{"k", 32}, {"m", 1024}};
  EXPECT_EQ(shape_of(named, sizes, "gemm", "--shape"), (std::vector<std::int64_t>{1024, 32}));
  EXPECT_THROW(shape_of(named, std::vector<NamedSize>{{"m", 4}}, "gemm", "--shape"), Error);
  EXPECT_THROW(
      shape_of(named, std::vector<NamedSize>{{"m", 4}, {"k", 4}, {"n", 4}}, "gemm", "--shape"),
      Error);
  // An op that names no dimensions takes the sizes in the order written.
  EXPECT_EQ(shape_of(BucketPolicy{}, sizes, "scale", "--shape"),
            (std::vector<std::int64_t>{32, 1024}));
  nlohmann::json j = named;
  EXPECT_EQ(j["dims"][1]["name"], "k");
  EXPECT_EQ(j.get<BucketPolicy>().dims[1].name, "k");
}

}  // namespace
}  // namespace ktune::store
