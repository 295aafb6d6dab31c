#pragma once
// Hand-built traces for the analysis, report and export tests: short calls that read like a
// timeline ("kernel gemm on stream 7 from 100 to 200 us, launched by call 5").
#include <cmath>
#include <cstdint>
#include <string>

#include "ktune/trace/ktrace.hpp"

namespace ktune::analyze::test {

constexpr std::uint64_t kUs = 1000;
// CUPTI-like absolute timestamps, far from zero, so origin handling is exercised.
constexpr std::uint64_t kT0 = 1'700'000'000'000'000'000ull;

struct TraceBuilder {
  trace::Trace t;

  TraceBuilder() {
    t.metadata.command_line = {"python3", "train.py"};
    t.metadata.pid = 4242;
    t.metadata.started_at = "2026-11-21T10:00:00Z";
    t.metadata.complete = true;
  }
  // Times in microseconds from kT0.
  trace::KernelRecord& kernel(const std::string& name, double start_us, double end_us,
                              std::uint32_t corr = 0, std::uint32_t stream = 7,
                              std::uint32_t device = 0) {
    trace::KernelRecord k;
    k.name = name;
    k.demangled_name = name;
    k.start_ns = at(start_us);
    k.end_ns = at(end_us);
    k.correlation_id = corr;
    k.stream_id = stream;
    k.device_id = device;
    k.grid_x = 128;
    k.grid_y = k.grid_z = 1;
    k.block_x = 256;
    k.block_y = k.block_z = 1;
    t.kernels.push_back(k);
    return t.kernels.back();
  }
  trace::ApiRecord& api(const std::string& name, double start_us, double end_us,
                        std::uint32_t corr = 0, std::uint32_t thread = 11) {
    trace::ApiRecord a;
    a.api = "runtime";
    a.name = name;
    a.start_ns = at(start_us);
    a.end_ns = at(end_us);
    a.correlation_id = corr;
    a.process_id = 4242;
    a.thread_id = thread;
    t.api_calls.push_back(a);
    return t.api_calls.back();
  }
  // A launch call and the kernel it started, sharing correlation id `corr`.
  void launched(const std::string& name, double call_start_us, double call_end_us, double start_us,
                double end_us, std::uint32_t corr, std::uint32_t thread = 11) {
    api("cudaLaunchKernel", call_start_us, call_end_us, corr, thread);
    kernel(name, start_us, end_us, corr);
  }
  trace::MemcpyRecord& memcpy(const std::string& kind, double start_us, double end_us,
                              std::uint64_t bytes, std::uint32_t corr = 0) {
    trace::MemcpyRecord m;
    m.kind = kind;
    m.start_ns = at(start_us);
    m.end_ns = at(end_us);
    m.bytes = bytes;
    m.stream_id = 7;
    m.correlation_id = corr;
    t.memcpys.push_back(m);
    return t.memcpys.back();
  }
  trace::MemsetRecord& memset(double start_us, double end_us, std::uint64_t bytes,
                              std::uint32_t corr = 0, std::uint32_t device = 0) {
    trace::MemsetRecord m;
    m.start_ns = at(start_us);
    m.end_ns = at(end_us);
    m.bytes = bytes;
    m.stream_id = 7;
    m.device_id = device;
    m.correlation_id = corr;
    t.memsets.push_back(m);
    return t.memsets.back();
  }
  void nvtx(const std::string& name, double start_us, double end_us, std::uint32_t thread = 11) {
    trace::NvtxRangeRecord r;
    r.name = name;
    r.start_ns = at(start_us);
    r.end_ns = at(end_us);
    r.process_id = 4242;
    r.thread_id = thread;
    t.nvtx_ranges.push_back(r);
  }
  static std::uint64_t at(double us) {
    return kT0 + static_cast<std::uint64_t>(std::llround(us * kUs));
  }
};

// One cuBLASLt call row as the tracer records it: an m x 64 x 64 bf16 GEMM, called once.
inline trace::GemmCallRecord gemm_call(std::int64_t m) {
  trace::GemmCallRecord r;
  r.m = m;
  r.n = r.k = 64;
  r.lda = r.ldb = 64;
  r.ldc = r.ldd = m;
  r.a_type = r.b_type = r.c_type = r.d_type = "R_16BF";
  r.compute_type = "COMPUTE_32F";
  r.calls = 1;
  return r;
}

}  // namespace ktune::analyze::test
