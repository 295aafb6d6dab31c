#include "ktune/analyze/counters.hpp"

#include <gtest/gtest.h>

#include "counter_samples.hpp"
#include "ktune/analyze/analysis.hpp"

namespace ktune::analyze::test {
namespace {

CounterAnalysis run(CounterTraceBuilder& b, Ceilings c = h100_ceilings()) {
  add_h100_identity(b.t);
  MemorySource source(b.t);
  return analyze_counters(source, c);
}

const KernelDerivation& only(const CounterAnalysis& a) {
  EXPECT_EQ(a.kernels.size(), 1u);
  return a.kernels.at(0);
}

std::vector<std::string> actions(const KernelDerivation& d) {
  std::vector<std::string> out;
  for (const Opportunity& o : d.opportunities)
    out.push_back(o.action.substr(0, o.action.find(':')));
  return out;
}

TEST(Counters, CopyIsMemoryBoundOnTheDramRoof) {
  CounterTraceBuilder b;
  b.copy();
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::memory);
  EXPECT_DOUBLE_EQ(d.duration_ns, 185'000);
  EXPECT_NEAR(*d.dram_bytes_per_s, 536870912 / 185e-6, 1);
  EXPECT_DOUBLE_EQ(*d.arithmetic_intensity, 0);
  ASSERT_TRUE(d.roofline);
  EXPECT_NEAR(d.roofline->ridge_flop_per_byte, 17, 1e-9);  // 51 T / 3 T
  EXPECT_NEAR(d.roofline->fraction_of_roof, 2.902e12 / 3e12, 1e-3);
  EXPECT_NEAR(*d.waves_per_sm, 65536.0 / (8 * 132), 1e-9);
  EXPECT_EQ(d.key_issue, "DRAM bandwidth");
  ASSERT_FALSE(d.opportunities.empty());
  EXPECT_NE(d.opportunities[0].action.find("fewer bytes"), std::string::npos);
  EXPECT_EQ(d.opportunities[0].trigger, std::string(m::kDramThroughputPct) + "=88");
  EXPECT_TRUE(d.unknown.empty()) << d.unknown.front();
}

TEST(Counters, FmaLoopIsComputeBoundAndPointedAtTensorCores) {
  CounterTraceBuilder b;
  b.fma_loop();
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
  EXPECT_NEAR(*d.fp32_flop, 2 * 4.429e9, 1);  // FMA = 2 FLOP
  EXPECT_NEAR(*d.flop_per_s, 2 * 4.429e9 / 177e-6, 1e6);
  EXPECT_EQ(d.roofline->precision, "fp32");
  EXPECT_GT(*d.arithmetic_intensity, d.roofline->ridge_flop_per_byte);
  EXPECT_EQ(d.key_issue, "SM throughput");
  ASSERT_FALSE(d.opportunities.empty());
  EXPECT_NE(d.opportunities[0].action.find("tensor cores"), std::string::npos);
  EXPECT_NEAR(d.opportunities[0].estimated_gain, 1 - 51.0 / 660, 1e-9);
}

TEST(Counters, TensorGemmIsComputeBoundOnTheTensorPipe) {
  CounterTraceBuilder b;
  b.tensor_gemm();
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
  EXPECT_EQ(d.key_issue, "tensor pipe");
  ASSERT_TRUE(d.roofline);
  EXPECT_EQ(d.roofline->precision, "bf16");
  EXPECT_TRUE(d.roofline->flop_from_tensor_pipe);
  EXPECT_NEAR(*d.tensor_flop, 0.84 * 660e12 * 1.7e-3, 1e6);
  // 168 registers x 384 threads and 227 KB of shared memory: one CTA (12 warps) per SM.
  ASSERT_TRUE(d.theoretical);
  EXPECT_EQ(d.theoretical->blocks_per_sm, 1);
  EXPECT_DOUBLE_EQ(d.theoretical->occupancy_pct, 18.75);
  EXPECT_DOUBLE_EQ(*d.waves_per_sm, 1.0);
  ASSERT_EQ(d.opportunities.size(), 1u);
  EXPECT_NE(d.opportunities[0].trigger.find("fraction_of_roof"), std::string::npos);
}

// What `ktune profile --metrics roofline` collects on Hopper: issue-active instead of SM
// throughput, and GMMA op counts, which are the tensor FLOP exactly.
TEST(Counters, RooflineSetReadsIssueActiveAndExactGmmaFlop) {
  CounterTraceBuilder b;
  b.launch("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", 1700, 132, 384, 168, 227 * 1024,
           {{m::kDuration, 1'700'000},
            {m::kIssueActivePct, 81},
            {m::kDramThroughputPct, 24},
            {m::kDramBytesRead, 1.05e9},
            {m::kDramBytesWrite, 1.34e8},
            {m::kTensorGmmaBf16Ops, 2.0 * 8192 * 8192 * 8192},
            {m::kTensorPipePct, 84},
            {m::kAchievedOccupancyPct, 18.7}});
  const KernelDerivation d = only(run(b));
  EXPECT_DOUBLE_EQ(*d.sm_pct, 81);
  EXPECT_DOUBLE_EQ(*d.tensor_flop, 2.0 * 8192 * 8192 * 8192);
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
  ASSERT_TRUE(d.roofline);
  EXPECT_EQ(d.roofline->precision, "bf16");
}

TEST(Counters, TinyGridIsLatencyBound) {
  CounterTraceBuilder b;
  b.tiny_grid();
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::latency);
  EXPECT_EQ(d.key_issue, "small grid");
  EXPECT_NE(d.root_cause.find("latency-bound"), std::string::npos);
  ASSERT_FALSE(d.opportunities.empty());
  EXPECT_EQ(d.opportunities[0].trigger.substr(0, 13), "waves_per_sm=");
  EXPECT_EQ(d.opportunities.size(), 1u);  // not "balance the blocks": the grid is the cause
}

TEST(Counters, TinyKernelIsLaunchBound) {
  CounterTraceBuilder b;
  b.tiny_kernel();
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::launch);
  EXPECT_EQ(d.key_issue, "launch overhead");
  ASSERT_FALSE(d.opportunities.empty());
  EXPECT_NE(d.opportunities[0].action.find("CUDA graph"), std::string::npos);
  EXPECT_EQ(d.opportunities[0].trigger, std::string(m::kDuration) + "=2400");
}

