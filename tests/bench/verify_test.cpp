// Verification on planted mismatches: one wrong element, a NaN, an unwritten tail; fp16 and bf16
// decoded on the host. No GPU needed: the GPU side only copies the two buffers back.
#include "ktune/bench/verify.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ktune::bench {
namespace {

using cuda::DType;

template <class T>
std::span<const std::byte> bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.25f * static_cast<float>(i) - 3.0f;
  return v;
}

TEST(Verify, IdenticalAndWithinToleranceAgree) {
  const auto ref = ramp(1000);
  auto cand = ref;
  EXPECT_TRUE(
      compare_outputs(bytes(ref), bytes(cand), DType::f32, default_tolerance(DType::f32)).ok);
  for (auto& x : cand) x *= 1.00001f;  // 1e-5 relative: inside f32's 1e-4
  const auto r =
      compare_outputs(bytes(ref), bytes(cand), DType::f32, default_tolerance(DType::f32));
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(r.elements, 1000u);
  EXPECT_GT(r.max_abs_error, 0);
}

TEST(Verify, OneWrongElementFailsAndIsNamed) {
  const auto ref = ramp(1000);
  auto cand = ref;
  cand[417] += 0.5f;
  const auto r =
      compare_outputs(bytes(ref), bytes(cand), DType::f32, default_tolerance(DType::f32), "y");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1u);
  ASSERT_TRUE(r.first_bad);
  EXPECT_EQ(*r.first_bad, 417u);
  EXPECT_FLOAT_EQ(r.first_candidate - r.first_reference, 0.5f);
  EXPECT_NE(r.detail.find("'y': 1 of 1000"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("index 417"), std::string::npos) << r.detail;
}

TEST(Verify, NaNFailsEvenWithHugeTolerance) {
  const auto ref = ramp(64);
  auto cand = ref;
  cand[5] = std::numeric_limits<float>::quiet_NaN();
  const auto r = compare_outputs(bytes(ref), bytes(cand), DType::f32, Tolerance{1e30, 1e30});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.nan, 1u);
  EXPECT_EQ(r.unwritten, 0u);
  EXPECT_EQ(*r.first_bad, 5u);
}

TEST(Verify, UnwrittenTailIsCaughtThroughThePoison) {
  const auto ref = ramp(256);
  auto cand = ref;
  std::memset(cand.data() + 250, 0xFF, 6 * sizeof(float));  // the poison the kernel never overwrote
  const auto r = compare_outputs(bytes(ref), bytes(cand), DType::f32, Tolerance{1e30, 1e30});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.unwritten, 6u);
  EXPECT_EQ(r.mismatches, 6u);
  EXPECT_EQ(*r.first_bad, 250u);
  EXPECT_NE(r.detail.find("6 never written"), std::string::npos) << r.detail;
}

TEST(Verify, ReferenceThatLeftPoisonFails) {
  auto ref = ramp(16);
  const auto cand = ref;
  std::memset(ref.data() + 15, 0xFF, sizeof(float));
  const auto r =
      compare_outputs(bytes(ref), bytes(cand), DType::f32, default_tolerance(DType::f32));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.detail.find("reference"), std::string::npos) << r.detail;
}

TEST(Verify, Fp16ToleranceAcceptsOneRoundingStepAndRejectsAWrongValue) {
  // 42.0 and its fp16 neighbour 42.03125 (one ulp): a different fp32 summation order can do that.
  const std::vector<std::uint16_t> ref = {0x5140, 0x3C00, 0x0000};
  std::vector<std::uint16_t> cand = {0x5141, 0x3C00, 0x0000};
  const Tolerance t = default_tolerance(DType::f16);
  EXPECT_TRUE(compare_outputs(bytes(ref), bytes(cand), DType::f16, t).ok);
  cand[1] = 0x3E00;  // 1.5 instead of 1.0
  const auto r = compare_outputs(bytes(ref), bytes(cand), DType::f16, t);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(*r.first_bad, 1u);
  EXPECT_EQ(r.first_candidate, 1.5);
  cand[1] = 0x3C00;
  cand[2] = 0xFFFF;  // unwritten tail element
  const auto u = compare_outputs(bytes(ref), bytes(cand), DType::f16, t);
  EXPECT_FALSE(u.ok);
  EXPECT_EQ(u.unwritten, 1u);
}

TEST(Verify, BfloatAndIntegersUseTheirOwnTolerance) {
  const std::vector<std::uint16_t> ref = {0x3F80};   // 1.0
  const std::vector<std::uint16_t> cand = {0x3F81};  // 1.0078125: one bf16 ulp
  EXPECT_TRUE(
      compare_outputs(bytes(ref), bytes(cand), DType::bf16, default_tolerance(DType::bf16)).ok);
  const std::vector<std::int32_t> iref = {1, 2, 3}, icand = {1, 2, 4};
  const auto r =
      compare_outputs(bytes(iref), bytes(icand), DType::i32, default_tolerance(DType::i32));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(*r.first_bad, 2u);
  const std::vector<std::int8_t> b1 = {-1, 5}, b2 = {-1, 5};  // -1 is a legal integer, not poison
  EXPECT_TRUE(compare_outputs(bytes(b1), bytes(b2), DType::i8, {}).ok);
}

}  // namespace
}  // namespace ktune::bench
