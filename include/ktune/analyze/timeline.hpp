#pragma once
// The timeline's overlap questions, from the activity tier alone: how much copy time runs hidden
// under kernels, how much of a collective (NCCL) runs with no compute beside it and how long the
// GPU idles next to collectives, and runs of small kernels serialized on one stream while the
// rest of the GPU waits (they could overlap on separate streams).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ktune/analyze/source.hpp"

namespace ktune::analyze {

// A run of kernels back to back on one stream, each with fewer blocks than the GPU has SMs, while
// no other stream of the device ran a kernel: they leave SMs idle and, if independent, could run
// side by side.
struct SerializedRun {
  int device = 0;
  std::uint32_t stream = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::size_t kernels = 0;
  std::int64_t kernel_ns = 0;
  std::int64_t longest_kernel_ns = 0;  // on separate streams the run would take about this long
  std::string first_kernel;
};

struct DeviceOverlap {
  int device = 0;
  std::int64_t copy_ns = 0;                     // union of memcpy intervals
  std::int64_t copy_under_kernel_ns = 0;        // of it, while a kernel ran (hidden)
  std::int64_t collective_ns = 0;               // union of NCCL kernels
  std::int64_t collective_exposed_ns = 0;       // of it, with no other kernel running
  std::int64_t idle_next_to_collective_ns = 0;  // idle gaps that start or end at an NCCL kernel
  std::size_t serialized_runs = 0;
  std::int64_t serialized_saving_ns = 0;  // sum over runs of kernel_ns - longest_kernel_ns
};

struct TimelineFindings {
  std::vector<DeviceOverlap> devices;  // by device ordinal
  std::vector<SerializedRun> runs;     // largest possible saving first, at most `top_runs`
  bool sm_count_known = false;         // serialized runs need the identity block's SM count
};

// Kernels whose name marks them as NCCL collectives ("ncclDevKernel_AllReduce...", "ncclKernel_").
bool is_collective(std::string_view kernel_name);

// Two visits (memcpys, kernels); holds one interval per kernel and copy, no names. Runs shorter
// than `min_run_kernels` are not reported.
TimelineFindings analyze_timeline(TraceSource& source, std::size_t min_run_kernels = 3,
                                  std::size_t top_runs = 10);

}  // namespace ktune::analyze
