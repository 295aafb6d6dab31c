#include "ktune/core/half.hpp"

#include <bit>
#include <cmath>

namespace ktune {

std::uint16_t float_to_half(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7E00u | static_cast<std::uint16_t>((abs >> 13) & 0x3FFu);
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal, mant * 2^-24, rounded to nearest even.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact: a power of two
    return sign | static_cast<std::uint16_t>(std::nearbyint(scaled));
  }
  // Normal: rebias the exponent, then round the 13 dropped mantissa bits to nearest even. Adding
  // to the whole pattern lets a carry out of the mantissa increment the exponent.
  const std::uint32_t rebased = abs - ((127u - 15u) << 23);
  const std::uint32_t rounded = rebased + 0x0FFFu + ((rebased >> 13) & 1u);
  return sign | static_cast<std::uint16_t>(rounded >> 13);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1F;
  const std::uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // inf, NaN
  if (exp == 0) {  // zero and subnormals: mant * 2^-24
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

std::uint16_t float_to_bfloat16(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)  // NaN: keep it quiet, never round it into infinity
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace ktune
