#include "decode.hpp"

#include <cstring>

#include "ktune/core/enum_names.hpp"

namespace ktune::trace {

namespace {

// CUPTI's enums, named as the .ktrace stores them. CUPTI grows values: any other is "unknown".
constexpr EnumName<std::uint32_t> kMemcpyKinds[] = {
    {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, "HtoD"}, {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, "DtoH"},
    {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, "HtoA"}, {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, "AtoH"},
    {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, "AtoA"}, {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, "AtoD"},
    {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, "DtoA"}, {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, "DtoD"},
    {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, "HtoH"}, {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, "PtoP"},
};
constexpr EnumName<std::uint32_t> kMemoryKinds[] = {
    {CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, "pageable"},
    {CUPTI_ACTIVITY_MEMORY_KIND_PINNED, "pinned"},
    {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "device"},
    {CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, "array"},
    {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, "managed"},
    {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, "device_static"},
    {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC, "managed_static"},
};
constexpr EnumName<std::uint32_t> kSyncTypes[] = {
    {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, "event_synchronize"},
    {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, "stream_wait_event"},
    {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, "stream_synchronize"},
    {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, "context_synchronize"},
};
constexpr EnumName<std::uint32_t> kOverheadKinds[] = {
    {CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER, "driver_compiler"},
    {CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, "cupti_buffer_flush"},
    {CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, "cupti_instrumentation"},
    {CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE, "cupti_resource"},
    {CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING, "module_loading"},
    {CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING, "lazy_function_loading"},
    {CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL, "command_buffer_full"},
    {CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST, "activity_buffer_request"},
    {CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT, "uvm_activity_init"},
};

}  // namespace

const char* memcpy_kind_name(std::uint32_t kind) {
  return name_of(kMemcpyKinds, kind, "unknown");
}
const char* memory_kind_name(std::uint32_t kind) {
  return name_of(kMemoryKinds, kind, "unknown");
}
const char* sync_type_name(std::uint32_t type) {
  return name_of(kSyncTypes, type, "unknown");
}
const char* overhead_kind_name(std::uint32_t kind) {
  return name_of(kOverheadKinds, kind, "unknown");
}

std::string strip_api_version(std::string_view name) {
  const auto v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      name.find_first_not_of("0123456789", v + 2) == std::string_view::npos)
    name = name.substr(0, v);
  return std::string(name);
}

const std::string& ActivityDecoder::api_name(bool runtime, std::uint32_t cbid) {
  const std::uint64_t key = (std::uint64_t{runtime} << 32) | cbid;
  auto it = api_names_.find(key);
  if (it == api_names_.end())
    it = api_names_
             .emplace(key, strip_api_version(namer_ ? namer_(runtime ? "runtime" : "driver", cbid)
                                                    : std::string()))
             .first;
  return it->second;
}

namespace {

// The fields a GPU-side record (kernel, memcpy, memset) copies from its CUPTI record, which names
// them alike in each.
template <class Cupti, class Record>
void copy_gpu_fields(const Cupti& c, Record& r) {
  r.start_ns = c.start;
  r.end_ns = c.end;
  r.device_id = c.deviceId;
  r.context_id = c.contextId;
  r.stream_id = c.streamId;
  r.correlation_id = c.correlationId;
  r.graph_id = c.graphId;
  r.graph_node_id = c.graphNodeId;
}

std::uint64_t known_timestamp(std::uint64_t t) {
  return t == CUPTI_TIMESTAMP_UNKNOWN ? 0 : t;
}

KernelRecord kernel_record(const CUpti_ActivityKernel10& k) {
  KernelRecord r;
  r.name = k.name ? k.name : "";
  copy_gpu_fields(k, r);
  r.queued_ns = known_timestamp(k.queued);
  r.submitted_ns = known_timestamp(k.submitted);
  r.grid_x = k.gridX;
  r.grid_y = k.gridY;
  r.grid_z = k.gridZ;
  r.block_x = k.blockX;
  r.block_y = k.blockY;
  r.block_z = k.blockZ;
  r.cluster_x = k.clusterX;
  r.cluster_y = k.clusterY;
  r.cluster_z = k.clusterZ;
  r.registers_per_thread = k.registersPerThread;
  r.static_shared_bytes = k.staticSharedMemory;
  r.dynamic_shared_bytes = k.dynamicSharedMemory;
  r.local_memory_per_thread_bytes = k.localMemoryPerThread;
  r.local_memory_total_bytes = k.localMemoryTotal_v2 ? k.localMemoryTotal_v2 : k.localMemoryTotal;
  return r;
}

MemcpyRecord memcpy_record(const CUpti_ActivityMemcpy6& m) {
  MemcpyRecord r;
  r.kind = memcpy_kind_name(m.copyKind);
  r.src_memory = memory_kind_name(m.srcKind);
  r.dst_memory = memory_kind_name(m.dstKind);
  r.bytes = m.bytes;
  copy_gpu_fields(m, r);
  return r;
}

MemsetRecord memset_record(const CUpti_ActivityMemset4& m) {
  MemsetRecord r;
  r.bytes = m.bytes;
  r.value = m.value;
  copy_gpu_fields(m, r);
  return r;
}

SyncRecord sync_record(const CUpti_ActivitySynchronization2& s) {
  SyncRecord r;
  r.type = sync_type_name(s.type);
  r.start_ns = s.start;
  r.end_ns = s.end;
  r.context_id = s.contextId;
  r.stream_id = s.streamId;
  r.cuda_event_id = s.cudaEventId;
  r.correlation_id = s.correlationId;
  return r;
}

OverheadRecord overhead_record(const CUpti_ActivityOverhead3& o) {
  OverheadRecord r;
  r.kind = overhead_kind_name(o.overheadKind);
  r.start_ns = o.start;
  r.end_ns = o.end;
  if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) r.thread_id = o.objectId.pt.threadId;
  r.correlation_id = o.correlationId;
  return r;
}

