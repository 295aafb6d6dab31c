#pragma once
// The tracer's options. `ktune profile` parses its flags into TracerOptions and hands them to the
// injected library as environment variables (the only channel into a process it does not own);
// the library reads them back with options_from_env. Every setting is one row of
// tracer_settings(): its flag, variable, type, default and help come from there, and so does
// docs/configuration.md's tracer table (a test compares them).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/trace/ktrace.hpp"

namespace ktune::trace {

// The counter tier's sampling rules, per distinct kernel (mangled name): of the launches whose name
// matches `kernel_regex` (mangled or demangled; empty: every kernel), skip the first
// `launch_skip`, then profile every `every`-th one until `launch_count` of that kernel are
// profiled (0: no limit). At most `max_kernels` distinct kernels are profiled (0: no limit), and
// profiling stops for good once `time_box_s` seconds were spent collecting counters (0: none).
struct CounterSelection {
  std::string kernel_regex;
  std::uint64_t launch_skip = 0;
  std::uint64_t launch_count = 1;
  std::uint64_t every = 1;
  // Launch sizes profiled per kernel: a later launch with at least twice or at most half the
  // threads of each profiled one is profiled too, up to this many sizes (1: the scheduled
  // launches only).
  std::uint64_t launch_shapes = 4;
  std::uint64_t max_kernels = 0;
  double time_box_s = 0;
};

struct TracerOptions {
  std::filesystem::path output = "ktune.ktrace";  // the root process's trace
  bool kernels_only = false;                      // the lighter mode: kernel records only
  TraceWindow window;
  std::uint32_t flush_period_ms = 1000;  // CUPTI hands over buffers at least this often
  std::uint32_t buffer_mib = 8;          // size of each activity buffer
  // Record kinds with a per-launch cost (docs/tracing.md has the measured cost of each). Default
  // mode only; kernels-only mode ignores all but latency_timestamps. Mode "full" turns on all.
  bool driver_api = true;           // driver-API launches/copies/syncs (cuBLASLt, Triton launch so)
  bool memset_records = false;      // CUPTI_ACTIVITY_KIND_MEMSET (API records cover memset calls)
  bool sync_records = false;        // CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (API records cover syncs)
  bool latency_timestamps = false;  // kernels' queued/submitted timestamps (both modes)
  bool overhead_records = false;    // CUPTI_ACTIVITY_KIND_OVERHEAD (CUPTI's own time)
  // cuBLASLt's GEMM calls, from cuBLASLt's own log (trace/cublaslt_log.hpp): ktune profile turns
  // the log on for the program and files the calls into each process's trace after it exits.
  bool gemm_shapes = false;
  // PyTorch's NVTX op ranges (emit_nvtx without shapes), turned on inside a Python program by
  // ktune profile's sitecustomize.py; the analysis names each kernel's op from them.
  bool torch_ops = false;
  void set_full() { memset_records = sync_records = latency_timestamps = overhead_records = true; }
  std::int64_t root_pid = 0;  // the process ktune profile started; 0: this process is the root
  // The counter tier: a metric set or list (trace/metrics.hpp); empty: activity tier only.
  std::string metrics;
  CounterSelection counters;
};

struct TracerSetting {
  const char* name;      // the key code looks it up by: "delay"
  const char* flag;      // ktune profile's flag as CLI11 names it ("-o,--output"); "": none
  const char* env;       // the variable that carries it into the traced process
  const char* type;      // what the value is: "path", "seconds", "count", "0 or 1", ...
  const char* fallback;  // the default, as --help and the docs show it; "": none
  const char* help;      // one line
};

// Every setting the tracer reads, in the order --help and the docs list them.
const std::vector<TracerSetting>& tracer_settings();
// The row named `name`; an unknown name is a ktune bug (std::logic_error).
const TracerSetting& tracer_setting(std::string_view name);
// docs/configuration.md's tracer table, generated from tracer_settings().
std::string tracer_settings_markdown();

using GetEnv = std::function<const char*(const char*)>;

// Reads the options; a malformed value throws ktune::Error naming the variable and the fix.
TracerOptions options_from_env(const GetEnv& get = [](const char* n) { return std::getenv(n); });

// The (name, value) pairs that options_from_env reads back to `o`. The record-kind switches
// (driver_api, memset_records, sync_records, latency_timestamps, overhead_records) appear only
// when they differ from their defaults, so a caller that does not set them leaves the variables
// of its own environment in force.
std::vector<std::pair<std::string, std::string>> options_to_env(const TracerOptions& o);

// The mode a trace records: the default record kinds, kernel records only, or every opt-in record
// kind on. KTUNE_TRACE_MODE names it; a trace's metadata keeps its name.
enum class TraceMode { standard, kernels, full };
const char* to_string(TraceMode m);  // "default", "kernels", "full"
// KTUNE_TRACE_MODE's value; ktune::Error naming the three modes for anything else.
TraceMode parse_trace_mode(std::string_view name);
// The mode `o` records: kernels-only, full when every opt-in record kind is on, else default.
TraceMode mode_of(const TracerOptions& o);

// The record kinds `o` captures, as stored in a trace's metadata ("kernel", "memcpy", "memset",
// "runtime_api", "driver_api", "nvtx", "sync", "overhead", "latency"), so a report can tell
// "none happened" from "not recorded".
std::vector<std::string> record_kinds(const TracerOptions& o);

// Validates the counter tier's options (metric set or list, --kernel regex) the way the tracer
// will read them; throws ktune::Error with one sentence. No-op when o.metrics is empty.
void check_counter_options(const TracerOptions& o);

// Checks that --gemm-shapes may fall back to cuBLASLt's logger (a tracer without the GEMM router):
// the fallback takes the logger over, so the user's own CUBLASLT_LOG_LEVEL, CUBLASLT_LOG_MASK or
// CUBLASLT_LOG_FILE rules it out rather than being redirected. Throws ktune::Error with one
// sentence; no-op when o.gemm_shapes is off.
void check_gemm_shapes(
    const TracerOptions& o, const GetEnv& get = [](const char* n) { return std::getenv(n); });

// Validates a --range value: "", "profiler" or "nvtx:NAME"; throws ktune::Error otherwise.
void check_range(const std::string& range);

// A value of the settings of type "duration": a number with a unit, "60s", "2.5s", "100ms", "5m",
// "1h", or a bare number of seconds. Seconds; nullopt when `text` is none of these or negative.
std::optional<double> parse_duration_s(std::string_view text);

// Validates the periodic capture settings: --window needs --period and fits in it, and periodic
// windows do not mix with --range. Throws ktune::Error with one sentence naming the flags and
// variables; no-op when neither is set.
void check_schedule(const TraceWindow& window);

// Whether this process is one of the 1 in window.sample_one_in that are traced. Deterministic in
// (job_id, process_key): the same job traces the same ranks on every run.
bool sampled_in(const TraceWindow& window, std::string_view process_key);

// The sampling key of this process: its rank as a launcher names it (RANK, LOCAL_RANK,
// SLURM_PROCID, OMPI_COMM_WORLD_RANK), else its pid.
std::string process_key(const GetEnv& get = [](const char* n) { return std::getenv(n); });

// OUT.ktrace for the root process, OUT.<pid>.ktrace for every other traced process. With periodic
// windows each window K has its own: OUT.wK.ktrace, OUT.<pid>.wK.ktrace.
std::filesystem::path trace_path(const std::filesystem::path& output, std::int64_t root_pid,
                                 std::int64_t pid,
                                 std::optional<std::uint64_t> window = std::nullopt);

// Whether `file` is a name trace_path gives for `output` (any pid, any window), so ktune profile
// finds every trace of its run.
bool is_trace_of(const std::filesystem::path& output, const std::filesystem::path& file);

// The host-side calls worth a record: launches, copies, memsets, synchronizations, profiler
// start/stop. The tracer enables API activity for these callback names only, which keeps the
// cost per CUDA call low and the file small.
bool is_traced_api(std::string_view name);

}  // namespace ktune::trace
