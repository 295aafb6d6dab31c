#include "ktune/analyze/merge.hpp"

#include <gtest/gtest.h>

#include "counter_samples.hpp"
#include "ktune/analyze/analysis.hpp"

namespace ktune::analyze::test {
namespace {

// One rank of a two-rank job: the same pid-local ids in both, as two processes would have, and
// one cuBLASLt GEMM call whose matmul kernel the rank launched.
trace::Trace rank_trace(const std::string& kernel, double offset_us, std::uint32_t pid,
                        std::int64_t gemm_m = 128) {
  CounterTraceBuilder b;
  add_h100_identity(b.t);
  b.t.metadata.command_line = {"torchrun", "train.py", "--rank", std::to_string(pid)};
  b.t.metadata.records = {"kernel", "api_call", "counter", "gemm_call", "gemm_event"};
  b.launched(kernel, offset_us, offset_us + 5, offset_us + 10, offset_us + 110, 7);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
           offset_us + 120, offset_us + 170, 8, 13);
  b.t.counters.push_back({0, 7, std::string(m::kDuration), 100'000});
  for (auto& a : b.t.api_calls) a.process_id = pid;
  b.t.gemm_calls = {gemm_call(gemm_m)};
  b.t.gemm_events = {{pid, b.t.api_calls.front().thread_id, TraceBuilder::at(offset_us), 0}};
  return b.t;
}

std::vector<std::unique_ptr<TraceSource>> sources(std::vector<trace::Trace> ranks) {
  std::vector<std::unique_ptr<TraceSource>> out;
  for (trace::Trace& t : ranks) out.push_back(std::make_unique<MemorySource>(std::move(t)));
  return out;
}

template <typename Record, typename Visit>
std::vector<Record> collect(Visit visit) {
  std::vector<Record> out;
  visit([&](const Record& r) { out.push_back(r); });
  return out;
}

// The ranks overlap in time (rank 1 starts 3 us after rank 0), so the merged kernels are not in
// start order across ranks, only within each: the analysis must accept that.
TEST(MergedSource, EachRankKeepsItsOwnDevicesAndIds) {
  MergedSource merged(
      sources({rank_trace("gemm_rank0", 0, 100, 128), rank_trace("gemm_rank1", 3, 100, 256)}));
  const auto kernels = collect<trace::KernelRecord>([&](const auto& v) { merged.kernels(v); });
  ASSERT_EQ(kernels.size(), 4u);
  EXPECT_EQ(kernels[0].device_id, 0u);
  EXPECT_EQ(kernels[2].device_id, 1u);
  EXPECT_NE(kernels[0].correlation_id, kernels[2].correlation_id);
  EXPECT_NE(kernels[0].stream_id, kernels[2].stream_id);
  const auto api = collect<trace::ApiRecord>([&](const auto& v) { merged.api_calls(v); });
  ASSERT_EQ(api.size(), 2u);
  EXPECT_NE(api[0].process_id, api[1].process_id);
  const auto& id = merged.metadata().identity;
  ASSERT_TRUE(id);
  ASSERT_EQ(id->devices.size(), 2u);
  EXPECT_EQ(id->devices[1].ordinal, 1);
  EXPECT_EQ(merged.origin_ns(), TraceBuilder::at(0));

  const Analysis a = analyze(merged);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.kernel_count, 4u);
  // Counters still join their own rank's launch.
  ASSERT_EQ(a.counters.kernels.size(), 2u);
  EXPECT_EQ(a.counters.unmatched_launches, 0u);
  ASSERT_EQ(a.timeline.devices.size(), 2u);
  EXPECT_EQ(a.timeline.devices[1].collective_ns, 50 * std::int64_t(kUs));
}

// Every rank's GEMM calls reach the merged report, each timed by its own rank's kernel (merging
// once dropped them: the merge listed the record kinds by hand and left GEMM calls out).
TEST(MergedSource, KeepsEveryRanksGemmCallsAndTheirTimes) {
  MergedSource merged(sources({rank_trace("nvjet_hsh_128x64_64x4_1x1_v_bz_NNN", 0, 100, 128),
                               rank_trace("nvjet_hsh_256x64_64x4_1x1_v_bz_NNN", 3, 100, 256)}));
  const auto events =
      collect<trace::GemmEventRecord>([&](const auto& v) { merged.gemm_events(v); });
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].call, 0u);
  EXPECT_EQ(events[1].call, 1u);  // rank 1's row 0 follows rank 0's row
  EXPECT_NE(events[0].process_id, events[1].process_id);

  const Analysis a = analyze(merged);
  ASSERT_TRUE(a.gemm.timed);
  ASSERT_EQ(a.gemm.shapes.size(), 2u);
  EXPECT_EQ(a.gemm.calls, 2u);
  for (const auto& shape : a.gemm.shapes) {
    EXPECT_EQ(shape.gpu_ns, 100 * std::int64_t(kUs)) << shape.problem.m;
    EXPECT_EQ(shape.timed_calls, 1u);
  }
}

TEST(MergedSource, OneRankIsItselfAndNoneIsEmpty) {
  MergedSource none(sources({}));
  EXPECT_TRUE(collect<trace::KernelRecord>([&](const auto& v) { none.kernels(v); }).empty());
  EXPECT_FALSE(none.origin_ns());

  MergedSource one(sources({rank_trace("gemm", 0, 100)}));
  const auto kernels = collect<trace::KernelRecord>([&](const auto& v) { one.kernels(v); });
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].correlation_id, 7u);
  EXPECT_EQ(one.metadata().command_line.front(), "torchrun");
}

// CUPTI's "no stream" (and "no event") of a context synchronization is kept as such, never shifted
// into another rank's ids nor counted as one.
TEST(MergedSource, AContextSynchronizationKeepsItsNoStreamMarker) {
  std::vector<trace::Trace> ranks = {rank_trace("gemm", 0, 100), rank_trace("gemm", 3, 200)};
  for (auto& t : ranks)
    t.syncs.push_back({"context_synchronize", 1000, 2000, 1, UINT32_MAX, UINT32_MAX, 9});
  MergedSource merged(sources(std::move(ranks)));
  const auto syncs = collect<trace::SyncRecord>([&](const auto& v) { merged.syncs(v); });
  ASSERT_EQ(syncs.size(), 2u);
  EXPECT_EQ(syncs[0].stream_id, UINT32_MAX);
  EXPECT_EQ(syncs[1].stream_id, UINT32_MAX);
  EXPECT_NE(syncs[0].context_id, syncs[1].context_id);
  const auto kernels = collect<trace::KernelRecord>([&](const auto& v) { merged.kernels(v); });
  EXPECT_LT(kernels.back().stream_id, 100u);  // shifted past rank 0's streams only
}

// The metadata says what all ranks say: complete only if each is, every rank's command line.
TEST(MergedSource, MetadataJoinsTheRanks) {
  trace::Trace cut = rank_trace("gemm", 3, 200);
  cut.metadata.complete = false;
  cut.metadata.dropped_records = 5;
  trace::Trace whole = rank_trace("gemm", 0, 100);
  whole.metadata.complete = true;
  whole.metadata.dropped_records = 2;
  MergedSource merged(sources({whole, cut}));
  EXPECT_FALSE(merged.metadata().complete);
  EXPECT_EQ(merged.metadata().dropped_records, 7u);
  const auto& cl = merged.metadata().command_line;
  EXPECT_EQ(std::count(cl.begin(), cl.end(), "+"), 1);
  EXPECT_EQ(cl.back(), "200");
}

}  // namespace
}  // namespace ktune::analyze::test
