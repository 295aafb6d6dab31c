#include "ktune/analyze/timeline.hpp"

#include <gtest/gtest.h>

#include "counter_samples.hpp"
#include "trace_builder.hpp"

namespace ktune::analyze::test {
namespace {

TimelineFindings run(TraceBuilder& b) {
  MemorySource source(b.t);
  return analyze_timeline(source);
}

TEST(Timeline, CopyTimeUnderKernelsIsHidden) {
  TraceBuilder b;
  b.kernel("gemm", 0, 100);
  b.memcpy("HtoD", 50, 150, 1 << 20);
  b.memcpy("HtoD", 60, 70, 1 << 10);  // inside the first: counted once
  const TimelineFindings f = run(b);
  ASSERT_EQ(f.devices.size(), 1u);
  EXPECT_EQ(f.devices[0].copy_ns, 100 * kUs);
  EXPECT_EQ(f.devices[0].copy_under_kernel_ns, 50 * kUs);
}

TEST(Timeline, CollectivesWithoutComputeBesideThemAreExposed) {
  TraceBuilder b;
  b.kernel("gemm", 0, 100);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 80, 200, 0,
           9);
  b.kernel("layernorm", 250, 300);
  const TimelineFindings f = run(b);
  const DeviceOverlap& d = f.devices.at(0);
  EXPECT_EQ(d.collective_ns, 120 * kUs);
  EXPECT_EQ(d.collective_exposed_ns, 100 * kUs);      // 100..200: nothing else ran
  EXPECT_EQ(d.idle_next_to_collective_ns, 50 * kUs);  // 200..250, after the all-reduce
  EXPECT_TRUE(is_collective("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"));
  EXPECT_FALSE(is_collective("gemm"));
}

TEST(Timeline, SmallKernelsSerializedOnOneStreamCouldOverlap) {
  TraceBuilder b;
  add_h100_identity(b.t);  // 132 SMs
  for (int i = 0; i < 4; ++i)
    b.kernel("small_" + std::to_string(i), 11.0 * i, 11.0 * i + 10).grid_x = 8;  // 1 us apart
  b.kernel("big", 100, 200).grid_x = 1024;  // a full wave ends the run
  for (int i = 0; i < 2; ++i) b.kernel("tail", 300.0 + 20 * i, 310.0 + 20 * i).grid_x = 8;
  const TimelineFindings f = run(b);
  EXPECT_TRUE(f.sm_count_known);
  ASSERT_EQ(f.runs.size(), 1u);  // the 2-kernel tail is below the 3-kernel minimum
  EXPECT_EQ(f.runs[0].kernels, 4u);
  EXPECT_EQ(f.runs[0].first_kernel, "small_0");
  EXPECT_EQ(f.runs[0].kernel_ns, 40 * std::int64_t(kUs));
  EXPECT_EQ(f.devices[0].serialized_saving_ns, 30 * std::int64_t(kUs));
}

TEST(Timeline, KernelsAlreadyOverlappingAreNoSerializedRun) {
  TraceBuilder b;
  add_h100_identity(b.t);
  b.kernel("long_other_stream", 0, 100, 0, 9);
  for (int i = 0; i < 4; ++i) b.kernel("small", 10.0 + 11 * i, 20.0 + 11 * i).grid_x = 8;
  EXPECT_TRUE(run(b).runs.empty());
}

TEST(Timeline, KernelsTheHostLaunchedLateAreNoSerializedRun) {
  TraceBuilder b;
  add_h100_identity(b.t);
  for (int i = 0; i < 5; ++i) b.kernel("tiny", 20.0 * i, 20.0 * i + 1).grid_x = 1;  // 19 us gaps
  EXPECT_TRUE(run(b).runs.empty());
}

TEST(Timeline, WithoutTheSmCountThereAreNoRuns) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) b.kernel("small", 20.0 * i, 20.0 * i + 10).grid_x = 8;
  const TimelineFindings f = run(b);
  EXPECT_FALSE(f.sm_count_known);
  EXPECT_TRUE(f.runs.empty());
}

}  // namespace
}  // namespace ktune::analyze::test
