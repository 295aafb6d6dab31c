#include "ktune/analyze/merge.hpp"

#include <gtest/gtest.h>

#include "counter_samples.hpp"
#include "ktune/analyze/analysis.hpp"

namespace ktune::analyze::test {
namespace {

// One rank of a two-rank job: the same pid-local ids in both, as two processes would have.
trace::Trace rank_trace(const std::string& kernel, double offset_us, std::uint32_t pid) {
  CounterTraceBuilder b;
  add_h100_identity(b.t);
  b.t.metadata.command_line = {"torchrun", "train.py", "--rank", std::to_string(pid)};
  b.launched(kernel, offset_us, offset_us + 5, offset_us + 10, offset_us + 110, 7);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
           offset_us + 120, offset_us + 170, 8, 13);
  b.t.counters.push_back({0, 7, std::string(m::kDuration), 100'000});
  for (auto& a : b.t.api_calls) a.process_id = pid;
  return b.t;
}

TEST(MergeRanks, EachRankKeepsItsOwnDevicesAndIds) {
  const trace::Trace t =
      merge_ranks({rank_trace("gemm_rank0", 0, 100), rank_trace("gemm_rank1", 3, 100)});
  ASSERT_EQ(t.kernels.size(), 4u);
  EXPECT_EQ(t.kernels[0].device_id, 0u);
  EXPECT_EQ(t.kernels[2].device_id, 1u);
  EXPECT_NE(t.kernels[0].correlation_id, t.kernels[2].correlation_id);
  EXPECT_NE(t.kernels[0].stream_id, t.kernels[2].stream_id);
  EXPECT_NE(t.api_calls[0].process_id, t.api_calls[1].process_id);
  ASSERT_TRUE(t.metadata.identity);
  ASSERT_EQ(t.metadata.identity->devices.size(), 2u);
  EXPECT_EQ(t.metadata.identity->devices[1].ordinal, 1);

  MemorySource source(t);
  const Analysis a = analyze(source);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.kernel_count, 4u);
  // Counters still join their own rank's launch.
  ASSERT_EQ(a.counters.kernels.size(), 2u);
  EXPECT_EQ(a.counters.unmatched_launches, 0u);
  ASSERT_EQ(a.timeline.devices.size(), 2u);
  EXPECT_EQ(a.timeline.devices[1].collective_ns, 50 * std::int64_t(kUs));
}

TEST(MergeRanks, OneRankIsItselfAndNoneIsEmpty) {
  EXPECT_TRUE(merge_ranks({}).kernels.empty());
  const trace::Trace one = merge_ranks({rank_trace("gemm", 0, 100)});
  EXPECT_EQ(one.kernels.size(), 2u);
  EXPECT_EQ(one.kernels[0].correlation_id, 7u);
  EXPECT_EQ(one.metadata.command_line.front(), "torchrun");
}

}  // namespace
}  // namespace ktune::analyze::test
