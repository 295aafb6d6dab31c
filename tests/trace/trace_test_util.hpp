#pragma once
// Hand-built traces and a scratch directory for the trace tests.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "ktune/trace/ktrace.hpp"

namespace ktune::trace::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> n{0};
    path = std::filesystem::temp_directory_path() /
           ("ktune-trace-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// One of each record kind, with values chosen so that a swapped or truncated field shows.
inline Trace sample_trace() {
  Trace t;
  TraceMetadata& m = t.metadata;
  m.mode = "default";
  m.command_line = {"python3", "train.py", "--steps", "3"};
  m.pid = 1234;
  m.ppid = 1000;
  m.started_at = "2026-11-21T10:00:00Z";
  m.finished_at = "2026-11-21T10:00:05Z";
  m.complete = true;
  m.window.delay_s = 1.5;
  m.window.range = "nvtx:step";
  m.window.sample_one_in = 4;
  m.window.job_id = "job-7";
  m.window.max_records = 1000000;
  m.tracer_version = "0.1.0 (abc1234)";
  Identity id;
  id.host.hostname = "gpu-node-1";
  id.software.cuda_driver_api = 13000;
  DeviceIdentity dev;
  dev.name = "NVIDIA H100 80GB HBM3";
  dev.cc_major = 9;
  dev.sm_count = 132;
  id.devices.push_back(dev);
  m.identity = id;

  KernelRecord k;
  k.name = "_Z4gemmPKfS0_Pfi";
  k.queued_ns = 900;
  k.submitted_ns = 950;
  k.start_ns = 1000;
  k.end_ns = 5000;
  k.context_id = 1;
  k.stream_id = 7;
  k.correlation_id = 42;
  k.grid_x = 128;
  k.grid_y = 2;
  k.grid_z = 1;
  k.block_x = 256;
  k.block_y = 1;
  k.block_z = 1;
  k.cluster_x = 2;
  k.cluster_y = 1;
  k.cluster_z = 1;
  k.registers_per_thread = 96;
  k.static_shared_bytes = 16384;
  k.dynamic_shared_bytes = 65536;
  k.local_memory_per_thread_bytes = 8;
  k.local_memory_total_bytes = 1ull << 33;
  k.graph_id = 3;
  k.graph_node_id = 0xFFFF'0000'0000'0001ull;
  KernelRecord v;
  v.name = "vector_add";
  v.start_ns = 6000;
  v.end_ns = 6500;
  v.correlation_id = 43;
  t.kernels = {v, k};  // out of order on purpose: the reader sorts by start

  MemcpyRecord c;
  c.kind = "HtoD";
  c.src_memory = "pinned";
  c.dst_memory = "device";
  c.bytes = 1u << 20;
  c.start_ns = 500;
  c.end_ns = 800;
  c.stream_id = 7;
  c.correlation_id = 40;
  t.memcpys = {c};
  MemsetRecord s;
  s.bytes = 4096;
  s.value = 0xAB;
  s.start_ns = 5100;
  s.end_ns = 5200;
  t.memsets = {s};
  ApiRecord a;
  a.api = "runtime";
  a.name = "cudaLaunchKernel";
  a.callback_id = 211;
  a.start_ns = 850;
  a.end_ns = 880;
  a.process_id = 1234;
  a.thread_id = 4321;
  a.correlation_id = 42;
  ApiRecord a2 = a;
  a2.name = "cudaMemcpyAsync";
  a2.start_ns = 400;
  a2.correlation_id = 40;
  t.api_calls = {a, a2};
  SyncRecord y;
  y.type = "stream_synchronize";
  y.start_ns = 890;
  y.end_ns = 5010;
  y.stream_id = 7;
  t.syncs = {y};
  NvtxRangeRecord r;
  r.name = "forward";
  r.start_ns = 300;
  r.end_ns = 9000;
  t.nvtx_ranges = {r};
  OverheadRecord o;
  o.kind = "cupti_buffer_flush";
  o.start_ns = 7000;
  o.end_ns = 7100;
  t.overheads = {o};
  t.drops = {{1, 7, 5}};
  return t;
}

}  // namespace ktune::trace::test
