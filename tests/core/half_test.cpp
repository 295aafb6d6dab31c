#include "ktune/core/half.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

namespace ktune {
namespace {

bool is_nan_half(std::uint16_t h) {
  return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
}

TEST(Half, DecodesKnownPatterns) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isinf(half_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(half_to_float(0xFFFF)));  // the poison pattern
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16_to_float(0xC2F7), -123.5f);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0xFFFF)));
}

TEST(Half, EveryPatternRoundTrips) {
  for (std::uint32_t i = 0; i <= 0xFFFFu; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    const std::uint16_t back = float_to_half(half_to_float(h));
    if (is_nan_half(h))
      EXPECT_TRUE(is_nan_half(back)) << std::hex << i;
    else
      EXPECT_EQ(back, h) << std::hex << i;
  }
}

TEST(Half, RoundsToNearestEvenWithCarryIntoTheExponent) {
  EXPECT_EQ(float_to_half(1.9999f), 0x4000u);  // 2.0: the carry reaches the exponent
  EXPECT_EQ(float_to_half(1.0f), 0x3C00u);
  EXPECT_EQ(float_to_half(-2.5f), 0xC100u);
  // Halfway between 1.0 and the next half (1 + 2^-10): ties go to the even pattern.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00u);
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02u);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFFu);  // the largest half
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00u);  // rounds up to infinity
  EXPECT_EQ(float_to_half(1e-8f), 0x0000u);     // under half the smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001u);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400u);  // the smallest normal
  EXPECT_EQ(float_to_half(-INFINITY), 0xFC00u);
  EXPECT_TRUE(is_nan_half(float_to_half(NAN)));
}

TEST(Bfloat16, EveryPatternRoundTrips) {
  for (std::uint32_t i = 0; i <= 0xFFFFu; ++i) {
    const auto b = static_cast<std::uint16_t>(i);
    const std::uint16_t back = float_to_bfloat16(bfloat16_to_float(b));
    if ((b & 0x7F80u) == 0x7F80u && (b & 0x7Fu) != 0)
      EXPECT_TRUE(std::isnan(bfloat16_to_float(back))) << std::hex << i;
    else
      EXPECT_EQ(back, b) << std::hex << i;
  }
}

TEST(Bfloat16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80u);
  EXPECT_EQ(float_to_bfloat16(1.99999f), 0x4000u);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3F808000u)), 0x3F80u);  // tie: to even
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3F818000u)), 0x3F82u);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
}

}  // namespace
}  // namespace ktune
