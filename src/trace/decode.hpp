#pragma once
// CUPTI activity records -> .ktrace records. Pure host code over CUPTI's record layouts (no CUPTI
// call), so the tests feed it hand-built records. Runs on the tracer's writer thread, never on a
// CUDA call's path; kernel names are copied here and demangled by the writer.
#include <cupti.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ktune/trace/ktrace.hpp"
#include "launch_selector.hpp"

namespace ktune::trace {

// The grid and block of a kernel launch call, read from its callback parameters (CUPTI's
// generated *_params structs) at the call's entry, before the kernel runs: what the counter tier
// needs to pick launches by size. {} for a callback it does not read.
LaunchSize launch_size(CUpti_CallbackDomain domain, std::uint32_t cbid, const void* params);

// Names of CUPTI's enums as the .ktrace stores them; "unknown" for a value this build does not
// know.
const char* memcpy_kind_name(std::uint32_t kind);    // CUpti_ActivityMemcpyKind -> "HtoD"
const char* memory_kind_name(std::uint32_t kind);    // CUpti_ActivityMemoryKind -> "pinned"
const char* sync_type_name(std::uint32_t type);      // -> "stream_synchronize"
const char* overhead_kind_name(std::uint32_t kind);  // -> "cupti_buffer_flush"
// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", "cudaMemcpy_ptds_v7000" -> "cudaMemcpy_ptds"
std::string strip_api_version(std::string_view name);

class ActivityDecoder {
 public:
  // Names a callback id of the "runtime" or "driver" API (cuptiGetCallbackName in the tracer).
  using ApiNamer = std::function<std::string(std::string_view api, std::uint32_t cbid)>;
  explicit ActivityDecoder(ApiNamer namer) : namer_(std::move(namer)) {}

  // Appends the record's decoded form to `out`. An NVTX range appears when its end marker is
  // decoded. Returns false for kinds the trace does not keep.
  bool decode(const CUpti_Activity& record, Trace& out);
  std::size_t open_ranges() const { return open_.size(); }

 private:
  struct OpenRange {
    NvtxRangeRecord range;
  };
  const std::string& api_name(bool runtime, std::uint32_t cbid);
  ApiRecord api_record(const CUpti_ActivityAPI& a, bool runtime);
  // A start marker opens a range, its end marker closes it into `out`; true: the marker was used.
  bool marker(const CUpti_ActivityMarker2& m, std::vector<NvtxRangeRecord>& out);

  ApiNamer namer_;
  std::unordered_map<std::uint64_t, std::string> api_names_;  // (runtime << 32 | cbid) -> name
  std::unordered_map<std::uint32_t, OpenRange> open_;         // marker id -> its start
};

}  // namespace ktune::trace
