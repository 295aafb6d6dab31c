#pragma once
// What a kernel was launched with: the second half of the `--by name+launch` key, and the unit the
// counter analysis aggregates launches by.
#include <cstdint>

#include "ktune/trace/ktrace.hpp"

namespace ktune::analyze {

struct Dim3 {
  std::int32_t x = 0, y = 0, z = 0;
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

struct LaunchShape {
  Dim3 grid, block;
  std::int32_t shared_mem_bytes = 0;  // static + dynamic
  std::uint32_t registers_per_thread = 0;
  friend bool operator==(const LaunchShape&, const LaunchShape&) = default;
};
LaunchShape launch_shape(const trace::KernelRecord& k);

}  // namespace ktune::analyze
