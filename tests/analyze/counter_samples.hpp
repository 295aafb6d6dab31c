#pragma once
// Recorded-style counter values for the analysis and report tests: what the counter tier writes for
// six kinds of kernel on an H100 SXM (132 SMs, sm_90), built by hand from each kernel's arithmetic
// (bytes moved, FLOPs executed) at plausible H100 rates. The comment on each says which verdict
// the numbers should give and why; they are not fitted to the rules.
#include <string>
#include <string_view>

#include "ktune/analyze/counters.hpp"
#include "ktune/trace/metrics.hpp"
#include "trace_builder.hpp"

namespace ktune::analyze::test {

namespace m = trace::metric;

// Calibrated ceilings of an H100 SXM as `ktune calibrate` would store them.
inline Ceilings h100_ceilings() {
  Ceilings c;
  c.dram_bytes_per_s = 3.0e12;
  c.fp32_flop_per_s = 51e12;
  c.bf16_flop_per_s = 660e12;
  c.fp16_flop_per_s = 660e12;
  c.source = "calibrated on NVIDIA H100 80GB HBM3";
  return c;
}

inline void add_h100_identity(trace::Trace& t) {
  Identity id;
  DeviceIdentity d;
  d.ordinal = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  id.devices.push_back(d);
  t.metadata.identity = id;
}

struct CounterTraceBuilder : TraceBuilder {
  std::uint32_t next_corr = 1000;
  double clock_us = 0;

  // One profiled launch: the kernel record, then its counters.
  trace::KernelRecord& launch(const std::string& name, double duration_us, int grid, int block,
                              std::uint32_t registers, std::int32_t shared_bytes,
                              std::initializer_list<std::pair<std::string_view, double>> values) {
    const std::uint32_t corr = next_corr++;
    trace::KernelRecord& k = kernel(name, clock_us, clock_us + duration_us, corr);
    clock_us += duration_us + 10;
    k.grid_x = grid;
    k.block_x = block;
    k.registers_per_thread = registers;
    k.dynamic_shared_bytes = shared_bytes;
    for (const auto& [metric, value] : values)
      t.counters.push_back({0, corr, std::string(metric), value});
    return k;
  }

