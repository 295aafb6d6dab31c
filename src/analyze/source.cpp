#include "ktune/analyze/source.hpp"

#include <algorithm>

namespace ktune::analyze {
namespace {

template <typename Record>
void sort_by_start(std::vector<Record>& records) {
  auto by_start = [](const Record& a, const Record& b) { return a.start_ns < b.start_ns; };
  if (!std::is_sorted(records.begin(), records.end(), by_start))
    std::stable_sort(records.begin(), records.end(), by_start);
}

template <typename Record>
void visit_all(const std::vector<Record>& records, const Visitor<Record>& visit) {
  for (const Record& r : records) visit(r);
}

template <typename Record>
void take_min(std::optional<std::uint64_t>& origin, const std::vector<Record>& records) {
  for (const Record& r : records)
    if (r.start_ns != 0 && (!origin || r.start_ns < *origin)) origin = r.start_ns;
}

}  // namespace

MemorySource::MemorySource(trace::Trace trace) : trace_(std::move(trace)) {
  sort_by_start(trace_.kernels);
  sort_by_start(trace_.memcpys);
  sort_by_start(trace_.memsets);
  sort_by_start(trace_.api_calls);
  sort_by_start(trace_.syncs);
  sort_by_start(trace_.nvtx_ranges);
  std::stable_sort(trace_.gemm_events.begin(), trace_.gemm_events.end(),
                   [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
  std::stable_sort(
      trace_.counters.begin(), trace_.counters.end(),
      [](const auto& a, const auto& b) { return a.correlation_id < b.correlation_id; });
}

void MemorySource::kernels(const Visitor<trace::KernelRecord>& v) {
  visit_all(trace_.kernels, v);
}
void MemorySource::memcpys(const Visitor<trace::MemcpyRecord>& v) {
  visit_all(trace_.memcpys, v);
}
void MemorySource::memsets(const Visitor<trace::MemsetRecord>& v) {
  visit_all(trace_.memsets, v);
}
void MemorySource::api_calls(const Visitor<trace::ApiRecord>& v) {
  visit_all(trace_.api_calls, v);
}
void MemorySource::syncs(const Visitor<trace::SyncRecord>& v) {
  visit_all(trace_.syncs, v);
}
void MemorySource::nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& v) {
  visit_all(trace_.nvtx_ranges, v);
}

void MemorySource::counters(const Visitor<trace::CounterRecord>& v) {
  visit_all(trace_.counters, v);
}

void MemorySource::gemm_calls(const Visitor<trace::GemmCallRecord>& v) {
  visit_all(trace_.gemm_calls, v);
}

void MemorySource::gemm_events(const Visitor<trace::GemmEventRecord>& v) {
  visit_all(trace_.gemm_events, v);
}

std::optional<std::uint64_t> MemorySource::origin_ns() {
  std::optional<std::uint64_t> origin;
  take_min(origin, trace_.kernels);
  take_min(origin, trace_.memcpys);
  take_min(origin, trace_.memsets);
  take_min(origin, trace_.api_calls);
  take_min(origin, trace_.syncs);
  take_min(origin, trace_.nvtx_ranges);
  return origin;
}

}  // namespace ktune::analyze
