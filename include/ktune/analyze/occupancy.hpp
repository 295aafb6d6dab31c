#pragma once
// Theoretical occupancy: how many blocks of a kernel fit on one SM at once, from the SM's limits
// and the kernel's block size, registers and shared memory, and which limit binds. It follows the
// rules NVIDIA documents for its occupancy calculator and
// cuOccupancyMaxActiveBlocksPerMultiprocessor (registers allocated per warp in units, per SM
// sub-partition; shared memory per block rounded up to the allocation unit, plus the block's
// reserved system share), so it runs with no GPU.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ktune::analyze {

// Per-SM limits of one architecture (CUDA programming guide, compute capability tables).
struct SmLimits {
  std::string arch;  // "sm_90"
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_warps_per_sm = 64;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int max_registers_per_thread = 255;
  int register_allocation_unit = 256;  // registers, allocated per warp in multiples of this
  int sub_partitions_per_sm = 4;       // registers are split evenly over the SM's partitions
  int shared_bytes_per_sm = 0;         // the largest shared-memory carveout
  int max_shared_bytes_per_block = 0;  // opt-in maximum (cuFuncSetAttribute), reserve excluded
  int shared_allocation_unit = 128;    // bytes
  int reserved_shared_bytes_per_block = 1024;  // the system's share of every block (sm_8x/9x)
};

// sm_80 (A100), sm_89 (L40/RTX 40), sm_90 (H100/H200); nullopt for an arch without a table.
// "sm_90a" reads as "sm_90".
std::optional<SmLimits> sm_limits(std::string_view arch);
// The arch names sm_limits() knows, for error messages.
std::vector<std::string> known_sm_limits();

enum class OccupancyLimiter { none, block_size, warps, max_blocks, registers, shared_memory };
const char* to_string(OccupancyLimiter limiter);

struct KernelResources {
  int block_size = 0;  // threads per block (x*y*z)
  int registers_per_thread = 0;
  std::int64_t shared_bytes = 0;  // static + dynamic, per block
};

struct Occupancy {
  int blocks_per_sm = 0;  // 0: the kernel cannot launch with these resources
  int warps_per_block = 0;
  int active_warps_per_sm = 0;
  double occupancy_pct = 0;  // active warps / max warps per SM
  OccupancyLimiter limiter = OccupancyLimiter::none;
  // Blocks per SM each resource alone would allow (INT32_MAX: that resource sets no limit).
  int blocks_by_warps = 0, blocks_by_registers = 0, blocks_by_shared = 0, blocks_by_max = 0;
};

// Theoretical occupancy. A block larger than max_threads_per_block, more registers than
// max_registers_per_thread or more shared memory than max_shared_bytes_per_block gives 0 blocks
// with that limiter. The limiter is the resource allowing the fewest blocks; none at 100 %. On a
// tie the block's shape (warps, then max blocks) is named before registers and shared memory,
// since relieving only one of the tied resources would not raise occupancy.
Occupancy theoretical_occupancy(const SmLimits& limits, const KernelResources& kernel);

}  // namespace ktune::analyze
