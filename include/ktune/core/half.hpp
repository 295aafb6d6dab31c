#pragma once
// IEEE binary16 (fp16) and bfloat16 as 16-bit patterns, both directions in one place. Encoding
// rounds to nearest, ties to even, as the GPU's conversions do; a rounding carry moves into the
// exponent (1.9999f encodes as 2.0), overflow becomes infinity and NaN stays NaN.
#include <cstdint>

namespace ktune {

std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(std::uint16_t b);

}  // namespace ktune
