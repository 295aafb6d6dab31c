#pragma once
// Small device-side services every measurement needs: random fills (never time zeros), poisoning
// outputs, and an L2 flush. Their kernels are compiled once per process with NVRTC (disk-cached).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ktune/core/dtype.hpp"
#include "ktune/cuda/resources.hpp"

namespace ktune::cuda {

// The element types and their names are core's (core/dtype.hpp): one vocabulary everywhere.
using ktune::DType;
using ktune::dtype_bytes;
using ktune::parse_dtype;
using ktune::to_string;

// Uniform random values, deterministic in (seed, index): floats in [-1, 1), integers in [-100, 100)
// (unsigned: [0, 200)). `count` elements of `type` starting at `ptr`.
void fill_random(CUdeviceptr ptr, std::size_t count, DType type, std::uint64_t seed, CUstream s);

// Every byte set to 0xFF: NaN for floating types, -1 for integers. Outputs are poisoned before each
// checked run so an element the kernel never wrote is caught.
void poison(CUdeviceptr ptr, std::size_t bytes, CUstream s);

// Evicts L2 by writing a buffer twice its size; allocate once, call before each cold sample.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes);
  void flush(CUstream s);

 private:
  DeviceBuffer buffer_;
  std::uint32_t value_ = 0;
};

}  // namespace ktune::cuda
