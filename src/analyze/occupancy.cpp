#include "ktune/analyze/occupancy.hpp"
#include "ktune/core/enum_names.hpp"

#include <algorithm>
#include <climits>

namespace ktune::analyze {
namespace {

constexpr int kKiB = 1024;

std::vector<SmLimits> limit_tables() {
  // Compute-capability tables of the CUDA C++ programming guide (resident warps and blocks per SM,
  // shared memory per SM and per block with opt-in, 64 K registers); the 1 KB reserved per block
  // and the 256-register and 128-byte allocation units are those of the occupancy calculator.
  SmLimits sm80;
  sm80.arch = "sm_80";
  sm80.shared_bytes_per_sm = 164 * kKiB;
  sm80.max_shared_bytes_per_block = 163 * kKiB;
  SmLimits sm89;
  sm89.arch = "sm_89";
  sm89.max_warps_per_sm = 48;
  sm89.max_blocks_per_sm = 24;
  sm89.shared_bytes_per_sm = 100 * kKiB;
  sm89.max_shared_bytes_per_block = 99 * kKiB;
  SmLimits sm90;
  sm90.arch = "sm_90";
  sm90.shared_bytes_per_sm = 228 * kKiB;
  sm90.max_shared_bytes_per_block = 227 * kKiB;
  return {sm80, sm89, sm90};
}

int round_up(std::int64_t value, int unit) {
  return static_cast<int>((value + unit - 1) / unit * unit);
}

}  // namespace

std::optional<SmLimits> sm_limits(std::string_view arch) {
  // Arch-specific feature variants (sm_90a) share the base arch's resources.
  if (arch.size() > 5 && (arch.back() == 'a' || arch.back() == 'f')) arch.remove_suffix(1);
  for (const SmLimits& l : limit_tables())
    if (l.arch == arch) return l;
  return std::nullopt;
}

std::vector<std::string> known_sm_limits() {
  std::vector<std::string> names;
  for (const SmLimits& l : limit_tables()) names.push_back(l.arch);
  return names;
}

namespace {
constexpr EnumName<OccupancyLimiter> kLimiterNames[] = {
    {OccupancyLimiter::none, "none"},           {OccupancyLimiter::block_size, "block size"},
    {OccupancyLimiter::warps, "warps"},         {OccupancyLimiter::max_blocks, "max blocks"},
    {OccupancyLimiter::registers, "registers"}, {OccupancyLimiter::shared_memory, "shared memory"},
};
}  // namespace

const char* to_string(OccupancyLimiter limiter) {
  return name_of(kLimiterNames, limiter);
}

Occupancy theoretical_occupancy(const SmLimits& limits, const KernelResources& kernel) {
  Occupancy o;
  if (kernel.block_size <= 0 || kernel.block_size > limits.max_threads_per_block) {
    o.limiter = OccupancyLimiter::block_size;
    return o;
  }
  o.warps_per_block = (kernel.block_size + limits.warp_size - 1) / limits.warp_size;
  o.blocks_by_max = limits.max_blocks_per_sm;
  o.blocks_by_warps = limits.max_warps_per_sm / o.warps_per_block;

  if (kernel.registers_per_thread > limits.max_registers_per_thread) {
    o.limiter = OccupancyLimiter::registers;
    return o;
  }
  o.blocks_by_registers = INT_MAX;
  if (kernel.registers_per_thread > 0) {
    // Each warp gets a whole number of allocation units, and a warp's registers must sit in one
    // sub-partition's register file, so the per-partition remainder is lost.
    const int per_warp = round_up(std::int64_t{kernel.registers_per_thread} * limits.warp_size,
                                  limits.register_allocation_unit);
    const int per_partition = limits.registers_per_sm / limits.sub_partitions_per_sm;
    const int warps = per_partition / per_warp * limits.sub_partitions_per_sm;
    o.blocks_by_registers = warps / o.warps_per_block;
  }

  if (kernel.shared_bytes > limits.max_shared_bytes_per_block) {
    o.limiter = OccupancyLimiter::shared_memory;
    return o;
  }
  const int shared_per_block = round_up(
      kernel.shared_bytes + limits.reserved_shared_bytes_per_block, limits.shared_allocation_unit);
  o.blocks_by_shared =
      shared_per_block > 0 ? limits.shared_bytes_per_sm / shared_per_block : INT_MAX;

  const std::pair<int, OccupancyLimiter> limits_in_order[] = {
      {o.blocks_by_warps, OccupancyLimiter::warps},
      {o.blocks_by_max, OccupancyLimiter::max_blocks},
      {o.blocks_by_registers, OccupancyLimiter::registers},
      {o.blocks_by_shared, OccupancyLimiter::shared_memory}};
  o.blocks_per_sm = INT_MAX;
  for (const auto& [blocks, limiter] : limits_in_order)
    if (blocks < o.blocks_per_sm) {
      o.blocks_per_sm = blocks;
      o.limiter = limiter;
    }
  o.active_warps_per_sm = o.blocks_per_sm * o.warps_per_block;
  o.occupancy_pct = 100.0 * o.active_warps_per_sm / limits.max_warps_per_sm;
  if (o.active_warps_per_sm == limits.max_warps_per_sm) o.limiter = OccupancyLimiter::none;
  return o;
}

}  // namespace ktune::analyze