  // A streaming fp32 copy of 256 MiB: DRAM near its roof, no FLOPs -> memory-bound.
  void copy() {
    launch("copy_kernel(float const*, float*, unsigned long)", 185, 65536, 256, 16, 0,
           {{m::kDuration, 185'000},
            {m::kSmThroughputPct, 21},
            {m::kMemoryThroughputPct, 90},
            {m::kDramThroughputPct, 88},
            {m::kDramBytesRead, 268435456},
            {m::kDramBytesWrite, 268435456},
            {m::kFp32Fma, 0},
            {m::kL2HitRatePct, 50},
            {m::kAchievedOccupancyPct, 86}});
  }
  // 4 waves of FP32 FMA chains: 4.43 G FMA in 177 us (50 TFLOP/s), hardly any bytes.
  void fma_loop() {
    launch("fma_loop(float*, int)", 177, 4224, 256, 32, 0,
           {{m::kDuration, 177'000},
            {m::kSmThroughputPct, 93},
            {m::kMemoryThroughputPct, 3},
            {m::kDramThroughputPct, 1},
            {m::kDramBytesRead, 4.3e6},
            {m::kDramBytesWrite, 4.3e6},
            {m::kFp32Fma, 4.429e9},
            {m::kTensorPipePct, 0},
            {m::kAchievedOccupancyPct, 97}});
  }
  // An 8192^3 BF16 GEMM from cuBLASLt: 1.1 TFLOP on the tensor pipe in 1.7 ms, one CTA per SM.
  void tensor_gemm() {
    launch("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", 1700, 132, 384, 168, 227 * 1024,
           {{m::kDuration, 1'700'000},
            {m::kSmThroughputPct, 79},
            {m::kMemoryThroughputPct, 41},
            {m::kDramThroughputPct, 24},
            {m::kDramBytesRead, 1.05e9},
            {m::kDramBytesWrite, 1.34e8},
            {m::kFp32Fma, 1.1e7},
            {m::kTensorPipePct, 84},
            {m::kL2HitRatePct, 71},
            {m::kAchievedOccupancyPct, 18.7}});
  }
  // 8 blocks on a 132-SM GPU: nothing is busy, the grid is a sixteenth of a wave.
  void tiny_grid() {
    launch("reduce_final(float const*, float*, int)", 40, 8, 256, 32, 0,
           {{m::kDuration, 40'000},
            {m::kSmThroughputPct, 2.5},
            {m::kMemoryThroughputPct, 1.8},
            {m::kDramThroughputPct, 0.9},
            {m::kDramBytesRead, 1.0e6},
            {m::kDramBytesWrite, 1.0e3},
            {m::kFp32Fma, 1.0e5},
            {m::kAchievedOccupancyPct, 11.9}});
  }
  // A 2.4 us elementwise kernel over 4 blocks: over before the host launched the next.
  void tiny_kernel() {
    launch(
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1>)",
        2.4, 4, 128, 16, 0,
        {{m::kDuration, 2'400},
         {m::kSmThroughputPct, 1.1},
         {m::kMemoryThroughputPct, 0.8},
         {m::kDramThroughputPct, 0.4},
         {m::kDramBytesRead, 0},
         {m::kDramBytesWrite, 8192},
         {m::kAchievedOccupancyPct, 6}});
  }
  // 255 registers and 64 spilled bytes per thread: one 8-warp block per SM (12.5 %), and the
  // local-memory traffic (128 MB) exceeds the kernel's own DRAM traffic (100 MB).
  void spilling() {
    trace::KernelRecord& k = launch("attention_fwd<128, 64>(Params)", 300, 1056, 256, 255, 0,
                                    {{m::kDuration, 300'000},
                                     {m::kSmThroughputPct, 34},
                                     {m::kMemoryThroughputPct, 45},
                                     {m::kDramThroughputPct, 11},
                                     {m::kDramBytesRead, 9.0e7},
                                     {m::kDramBytesWrite, 1.0e7},
                                     {m::kFp32Fma, 2.0e9},
                                     {m::kL2HitRatePct, 90},
                                     {m::kLocalLoadSectors, 2.0e6},
                                     {m::kLocalStoreSectors, 2.0e6},
                                     {m::kAchievedOccupancyPct, 12.2}});
    k.local_memory_per_thread_bytes = 64;
  }
  // A naively tiled SIMT FP32 GEMM: 4 FLOP per DRAM byte of reuse, yet L2 hits 22 %.
  void poor_locality() {
    launch("sgemm_naive(float const*, float const*, float*, int)", 2000, 4096, 256, 40, 8192,
           {{m::kDuration, 2'000'000},
            {m::kSmThroughputPct, 30},
            {m::kMemoryThroughputPct, 84},
            {m::kDramThroughputPct, 83},
            {m::kDramBytesRead, 4.6e9},
            {m::kDramBytesWrite, 0.4e9},
            {m::kFp32Fma, 1.0e10},
            {m::kL2HitRatePct, 22},
            {m::kAchievedOccupancyPct, 70}});
  }
};

// Every sample kernel above, plus one launch the counter tier skipped, on an H100.
inline trace::Trace sample_counter_trace() {
  CounterTraceBuilder b;
  b.copy();
  b.fma_loop();
  b.tensor_gemm();
  b.tiny_grid();
  b.tiny_kernel();
  b.spilling();
  b.poor_locality();
  b.kernel("unprofiled_kernel(int)", 9000, 9100, 5);
  add_h100_identity(b.t);
  b.t.metadata.tracer_version = "0.9.0-test";
  return b.t;
}

}  // namespace ktune::analyze::test
