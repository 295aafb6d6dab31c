#include "ktune/analyze/analysis.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>

#include "ktune/core/error.hpp"
#include "trace_builder.hpp"

namespace ktune::analyze::test {
namespace {

Analysis run(TraceBuilder& b, AnalysisOptions o = {}) {
  MemorySource source(b.t);
  return analyze(source, o);
}

std::int64_t idle_of(const Analysis& a, GapCause c) {
  return a.idle_by_cause[static_cast<int>(c)].total_ns;
}

TEST(Analysis, RanksKernelsByTotalTimeWithTheirStatistics) {
  TraceBuilder b;
  b.kernel("small", 0, 40);  // 40 us once
  b.kernel("big", 100, 110);
  b.kernel("big", 200, 220);
  b.kernel("big", 300, 330);
  const Analysis a = run(b);
  ASSERT_EQ(a.kernels.size(), 2u);
  EXPECT_EQ(a.kernels[0].name, "big");
  EXPECT_EQ(a.kernel_count, 4u);
  EXPECT_EQ(a.kernel_total_ns, 100'000);
  const KernelGroup& big = a.kernels[0];
  EXPECT_EQ(big.total_ns, 60'000);
  EXPECT_DOUBLE_EQ(big.share, 0.6);
  EXPECT_EQ(big.duration_ns.count, 3u);
  EXPECT_DOUBLE_EQ(big.duration_ns.mean, 20'000);
  EXPECT_DOUBLE_EQ(big.duration_ns.median, 20'000);
  EXPECT_DOUBLE_EQ(big.duration_ns.min, 10'000);
  EXPECT_DOUBLE_EQ(big.duration_ns.max, 30'000);
  EXPECT_DOUBLE_EQ(big.duration_ns.stddev, 10'000);
  EXPECT_EQ(big.shape.grid.x, 128);
  EXPECT_EQ(big.shape.block.x, 256);
  EXPECT_DOUBLE_EQ(a.kernels[1].share, 0.4);
}

TEST(Analysis, BacklogIsTheShortestPrefixOwningEightyPercent) {
  TraceBuilder b;
  b.kernel("a", 0, 50);    // 50 %
  b.kernel("b", 60, 85);   // 25 % -> 75 %
  b.kernel("c", 90, 105);  // 15 % -> 90 %: reaches 80 %
  b.kernel("d", 110, 120);
  const Analysis a = run(b);
  EXPECT_EQ(a.backlog_size, 3u);
  AnalysisOptions half;
  half.backlog_share = 0.5;
  EXPECT_EQ(run(b, half).backlog_size, 1u);
}

TEST(Analysis, OverlappingStreamsCountOnceInBusyTime) {
  TraceBuilder b;
  b.kernel("x", 0, 100, 0, 1);
  b.kernel("y", 50, 150, 0, 2);  // overlaps x on another stream
  b.kernel("z", 60, 70, 0, 3);   // inside both
  b.kernel("w", 200, 300, 0, 1);
  const Analysis a = run(b);
  ASSERT_EQ(a.devices.size(), 1u);
  const DeviceUtilization& d = a.devices[0];
  EXPECT_EQ(d.window_ns(), 300'000);
  EXPECT_EQ(d.busy_ns, 250'000);
  EXPECT_EQ(d.idle_ns, 50'000);
  EXPECT_EQ(d.busy_ns + d.idle_ns, d.window_ns());
  EXPECT_EQ(a.gap_count, 1u);
  EXPECT_EQ(a.kernel_total_ns, 310'000);  // kernel time counts overlaps, busy time does not
  std::int64_t busy_bins = 0;
  for (auto v : d.bin_busy_ns) busy_bins += v;
  EXPECT_EQ(busy_bins, d.busy_ns);
}

TEST(Analysis, DevicesHaveTheirOwnWindows) {
  TraceBuilder b;
  b.kernel("a", 0, 10, 0, 7, 0);
  b.kernel("b", 5, 25, 0, 7, 1);
  b.kernel("c", 40, 50, 0, 7, 0);
  const Analysis a = run(b);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[0].busy_ns, 20'000);
  EXPECT_EQ(a.devices[0].idle_ns, 30'000);
  EXPECT_EQ(a.devices[1].busy_ns, 20'000);
  EXPECT_EQ(a.devices[1].idle_ns, 0);
  EXPECT_EQ(a.busy_ns(), 40'000);
  EXPECT_EQ(a.window_ns(), 70'000);
}

// One gap of each cause, each with a different length so a swapped cause shows. Each gap is
// covered by its cause from end to end (a partly covered gap is split: see the tests below).
TEST(Analysis, AttributesEachGapToItsCause) {
  TraceBuilder b;
  b.launched("k1", 0, 5, 10, 20, 1);
  // Copies: an HtoD copy fills the gap 20..40.
  b.memcpy("HtoD", 20, 40, 1 << 20, 2);
  b.launched("k2", 6, 8, 40, 50, 3);
  // Synchronization: another host thread syncs 45..80; k3 was queued early yet waited (gap 50..80).
  b.api("cudaDeviceSynchronize", 45, 80, 0, 12);
  b.launched("k3", 9, 10, 80, 90, 4);
  // Launch-bound: k4's launch call runs 90..129, while the GPU idles (gap 90..130).
  b.launched("k4", 90, 129, 130, 140, 5);
  // Unattributed: k5 was launched long before (call ends at 131) yet starts at 200 (gap 140..200).
  b.launched("k5", 130, 131, 200, 210, 6);
  const Analysis a = run(b);
  EXPECT_EQ(a.gap_count, 4u);
  EXPECT_EQ(idle_of(a, GapCause::copies), 20'000);
  EXPECT_EQ(idle_of(a, GapCause::synchronization), 30'000);
  EXPECT_EQ(idle_of(a, GapCause::launch_bound), 40'000);
  EXPECT_EQ(idle_of(a, GapCause::unattributed), 60'000);
  EXPECT_EQ(a.devices[0].idle_ns, 150'000);
  ASSERT_EQ(a.largest_gaps.size(), 4u);
  EXPECT_EQ(a.largest_gaps[0].cause, GapCause::unattributed);
  EXPECT_EQ(a.largest_gaps[0].next_kernel, "k5");
  EXPECT_EQ(a.largest_gaps[0].duration_ns(), 60'000);
  EXPECT_EQ(a.largest_gaps[3].cause, GapCause::copies);
  for (GapCause c : {GapCause::copies, GapCause::synchronization, GapCause::launch_bound,
                     GapCause::unattributed})
    EXPECT_EQ(a.idle_by_cause[static_cast<int>(c)].count, 1u);
  ASSERT_EQ(a.copies.size(), 1u);
  EXPECT_EQ(a.copies[0].kind, "HtoD");
  EXPECT_EQ(a.copies[0].bytes, 1u << 20);
}

// The fixture's case: a 1 us memset inside a 2 ms gap while the host sits idle. Only the memset's
// microsecond is "memory copies"; the rest of the gap keeps the cause it would have without it.
TEST(Analysis, TinyMemsetInsideALongGapIsCreditedOnlyItsOwnTime) {
  TraceBuilder b;
  b.launched("a", 0, 5, 10, 20, 1);
  b.launched("b", 6, 9, 2020, 2030, 2);  // queued long before: the host did not hold it up
  b.memset(1000, 1001, 512, 3);
  const Analysis a = run(b);
  EXPECT_EQ(a.gap_count, 1u);
  EXPECT_EQ(idle_of(a, GapCause::copies), 1'000);
  EXPECT_EQ(idle_of(a, GapCause::unattributed), 1'999'000);
  EXPECT_EQ(a.idle_by_cause[static_cast<int>(GapCause::copies)].count, 1u);
  EXPECT_EQ(a.idle_by_cause[static_cast<int>(GapCause::unattributed)].count, 1u);
  ASSERT_EQ(a.largest_gaps.size(), 1u);
  EXPECT_EQ(a.largest_gaps[0].cause, GapCause::unattributed);  // the largest share
  // The timeline strip shows the same split.
  const DeviceUtilization& d = a.devices[0];
  std::int64_t copy_bins = 0, unattributed_bins = 0;
  for (auto v : d.bin_idle_ns[static_cast<int>(GapCause::copies)]) copy_bins += v;
  for (auto v : d.bin_idle_ns[static_cast<int>(GapCause::unattributed)]) unattributed_bins += v;
  EXPECT_EQ(copy_bins, 1'000);
  EXPECT_EQ(unattributed_bins, 1'999'000);
}

// One gap 100..200 with all three kinds of evidence: a copy 110..120, a host sync 115..140 (the
// copy keeps 115..120: copies come first), and k's launch call 150..190, 145 us after the thread's
// previous launch: the host was busy elsewhere before it (host work), then launching.
TEST(Analysis, OneGapIsSplitAcrossItsCausesByTime) {
  TraceBuilder b;
  b.launched("first", 0, 5, 10, 100, 1);
  b.memcpy("DtoD", 110, 120, 1 << 20, 2);
  b.api("cudaStreamSynchronize", 115, 140, 0, 12);
  b.launched("k", 150, 190, 200, 210, 3);
  const Analysis a = run(b);
  EXPECT_EQ(a.gap_count, 1u);
  EXPECT_EQ(idle_of(a, GapCause::copies), 10'000);
  EXPECT_EQ(idle_of(a, GapCause::synchronization), 20'000);
  EXPECT_EQ(idle_of(a, GapCause::launch_bound), 50'000);  // 150..200: submitting k
  EXPECT_EQ(idle_of(a, GapCause::host), 20'000);          // 100..110 and 140..150
  EXPECT_EQ(idle_of(a, GapCause::unattributed), 0);
  EXPECT_EQ(a.idle_by_cause[static_cast<int>(GapCause::unattributed)].count, 0u);
  EXPECT_EQ(a.devices[0].idle_ns, 100'000);
  ASSERT_EQ(a.largest_gaps.size(), 1u);
  EXPECT_EQ(a.largest_gaps[0].cause, GapCause::launch_bound);
}

// "Launch-bound" is kept for a host that launches back to back: the gap 20..100 before b (its call
// at 80..85) is launch-bound when the thread's previous launch call ended at 70, 10 us before, and
// host work (Python, CPU) up to the call when it ended at 5, 75 us before.
TEST(Analysis, LaunchBoundOnlyWhenTheHostLaunchesBackToBack) {
  for (const bool back_to_back : {true, false}) {
    TraceBuilder b;
    b.launched("a", 0, 5, 10, 20, 1);
    if (back_to_back) b.api("cudaLaunchKernel", 65, 70);  // another launch, its kernel elsewhere
    b.launched("b", 80, 85, 100, 110, 2);
    const Analysis a = run(b);
    EXPECT_EQ(idle_of(a, GapCause::launch_bound), back_to_back ? 80'000 : 20'000);
    EXPECT_EQ(idle_of(a, GapCause::host), back_to_back ? 0 : 60'000);
  }
}

// First calls: the long stretch before a kernel's first launch is set-up, as is a first launch's
// call that loads its module lazily (300 us); the launch call of a profiled kernel is ktune's own
// counter replay; set-up and allocation calls cover their own time.
TEST(Analysis, FirstCallSetUpReplayAndAllocationHaveTheirOwnCauses) {
  TraceBuilder b;
  b.launched("a", 0, 5, 10, 20, 1);
  // 5 ms of host time, then the first launch of "gemm", whose call loads its module: 5020..5330.
  b.launched("gemm", 5020, 5320, 5330, 5400, 2);
  // A profiled launch: its call replays the kernel 5410..5900.
  b.launched("gemm", 5405, 5900, 5910, 5980, 3);
  b.t.counters.push_back({0, 3, "gpu__time_duration.sum", 70'000});
  // A cudaMalloc 6000..6100 and a module load 6100..6150 while the GPU idles 5980..6200.
  b.api("cudaMalloc", 6000, 6100);
  b.api("cuModuleLoadData", 6100, 6150);
  b.launched("gemm", 6190, 6195, 6200, 6210, 4);
  AnalysisOptions whole;
  whole.from_ns = 0;  // no warm-up cut: the gaps of the whole trace
  const Analysis a = run(b, whole);
  // Set-up: 20..5020 before gemm's first call, its 300 us call with module loading, and the load.
  EXPECT_EQ(idle_of(a, GapCause::setup), 5'000'000 + 310'000 + 50'000);
  EXPECT_EQ(idle_of(a, GapCause::counter_replay), 505'000);  // 5405..5910
  EXPECT_EQ(idle_of(a, GapCause::allocation), 100'000);
  EXPECT_EQ(a.largest_gaps.at(0).cause, GapCause::setup);
}

TEST(Analysis, ApiRolesFromTheirNames) {
  EXPECT_EQ(api_role("cudaMalloc"), ApiRole::allocation);
  EXPECT_EQ(api_role("cuMemAlloc_v2"), ApiRole::allocation);
  EXPECT_EQ(api_role("cudaFreeAsync"), ApiRole::allocation);
  EXPECT_EQ(api_role("cudaHostAlloc"), ApiRole::allocation);
  EXPECT_EQ(api_role("cuModuleLoadData"), ApiRole::setup);
  EXPECT_EQ(api_role("cuLibraryLoadData"), ApiRole::setup);
  EXPECT_EQ(api_role("cudaGetDeviceProperties_v2"), ApiRole::setup);
  EXPECT_EQ(api_role("cudaFuncGetAttributes"), ApiRole::setup);
  EXPECT_EQ(api_role("cudaMemcpyAsync"), ApiRole::copy);
  EXPECT_EQ(api_role("cudaLaunchKernelExC"), ApiRole::launch);
  EXPECT_EQ(api_role("cudaStreamSynchronize"), ApiRole::synchronize);
  EXPECT_EQ(api_role("cudaEventRecord"), ApiRole::other);
}

// A program's life: "init" at 0, 5 ms of set-up (library handles, model build), then the first
// launch of "gemm", then `steps` iterations of gemm + add launched back to back, 100 us apart.
TraceBuilder program(int steps, bool step_ranges = false) {
  TraceBuilder b;
  std::uint32_t corr = 1;
  b.launched("init", 0, 5, 10, 20, corr++);
  double t = 5000;
  for (int i = 0; i < steps; ++i) {
    if (step_ranges) b.nvtx("ProfilerStep#" + std::to_string(i + 1), t, t + 95);
    b.launched("gemm", t, t + 5, t + 20, t + 60, corr++);
    b.launched("add", t + 6, t + 10, t + 61, t + 70, corr++);
    t += 100;
  }
  return b;
}

// The first-call set-up is warm-up: the report starts at gemm's first launch, and the warm-up's
// own numbers (one kernel, 5 ms of set-up) are kept apart.
TEST(Analysis, DetectsTheWarmUpAndReportsTheSteadyState) {
  TraceBuilder b = program(100);
  const Analysis a = run(b);
  EXPECT_EQ(a.steady.cut, Cut::detected);
  EXPECT_EQ(a.steady.start_ns, static_cast<std::int64_t>(TraceBuilder::at(5020)));
  EXPECT_NE(a.steady.reason.find("first-call set-up ended at the first launch of gemm"),
            std::string::npos)
      << a.steady.reason;
  EXPECT_EQ(a.kernel_count, 200u);
  EXPECT_EQ(idle_of(a, GapCause::setup), 0);
  EXPECT_EQ(a.steady.warmup_kernels, 1u);
  EXPECT_EQ(a.steady.warmup_kernel_ns, 10'000);
  // The warm-up ends at its last kernel: its gaps were read in the whole trace, and its set-up
  // gap is the one before gemm (shown with the warm-up, not in the steady state).
  const Analysis whole = run(b, [] {
    AnalysisOptions o;
    o.from_ns = 0;
    return o;
  }());
  EXPECT_EQ(whole.steady.cut, Cut::none);
  EXPECT_EQ(whole.kernel_count, 201u);
  EXPECT_EQ(idle_of(whole, GapCause::setup), 4'980'000);  // 20..5000, before gemm's first call
  EXPECT_LT(whole.devices[0].busy_fraction(), a.devices[0].busy_fraction());
}

// With repeated step ranges (torch.profiler's ProfilerStep#N), the first step is warm-up too.
TEST(Analysis, TheFirstStepIsWarmUp) {
  TraceBuilder b = program(10, true);
  const Analysis a = run(b);
  EXPECT_EQ(a.steady.cut, Cut::detected);
  EXPECT_EQ(a.steady.start_ns, static_cast<std::int64_t>(TraceBuilder::at(5100)));
  EXPECT_NE(a.steady.reason.find("the first of 10 'ProfilerStep' steps is warm-up"),
            std::string::npos)
      << a.steady.reason;
  EXPECT_EQ(a.kernel_count, 18u);
  EXPECT_EQ(a.steady.warmup_kernels, 3u);
}

// First-call work late in the run (with fewer than half of the kernels after it) stays in the
// steady state: a cut there would leave most of the run out.
TEST(Analysis, LateFirstCallsDoNotMoveTheWarmUp) {
  TraceBuilder b = program(100);
  b.launched("eval", 20000, 20005, 20010, 20020, 9999);  // after 10 ms of host work
  const Analysis a = run(b);
  EXPECT_EQ(a.steady.start_ns, static_cast<std::int64_t>(TraceBuilder::at(5020)));
  EXPECT_GT(idle_of(a, GapCause::setup), 0);
}

TEST(Analysis, TheUsersCutFromATimeOrACountOfKernels) {
  TraceBuilder b = program(100);
  AnalysisOptions from;
  from.from_ns = 10'000'000;  // 10 ms after the first record (the init launch call at 0)
  const Analysis f = run(b, from);
  EXPECT_EQ(f.steady.cut, Cut::from);
  EXPECT_EQ(f.steady.start_ns, static_cast<std::int64_t>(TraceBuilder::at(10000)));
  EXPECT_EQ(f.kernel_count, 100u);  // iterations 50..99
  AnalysisOptions skip;
  skip.skip_kernels = 11;  // init and 5 iterations
  const Analysis k = run(b, skip);
  EXPECT_EQ(k.steady.cut, Cut::skip);
  EXPECT_EQ(k.kernel_count, 190u);
  EXPECT_EQ(k.steady.warmup_kernels, 11u);
  AnalysisOptions too_late;
  too_late.from_ns = 60'000'000;
  EXPECT_THROW(run(b, too_late), Error);
  AnalysisOptions too_many;
  too_many.skip_kernels = 201;
  EXPECT_THROW(run(b, too_many), Error);
}

// A copy on another device explains nothing here; copies overlapping each other count once.
TEST(Analysis, OnlyThisDevicesCopiesCountAndOverlapsCountOnce) {
  TraceBuilder b;
  b.kernel("a", 0, 10);
  b.kernel("b", 110, 120);
  b.memset(20, 40, 64, 0, 1);  // device 1
  b.memcpy("HtoD", 50, 70, 64);
  b.memcpy("DtoH", 60, 80, 64);
  const Analysis a = run(b);
  EXPECT_EQ(idle_of(a, GapCause::copies), 30'000);  // 50..80
  EXPECT_EQ(idle_of(a, GapCause::unattributed), 70'000);
}

TEST(Analysis, GapWithoutHostRecordsIsUnattributed) {
  TraceBuilder b;
  b.kernel("a", 0, 10);
  b.kernel("b", 20, 30);
  const Analysis a = run(b);
  EXPECT_EQ(idle_of(a, GapCause::unattributed), 10'000);
}

TEST(Analysis, SyncRecordsCoverGapsButStreamWaitsDoNot) {
  TraceBuilder b;
  b.kernel("a", 0, 10, 1);
  b.kernel("b", 20, 30, 2);
  b.kernel("c", 40, 50, 3);
  trace::SyncRecord s;
  s.type = "stream_synchronize";  // covers the whole gap 10..20
  s.start_ns = TraceBuilder::at(5);
  s.end_ns = TraceBuilder::at(20);
  b.t.syncs.push_back(s);
  s.type = "stream_wait_event";  // a GPU-side wait: the host was free
  s.start_ns = TraceBuilder::at(31);
  s.end_ns = TraceBuilder::at(39);
  b.t.syncs.push_back(s);
  const Analysis a = run(b);
  EXPECT_EQ(idle_of(a, GapCause::synchronization), 10'000);
  EXPECT_EQ(idle_of(a, GapCause::unattributed), 10'000);
}

TEST(Analysis, FindsStormsOfKernelsShorterThanTheirLaunch) {
  TraceBuilder b;
  std::uint32_t corr = 1;
  double t = 0;
  // 25 kernels of 1 us, each launched by a 5 us call: a storm.
  for (int i = 0; i < 25; ++i, t += 6) b.launched("tiny", t, t + 5, t + 5.5, t + 6.5, corr++);
  // A long kernel ends it; then 10 tiny ones: too few for a storm.
  b.launched("long", t, t + 5, t + 6, t + 106, corr++);
  t += 110;
  for (int i = 0; i < 10; ++i, t += 6) b.launched("tiny2", t, t + 5, t + 5.5, t + 6.5, corr++);
  const Analysis a = run(b);
  EXPECT_EQ(a.storm_count, 1u);
  ASSERT_EQ(a.storms.size(), 1u);
  EXPECT_EQ(a.storms[0].kernels, 25u);
  EXPECT_EQ(a.storms[0].top_kernel, "tiny");
  EXPECT_EQ(a.storms[0].kernel_ns, 25'000);
  EXPECT_EQ(a.storms[0].launch_overhead_ns, 125'000);
  AnalysisOptions o;
  o.storm_min_kernels = 10;
  EXPECT_EQ(run(b, o).storm_count, 2u);
}

TEST(Analysis, NvtxRangesGetWallTimeAndTheGpuTimeOfKernelsLaunchedInside) {
  TraceBuilder b;
  b.nvtx("step", 0, 100);
  b.nvtx("forward", 10, 40);  // nested: innermost wins
  b.nvtx("step", 200, 260);
  b.launched("gemm", 12, 14, 20, 50, 1);           // inside forward
  b.launched("relu", 50, 52, 60, 65, 2);           // inside step
  b.launched("relu", 210, 212, 220, 225, 3);       // inside the second step
  b.launched("other", 300, 301, 302, 303, 4, 99);  // another thread, no range
  const Analysis a = run(b);
  ASSERT_EQ(a.nvtx.size(), 2u);
  EXPECT_EQ(a.nvtx[0].name, "step");
  EXPECT_EQ(a.nvtx[0].total_ns, 160'000);
  EXPECT_EQ(a.nvtx[0].duration_ns.count, 2u);
  EXPECT_EQ(a.nvtx[0].kernels, 2u);
  EXPECT_EQ(a.nvtx[0].kernel_gpu_ns, 10'000);
  EXPECT_EQ(a.nvtx[1].name, "forward");
  EXPECT_EQ(a.nvtx[1].kernels, 1u);
  EXPECT_EQ(a.nvtx[1].kernel_gpu_ns, 30'000);
}

TEST(Analysis, GroupsByNameOrByNameAndLaunchShape) {
  TraceBuilder b;
  b.kernel("gemm", 0, 10);
  b.kernel("gemm", 20, 30).grid_x = 64;
  b.kernel("gemm", 40, 50);
  const Analysis by_name = run(b);
  ASSERT_EQ(by_name.kernels.size(), 1u);
  EXPECT_EQ(by_name.kernels[0].distinct_shapes, 2u);
  AnalysisOptions o;
  o.group_by = parse_group_by("name+launch");
  const Analysis by_launch = run(b, o);
  ASSERT_EQ(by_launch.kernels.size(), 2u);
  EXPECT_EQ(by_launch.kernels[0].duration_ns.count, 2u);
  EXPECT_EQ(by_launch.kernels[0].shape.grid.x, 128);
  EXPECT_EQ(by_launch.kernels[1].shape.grid.x, 64);
  EXPECT_THROW(parse_group_by("launch"), Error);
}

TEST(Analysis, EmptyTraceGivesZeros) {
  TraceBuilder b;
  const Analysis a = run(b);
  EXPECT_EQ(a.kernel_count, 0u);
  EXPECT_TRUE(a.devices.empty());
  EXPECT_EQ(a.backlog_size, 0u);
  EXPECT_EQ(a.window_ns(), 0);
}

// Yields kernels generated on the fly, so a test can feed a million without holding them.
class SyntheticSource : public TraceSource {
 public:
  explicit SyntheticSource(std::size_t n, bool shuffled = false) : n_(n), shuffled_(shuffled) {}
  void kernels(const Visitor<trace::KernelRecord>& visit) override {
    trace::KernelRecord k;
    for (std::size_t i = 0; i < n_; ++i) {
      const std::size_t j = shuffled_ ? n_ - 1 - i : i;
      k.name = "kernel_" + std::to_string(j % 50);
      k.demangled_name.clear();
      k.start_ns = kT0 + j * 3000;  // 2 us kernel, 1 us gap
      k.end_ns = k.start_ns + 2000;
      k.correlation_id = static_cast<std::uint32_t>(j + 1);
      visit(k);
    }
  }
  void memcpys(const Visitor<trace::MemcpyRecord>&) override {}
  void memsets(const Visitor<trace::MemsetRecord>&) override {}
  void api_calls(const Visitor<trace::ApiRecord>& visit) override {
    trace::ApiRecord a;
    a.name = "cudaLaunchKernel";
    for (std::size_t j = 0; j < n_; ++j) {
      a.start_ns = kT0 + j * 3000 - 2500;
      a.end_ns = a.start_ns + 1500;
      a.correlation_id = static_cast<std::uint32_t>(j + 1);
      visit(a);
    }
  }
  void syncs(const Visitor<trace::SyncRecord>&) override {}
  void nvtx_ranges(const Visitor<trace::NvtxRangeRecord>&) override {}
  const trace::TraceMetadata& metadata() const override { return meta_; }
  std::optional<std::uint64_t> origin_ns() override { return kT0 - 2500; }

 private:
  std::size_t n_;
  bool shuffled_;
  trace::TraceMetadata meta_;
};

TEST(Analysis, KernelsOutOfStartOrderAreRejected) {
  SyntheticSource source(10, true);
  EXPECT_THROW(analyze(source), Error);
}

TEST(Analysis, AMillionKernelsReportInSeconds) {
  constexpr std::size_t n = 1'000'000;
  SyntheticSource source(n);
  const auto t0 = std::chrono::steady_clock::now();
  const Analysis a = analyze(source);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("analysed %zu kernels in %.2f s\n", n, s);
  EXPECT_EQ(a.kernel_count, n);
  EXPECT_EQ(a.kernels.size(), 50u);
  EXPECT_EQ(a.kernel_total_ns, static_cast<std::int64_t>(n) * 2000);
  EXPECT_EQ(a.devices[0].busy_ns, static_cast<std::int64_t>(n) * 2000);
  EXPECT_EQ(a.devices[0].idle_ns, static_cast<std::int64_t>(n - 1) * 1000);
  // Each launch call ends 1 us before its kernel starts, at the previous kernel's end: the queue
  // was empty for every gap but the call itself was done, so nothing here is launch-bound.
  EXPECT_EQ(idle_of(a, GapCause::unattributed), static_cast<std::int64_t>(n - 1) * 1000);
  EXPECT_LT(s, 30.0);  // a generous bound for a shared 2-core CI box; typically ~1 s
}

// Runs the analysis on a thread and fails fast (ending the test binary) if it does not return:
// the bug it guards against was an endless loop, which would otherwise hang CI until the ctest
// timeout.
Analysis run_or_die(const trace::Trace& t) {
  auto done = std::async(std::launch::async, [t] {
    MemorySource source(t);
    return analyze(source);
  });
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::fprintf(stderr, "analyze() did not return within 20 s: time arithmetic loops\n");
    std::_Exit(1);
  }
  return done.get();
}

TEST(Analysis, KernelEndingNearInt64MaxDoesNotLoop) {
  // Used to widen the timeline forever: bin_ns * bins overflowed and turned negative.
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
  for (std::uint64_t end : {kMax - 1, kMax, std::numeric_limits<std::uint64_t>::max()}) {
    SCOPED_TRACE(end);
    TraceBuilder b;
    b.kernel("first", 0, 1).start_ns = 1;
    b.kernel("last", 2, 3).end_ns = end;
    const Analysis a = run_or_die(b.t);
    ASSERT_EQ(a.devices.size(), 1u);
    const DeviceUtilization& d = a.devices[0];
    EXPECT_GT(d.window_ns(), 0);
    EXPECT_EQ(d.busy_ns + d.idle_ns, d.window_ns());
    std::int64_t busy_bins = 0;
    for (auto v : d.bin_busy_ns) busy_bins += v;
    EXPECT_EQ(busy_bins, d.busy_ns);
  }
}

TEST(Analysis, TotalsSaturateInsteadOfOverflowing) {
  // Two century-long kernels on each of two devices: every sum passes INT64_MAX, which was
  // undefined behaviour (a negative total in practice).
  TraceBuilder b;
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
  for (std::uint32_t device : {0u, 1u})
    for (int i = 0; i < 2; ++i) {
      auto& k = b.kernel("forever", 0, 1, 0, 7, device);
      k.start_ns = 1 + i;
      k.end_ns = kMax;
    }
  const Analysis a = run_or_die(b.t);
  EXPECT_EQ(a.kernel_total_ns, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(a.window_ns(), std::numeric_limits<std::int64_t>::max());
  EXPECT_GT(a.busy_ns(), 0);
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_GT(a.kernels[0].total_ns, 0);
}

TEST(Analysis, SharedMemoryTotalDoesNotOverflow) {
  // Found by fuzz_analysis: static + dynamic shared bytes overflowed int32 (undefined behaviour).
  TraceBuilder b;
  auto& k = b.kernel("k", 0, 1);
  k.static_shared_bytes = k.dynamic_shared_bytes = std::numeric_limits<std::int32_t>::max();
  EXPECT_EQ(launch_shape(k).shared_mem_bytes, std::numeric_limits<std::int32_t>::max());
  k.static_shared_bytes = k.dynamic_shared_bytes = std::numeric_limits<std::int32_t>::min();
  EXPECT_EQ(launch_shape(k).shared_mem_bytes, std::numeric_limits<std::int32_t>::min());
}

}  // namespace
}  // namespace ktune::analyze::test

namespace ktune::analyze {
namespace {

using test::TraceBuilder;

// Each cuBLASLt call owns the cuBLASLt kernels its thread launches next: at most four of them (a
// matmul and its split-K reduction), none replayed from a CUDA graph, none of another thread's.
TEST(Analysis, GemmCallsGetTheGpuTimeOfTheKernelsTheyLaunched) {
  TraceBuilder b;
  b.t.metadata.records = {"kernel", "gemm_call", "gemm_event"};
  b.t.gemm_calls = {test::gemm_call(128), test::gemm_call(256)};
  b.t.gemm_calls[1].calls = 2;
  b.t.gemm_events = {{4242, 11, TraceBuilder::at(0), 0},
                     {4242, 11, TraceBuilder::at(100), 1},
                     {4242, 11, TraceBuilder::at(300), 1}};
  // Call 0: its matmul and split-K reduction (both cuBLASLt's), then a kernel of the program.
  b.launched("nvjet_hsh_128x64_64x4_1x1_v_bz_NNN", 1, 2, 10, 30, 1);
  b.launched("void cublasLt::splitKreduce_kernel<32, 16, int, float>(int)", 3, 4, 30, 35, 2);
  b.launched("void at::native::vectorized_elementwise_kernel<4>(int)", 5, 6, 35, 40, 3);
  // Call 1: five launches; the fifth is past what one call launches.
  for (std::uint32_t i = 0; i < 5; ++i)
    b.launched("nvjet_hsh_256x64_64x4_1x1_v_bz_NNN", 101 + 2 * i, 102 + 2 * i, 110 + 10 * i,
               115 + 10 * i, 10 + i);
  // A launch of another thread right after call 1: not its kernel.
  b.launched("nvjet_hsh_256x64_64x4_1x1_v_bz_NNN", 101.5, 101.8, 200, 290, 20, /*thread=*/12);
  // Call 2 (same problem) was captured into a graph: its kernel runs from the graph's launch.
  b.api("cudaGraphLaunch", 301, 302, 30);
  b.kernel("nvjet_hsh_256x64_64x4_1x1_v_bz_NNN", 310, 400, 30).graph_id = 5;
  MemorySource source(b.t);
  const Analysis a = analyze(source);
  ASSERT_TRUE(a.gemm.timed);
  ASSERT_EQ(a.gemm.shapes.size(), 2u);
  EXPECT_EQ(a.gemm.shapes[0].problem.m, 128);  // most GPU time first: 25 us against 20 us
  EXPECT_EQ(a.gemm.shapes[0].gpu_ns, 25'000);
  EXPECT_EQ(a.gemm.shapes[0].timed_calls, 1u);
  EXPECT_EQ(a.gemm.shapes[1].problem.m, 256);
  EXPECT_EQ(a.gemm.shapes[1].gpu_ns, 20'000);   // four launches of 5 us
  EXPECT_EQ(a.gemm.shapes[1].timed_calls, 1u);  // the graph's replay is not tied to its call
  EXPECT_EQ(a.gemm.gpu_ns, 45'000);
  EXPECT_EQ(a.gemm.calls, 3u);
  // The GEMM part alone (what ingest reads) ties the same kernels to the same calls.
  MemorySource again(b.t);
  const GemmCalls alone = read_gemm_calls(again);
  ASSERT_EQ(alone.shapes.size(), 2u);
  EXPECT_EQ(alone.shapes[0].gpu_ns, 25'000);
  EXPECT_EQ(alone.shapes[1].gpu_ns, 20'000);
  EXPECT_EQ(alone.timed_calls, 2u);
}

// A profiled cuBLASLt kernel whose GEMM problem the trace recorded gets the command that tunes
// that problem, in its opportunity, instead of advice about code the user cannot edit.
TEST(Analysis, ProfiledCuBlasKernelGetsTheTuneCommandOfItsProblem) {
  TraceBuilder b;
  b.t.metadata.records = {"kernel", "gemm_call", "gemm_event", "counter"};
  b.t.gemm_calls = {test::gemm_call(64)};
  b.t.gemm_events = {{4242, 11, TraceBuilder::at(0), 0}};
  const std::string nvjet = "nvjet_hsh_128x64_64x4_1x1_v_bz_NNN";
  b.launched(nvjet, 1, 2, 10, 400, 1);
  for (const auto& [metric, value] :
       {std::pair<std::string, double>{"gpu__time_duration.sum", 390'000},
        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30},
        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 45}})
    b.t.counters.push_back({0, 1, metric, value});
  MemorySource source(b.t);
  const Analysis a = analyze(source);
  ASSERT_EQ(a.counters.kernels.size(), 1u);
  const KernelDerivation& d = a.counters.kernels[0];
  EXPECT_EQ(d.library, "cuBLAS");
  ASSERT_EQ(a.gemm.shapes.size(), 1u);
  ASSERT_FALSE(a.gemm.shapes[0].tune_command.empty()) << a.gemm.shapes[0].not_tunable;
  EXPECT_EQ(a.gemm.shapes[0].kernels, std::vector<std::string>{nvjet});
  EXPECT_EQ(d.tune_command, a.gemm.shapes[0].tune_command);
  ASSERT_EQ(d.opportunities.size(), 1u);
  EXPECT_NE(d.opportunities[0].action.find("64x64x64"), std::string::npos)
      << d.opportunities[0].action;
  EXPECT_NE(d.opportunities[0].action.find(d.tune_command), std::string::npos);
}

}  // namespace
}  // namespace ktune::analyze
