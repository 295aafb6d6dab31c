#pragma once
// The .ktrace file: one SQLite database per traced process, written by the injected tracer
// (libktune_tracer.so) and read by `ktune report` / `ktune export`. Records are plain structs so
// tests and fixtures build traces by hand; the tracer decodes CUPTI activity records into the
// same structs (trace/decode.hpp) and writes them through the same KtraceWriter.
//
// Times are CUPTI timestamps in nanoseconds: one clock for GPU and CPU records of a trace. A value
// of 0 means "not known". Ids (device, context, stream, correlation, graph) are CUPTI's.
//
// SQL layout (schema_version 5; additive changes only within a version). Text columns that repeat
// are interned: *_id columns point at strings(id, value).
//   metadata(key TEXT PRIMARY KEY, value TEXT)   value is JSON; keys are TraceMetadata's fields
//           (`ceilings` since version 5: the roofline ceilings the trace was profiled under)
//   strings(id, value)
//   kernels(name_id, demangled_id, queued_ns, submitted_ns, start_ns, end_ns, device_id,
//           context_id, stream_id, correlation_id, grid_x/y/z, block_x/y/z, cluster_x/y/z,
//           registers_per_thread, static_shared_bytes, dynamic_shared_bytes,
//           local_memory_per_thread_bytes, local_memory_total_bytes, graph_id, graph_node_id)
//   memcpys(kind_id, src_memory_id, dst_memory_id, bytes, start_ns, end_ns, device_id, context_id,
//           stream_id, correlation_id, graph_id, graph_node_id)
//   memsets(bytes, value, start_ns, end_ns, device_id, context_id, stream_id, correlation_id,
//           graph_id, graph_node_id)
//   api_calls(api_id, name_id, callback_id, start_ns, end_ns, process_id, thread_id,
//             correlation_id, return_value)
//   syncs(type_id, start_ns, end_ns, context_id, stream_id, cuda_event_id, correlation_id)
//   nvtx_ranges(name_id, domain_id, start_ns, end_ns, process_id, thread_id)
//   overheads(kind_id, start_ns, end_ns, thread_id, correlation_id)
//   drops(context_id, stream_id, count)
//   counters(device_id, correlation_id, metric_id, value)   since version 2 (the counter tier);
//           value is REAL. A version-1 file has no counters table and reads as having none.
//   gemm_calls(m, n, k, batch, lda, ldb, ldc, ldd, stride_a, stride_b, stride_c, stride_d,
//           a_type_id, b_type_id, c_type_id, d_type_id, compute_type_id, scale_type_id,
//           transa_id, transb_id, epilogue_id, algo_id, tile_id, stages_id, splits, reduction_id,
//           calls)   since version 3 (ktune profile --gemm-shapes): one row per distinct cuBLASLt
//           GEMM problem and algorithm of the process, as cuBLASLt's own log describes each call;
//           the stride columns since version 4 (older files read 0). Older files have no
//           gemm_calls table and read as having none.
//   gemm_events(process_id, thread_id, time_ns, call)   since version 4: one row per cuBLASLt
//           GEMM call, when and on which thread it was made; `call` is the 0-based row of
//           gemm_calls it was counted on. The launches that follow on that thread are its
//           kernels (analyze/ joins them), which gives each GEMM problem its GPU time.
// PRAGMA user_version holds schema_version too, so `sqlite3 f.ktrace 'pragma user_version'` tells.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/core/identity.hpp"