// CUPTI hands every record as its CUpti_Activity header; `kind` says which layout it has.
template <class Layout>
const Layout& as(const CUpti_Activity& record) {
  return reinterpret_cast<const Layout&>(record);
}

}  // namespace

ApiRecord ActivityDecoder::api_record(const CUpti_ActivityAPI& a, bool runtime) {
  ApiRecord r;
  r.api = runtime ? "runtime" : "driver";
  r.name = api_name(runtime, a.cbid);
  r.callback_id = a.cbid;
  r.start_ns = a.start;
  r.end_ns = a.end;
  r.process_id = a.processId;
  r.thread_id = a.threadId;
  r.correlation_id = a.correlationId;
  r.return_value = a.returnValue;
  return r;
}

bool ActivityDecoder::marker(const CUpti_ActivityMarker2& m, std::vector<NvtxRangeRecord>& out) {
  const bool instant = m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
  if (instant || (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START)) {
    NvtxRangeRecord r;
    r.name = m.name ? m.name : "";
    r.domain = m.domain ? m.domain : "";
    r.start_ns = r.end_ns = m.timestamp;
    if (m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
        m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
      r.process_id = m.objectId.pt.processId;
      r.thread_id = m.objectId.pt.threadId;
    }
    if (instant)
      out.push_back(std::move(r));
    else
      open_[m.id] = {std::move(r)};
    return true;
  }
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_.find(m.id);
    if (it == open_.end()) return false;  // its start fell outside the capture window
    it->second.range.end_ns = m.timestamp;
    out.push_back(std::move(it->second.range));
    open_.erase(it);
    return true;
  }
  return false;
}

bool ActivityDecoder::decode(const CUpti_Activity& record, Trace& out) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      out.kernels.push_back(kernel_record(as<CUpti_ActivityKernel10>(record)));
      return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      out.memcpys.push_back(memcpy_record(as<CUpti_ActivityMemcpy6>(record)));
      return true;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      out.memsets.push_back(memset_record(as<CUpti_ActivityMemset4>(record)));
      return true;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      out.api_calls.push_back(
          api_record(as<CUpti_ActivityAPI>(record), record.kind == CUPTI_ACTIVITY_KIND_RUNTIME));
      return true;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      out.syncs.push_back(sync_record(as<CUpti_ActivitySynchronization2>(record)));
      return true;
    case CUPTI_ACTIVITY_KIND_MARKER:
      return marker(as<CUpti_ActivityMarker2>(record), out.nvtx_ranges);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      out.overheads.push_back(overhead_record(as<CUpti_ActivityOverhead3>(record)));
      return true;
    default:
      return false;
  }
}

namespace {
LaunchSize size_of(std::uint64_t gx, std::uint64_t gy, std::uint64_t gz, std::uint64_t bx,
                   std::uint64_t by, std::uint64_t bz) {
  return {gx * gy * gz, bx * by * bz};
}
template <class P>
LaunchSize runtime_size(const void* params) {
  const auto* p = static_cast<const P*>(params);
  return size_of(p->gridDim.x, p->gridDim.y, p->gridDim.z, p->blockDim.x, p->blockDim.y,
                 p->blockDim.z);
}
template <class P>
LaunchSize runtime_ex_size(const void* params) {
  const auto* p = static_cast<const P*>(params);
  if (!p->config) return {};
  const cudaLaunchConfig_t& c = *p->config;
  return size_of(c.gridDim.x, c.gridDim.y, c.gridDim.z, c.blockDim.x, c.blockDim.y, c.blockDim.z);
}
template <class P>
LaunchSize driver_size(const void* params) {
  const auto* p = static_cast<const P*>(params);
  return size_of(p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ);
}
template <class P>
LaunchSize driver_ex_size(const void* params) {
  const auto* p = static_cast<const P*>(params);
  if (!p->config) return {};
  const CUlaunchConfig& c = *p->config;
  return size_of(c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ);
}
}  // namespace

LaunchSize launch_size(CUpti_CallbackDomain domain, std::uint32_t cbid, const void* params) {
  if (!params) return {};
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        return runtime_size<cudaLaunchKernel_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
        return runtime_size<cudaLaunchKernel_ptsz_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
        return runtime_size<cudaLaunchCooperativeKernel_v9000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
        return runtime_size<cudaLaunchCooperativeKernel_ptsz_v9000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
        return runtime_ex_size<cudaLaunchKernelExC_v11060_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
        return runtime_ex_size<cudaLaunchKernelExC_ptsz_v11060_params>(params);
      default:
        return {};
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        return driver_size<cuLaunchKernel_params>(params);
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
        return driver_size<cuLaunchKernel_ptsz_params>(params);
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
        return driver_size<cuLaunchCooperativeKernel_params>(params);
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
        return driver_size<cuLaunchCooperativeKernel_ptsz_params>(params);
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
        return driver_ex_size<cuLaunchKernelEx_params>(params);
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        return driver_ex_size<cuLaunchKernelEx_ptsz_params>(params);
      default:
        return {};
    }
  }
  return {};
}

}  // namespace ktune::trace
