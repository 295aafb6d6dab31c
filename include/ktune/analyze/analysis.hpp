#pragma once
// The report's numbers, computed in one streaming pass over a TraceSource: kernels ranked by GPU
// time, GPU busy/idle per device, idle gaps with their cause, storms of tiny kernels, time per NVTX
// range, copies, the tuning backlog, and (with the counter tier) the per-kernel roofline verdicts.
// Plain data; report/ renders it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/analyze/counters.hpp"
#include "ktune/analyze/gemm_calls.hpp"
#include "ktune/analyze/launch_shape.hpp"
#include "ktune/analyze/op_advice.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/analyze/timeline.hpp"
#include "ktune/analyze/triton_kernels.hpp"
#include "ktune/core/stats.hpp"

namespace ktune::analyze {

// How a host API call matters to gap attribution, decided from its name: set-up is module and
// library loading, context and device queries, function attributes; allocation is device and
// pinned memory allocation and release.
enum class ApiRole { launch, synchronize, copy, setup, allocation, other };
ApiRole api_role(std::string_view api_name);

// How the kernel table groups kernels: by name, by name and launch shape, or by the PyTorch op
// that launched them (GPU time by op, the lever a PyTorch user has; ktune profile --ops).
enum class GroupBy { name, name_and_launch, op };
// "name" | "name+launch" | "op"; ktune::Error otherwise
GroupBy parse_group_by(const std::string& text);
const char* to_string(GroupBy by);

struct AnalysisOptions {
  GroupBy group_by = GroupBy::name;
  double backlog_share = 0.80;         // the tuning backlog: kernels owning this share of GPU time
  std::size_t storm_min_kernels = 20;  // consecutive tiny kernels before it counts as a storm
  // Launch overhead assumed when the trace has no host launch call for a kernel.
  std::int64_t default_launch_overhead_ns = 4000;
  std::size_t top_gaps = 20;        // largest gaps kept with their details
  std::size_t top_storms = 20;      // longest storms kept
  std::size_t timeline_bins = 400;  // resolution of the per-device utilisation strip
  // The ceilings for a trace that carries none (older than schema 5): the reading machine's.
  Ceilings ceilings;
  // Where the steady state starts (docs/report.md, "Warm-up and steady state"). Neither set: the
  // warm-up is detected. from_ns: this long after the trace's first record (0: no cut, the
  // whole trace); skip_kernels: after the first N kernels launched.
  std::optional<std::int64_t> from_ns;
  std::optional<std::size_t> skip_kernels;
};

struct KernelGroup {
  std::string name;
  LaunchShape shape;                // the group's shape; with --by name, the first one seen
  std::size_t distinct_shapes = 1;  // counted up to 100
  std::int64_t total_ns = 0;
  double share = 0;  // of all kernel GPU time, 0..1
  Summary duration_ns;
  double q1_ns = 0, q3_ns = 0;  // quartiles of the launch durations (ktune report OLD NEW's noise)
  // The PyTorch op that launched the group's kernels (is_op_range): the one that launched most
  // of them, op_kernels of them, out of `ops` distinct ops; "" and 0: no kernel's launch was
  // inside an op.
  std::string op;
  std::size_t op_kernels = 0, ops = 0;
};

// What the host was doing while a device idled (docs/report.md, "Idle gaps"): launching back to
// back (launch_bound), waiting in a synchronize call, copying, in ktune's own counter replay
// (the launch call of a profiled kernel), in first-call set-up (set-up API calls, lazy module
// loading in a first launch, or a long stretch before a kernel's first launch), allocating, or
// elsewhere (host: Python or other CPU work between launches); unattributed: the trace holds no
// host record to tell, or the kernel was queued before the device ran dry.
enum class GapCause {
  launch_bound,
  synchronization,
  copies,
  counter_replay,
  setup,
  allocation,
  host,
  unattributed
};
inline constexpr GapCause kGapCauses[] = {
    GapCause::launch_bound, GapCause::synchronization, GapCause::copies, GapCause::counter_replay,
    GapCause::setup,        GapCause::allocation,      GapCause::host,   GapCause::unattributed};
const char* to_string(GapCause cause);
// The host's time between two launch calls on one thread up to which it counts as launching back
// to back (PyTorch's per-op overhead between launches is 10-40 us); a longer stretch is host work.
inline constexpr std::int64_t kBackToBackNs = 50'000;
// A launch call at least this long for a kernel's first launch is lazy module loading, not launch
// overhead (a launch call costs 2-10 us; loading a module, 0.1-2 ms).
inline constexpr std::int64_t kLazyLoadNs = 100'000;
// Host time before a kernel's first launch at least this long is first-call set-up (library
// handles, autotuning, model build), not per-launch host work.
inline constexpr std::int64_t kFirstCallNs = 1'000'000;

struct Gap {
  int device = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  GapCause cause = GapCause::unattributed;
  std::string next_kernel;  // the kernel that ended the gap
  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

struct GapCauseTotal {
  GapCause cause;
  std::size_t count = 0;
  std::int64_t total_ns = 0;
};

// Busy time is the union of kernel intervals on the device (overlapping streams count once); the
// window runs from its first kernel start to its last kernel end, so busy + idle = window exactly.
struct DeviceUtilization {
  int device = 0;
  std::size_t kernels = 0;
  std::int64_t window_start_ns = 0, window_end_ns = 0;
  std::int64_t busy_ns = 0, idle_ns = 0;
  std::vector<GapCauseTotal> idle_by_cause;  // one entry per GapCause, in kGapCauses order
  // Timeline strip: bins of bin_ns from window_start_ns; busy and per-cause idle ns in each.
  std::int64_t bin_ns = 0;
  std::vector<std::int64_t> bin_busy_ns;
  std::vector<std::vector<std::int64_t>> bin_idle_ns;  // [cause][bin]
  std::int64_t window_ns() const { return window_end_ns - window_start_ns; }
  double busy_fraction() const;
};

// A run of consecutive kernels on one device, each shorter than its own launch overhead: the GPU
// finishes them faster than the host can submit them.
struct Storm {
  int device = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  std::size_t kernels = 0;
  std::int64_t kernel_ns = 0;           // GPU time of the storm's kernels
  std::int64_t launch_overhead_ns = 0;  // summed host launch-call time for them
  std::string top_kernel;               // the most frequent name in the run
};

struct NvtxGroup {
  std::string name;
  std::int64_t total_ns = 0;  // wall time inside the range, summed over instances
  Summary duration_ns;
  std::size_t kernels = 0;         // kernels launched from inside (innermost range)
  std::int64_t kernel_gpu_ns = 0;  // their GPU time
};

// One host API function (cudaLaunchKernel, cudaMemcpyAsync, ...): its calls' host time.
struct ApiGroup {
  std::string name;
  std::string api;  // "runtime" or "driver"
  std::int64_t total_ns = 0;
  double share = 0;  // of all API call time, 0..1
  Summary duration_ns;
};

// One stream of one device: the kernels and copies it ran.
struct StreamUsage {
  int device = 0;
  std::uint32_t stream = 0;
  std::size_t kernels = 0;
  std::int64_t kernel_ns = 0;  // kernel GPU time, summed
  std::int64_t busy_ns = 0;    // union of its kernel intervals
  double share = 0;            // kernel_ns of all kernel GPU time, 0..1
  std::size_t copies = 0;      // memcpys and memsets
  std::uint64_t copy_bytes = 0;
  std::int64_t copy_ns = 0;
};

// A range's name as the report groups it: PyTorch's NVTX decorations (", seq = 12, op_id = 40,
// sizes = [...]", which emit_nvtx appends) cut off, a profiler trace's ops (kTorchOpDomain) by
// their name alone, other domains as "domain:name".
std::string range_name(const trace::NvtxRangeRecord& r);
// Whether the range is a PyTorch op: a profiler trace's cpu_op, or a range that carries
// emit_nvtx's op_id or seq decoration.
bool is_op_range(const trace::NvtxRangeRecord& r);

struct CopyGroup {
  std::string kind;  // the tracer's memcpy kind ("HtoD", ...) or "memset"
  std::size_t count = 0;
  std::uint64_t bytes = 0;
  std::int64_t total_ns = 0;
};

// How the steady state's start was chosen.
enum class Cut { none, detected, from, skip };
const char* to_string(Cut cut);  // "none", "detected", "from", "skip"

// The warm-up the report leaves out of its numbers, and why: first-call work (a kernel's first
// launch after set-up time) and the first of the program's repeated steps. Its own busy, idle and
// gap causes are shown apart.
struct SteadyState {
  Cut cut = Cut::none;
  std::int64_t start_ns = 0;  // the steady state starts here (the trace's clock); none: 0
  std::string reason;         // one sentence: what ended the warm-up
  std::size_t warmup_kernels = 0;
  std::int64_t warmup_kernel_ns = 0;  // GPU time of its kernels
  std::int64_t warmup_window_ns = 0;  // from the trace's first kernel to start_ns, over devices
  std::int64_t warmup_busy_ns = 0;
  std::vector<GapCauseTotal> warmup_idle_by_cause;  // kGapCauses order
  std::vector<Gap> warmup_gaps;                     // its longest gaps, longest first
};

struct Analysis {
  trace::TraceMetadata metadata;
  SteadyState steady;          // the analysis below is of the steady state when steady.cut != none
  std::int64_t origin_ns = 0;  // earliest timestamp in the trace; reports show times from it
  GroupBy group_by = GroupBy::name;
  std::size_t kernel_count = 0;
  std::int64_t kernel_total_ns = 0;
  std::vector<KernelGroup> kernels;  // by total_ns, descending
  std::size_t backlog_size = 0;      // kernels[0, backlog_size) own backlog_share of time
  double backlog_share = 0;
  std::vector<DeviceUtilization> devices;    // by device ordinal
  std::vector<GapCauseTotal> idle_by_cause;  // all devices
  std::size_t gap_count = 0;
  std::vector<Gap> largest_gaps;  // longest first
  std::size_t storm_count = 0;
  std::vector<Storm> storms;        // most kernels first
  std::vector<NvtxGroup> nvtx;      // by total_ns, descending
  std::vector<CopyGroup> copies;    // by total_ns, descending
  std::vector<OpGroup> ops;         // GPU time by PyTorch op, descending; empty without ops
  std::vector<OpAdvice> op_advice;  // program-level advice, largest saving first
  std::size_t api_call_count = 0;
  std::vector<ApiGroup> api;         // by total_ns, descending
  std::vector<StreamUsage> streams;  // by device, then stream
  std::vector<std::string> notes;    // what the trace's format cannot hold (TraceSource::notes)
  trace::SkippedRecords skipped;     // records left out: their times could not be placed
  CounterAnalysis counters;          // the counter tier's verdicts; empty without counters
  TimelineFindings timeline;         // copy/compute overlap, collectives, serialized kernels
  GemmCalls gemm;                    // cuBLASLt's GEMM calls (ktune profile --gemm-shapes)
  TritonKernels triton;              // Inductor's Triton kernels (attach_triton_kernels)
  std::int64_t busy_ns() const;
  std::int64_t window_ns() const;
};

// Reads each record type once (nvtx, api calls, syncs and copies before kernels) and keeps per
// kernel only its duration, for the medians; then the counter analysis (counters, and kernels
// only when there are counters) and the timeline findings (copies and kernels again, one interval
// per kernel), then the GEMM calls. When a warm-up is cut (options.from_ns, skip_kernels, or
// detected), the steady state and the warm-up are each read once more through a WindowSource.
// Throws ktune::Error when kernels arrive out of order.
Analysis analyze(TraceSource& source, const AnalysisOptions& options = {});

}  // namespace ktune::analyze