namespace ktune::trace {

inline constexpr int kKtraceSchemaVersion = 6;

struct KernelRecord {
  std::string name;            // mangled, as the driver reports it
  std::string demangled_name;  // left empty on input: the writer demangles `name`
  std::uint64_t queued_ns = 0, submitted_ns = 0, start_ns = 0, end_ns = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  std::int32_t grid_x = 0, grid_y = 0, grid_z = 0;
  std::int32_t block_x = 0, block_y = 0, block_z = 0;
  std::uint32_t cluster_x = 0, cluster_y = 0, cluster_z = 0;  // 0: not a cluster launch
  std::uint32_t registers_per_thread = 0;
  std::int32_t static_shared_bytes = 0, dynamic_shared_bytes = 0;
  std::uint32_t local_memory_per_thread_bytes = 0;
  std::uint64_t local_memory_total_bytes = 0;
  std::uint32_t graph_id = 0;  // 0: not launched from a CUDA graph
  std::uint64_t graph_node_id = 0;
  std::uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
  // The name reports and the fleet show: demangled where the tracer could, else as recorded.
  const std::string& display_name() const { return demangled_name.empty() ? name : demangled_name; }
};

struct MemcpyRecord {
  std::string kind;        // "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "HtoA", ... or "unknown"
  std::string src_memory;  // "pageable", "pinned", "device", "array", "managed", ... or "unknown"
  std::string dst_memory;
  std::uint64_t bytes = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  std::uint32_t graph_id = 0;
  std::uint64_t graph_node_id = 0;
};

struct MemsetRecord {
  std::uint64_t bytes = 0;
  std::uint32_t value = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  std::uint32_t graph_id = 0;
  std::uint64_t graph_node_id = 0;
};

// A host-side CUDA call (runtime or driver API) with its CPU timestamps. correlation_id matches
// the kernel / memcpy / memset it launched, so host gaps can be attributed.
struct ApiRecord {
  std::string api;                // "runtime" or "driver"
  std::string name;               // "cudaLaunchKernel", "cuLaunchKernel", ...
  std::uint32_t callback_id = 0;  // CUPTI's cbid within that API
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t process_id = 0, thread_id = 0, correlation_id = 0, return_value = 0;
};

struct SyncRecord {
  // "event_synchronize", "stream_wait_event", "stream_synchronize", "context_synchronize",
  // "unknown"
  std::string type;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t context_id = 0, stream_id = 0, cuda_event_id = 0, correlation_id = 0;
};

// An NVTX push/pop or start/end range (an instantaneous mark has start_ns == end_ns).
struct NvtxRangeRecord {
  std::string name, domain;  // domain empty: the default domain
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t process_id = 0, thread_id = 0;
};

// Time CUPTI or the driver spent on their own work (buffer flushes, instrumentation, JIT...).
struct OverheadRecord {
  std::string kind;  // "cupti_buffer_flush", "cupti_instrumentation", "driver_compiler", ...
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t thread_id = 0;
  std::uint32_t correlation_id = 0;
};

// Records CUPTI reported as lost (activity buffers full); a drop is always recorded.
struct DropRecord {
  std::uint32_t context_id = 0, stream_id = 0;
  std::uint64_t count = 0;
};

// One hardware counter of one profiled launch (the counter tier: CUPTI's range profiler, kernel
// replay, one range per launch). correlation_id joins the launch's KernelRecord.
struct CounterRecord {
  std::uint32_t device_id = 0, correlation_id = 0;
  std::string metric;  // Perfworks metric name, as Nsight Compute spells it (trace/metrics.hpp)
  double value = 0;    // in the metric's own unit (bytes, ns, %, instructions, ...)
};

// One distinct GEMM problem and algorithm that cuBLASLt ran in the process, and how many calls ran
// it: what `ktune profile --gemm-shapes` reads from cuBLASLt's logger (trace/cublaslt_log.hpp).
// BLAS column-major, as cuBLASLt's descriptors are: D is m x n, k the reduction. Types and options
// keep cuBLASLt's names ("R_16F", "COMPUTE_32F", "OP_T", "EPILOGUE_BIAS"), so nothing is lost
// in translation. The calls' times and threads are the gemm_events (GemmEventRecord), which the
// analysis ties to the kernels each call launched.
struct GemmCallRecord {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  // Elements between batches (cuBLASLt's stridedBatchOffset; not logged means 0, one matrix for
  // every batch, as a broadcast operand gives). Traces of schema 3 read 0.
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;
  std::string a_type, b_type, c_type, d_type;
  std::string compute_type, scale_type;  // scale_type "": not logged
  std::string transa = "OP_N", transb = "OP_N";
  std::string epilogue = "EPILOGUE_DEFAULT";
  // The algorithm cuBLASLt chose; algo_id -1 and "" where the line had none.
  std::int64_t algo_id = -1;
  std::string tile, stages;  // "MATMUL_TILE_192x192", "MATMUL_STAGES_64xAUTO"
  std::int64_t splits = 1;   // split-K count (numSplitsK); 1: none
  std::string reduction;     // split-K reduction scheme; "": none
  // Since schema 6, from the router (libktune_route.so): the entry point the program called
  // ("cublasLtMatmul", "cublasSgemm_v2", ...) and what the router did ("passed", "routed",
  // "kept", "trial"). "" in older traces and for calls read from cuBLASLt's log.
  std::string entry, route;
  std::uint64_t calls = 0;
};

// One cuBLASLt GEMM call: the tracer timestamps it as cuBLASLt logs it, on the calling thread,
// before the call launches its kernels.
struct GemmEventRecord {
  std::uint32_t process_id = 0, thread_id = 0;  // thread_id as CUPTI's API records give it
  std::uint64_t time_ns = 0;                    // CUPTI's clock
  std::uint64_t call = 0;                       // its GemmCallRecord: row `call` (0-based)
};

// The capture window and sampling that were in effect (all zero/empty: whole run, every process).
struct TraceWindow {
  double delay_s = 0;     // capture starts this long after the tracer loads
  double duration_s = 0;  // and stops this long after it started; 0: until exit
  // Periodic capture (period_s > 0): a window of window_s seconds opens every period_s seconds
  // from delay_s on (until duration_s, when set), and each window is a trace of its own; `index`
  // is this trace's window, counted from 0 at delay_s. Between windows nothing is recorded.
  double period_s = 0, window_s = 0;
  std::uint64_t index = 0;
  std::string range;  // "": always; "profiler": inside cudaProfilerStart/Stop; "nvtx:NAME"
  std::uint32_t sample_one_in = 1;  // 1 in N processes traced
  std::string job_id;               // the sampling key; same job id, same choice
  std::uint64_t max_records = 0;    // cap on records written; 0: none
};

// The roofline ceilings of one traced GPU as ktune profile found them when it ran: the newest
// `ktune calibrate` of that GPU in the store, else the datasheet figures of its model. Carried in
// the trace (metadata field `ceilings`, since version 5) so the report reads the same anywhere.
struct TraceCeilings {
  std::string device_uuid;
  double dram_bytes_per_s = 0;  // read + write
  double fp32_flop_per_s = 0;   // FMA = 2 FLOP
  double bf16_flop_per_s = 0;   // tensor cores, dense
  double fp16_flop_per_s = 0;
  std::string kind;    // "calibration" or "datasheet"
  std::string source;  // "ktune calibrate on NVIDIA H100 80GB HBM3 at ...", "datasheet: ..."
};

struct TraceMetadata {
  int schema_version = kKtraceSchemaVersion;  // as stored, when read
  std::string mode;                           // "default", "kernels" (kernels only) or "full"
  std::vector<std::string> records;  // record kinds captured (trace::record_kinds); empty: unknown
  std::vector<std::string> command_line;
  std::int64_t pid = 0, ppid = 0;
  std::string started_at, finished_at;  // ISO-8601 UTC; finished_at empty: not closed cleanly
  bool complete = false;  // the tracer closed the file (false: cut short by a crash or kill -9)
  std::optional<Identity> identity;  // ktune info's identity block, as captured in the process
  TraceWindow window;
  std::uint64_t dropped_records = 0;    // total of the drops table
  std::uint64_t capped_records = 0;     // not written because window.max_records was reached
  std::string tracer_version;           // ktune version (commit) of the tracer
  std::vector<TraceCeilings> ceilings;  // one per traced GPU that has any; empty before version 5
};

// Everything in one .ktrace, or one batch of records on its way into one.
struct Trace {
  TraceMetadata metadata;
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<ApiRecord> api_calls;
  std::vector<SyncRecord> syncs;
  std::vector<NvtxRangeRecord> nvtx_ranges;
  std::vector<OverheadRecord> overheads;
  std::vector<DropRecord> drops;
  std::vector<CounterRecord> counters;  // ordered by correlation_id
  std::vector<GemmCallRecord> gemm_calls;
  std::vector<GemmEventRecord> gemm_events;
  std::size_t record_count() const;  // all vectors, drops excluded
};

// Row counts per table plus the metadata, without loading records (ktune profile's summary).
struct TraceCounts {
  TraceMetadata metadata;
  std::uint64_t kernels = 0, memcpys = 0, memsets = 0, api_calls = 0, syncs = 0, nvtx_ranges = 0,
                overheads = 0, counters = 0;
  std::uint64_t gemm_calls = 0;   // rows: distinct problems and algorithms, not calls
  std::uint64_t gemm_events = 0;  // one per call
};

// Appends records to a .ktrace. The file is valid SQLite after every commit(), so a process that
// dies mid-run leaves everything up to its last commit readable. Not thread-safe: one writer
// thread owns it. Errors throw ktune::Error naming the file (the tracer catches them).
class KtraceWriter {
 public:
  // Creates `path` (replacing an existing file) with the schema and `metadata`, committed.
  KtraceWriter(const std::filesystem::path& path, const TraceMetadata& metadata);
  ~KtraceWriter();  // commits and closes; never throws
  KtraceWriter(const KtraceWriter&) = delete;
  KtraceWriter& operator=(const KtraceWriter&) = delete;

