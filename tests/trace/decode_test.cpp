// CUPTI activity records built by hand (the layouts of cupti_activity.h), decoded as the tracer's
// writer thread decodes them, then written and read back.
#include "decode.hpp"

#include <cstring>

#include <gtest/gtest.h>

#include "trace_test_util.hpp"

namespace ktune::trace {
namespace {

const CUpti_Activity& as_activity(const void* p) {
  return *static_cast<const CUpti_Activity*>(p);
}

ActivityDecoder make_decoder() {
  return ActivityDecoder([](std::string_view api, std::uint32_t cbid) {
    if (api == "runtime" && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
      return std::string("cudaLaunchKernel_v7000");
    return std::string("other");
  });
}

TEST(Decode, KernelRecordKeepsEveryField) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "_Z8tiny_addPff";
  k.start = 2000;
  k.end = 2600;
  k.queued = 1500;
  k.submitted = CUPTI_TIMESTAMP_UNKNOWN;
  k.deviceId = 1;
  k.contextId = 2;
  k.streamId = 13;
  k.correlationId = 77;
  k.gridX = 4;
  k.gridY = 5;
  k.gridZ = 6;
  k.blockX = 128;
  k.blockY = 2;
  k.blockZ = 1;
  k.clusterX = 2;
  k.clusterY = 1;
  k.clusterZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 4096;
  k.localMemoryPerThread = 16;
  k.localMemoryTotal = 1;
  k.localMemoryTotal_v2 = 1ull << 34;
  k.graphId = 9;
  k.graphNodeId = 123456789012345ull;
  Trace out;
  auto d = make_decoder();
  ASSERT_TRUE(d.decode(as_activity(&k), out));
  ASSERT_EQ(out.kernels.size(), 1u);
  const KernelRecord& r = out.kernels[0];
  EXPECT_EQ(r.name, "_Z8tiny_addPff");
  EXPECT_EQ(r.start_ns, 2000u);
  EXPECT_EQ(r.end_ns, 2600u);
  EXPECT_EQ(r.queued_ns, 1500u);
  EXPECT_EQ(r.submitted_ns, 0u);
  EXPECT_EQ(r.device_id, 1u);
  EXPECT_EQ(r.context_id, 2u);
  EXPECT_EQ(r.stream_id, 13u);
  EXPECT_EQ(r.correlation_id, 77u);
  EXPECT_EQ(r.grid_x * 100 + r.grid_y * 10 + r.grid_z, 456);
  EXPECT_EQ(r.block_x, 128);
  EXPECT_EQ(r.block_y, 2);
  EXPECT_EQ(r.cluster_x, 2u);
  EXPECT_EQ(r.registers_per_thread, 40u);
  EXPECT_EQ(r.static_shared_bytes, 1024);
  EXPECT_EQ(r.dynamic_shared_bytes, 4096);
  EXPECT_EQ(r.local_memory_per_thread_bytes, 16u);
  EXPECT_EQ(r.local_memory_total_bytes, 1ull << 34);
  EXPECT_EQ(r.graph_id, 9u);
  EXPECT_EQ(r.graph_node_id, 123456789012345ull);

  // Through the writer: the demangled name appears.
  test::TempDir dir;
  write_ktrace(dir.path / "k.ktrace", out);
  EXPECT_EQ(read_ktrace(dir.path / "k.ktrace").kernels.at(0).demangled_name,
            "tiny_add(float*, float)");
}

TEST(Decode, CopiesMemsetsApiCallsAndSyncs) {
  CUpti_ActivityMemcpy6 c;
  std::memset(&c, 0, sizeof c);
  c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  c.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  c.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  c.bytes = 3u << 20;
  c.start = 10;
  c.end = 20;
  c.correlationId = 5;
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4096;
  s.value = 7;
  s.streamId = 3;
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = 100;
  a.end = 103;
  a.processId = 11;
  a.threadId = 12;
  a.correlationId = 77;
  CUpti_ActivitySynchronization2 y;
  std::memset(&y, 0, sizeof y);
  y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  y.start = 200;
  y.end = 900;
  CUpti_ActivityOverhead3 o;
  std::memset(&o, 0, sizeof o);
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.start = 1;
  o.end = 2;

  Trace out;
  auto d = make_decoder();
  for (const void* rec :
       {static_cast<const void*>(&c), static_cast<const void*>(&s), static_cast<const void*>(&a),
        static_cast<const void*>(&y), static_cast<const void*>(&o)})
    EXPECT_TRUE(d.decode(as_activity(rec), out));
  ASSERT_EQ(out.memcpys.size(), 1u);
  EXPECT_EQ(out.memcpys[0].kind, "DtoH");
  EXPECT_EQ(out.memcpys[0].src_memory, "device");
  EXPECT_EQ(out.memcpys[0].dst_memory, "pageable");
  EXPECT_EQ(out.memcpys[0].bytes, 3u << 20);
  ASSERT_EQ(out.memsets.size(), 1u);
  EXPECT_EQ(out.memsets[0].value, 7u);
  EXPECT_EQ(out.memsets[0].stream_id, 3u);
  ASSERT_EQ(out.api_calls.size(), 1u);
  EXPECT_EQ(out.api_calls[0].api, "runtime");
  EXPECT_EQ(out.api_calls[0].name, "cudaLaunchKernel");  // version suffix stripped
  EXPECT_EQ(out.api_calls[0].thread_id, 12u);
  EXPECT_EQ(out.api_calls[0].correlation_id, 77u);
  ASSERT_EQ(out.syncs.size(), 1u);
  EXPECT_EQ(out.syncs[0].type, "context_synchronize");
  ASSERT_EQ(out.overheads.size(), 1u);
  EXPECT_EQ(out.overheads[0].kind, "cupti_buffer_flush");
}

TEST(Decode, NvtxStartAndEndMarkersBecomeOneRange) {
  auto marker = [](CUpti_ActivityFlag flag, std::uint32_t id, std::uint64_t t, const char* name) {
    CUpti_ActivityMarker2 m;
    std::memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = flag;
    m.id = id;
    m.timestamp = t;
    m.name = name;
    m.domain = nullptr;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = 50;
    m.objectId.pt.threadId = 51;
    return m;
  };
  Trace out;
  auto d = make_decoder();
  const auto s = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 100, "forward");
  const auto e = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 900, nullptr);
  const auto orphan = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 950, nullptr);
  const auto mark = marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, 960, "checkpoint");
  EXPECT_TRUE(d.decode(as_activity(&s), out));
  EXPECT_EQ(d.open_ranges(), 1u);
  EXPECT_TRUE(out.nvtx_ranges.empty());  // open until its end arrives
  EXPECT_TRUE(d.decode(as_activity(&e), out));
  EXPECT_FALSE(d.decode(as_activity(&orphan), out));  // start before the window: dropped
  EXPECT_TRUE(d.decode(as_activity(&mark), out));
  ASSERT_EQ(out.nvtx_ranges.size(), 2u);
  EXPECT_EQ(out.nvtx_ranges[0].name, "forward");
  EXPECT_EQ(out.nvtx_ranges[0].start_ns, 100u);
  EXPECT_EQ(out.nvtx_ranges[0].end_ns, 900u);
  EXPECT_EQ(out.nvtx_ranges[0].process_id, 50u);
  EXPECT_EQ(out.nvtx_ranges[0].thread_id, 51u);
  EXPECT_EQ(out.nvtx_ranges[1].name, "checkpoint");
  EXPECT_EQ(out.nvtx_ranges[1].start_ns, out.nvtx_ranges[1].end_ns);
  EXPECT_EQ(d.open_ranges(), 0u);
}

