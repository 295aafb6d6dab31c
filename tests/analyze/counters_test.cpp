#include "ktune/analyze/counters.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

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
  EXPECT_EQ(d.opportunities[0].trigger, std::string(m::kMemoryThroughputPct) + "=90");
  // Half the bytes: the SM side (21 %) would not bound it before the halving does.
  EXPECT_NEAR(d.opportunities[0].estimated_gain, 0.5, 1e-9);
  EXPECT_NEAR(d.opportunities[0].bound, 1 - 21.0 / 90, 1e-9);
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
  // cuBLAS's kernel: the advice is another algorithm, never an edit of code the user cannot
  // change; its gain is what the busiest unit (SM 79 %, which holds the tensor pipe) leaves below a
  // practical 90 %.
  EXPECT_EQ(d.library, "cuBLAS");
  ASSERT_EQ(d.opportunities.size(), 1u);
  EXPECT_NE(d.opportunities[0].action.find("cuBLASLt algorithm"), std::string::npos);
  EXPECT_EQ(d.opportunities[0].trigger, "library=cuBLAS busiest_unit=79%");
  EXPECT_NEAR(d.opportunities[0].estimated_gain, 1 - 79.0 / 90, 1e-9);
}

// What an older `--metrics roofline` collected on Hopper: issue activity instead of SM throughput,
// DRAM instead of the memory side, and GMMA op counts, which are the tensor FLOP exactly. The
// FLOP are read; the verdict is not guessed from the stand-ins (they called this compute-bound).
TEST(Counters, OldRooflineSetGivesFlopButNoVerdict) {
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
  EXPECT_EQ(d.bottleneck, Bottleneck::not_measured);
  EXPECT_EQ(d.measure_with, "--metrics triage");
  EXPECT_TRUE(d.opportunities.empty());
  EXPECT_NE(d.root_cause.find("--metrics triage"), std::string::npos) << d.root_cause;
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
  EXPECT_EQ(d.bottleneck, Bottleneck::not_measured);
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

// The float->bf16 copy of the issue: no FLOP at all, instruction issue the busiest unit. It was
// called compute-bound with "close the gap to the compute roof"; it is issue-bound, and the
// change is fewer instructions per element.
TEST(Counters, ZeroFlopKernelIsNeverComputeBound) {
  CounterTraceBuilder b;
  b.launch(
      "void at::native::vectorized_elementwise_kernel<4, CopyFunctor<c10::BFloat16, float> >"
      "(int, CopyFunctor, at::detail::Array<char*, 2>)",
      24.4, 131072, 128, 24, 0,
      {{m::kDuration, 24'400},
       {m::kSmThroughputPct, 71},
       {m::kMemoryThroughputPct, 19},
       {m::kDramBytesRead, 6.7e7},
       {m::kDramBytesWrite, 3.4e7},
       {m::kFp32Fma, 0},
       {m::kFp32Add, 0},
       {m::kFp32Mul, 0},
       {m::kFp16Fma, 0},
       {m::kTensorGmmaBf16Ops, 0},
       {m::kTensorPipePct, 0},
       {m::kAchievedOccupancyPct, 80}});
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::issue);
  EXPECT_EQ(d.key_issue, "instruction issue");
  EXPECT_NE(d.root_cause.find("no floating-point math"), std::string::npos);
  for (const Opportunity& o : d.opportunities) {
    EXPECT_EQ(o.action.find("compute roof"), std::string::npos) << o.action;
    EXPECT_EQ(o.action.find("tensor cores"), std::string::npos) << o.action;
  }
  ASSERT_FALSE(d.opportunities.empty());
  EXPECT_EQ(actions(d)[0], "Fewer instructions per element");
  // Half the instructions: issue would fall to 35.5 %, still above DRAM's 19 %.
  EXPECT_NEAR(d.opportunities[0].estimated_gain, 0.5, 1e-9);
}

// The same copy as Nsight Compute saw it (SM 46 %, DRAM 19 %): nothing near its peak, so
// latency-bound, as ncu says; never compute-bound.
TEST(Counters, ZeroFlopKernelBelowEveryPeakIsLatencyBound) {
  CounterTraceBuilder b;
  b.launch("copy_to_bf16(float const*, __nv_bfloat16*, long)", 24.4, 131072, 128, 24, 0,
           {{m::kDuration, 24'400},
            {m::kSmThroughputPct, 46},
            {m::kMemoryThroughputPct, 21},
            {m::kDramThroughputPct, 19},
            {m::kDramBytesRead, 6.7e7},
            {m::kDramBytesWrite, 3.4e7},
            {m::kFp32Fma, 0}});
  EXPECT_EQ(only(run(b)).bottleneck, Bottleneck::latency);
}

// Nsight Compute's speed-of-light pair decides, as ncu does, even where the stand-ins read high:
// an elementwise launch of 1024 blocks of 32 threads issues on 80 % of its SMs' active cycles,
// but its SMs idle most of the elapsed time (ncu on the H100: SM 28 %, memory 21 %: latency).
TEST(Counters, SpeedOfLightJudgesOverTheActiveCycleStandIns) {
  CounterTraceBuilder b;
  b.launch("void at::native::vectorized_elementwise_kernel<8, MulFunctor<float> >(int, MulFunctor)",
           30, 1024, 32, 16, 0,
           {{m::kDuration, 30'000},
            {m::kSmThroughputPct, 28},
            {m::kMemoryThroughputPct, 21},
            {m::kIssueActivePct, 80},
            {m::kTensorPipePct, 0},
            {m::kDramThroughputPct, 12},
            {m::kDramBytesRead, 4e6},
            {m::kDramBytesWrite, 2e6},
            {m::kFp32Mul, 1.6e7}});
  const KernelDerivation d = only(run(b));
  EXPECT_TRUE(d.sm_pct_is_speed_of_light);
  EXPECT_DOUBLE_EQ(*d.sm_pct, 28);
  EXPECT_EQ(d.bottleneck, Bottleneck::latency);
  // Without the pair, the stand-ins are not read: issue activity would have said compute.
  CounterTraceBuilder standins;
  standins.launch("mul(float*)", 30, 1024, 32, 16, 0,
                  {{m::kDuration, 30'000},
                   {m::kIssueActivePct, 80},
                   {m::kDramThroughputPct, 12},
                   {m::kDramBytesRead, 4e6},
                   {m::kFp32Mul, 1.6e7}});
  const KernelDerivation s = only(run(standins));
  EXPECT_FALSE(s.sm_pct_is_speed_of_light);
  EXPECT_EQ(s.bottleneck, Bottleneck::not_measured);
}

// Both units at or above 60 %: the busier one bounds (ncu's nvjet 192x128 launch: SM 64 %,
// memory 66 %: memory), whatever the roofline position says.
TEST(Counters, BothUnitsBusyTheBusierBounds) {
  CounterTraceBuilder b;
  b.launch("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_NNT", 40, 2, 384, 168, 200 * 1024,
           {{m::kDuration, 40'000},
            {m::kSmThroughputPct, 64},
            {m::kMemoryThroughputPct, 66},
            {m::kTensorPipePct, 70},
            {m::kDramThroughputPct, 30},
            {m::kDramBytesRead, 2e7},
            {m::kTensorGmmaBf16Ops, 2.0 * 1024 * 1024 * 2048}});
  EXPECT_EQ(only(run(b)).bottleneck, Bottleneck::memory);
}

// Within a few points of the 60 % line a verdict is said to be near it, with the verdict across the
// line: the held-out misses sat there (memory-bound at 61 %, latency-bound at 57 %).
TEST(Counters, AVerdictNearTheLineSaysSoAndNamesTheOtherSide) {
  struct Case {
    double sm, memory;
    Bottleneck verdict;
    std::optional<Bottleneck> other;
  };
  const Case cases[] = {
      {30, 61, Bottleneck::memory, Bottleneck::latency},
      {57, 20, Bottleneck::latency, Bottleneck::compute},
      {20, 56, Bottleneck::latency, Bottleneck::memory},
      {63, 40, Bottleneck::compute, Bottleneck::latency},
      {30, 66, Bottleneck::memory, std::nullopt},  // 6 points over: clear
      {50, 54, Bottleneck::latency, std::nullopt},
  };
  for (const Case& c : cases) {
    CounterTraceBuilder b;
    b.launch("stream(float*)", 100, 4224, 256, 32, 0,
             {{m::kDuration, 100'000},
              {m::kSmThroughputPct, c.sm},
              {m::kMemoryThroughputPct, c.memory},
              {m::kFp32Fma, 1e6}});
    const KernelDerivation d = only(run(b));
    EXPECT_EQ(d.bottleneck, c.verdict) << c.sm << " " << c.memory;
    ASSERT_EQ(d.near_line.has_value(), c.other.has_value()) << c.sm << " " << c.memory;
    if (!c.other) continue;
    EXPECT_EQ(d.near_line->other, *c.other);
    EXPECT_DOUBLE_EQ(d.near_line->pct, std::max(c.sm, c.memory));
    EXPECT_NE(d.root_cause.find("it may as well be"), std::string::npos) << d.root_cause;
  }
}

// Every gain stays within what was measured: a latency fix within what the busiest unit leaves
// idle, less work for the bounding unit within what the other unit leaves.
TEST(Counters, GainsStayWithinTheirMeasuredBound) {
  for (auto build : {&CounterTraceBuilder::copy, &CounterTraceBuilder::fma_loop,
                     &CounterTraceBuilder::tiny_grid, &CounterTraceBuilder::spilling,
                     &CounterTraceBuilder::poor_locality, &CounterTraceBuilder::tensor_gemm}) {
    CounterTraceBuilder b;
    (b.*build)();
    const KernelDerivation d = only(run(b));
    const double sm = *d.sm_pct, memory = *d.memory_pct;
    const double latency = 1 - std::max(sm, memory) / 100;
    const double work = 1 - std::min(sm, memory) / std::max(sm, memory);
    for (const Opportunity& o : d.opportunities) {
      EXPECT_LE(o.estimated_gain, o.bound + 1e-12) << d.name << ": " << o.action;
      EXPECT_TRUE(std::abs(o.bound - latency) < 1e-9 || std::abs(o.bound - work) < 1e-9)
          << d.name << ": " << o.action << " bound " << o.bound;
    }
  }
  // The 8-block grid: a sixteenth of a wave would promise 94 %, but SM and memory at 2.5 % and
  // 1.8 % bound it at 97.5 %; the fma loop's tensor cores (92 % by the ceilings) stop where the
  // memory side (3 % of 93 %) would bound.
  CounterTraceBuilder tiny;
  tiny.tiny_grid();
  EXPECT_NEAR(only(run(tiny)).opportunities.at(0).bound, 1 - 2.5 / 100, 1e-9);
}

// PyTorch's bf16 copy as the H100 counted it: no MMA, yet its conversions keep the tensor pipe
// 4.1 % busy and count 229,376 tensor-pipe instructions. Read as tensor math, the pipe put the
// copy at 42 TFLOP/s on the roofline.
TEST(Counters, ConversionsOnTheTensorPipeAreNoMath) {
  CounterTraceBuilder b;
  b.launch(
      "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
      "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
      "const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}> >(int, "
      "at::native::gpu_kernel_impl_nocast)",
      16, 8192, 128, 30, 0,
      {{m::kDuration, 16'000},
       {m::kSmThroughputPct, 58},
       {m::kMemoryThroughputPct, 22},
       {m::kDramThroughputPct, 21},
       {m::kDramBytesRead, 1.2e7},
       {m::kDramBytesWrite, 6e6},
       {m::kFp32Fma, 0},
       {m::kFp32Add, 0},
       {m::kFp32Mul, 0},
       {m::kTensorGmmaBf16Ops, 0},
       {m::kTensorInst, 229'376},
       {m::kTensorPipePct, 4.13}});
  const KernelDerivation d = only(run(b));
  EXPECT_FALSE(d.tensor_math);
  EXPECT_FALSE(d.tensor_flop);
  EXPECT_DOUBLE_EQ(*d.flop, 0);
  EXPECT_EQ(d.bottleneck, Bottleneck::latency);
  ASSERT_TRUE(d.roofline);
  EXPECT_EQ(d.roofline->precision, "fp32");
}

// The compute set's all-paths counters are the tensor FLOP of an mma.sync kernel exactly, whatever
// the pipe's activity.
TEST(Counters, AllPathsTensorOpsAreTheTensorFlop) {
  CounterTraceBuilder b;
  b.launch("flash_fwd_kernel(Params)", 500, 264, 128, 255, 0,
           {{m::kDuration, 500'000},
            {m::kSmThroughputPct, 70},
            {m::kMemoryThroughputPct, 30},
            {m::kDramBytesRead, 1e8},
            {m::kFp32Fma, 1e8},
            {m::kTensorGmmaBf16Ops, 0},
            {m::kTensorBf16Ops, 2.5e11},
            {m::kTensorPipePct, 8}});
  const KernelDerivation d = only(run(b));
  EXPECT_TRUE(d.tensor_math);
  EXPECT_DOUBLE_EQ(*d.tensor_flop, 2.5e11);
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
}

// An mma.sync kernel under the roofline set counts no GMMA ops, and without ceilings its busy
// tensor pipe gives no FLOP estimate: still math, so compute-bound, not issue-bound.
TEST(Counters, ABusyTensorPipeIsMathEvenWithoutACeiling) {
  CounterTraceBuilder b;
  b.launch("hmma_gemm(Params)", 500, 264, 256, 128, 0,
           {{m::kDuration, 500'000},
            {m::kSmThroughputPct, 70},
            {m::kMemoryThroughputPct, 20},
            {m::kDramBytesRead, 1e8},
            {m::kFp32Fma, 0},
            {m::kTensorGmmaBf16Ops, 0},
            {m::kTensorPipePct, 75}});
  EXPECT_EQ(only(run(b, {})).bottleneck, Bottleneck::compute);
}

// A cuDNN kernel limited by its registers: the user cannot cap them with __launch_bounds__; the
// change is another engine.
TEST(Counters, LibraryKernelGetsAnAlgorithmNotASourceEdit) {
  CounterTraceBuilder b;
  trace::KernelRecord& k =
      b.launch("void cudnn::fusion::compute_attention_fwd<128, 64>(Params)", 300, 1056, 256, 255, 0,
               {{m::kDuration, 300'000},
                {m::kSmThroughputPct, 34},
                {m::kMemoryThroughputPct, 45},
                {m::kDramThroughputPct, 11},
                {m::kDramBytesRead, 9.0e7},
                {m::kDramBytesWrite, 1.0e7},
                {m::kFp32Fma, 2.0e9},
                {m::kLocalLoadSectors, 2.0e6},
                {m::kLocalStoreSectors, 2.0e6},
                {m::kAchievedOccupancyPct, 12.2}});
  k.local_memory_per_thread_bytes = 64;
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.library, "cuDNN");
  EXPECT_EQ(d.bottleneck, Bottleneck::latency);
  ASSERT_EQ(d.opportunities.size(), 1u);
  EXPECT_NE(d.opportunities[0].action.find("cuDNN engine"), std::string::npos);
  EXPECT_EQ(d.opportunities[0].action.find("__launch_bounds__"), std::string::npos);
  EXPECT_NEAR(d.opportunities[0].estimated_gain, 1 - 45.0 / 90, 1e-9);
  for (const char* name :
       {"pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128> >(Params)",
        "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel)",
        "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(Params)",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
        "nvjet_hsh_128x64_64x4_1x1_v_bz_NNN"}) {
    CounterTraceBuilder lib;
    lib.launch(name, 300, 1056, 256, 64, 0, {{m::kDuration, 300'000}});
    EXPECT_FALSE(only(run(lib)).library.empty()) << name;
  }
  CounterTraceBuilder own;
  own.spilling();
  EXPECT_EQ(only(run(own)).library, "");
}

namespace stalls {
// A stall profile (`--metrics stalls`): issue activity and the warps per issued instruction in
// each state; the rest of the reasons share `rest` evenly.
void launch(CounterTraceBuilder& b, double issue_pct,
            std::initializer_list<std::pair<std::string_view, double>> reasons, double rest = 0) {
  std::vector<std::pair<std::string, double>> values = {
      {std::string(m::kDuration), 200'000}, {std::string(m::kIssueActivePct), issue_pct}};
  const std::size_t others = std::size(m::kStallReasons) - reasons.size();
  for (std::string_view reason : m::kStallReasons) {
    double v = rest / static_cast<double>(others);
    for (const auto& [name, value] : reasons)
      if (name == reason) v = value;
    values.emplace_back(fmt::format("{}{}{}", m::kStallPrefix, reason, m::kStallSuffix), v);
  }
  trace::KernelRecord& k =
      b.launch("stencil(float const*, float*, int)", 200, 2112, 256, 32, 0, {});
  for (const auto& [name, value] : values)
    b.t.counters.push_back({0, k.correlation_id, name, value});
}
}  // namespace stalls

// Shares are of all warp cycles ("selected" included: the sum is the cycles per issued
// instruction, as Nsight Compute's warp-state section reads), largest first.
TEST(Counters, StallSharesAreOfAllWarpCyclesLargestFirst) {
  CounterTraceBuilder b;
  stalls::launch(b, 30, {{"long_scoreboard", 6.0}, {"wait", 1.5}, {"selected", 1.0}}, 1.5);
  const KernelDerivation d = only(run(b));
  ASSERT_EQ(d.stalls.size(), std::size(m::kStallReasons));
  ASSERT_TRUE(d.warp_cycles_per_issue);
  EXPECT_NEAR(*d.warp_cycles_per_issue, 10.0, 1e-9);
  EXPECT_EQ(d.stalls[0].reason, "long_scoreboard");
  EXPECT_NEAR(d.stalls[0].share, 0.6, 1e-9);
  EXPECT_EQ(d.stalls[1].reason, "wait");
  EXPECT_EQ(d.stalls[2].reason, "selected");
  double sum = 0;
  for (const StallShare& s : d.stalls) sum += s.share;
  EXPECT_NEAR(sum, 1.0, 1e-9);
  EXPECT_EQ(d.stall_cause, StallCause::memory_latency);
  // A stall profile alone gives no verdict (the issue's "latency-bound, gain 82.5 %" on a launch
  // ncu calls memory-bound): it names the cause and the flag that measures the verdict.
  EXPECT_EQ(d.bottleneck, Bottleneck::not_measured);
  EXPECT_EQ(d.measure_with, "--metrics triage");
  EXPECT_EQ(d.key_issue, "not measured; stalls: memory latency (long_scoreboard 60%)");
  EXPECT_NE(d.root_cause.find("top stalls: long_scoreboard 60%, wait 15%, selected 10%"),
            std::string::npos)
      << d.root_cause;
  bool said = false;
  for (const auto& u : d.unknown) said |= u.find(m::kMemoryThroughputPct) != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_TRUE(d.opportunities.empty());  // nothing measured bounds a gain
}

// Each reason's cause, from a stall profile alone; none of them is a verdict.
TEST(Counters, EachStallReasonNamesItsCauseButNoVerdict) {
  struct Case {
    std::string_view reason;
    double issue_pct;
    Bottleneck verdict;
    StallCause cause;
  };
  const Case cases[] = {
      {"long_scoreboard", 20, Bottleneck::not_measured, StallCause::memory_latency},
      {"barrier", 20, Bottleneck::not_measured, StallCause::synchronisation},
      {"membar", 20, Bottleneck::not_measured, StallCause::synchronisation},
      {"math_pipe_throttle", 40, Bottleneck::not_measured, StallCause::compute_pipe},
      {"math_pipe_throttle", 80, Bottleneck::not_measured, StallCause::compute_pipe},
      {"mio_throttle", 30, Bottleneck::not_measured, StallCause::shared_memory},
      {"short_scoreboard", 30, Bottleneck::not_measured, StallCause::shared_memory},
      {"lg_throttle", 30, Bottleneck::not_measured, StallCause::memory_queue},
      {"tex_throttle", 30, Bottleneck::not_measured, StallCause::memory_queue},
      {"wait", 30, Bottleneck::not_measured, StallCause::dependency},
      {"no_instruction", 30, Bottleneck::not_measured, StallCause::instruction_fetch},
      {"branch_resolving", 30, Bottleneck::not_measured, StallCause::instruction_fetch},
      {"not_selected", 30, Bottleneck::not_measured, StallCause::issue},
      {"dispatch_stall", 30, Bottleneck::not_measured, StallCause::issue},
      {"long_scoreboard", 75, Bottleneck::not_measured, StallCause::memory_latency},  // issue busy
      {"gmma", 40, Bottleneck::not_measured, StallCause::compute_pipe},
      {"drain", 30, Bottleneck::not_measured, StallCause::other},
  };
  for (const Case& c : cases) {
    CounterTraceBuilder b;
    stalls::launch(b, c.issue_pct, {{c.reason, 5.0}, {"selected", 1.0}}, 2.0);
    const KernelDerivation d = only(run(b));
    EXPECT_EQ(d.stall_cause, c.cause) << c.reason;
    EXPECT_EQ(d.bottleneck, c.verdict) << c.reason << " at issue " << c.issue_pct << " %";
    EXPECT_TRUE(d.opportunities.empty()) << c.reason;
  }
}

TEST(Counters, NoDominantStallLeavesTheVerdictOpenAndSaysWhy) {
  CounterTraceBuilder b;
  stalls::launch(b, 30, {}, 10);  // every reason alike: none holds a quarter
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.stall_cause, StallCause::none);
  EXPECT_EQ(d.bottleneck, Bottleneck::not_measured);
  EXPECT_NE(d.root_cause.find("profile with --metrics triage"), std::string::npos) << d.root_cause;
}

// With throughput collected too, the verdict is the throughput's; the stalls name the cause
// and the change.
TEST(Counters, StallsRefineALatencyVerdict) {
  CounterTraceBuilder b;
  stalls::launch(b, 25, {{"barrier", 7.0}, {"selected", 1.0}}, 2.0);
  b.t.counters.push_back(
      {0, b.t.kernels.back().correlation_id, std::string(m::kSmThroughputPct), 25});
  b.t.counters.push_back(
      {0, b.t.kernels.back().correlation_id, std::string(m::kDramThroughputPct), 30});
  b.t.counters.push_back(
      {0, b.t.kernels.back().correlation_id, std::string(m::kMemoryThroughputPct), 35});
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.bottleneck, Bottleneck::latency);
  EXPECT_EQ(d.stall_cause, StallCause::synchronisation);
  EXPECT_EQ(d.key_issue, "synchronisation (barrier 70%)");
  ASSERT_FALSE(d.opportunities.empty());
  EXPECT_EQ(actions(d)[0], "Wait less at barriers");
  EXPECT_NEAR(d.opportunities[0].estimated_gain, 0.7 * 0.65, 1e-9);
}

// A library kernel's stalls are shown, but its change stays the algorithm.
TEST(Counters, LibraryKernelStallsGiveNoSourceEdit) {
  CounterTraceBuilder b;
  stalls::launch(b, 20, {{"long_scoreboard", 6.0}, {"selected", 1.0}}, 3.0);
  for (const auto& [metric, value] :
       {std::pair{m::kSmThroughputPct, 20.0}, std::pair{m::kMemoryThroughputPct, 30.0}})
    b.t.counters.push_back({0, b.t.kernels.back().correlation_id, std::string(metric), value});
  b.t.kernels.back().name = b.t.kernels.back().demangled_name =
      "nvjet_hsh_128x64_64x4_1x1_v_bz_NNN";
  const KernelDerivation d = only(run(b));
  EXPECT_EQ(d.library, "cuBLAS");
  EXPECT_EQ(d.stall_cause, StallCause::memory_latency);
  ASSERT_EQ(d.opportunities.size(), 1u);
  EXPECT_NE(d.opportunities[0].action.find("cuBLASLt algorithm"), std::string::npos);
}

// The counters of a kernel profiled at two sizes: the analysis reads the size that owns its
// time (the 131072-block launches), not the first one profiled (8192 blocks, 12 us).
TEST(Counters, TheShapeThatOwnsTheTimeIsTheKernelsDerivation) {
  CounterTraceBuilder b;
  const std::string copy = "copy_to_bf16(float const*, __nv_bfloat16*, long)";
  b.launch(copy, 12, 8192, 128, 24, 0, {{m::kDuration, 12'000}, {m::kSmThroughputPct, 70}});
  b.launch(copy, 200, 131072, 128, 24, 0, {{m::kDuration, 200'000}, {m::kSmThroughputPct, 40}});
  for (int i = 0; i < 15; ++i) {  // unprofiled launches of each size
    b.kernel(copy, 1000 + 300 * i, 1200 + 300 * i, 5000 + i).grid_x = 131072;
    b.t.kernels.back().block_x = 128;
    b.t.kernels.back().registers_per_thread = 24;
  }
  b.kernel(copy, 9000, 9012, 6000).grid_x = 8192;
  b.t.kernels.back().block_x = 128;
  b.t.kernels.back().registers_per_thread = 24;
  const CounterAnalysis a = run(b);
  ASSERT_EQ(a.kernels.size(), 2u);
  const KernelDerivation* owner = a.owning(copy);
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner, &a.kernels[0]);
  EXPECT_EQ(owner->shape.grid.x, 131072);
  EXPECT_EQ(owner->shape_launches, 16u);
  EXPECT_EQ(owner->shape_total_ns, 16 * 200'000);
  EXPECT_EQ(a.kernels[1].shape.grid.x, 8192);
  EXPECT_EQ(a.kernels[1].shape_launches, 2u);
  EXPECT_EQ(a.kernels[1].shape_total_ns, 24'000);
  EXPECT_EQ(a.owning("never_profiled(int)"), nullptr);
}

// A trace that carries its ceilings is read against them, whatever the reading machine has;
// an older trace falls back to the machine's.
TEST(Counters, TheTracesOwnCeilingsComeFirst) {
  CounterTraceBuilder b;
  b.copy();
  add_h100_identity(b.t);
  b.t.metadata.identity->devices[0].uuid = "GPU-1";
  trace::TraceCeilings carried;
  carried.device_uuid = "GPU-1";
  carried.dram_bytes_per_s = 3.35e12;
  carried.fp32_flop_per_s = 66.9e12;
  carried.bf16_flop_per_s = carried.fp16_flop_per_s = 989.4e12;
  carried.kind = "datasheet";
  carried.source = "datasheet of the NVIDIA H100 SXM5 80GB";
  b.t.metadata.ceilings = {carried};
  AnalysisOptions options;
  options.ceilings = h100_ceilings();
  options.ceilings.origin = CeilingsOrigin::reading_store;
  MemorySource source(b.t);
  const Analysis a = analyze(source, options);
  EXPECT_EQ(a.counters.ceilings.origin, CeilingsOrigin::trace);
  EXPECT_EQ(a.counters.ceilings.kind, "datasheet");
  EXPECT_DOUBLE_EQ(a.counters.ceilings.dram_bytes_per_s, 3.35e12);
  EXPECT_NEAR(a.counters.kernels.at(0).roofline->ridge_flop_per_byte, 66.9 / 3.35, 1e-9);

  b.t.metadata.ceilings.clear();  // a trace of schema 4
  MemorySource old(b.t);
  const Analysis fallback = analyze(old, options);
  EXPECT_EQ(fallback.counters.ceilings.origin, CeilingsOrigin::reading_store);
  EXPECT_DOUBLE_EQ(fallback.counters.ceilings.dram_bytes_per_s, 3.0e12);
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
