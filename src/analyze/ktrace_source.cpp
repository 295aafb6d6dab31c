// KtraceSource streams a .ktrace through the trace module's KtraceReader, which owns the format:
// one ordered query per visit, so the analysis never holds a large trace as records.
#include "ktune/analyze/source.hpp"

namespace ktune::analyze {

KtraceSource::KtraceSource(const std::filesystem::path& path)
    : reader_(path), counts_(reader_.counts()) {}

KtraceSource::~KtraceSource() = default;

void KtraceSource::kernels(const Visitor<trace::KernelRecord>& visit) {
  reader_.kernels(visit);
}
void KtraceSource::memcpys(const Visitor<trace::MemcpyRecord>& visit) {
  reader_.memcpys(visit);
}
void KtraceSource::memsets(const Visitor<trace::MemsetRecord>& visit) {
  reader_.memsets(visit);
}
void KtraceSource::api_calls(const Visitor<trace::ApiRecord>& visit) {
  reader_.api_calls(visit);
}
void KtraceSource::syncs(const Visitor<trace::SyncRecord>& visit) {
  reader_.syncs(visit);
}
void KtraceSource::nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) {
  reader_.nvtx_ranges(visit);
}
void KtraceSource::counters(const Visitor<trace::CounterRecord>& visit) {
  reader_.counters(visit);
}
void KtraceSource::gemm_calls(const Visitor<trace::GemmCallRecord>& visit) {
  reader_.gemm_calls(visit);
}

void KtraceSource::gemm_events(const Visitor<trace::GemmEventRecord>& visit) {
  reader_.gemm_events(visit);
}
std::optional<std::uint64_t> KtraceSource::origin_ns() {
  return reader_.origin_ns();
}

}  // namespace ktune::analyze
