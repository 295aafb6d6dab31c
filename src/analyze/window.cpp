#include "ktune/analyze/window.hpp"

namespace ktune::analyze {

void WindowSource::kernels(const Visitor<trace::KernelRecord>& visit) {
  source_.kernels([&](const trace::KernelRecord& r) {
    if (starts_inside(r.start_ns)) visit(r);
  });
}
void WindowSource::memcpys(const Visitor<trace::MemcpyRecord>& visit) {
  source_.memcpys([&](const trace::MemcpyRecord& r) {
    if (starts_inside(r.start_ns)) visit(r);
  });
}
void WindowSource::memsets(const Visitor<trace::MemsetRecord>& visit) {
  source_.memsets([&](const trace::MemsetRecord& r) {
    if (starts_inside(r.start_ns)) visit(r);
  });
}
void WindowSource::api_calls(const Visitor<trace::ApiRecord>& visit) {
  source_.api_calls([&](const trace::ApiRecord& r) {
    if (overlaps(r.start_ns, r.end_ns)) visit(r);
  });
}
void WindowSource::syncs(const Visitor<trace::SyncRecord>& visit) {
  source_.syncs([&](const trace::SyncRecord& r) {
    if (overlaps(r.start_ns, r.end_ns)) visit(r);
  });
}
void WindowSource::nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) {
  source_.nvtx_ranges([&](const trace::NvtxRangeRecord& r) {
    if (overlaps(r.start_ns, r.end_ns)) visit(r);
  });
}

}  // namespace ktune::analyze