TEST(Counters, SpillsAndRegisterOccupancyRankByEstimatedGain) {
  CounterTraceBuilder b;
  b.spilling();
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::latency);
  EXPECT_EQ(d.local_memory_per_thread_bytes, 64u);
  EXPECT_DOUBLE_EQ(*d.local_memory_bytes, 4.0e6 * 32);
  EXPECT_DOUBLE_EQ(d.theoretical->occupancy_pct, 12.5);
  EXPECT_EQ(d.theoretical->limiter, OccupancyLimiter::registers);
  EXPECT_EQ(d.key_issue, "occupancy (registers)");
  // (1 - 12.5 %) x (1 - 45 %) = 0.48 before 128 / 228 of the traffic x 45 % = 0.25.
  EXPECT_EQ(actions(d),
            (std::vector<std::string>{"Raise theoretical occupancy", "Remove register spills"}));
  EXPECT_NEAR(d.opportunities[0].estimated_gain, 0.875 * 0.55, 1e-9);
  EXPECT_NEAR(d.opportunities[1].estimated_gain, 128.0 / 228 * 0.45, 1e-9);
  for (std::size_t i = 1; i < d.opportunities.size(); ++i)
    EXPECT_GE(d.opportunities[i - 1].estimated_gain, d.opportunities[i].estimated_gain);
}