TEST(Decode, IgnoresKindsTheTraceDoesNotKeep) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  Trace out;
  auto d = make_decoder();
  EXPECT_FALSE(d.decode(as_activity(&a), out));
  EXPECT_EQ(out.record_count(), 0u);
}

// The grid and block of a launch, read from its callback parameters as the counter tier reads
// them at the launch's entry.
TEST(Decode, LaunchSizeFromRuntimeAndDriverLaunchParameters) {
  cudaLaunchKernel_v7000_params runtime{};
  runtime.gridDim = {131072, 1, 1};
  runtime.blockDim = {128, 1, 1};
  LaunchSize s = launch_size(CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &runtime);
  EXPECT_EQ(s.blocks, 131072u);
  EXPECT_EQ(s.threads_per_block, 128u);

  cudaLaunchConfig_t config{};
  config.gridDim = {4, 3, 2};
  config.blockDim = {32, 4, 1};
  cudaLaunchKernelExC_v11060_params ex{};
  ex.config = &config;
  s = launch_size(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                  &ex);
  EXPECT_EQ(s.threads(), 24u * 128);

  cuLaunchKernel_params driver{};
  driver.gridDimX = 132;
  driver.gridDimY = driver.gridDimZ = 1;
  driver.blockDimX = 384;
  driver.blockDimY = driver.blockDimZ = 1;
  s = launch_size(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &driver);
  EXPECT_EQ(s.blocks, 132u);
  EXPECT_EQ(s.threads_per_block, 384u);

  CUlaunchConfig driver_config{};
  driver_config.gridDimX = 8;
  driver_config.gridDimY = driver_config.gridDimZ = 1;
  driver_config.blockDimX = 256;
  driver_config.blockDimY = driver_config.blockDimZ = 1;
  cuLaunchKernelEx_params driver_ex{};
  driver_ex.config = &driver_config;
  s = launch_size(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &driver_ex);
  EXPECT_EQ(s.threads(), 8u * 256);

  // What it cannot read is 0: the selector's size rule then stays out of the way.
  const cuLaunchKernelEx_params no_config{};
  EXPECT_EQ(
      launch_size(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &no_config)
          .threads(),
      0u);
  EXPECT_EQ(
      launch_size(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &runtime)
          .threads(),
      0u);
  EXPECT_EQ(launch_size(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, nullptr)
                .threads(),
            0u);
}

TEST(Decode, NamesForCuptiEnums) {
  EXPECT_STREQ(memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), "HtoD");
  EXPECT_STREQ(memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), "PtoP");
  EXPECT_STREQ(memcpy_kind_name(999), "unknown");
  EXPECT_STREQ(memory_kind_name(CUPTI_ACTIVITY_MEMORY_KIND_PINNED), "pinned");
  EXPECT_STREQ(sync_type_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT),
               "stream_wait_event");
  EXPECT_STREQ(overhead_kind_name(CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER), "driver_compiler");
  EXPECT_EQ(strip_api_version("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync_ptsz");
  EXPECT_EQ(strip_api_version("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(strip_api_version("cuMemcpy_v2x"), "cuMemcpy_v2x");
}

}  // namespace
}  // namespace ktune::trace
