#pragma once
// A stretch of a trace read as if it were the whole trace: the report's steady state (after the
// warm-up) and the warm-up itself. GPU work (kernels, copies, memsets) is kept when it starts in
// [from, to); host records (API calls, syncs, NVTX ranges) when they overlap it, so the launch call
// of the window's first kernel and the op around it stay. Counters and GEMM calls pass through:
// they are joined to kernels by correlation id, and a profiled launch outside the window simply
// finds no kernel. Times, the origin and the metadata are the trace's own.
#include <cstdint>
#include <limits>

#include "ktune/analyze/source.hpp"

namespace ktune::analyze {

class WindowSource : public TraceSource {
 public:
  // `source` is not owned and must outlive the window.
  WindowSource(TraceSource& source, std::uint64_t from_ns,
               std::uint64_t to_ns = std::numeric_limits<std::uint64_t>::max())
      : source_(source), from_(from_ns), to_(to_ns) {}

  void kernels(const Visitor<trace::KernelRecord>& visit) override;
  void memcpys(const Visitor<trace::MemcpyRecord>& visit) override;
  void memsets(const Visitor<trace::MemsetRecord>& visit) override;
  void api_calls(const Visitor<trace::ApiRecord>& visit) override;
  void syncs(const Visitor<trace::SyncRecord>& visit) override;
  void nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) override;
  void counters(const Visitor<trace::CounterRecord>& visit) override { source_.counters(visit); }
  void gemm_calls(const Visitor<trace::GemmCallRecord>& visit) override {
    source_.gemm_calls(visit);
  }
  void gemm_events(const Visitor<trace::GemmEventRecord>& visit) override {
    source_.gemm_events(visit);
  }
  const trace::TraceMetadata& metadata() const override { return source_.metadata(); }
  std::optional<std::uint64_t> origin_ns() override { return source_.origin_ns(); }
  trace::SkippedRecords skipped() const override { return source_.skipped(); }
  std::vector<std::string> notes() const override { return source_.notes(); }

 private:
  bool starts_inside(std::uint64_t start) const { return start >= from_ && start < to_; }
  bool overlaps(std::uint64_t start, std::uint64_t end) const {
    return start < to_ && end >= from_;
  }
  TraceSource& source_;
  std::uint64_t from_, to_;
};

}  // namespace ktune::analyze
