#include "ktune/bench/verify.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/core/half.hpp"

namespace ktune::bench {

using cuda::DType;

double decode_element(const std::byte* p, DType type) {
  switch (type) {
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f16:
    case DType::bf16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return type == DType::f16 ? half_to_float(v) : bfloat16_to_float(v);
    }
    case DType::i64: {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::i32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::i16: {
      std::int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::i8:
      return static_cast<double>(static_cast<std::int8_t>(*p));
    case DType::u64: {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::u32: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::u16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::u8:
      return static_cast<double>(static_cast<std::uint8_t>(*p));
  }
  return 0;
}

Tolerance default_tolerance(DType t) {
  switch (t) {
    case DType::f64:
      return {1e-12, 1e-10};
    case DType::f32:
      return {1e-5, 1e-4};
    case DType::f16:
      return {1e-2, 1e-2};  // fp16 keeps ~3 decimal digits; one rounding step of headroom
    case DType::bf16:
      return {5e-2, 2e-2};  // bf16 keeps ~2
    default:
      return {0, 0};
  }
}

namespace {
bool all_ff(const std::byte* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::byte b) { return b == std::byte{0xFF}; });
}
}  // namespace

CompareResult compare_outputs(std::span<const std::byte> reference,
                              std::span<const std::byte> candidate, DType type, Tolerance tol,
                              std::string_view name) {
  const std::size_t w = cuda::dtype_bytes(type);
  if (reference.size() != candidate.size() || reference.size() % w != 0)
    throw Error(fmt::format("internal: output '{}' has {} reference bytes and {} candidate bytes.",
                            name, reference.size(), candidate.size()));
  CompareResult r;
  r.elements = reference.size() / w;
  std::size_t ref_bad = 0;
  std::optional<std::size_t> first_ref_bad;
  for (std::size_t i = 0; i < r.elements; ++i) {
    const std::byte* rp = reference.data() + i * w;
    const std::byte* cp = candidate.data() + i * w;
    const double ref = decode_element(rp, type), cand = decode_element(cp, type);
    // Poison (every byte 0xFF) is NaN for floats; for integers it is -1, which a kernel may write,
    // so only floats can tell an unwritten element from a written one.
    if (is_floating(type) && (std::isnan(ref) || all_ff(rp, w))) {
      if (!first_ref_bad) first_ref_bad = i;
      ++ref_bad;
      continue;
    }
    bool bad = false;
    if (is_floating(type) && all_ff(cp, w)) {
      ++r.unwritten;
      bad = true;
    } else if (std::isnan(cand)) {
      ++r.nan;
      bad = true;
    } else {
      const double err = std::abs(cand - ref);
      if (std::isfinite(err)) r.max_abs_error = std::max(r.max_abs_error, err);
      bad = !(err <= tol.abs + tol.rel * std::abs(ref)) && !(ref == cand);  // inf == inf passes
    }
    if (bad) {
      ++r.mismatches;
      if (!r.first_bad) {
        r.first_bad = i;
        r.first_reference = ref;
        r.first_candidate = cand;
      }
    }
  }
  if (ref_bad > 0) {
    r.ok = false;
    r.first_bad = first_ref_bad;
    r.detail = fmt::format(
        "the reference left {} of {} elements of '{}' unwritten or NaN (first at index {}); "
        "fix the reference kernel or its launch geometry.",
        ref_bad, r.elements, name, *first_ref_bad);
    return r;
  }
  r.ok = r.mismatches == 0;
  if (r.ok) {
    r.detail =
        fmt::format("'{}': {} elements agree (max abs error {:.3g}, tolerance {:g} + {:g}*|ref|)",
                    name, r.elements, r.max_abs_error, tol.abs, tol.rel);
  } else {
    std::string kinds;
    if (r.unwritten) kinds += fmt::format(", {} never written", r.unwritten);
    if (r.nan) kinds += fmt::format(", {} NaN", r.nan);
    r.detail = fmt::format(
        "'{}': {} of {} elements differ from the reference{}; first at index {}: expected {:.6g}, "
        "got {:.6g} (tolerance {:g} + {:g}*|ref|)",
        name, r.mismatches, r.elements, kinds, *r.first_bad, r.first_reference, r.first_candidate,
        tol.abs, tol.rel);
  }
  return r;
}

}  // namespace ktune::bench
