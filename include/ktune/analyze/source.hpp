#pragma once
// Where the analysis and the exporters read trace records from. Each visit streams one record type
// in ascending start time (MergedSource: within each rank, so on each device, stream and thread,
// which is what the analysis relies on) and may be repeated, so a million-kernel .ktrace is never
// held in memory as records: KtraceSource runs one ordered query per visit (trace::KtraceReader).
// The records are the tracer's own (trace/ktrace.hpp); times are CUPTI nanoseconds, one clock for
// host and GPU.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ktune/trace/ktrace.hpp"

namespace ktune::analyze {

template <typename Record>
using Visitor = std::function<void(const Record&)>;

class TraceSource {
 public:
  virtual ~TraceSource() = default;
  virtual void kernels(const Visitor<trace::KernelRecord>& visit) = 0;
  virtual void memcpys(const Visitor<trace::MemcpyRecord>& visit) = 0;
  virtual void memsets(const Visitor<trace::MemsetRecord>& visit) = 0;
  virtual void api_calls(const Visitor<trace::ApiRecord>& visit) = 0;
  virtual void syncs(const Visitor<trace::SyncRecord>& visit) = 0;
  virtual void nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) = 0;
  // Counter-tier values, ordered by correlation_id; a trace without the counter tier has none.
  virtual void counters(const Visitor<trace::CounterRecord>& visit) { (void)visit; }
  // cuBLASLt's GEMM calls (ktune profile --gemm-shapes), in stored order; none without them.
  virtual void gemm_calls(const Visitor<trace::GemmCallRecord>& visit) { (void)visit; }
  // One event per GEMM call (its thread and time), in time order; none without them.
  virtual void gemm_events(const Visitor<trace::GemmEventRecord>& visit) { (void)visit; }
  virtual const trace::TraceMetadata& metadata() const = 0;
  // The earliest non-zero timestamp of any record; exported times count from it. Empty: nullopt.
  virtual std::optional<std::uint64_t> origin_ns() = 0;
  // Records the visits so far left out for unusable times (a hand-built trace: none).
  virtual trace::SkippedRecords skipped() const { return {}; }
};

// A whole trace held in memory: hand-built traces in tests and small programs. The constructor
// sorts every record vector by start time (stable), so records may be pushed in any order.
class MemorySource : public TraceSource {
 public:
  explicit MemorySource(trace::Trace trace);
  void kernels(const Visitor<trace::KernelRecord>& visit) override;
  void memcpys(const Visitor<trace::MemcpyRecord>& visit) override;
  void memsets(const Visitor<trace::MemsetRecord>& visit) override;
  void api_calls(const Visitor<trace::ApiRecord>& visit) override;
  void syncs(const Visitor<trace::SyncRecord>& visit) override;
  void nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) override;
  void counters(const Visitor<trace::CounterRecord>& visit) override;
  void gemm_calls(const Visitor<trace::GemmCallRecord>& visit) override;
  void gemm_events(const Visitor<trace::GemmEventRecord>& visit) override;
  const trace::TraceMetadata& metadata() const override { return trace_.metadata; }
  std::optional<std::uint64_t> origin_ns() override;

 private:
  trace::Trace trace_;
};

// Streams a .ktrace from disk through trace::KtraceReader, the one decoder of the format. Opening
// checks the file the way the trace module does (missing, not a .ktrace, newer schema_version:
// ktune::Error with one sentence).
class KtraceSource : public TraceSource {
 public:
  explicit KtraceSource(const std::filesystem::path& path);
  ~KtraceSource() override;
  void kernels(const Visitor<trace::KernelRecord>& visit) override;
  void memcpys(const Visitor<trace::MemcpyRecord>& visit) override;
  void memsets(const Visitor<trace::MemsetRecord>& visit) override;
  void api_calls(const Visitor<trace::ApiRecord>& visit) override;
  void syncs(const Visitor<trace::SyncRecord>& visit) override;
  void nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) override;
  void counters(const Visitor<trace::CounterRecord>& visit) override;
  void gemm_calls(const Visitor<trace::GemmCallRecord>& visit) override;
  void gemm_events(const Visitor<trace::GemmEventRecord>& visit) override;
  const trace::TraceMetadata& metadata() const override { return counts_.metadata; }
  std::optional<std::uint64_t> origin_ns() override;
  trace::SkippedRecords skipped() const override { return reader_.skipped(); }
  const trace::TraceCounts& counts() const { return counts_; }

 private:
  trace::KtraceReader reader_;
  trace::TraceCounts counts_;
};

// The name a report shows: the record's own rule (trace::KernelRecord::display_name).
inline const std::string& display_name(const trace::KernelRecord& k) {
  return k.display_name();
}

}  // namespace ktune::analyze