  void add(const KernelRecord& r);
  void add(const MemcpyRecord& r);
  void add(const MemsetRecord& r);
  void add(const ApiRecord& r);
  void add(const SyncRecord& r);
  void add(const NvtxRangeRecord& r);
  void add(const OverheadRecord& r);
  void add(const DropRecord& r);
  void add(const CounterRecord& r);
  void add(const GemmCallRecord& r);
  void add(const GemmEventRecord& r);
  void add_records(const Trace& batch);  // every record vector of `batch`; its metadata is ignored

  // Rewrites the metadata rows (e.g. at close: finished_at, complete, drop totals).
  void write_metadata(const TraceMetadata& metadata);
  // Ends the open transaction: everything added so far is on disk.
  void commit();
  std::uint64_t records_written() const { return records_written_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t records_written_ = 0;
};

// Records a reader left out because their times cannot be placed on the timeline: start_ns 0 (CUPTI
// reports 0 when it collected no timestamp, and the tracer copies CUPTI's values as they come) or
// end_ns before start_ns. Reports show the count, so nothing is dropped silently.
struct SkippedRecords {
  std::uint64_t count = 0;
  std::string first;  // the first one, e.g. "kernels record 17 (end_ns 5 is before start_ns 9)"
};

// The order a visit hands records over in.
enum class VisitOrder {
  by_start,  // (start_ns, id): what timelines, gap attribution and exports need
  stored,    // as written, no sort: for results that do not depend on order (ingest's aggregates)
};

// The columns a kernel visit decodes.
enum class KernelColumns {
  all,
  // Names, start and end, device, grid and block: what a kernel's fleet aggregate is keyed and
  // measured by; every other field of the record stays 0. Ingest's lean path (with
  // VisitOrder::stored): at 2 M kernels, sorting and decoding the other 15 columns were most of
  // the time (logs/2026-11-25-fleet-cpu.md).
  launch,
};

// Streams a .ktrace one table at a time: the one place that decodes the tables above. Each visit
// runs one query and calls `visit` once per row in (start_ns, id) order (drops: id order; kernels:
// as asked), reusing one record object, so a large trace is never held in memory as records. Each
// interned string is read once per reader, not once per row. Visits may be repeated, in any
// order, and a visitor may start another visit; one thread at a time uses a reader (each thread
// opens its own). Opening throws ktune::Error with
// one sentence when the file is missing, not a .ktrace, has a schema_version newer than this ktune
// reads, or a metadata field of the wrong JSON type. A visit throws ktune::Error naming the file,
// table, record id and column when a row holds what no tracer writes (a non-integer or negative
// number); rows with unusable times are skipped and counted (SkippedRecords).
class KtraceReader {
 public:
  template <typename Record>
  using Visitor = std::function<void(const Record&)>;

