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
#include <vector>

#include "ktune/core/paths.hpp"
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
  // Sentences on what this kind of trace cannot hold (a PyTorch profiler trace has no counters),
  // for the report to print; none for a .ktrace.
  virtual std::vector<std::string> notes() const { return {}; }
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
  // The reader itself, for visits with the trace module's own options (ingest's lean kernel pass).
  const trace::KtraceReader& reader() const { return reader_; }

 private:
  trace::KtraceReader reader_;
  trace::TraceCounts counts_;
};

// The domain a PyTorch op's range is given when read from a profiler trace (a Kineto cpu_op): ops
// are told from user ranges by it, or, in ktune's own traces, by PyTorch's NVTX decorations.
inline constexpr const char* kTorchOpDomain = "torch.op";

// A PyTorch profiler (Kineto) trace: the Chrome trace-event JSON that torch.profiler's
// export_chrome_trace writes, gzip-compressed or not. Opening reads it once, streaming (one event
// held at a time, the bounds of core/compressed.hpp), into a temporary .ktrace that the visits then
// read like any other, so a trace of hundreds of MB is never held in memory and the records come
// in start order. What maps to what is in docs/report.md ("PyTorch profiler traces"). Times are
// Kineto's microseconds, read from the number's text to the nanosecond, counted from
// kKinetoEpochNs so that a ts of 0 stays a known time. A file that is not such a trace, or an
// event field of the wrong type or range, is a ktune::Error naming the file, the event and the
// field. The temporary file is removed with the source.
namespace detail {
// Converts the JSON into the temporary .ktrace before KtraceSource opens it (a base class, so it is
// built first and removed last).
struct KinetoConversion {
  explicit KinetoConversion(const std::filesystem::path& json);
  ~KinetoConversion();
  KinetoConversion(const KinetoConversion&) = delete;
  KinetoConversion& operator=(const KinetoConversion&) = delete;
  // A private folder (0700) for the converted copy: the source trace may be private, and a signal
  // mid-conversion once left a world-readable copy of 79-131 MB in $TMPDIR.
  ScratchDir scratch;
  std::filesystem::path ktrace;
  std::vector<std::string> lacks;  // KinetoSource::notes
};
}  // namespace detail

class KinetoSource : private detail::KinetoConversion, public KtraceSource {
 public:
  explicit KinetoSource(const std::filesystem::path& path)
      : KinetoConversion(path), KtraceSource(ktrace) {}
  std::vector<std::string> notes() const override { return lacks; }
  // The temporary .ktrace the records were written to; removed with the source.
  const std::filesystem::path& ktrace_path() const { return ktrace; }
};

inline constexpr std::uint64_t kKinetoEpochNs = 1'000'000'000'000;  // 1000 s

// Opens a trace by its content, not its name: a .ktrace (SQLite) or a PyTorch profiler trace (JSON,
// optionally gzipped). A file that is neither is a ktune::Error saying which two it could be.
std::unique_ptr<KtraceSource> open_trace(const std::filesystem::path& path);

// The name a report shows: the record's own rule (trace::KernelRecord::display_name).
inline const std::string& display_name(const trace::KernelRecord& k) {
  return k.display_name();
}

}  // namespace ktune::analyze
