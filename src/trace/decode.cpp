#include "decode.hpp"

#include <cstring>

namespace ktune::trace {

std::string memcpy_kind_name(std::uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "unknown";
  }
}

std::string memory_kind_name(std::uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "device_static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "managed_static";
    default:
      return "unknown";
  }
}

std::string sync_type_name(std::uint32_t type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "event_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "stream_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "context_synchronize";
    default:
      return "unknown";
  }
}

std::string overhead_kind_name(std::uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "cupti_resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "module_loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
      return "lazy_function_loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
      return "command_buffer_full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "activity_buffer_request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
      return "uvm_activity_init";
    default:
      return "unknown";
  }
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

bool ActivityDecoder::decode(const CUpti_Activity& record, Trace& out) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      KernelRecord r;
      r.name = k.name ? k.name : "";
      r.queued_ns = k.queued == CUPTI_TIMESTAMP_UNKNOWN ? 0 : k.queued;
      r.submitted_ns = k.submitted == CUPTI_TIMESTAMP_UNKNOWN ? 0 : k.submitted;
      r.start_ns = k.start;
      r.end_ns = k.end;
      r.device_id = k.deviceId;
      r.context_id = k.contextId;
      r.stream_id = k.streamId;
      r.correlation_id = k.correlationId;
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
      r.local_memory_total_bytes =
          k.localMemoryTotal_v2 ? k.localMemoryTotal_v2 : k.localMemoryTotal;
      r.graph_id = k.graphId;
      r.graph_node_id = k.graphNodeId;
      out.kernels.push_back(std::move(r));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(record);
      MemcpyRecord r;
      r.kind = memcpy_kind_name(m.copyKind);
      r.src_memory = memory_kind_name(m.srcKind);
      r.dst_memory = memory_kind_name(m.dstKind);
      r.bytes = m.bytes;
      r.start_ns = m.start;
      r.end_ns = m.end;
      r.device_id = m.deviceId;
      r.context_id = m.contextId;
      r.stream_id = m.streamId;
      r.correlation_id = m.correlationId;
      r.graph_id = m.graphId;
      r.graph_node_id = m.graphNodeId;
      out.memcpys.push_back(std::move(r));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
      MemsetRecord r;
      r.bytes = m.bytes;
      r.value = m.value;
      r.start_ns = m.start;
      r.end_ns = m.end;
      r.device_id = m.deviceId;
      r.context_id = m.contextId;
      r.stream_id = m.streamId;
      r.correlation_id = m.correlationId;
      r.graph_id = m.graphId;
      r.graph_node_id = m.graphNodeId;
      out.memsets.push_back(r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = reinterpret_cast<const CUpti_ActivityAPI&>(record);
      const bool runtime = record.kind == CUPTI_ACTIVITY_KIND_RUNTIME;
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
      out.api_calls.push_back(std::move(r));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = reinterpret_cast<const CUpti_ActivitySynchronization2&>(record);
      SyncRecord r;
      r.type = sync_type_name(s.type);
      r.start_ns = s.start;
      r.end_ns = s.end;
      r.context_id = s.contextId;
      r.stream_id = s.streamId;
      r.cuda_event_id = s.cudaEventId;
      r.correlation_id = s.correlationId;
      out.syncs.push_back(std::move(r));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMarker2&>(record);
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
        if (instant) {
          out.nvtx_ranges.push_back(std::move(r));
          return true;
        }
        open_[m.id] = {std::move(r)};
        return true;
      }
      if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = open_.find(m.id);
        if (it == open_.end()) return false;  // its start fell outside the capture window
        it->second.range.end_ns = m.timestamp;
        out.nvtx_ranges.push_back(std::move(it->second.range));
        open_.erase(it);
        return true;
      }
      return false;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& o = reinterpret_cast<const CUpti_ActivityOverhead3&>(record);
      OverheadRecord r;
      r.kind = overhead_kind_name(o.overheadKind);
      r.start_ns = o.start;
      r.end_ns = o.end;
      if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) r.thread_id = o.objectId.pt.threadId;
      r.correlation_id = o.correlationId;
      out.overheads.push_back(std::move(r));
      return true;
    }
    default:
      return false;
  }
}

}  // namespace ktune::trace