  explicit KtraceReader(const std::filesystem::path& path);
  ~KtraceReader();
  KtraceReader(KtraceReader&&) noexcept;
  KtraceReader& operator=(KtraceReader&&) noexcept;
  KtraceReader(const KtraceReader&) = delete;
  KtraceReader& operator=(const KtraceReader&) = delete;

  const TraceMetadata& metadata() const;  // read once, when opened
  TraceCounts counts() const;             // row counts per table (one COUNT query each)
  // The earliest non-zero start_ns of any kernel, memcpy, memset, API call, sync or NVTX range;
  // nullopt when there is none.
  std::optional<std::uint64_t> origin_ns() const;

  void kernels(const Visitor<KernelRecord>& visit, VisitOrder order = VisitOrder::by_start,
               KernelColumns columns = KernelColumns::all) const;
  void memcpys(const Visitor<MemcpyRecord>& visit) const;
  void memsets(const Visitor<MemsetRecord>& visit) const;
  void api_calls(const Visitor<ApiRecord>& visit) const;
  void syncs(const Visitor<SyncRecord>& visit) const;
  void nvtx_ranges(const Visitor<NvtxRangeRecord>& visit) const;
  void overheads(const Visitor<OverheadRecord>& visit) const;
  void drops(const Visitor<DropRecord>& visit) const;
  // Counter values in (correlation_id, id) order, so one launch's metrics arrive together. A
  // version-1 trace has none. A value that is not a number throws, as for other tables.
  void counters(const Visitor<CounterRecord>& visit) const;
  // GEMM calls in the order they were added; none in a file older than version 3 or recorded
  // without --gemm-shapes. A count or size that is not a non-negative integer throws.
  void gemm_calls(const Visitor<GemmCallRecord>& visit) const;
  void gemm_events(const Visitor<GemmEventRecord>& visit) const;
  // Rows the latest visit of each table skipped (see SkippedRecords), all tables together.
  SkippedRecords skipped() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads a whole .ktrace (through KtraceReader), records ordered by start time. Throws
// ktune::Error with one sentence when the file is missing, not a .ktrace, or has a
// schema_version newer than this ktune reads.
Trace read_ktrace(const std::filesystem::path& path);

// Metadata and row counts only.
TraceCounts read_ktrace_counts(const std::filesystem::path& path);

// Files the ceilings a trace was profiled under into its metadata (ktune profile does, once the
// program has exited). Throws ktune::Error when the file is not a trace of this schema_version.
void write_ktrace_ceilings(const std::filesystem::path& path,
                           const std::vector<TraceCeilings>& ceilings);

// Writes `trace` as a closed .ktrace (tests and fixtures build traces from hand-made records).
void write_ktrace(const std::filesystem::path& path, const Trace& trace);

// "_Z3addPfi" -> "add(float*, int)"; returns the input when it is not a mangled C++ name.
std::string demangle(std::string_view mangled);

}  // namespace ktune::trace