TEST(Counters, ReusedDataMissingL2IsALocalityProblem) {
  CounterTraceBuilder b;
  b.poor_locality();
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::locality);
  EXPECT_DOUBLE_EQ(*d.arithmetic_intensity, 4.0);
  ASSERT_FALSE(d.opportunities.empty());
  EXPECT_EQ(d.opportunities[0].trigger, std::string(m::kL2HitRatePct) + "=22");
  EXPECT_NEAR(d.opportunities[0].estimated_gain, (1 - 0.2 / 0.78) * 0.83, 1e-9);
}

TEST(Counters, MissingCountersSayWhatCannotBeConcluded) {
  CounterTraceBuilder b;
  b.launch("mystery(int)", 100, 2112, 256, 32, 0, {{m::kDuration, 100'000}});  // 2 full waves
  const KernelDerivation d = only(run(b, {}));
  EXPECT_EQ(d.bottleneck, Bottleneck::unknown);
  EXPECT_FALSE(d.flop_per_s.has_value());
  EXPECT_FALSE(d.roofline.has_value());
  EXPECT_TRUE(d.opportunities.empty());
  const std::string all = [&] {
    std::string s;
    for (const auto& u : d.unknown) s += u + "\n";
    return s;
  }();
  EXPECT_NE(all.find(std::string(m::kSmThroughputPct) + " was not collected"), std::string::npos);
  EXPECT_NE(all.find(std::string(m::kDramBytesRead)), std::string::npos);
  EXPECT_NE(all.find("ktune calibrate"), std::string::npos);
}

TEST(Counters, NoIdentityBlockStillGivesAVerdict) {
  CounterTraceBuilder b;
  b.copy();
  MemorySource source(b.t);  // no identity: no arch, no SM count
  const CounterAnalysis a = analyze_counters(source, h100_ceilings());
  const KernelDerivation& d = only(a);
  EXPECT_EQ(d.bottleneck, Bottleneck::memory);
  EXPECT_FALSE(d.theoretical.has_value());
  EXPECT_FALSE(d.waves_per_sm.has_value());
  ASSERT_FALSE(d.unknown.empty());
}

TEST(Counters, LaunchesOfOneShapeAggregateAndShapesStayApart) {
  CounterTraceBuilder b;
  b.copy();
  b.copy();
  b.launch("copy_kernel(float const*, float*, unsigned long)", 100, 1024, 128, 16, 0,
           {{m::kDuration, 100'000}});
  b.kernel("unprofiled(int)", 5000, 5010, 1);  // activity tier only: no derivation
  b.t.counters.push_back({0, 77777, std::string(m::kDuration), 5});  // no such launch
  const CounterAnalysis a = run(b);
  ASSERT_EQ(a.kernels.size(), 2u);
  EXPECT_EQ(a.kernels[0].launches, 2u);
  EXPECT_EQ(a.kernels[0].shape.block.x, 256);
  EXPECT_EQ(a.kernels[1].shape.block.x, 128);
  EXPECT_EQ(a.profiled_launches, 3u);
  EXPECT_EQ(a.unmatched_launches, 1u);
}

TEST(Counters, DamagedLaunchDimensionsDoNotOverflow) {
  CounterTraceBuilder b;
  trace::KernelRecord& k =
      b.launch("damaged(int)", 100, 65536, 65536, 4'000'000'000u, 0, {{m::kDuration, 100'000}});
  k.block_y = 65536;
  k.grid_y = k.grid_z = 65536;
  const KernelDerivation d = only(run(b));
  ASSERT_TRUE(d.theoretical);
  EXPECT_EQ(d.theoretical->blocks_per_sm, 0);
  EXPECT_EQ(d.theoretical->limiter, OccupancyLimiter::block_size);
}

TEST(Counters, TraceWithoutCountersHasNoDerivation) {
  TraceBuilder b;
  b.kernel("k", 0, 10);
  MemorySource source(b.t);
  EXPECT_TRUE(analyze_counters(source, h100_ceilings()).empty());
  MemorySource again(b.t);
  EXPECT_TRUE(analyze(again).counters.empty());
}

}  // namespace
}  // namespace ktune::analyze::test
