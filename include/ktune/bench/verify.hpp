#pragma once
// Host-side comparison of a candidate's output with the reference's, element by element by dtype
// (fp16 and bf16 decoded on the host). No CUDA needed: the GPU side only copies both buffers back.
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "ktune/cuda/device_utils.hpp"

namespace ktune::bench {

// An element passes when |candidate - reference| <= abs + rel * |reference|.
struct Tolerance {
  double abs = 0;
  double rel = 0;
};

// Per-dtype defaults: loose enough for a different fp32 summation order rounded to the output type,
// tight enough to catch a wrong element. Integers compare exactly.
Tolerance default_tolerance(cuda::DType t);

struct CompareResult {
  bool ok = false;
  std::size_t elements = 0;
  std::size_t mismatches = 0;  // out of tolerance, NaN or unwritten (each counted once)
  std::size_t nan = 0;         // candidate NaN that is not the poison pattern
  std::size_t unwritten = 0;   // candidate still holds the poison pattern (every byte 0xFF)
  std::optional<std::size_t> first_bad;  // index of the first failing element
  double first_reference = 0, first_candidate = 0;
  double max_abs_error = 0;  // over elements that are finite in both
  std::string detail;        // one sentence for the user
};

// Compares two equally sized host copies of an output named `name`. A reference element that is NaN
// or poison makes the comparison fail too (the reference itself did not write it).
CompareResult compare_outputs(std::span<const std::byte> reference,
                              std::span<const std::byte> candidate, cuda::DType type, Tolerance tol,
                              std::string_view name = "output");

// Host decoding of one element to double (fp16 and bf16 included).
double decode_element(const std::byte* p, cuda::DType type);

}  // namespace ktune::bench
