#pragma once
// How the harness writes a buffer of one repeated element: the cheapest write that stays ordered on
// the harness's stream. Plain C++ (the plan); runner.cpp issues it.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ktune::bench::detail {

struct ConstantFill {
  enum class Kind { none, memset8, memset32, copy };
  Kind kind = Kind::none;
  std::uint32_t value = 0;      // memset8: the byte; memset32: the 32-bit word as stored
  std::size_t units = 0;        // memset8: bytes; memset32: words
  std::vector<std::byte> host;  // copy: every byte of the buffer
};

// `count` copies of `element` (1, 2, 4 or 8 bytes as stored on the device). Uniform bytes (0.0 of
// any type) become a byte memset, other 4-byte elements a word memset, the rest a staged copy.
ConstantFill plan_constant_fill(const std::vector<std::byte>& element, std::size_t count);

}  // namespace ktune::bench::detail
