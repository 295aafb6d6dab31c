#pragma once
// Why a kernel is slow: the counter tier's values (trace::CounterRecord) of each profiled launch,
// joined to the launch's KernelRecord, aggregated per kernel and launch shape, and read the way
// Nsight Compute's speed-of-light section reads them: the unit nearest its peak bounds the kernel;
// when no unit is busy the kernel is latency-bound. Plain data and plain functions; report/
// renders it. A metric that was not collected leaves its value empty and its conclusion unmade
// (said in `unknown`), never a crash or a guess.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/analyze/launch_shape.hpp"
#include "ktune/analyze/occupancy.hpp"
#include "ktune/analyze/source.hpp"

namespace ktune::analyze {

// Where the ceilings of an analysis come from: the trace (ktune profile filed the ceilings it
// ran under, schema 5 on), or, for an older trace, the store of the machine reading it.
enum class CeilingsOrigin { none, trace, reading_store };
const char* to_string(CeilingsOrigin o);  // "none", "trace", "reading machine's store"

// The traced GPU's ceilings: `ktune calibrate`'s measurement, else the datasheet's; 0: unknown.
struct Ceilings {
  double dram_bytes_per_s = 0;  // read + write
  double fp32_flop_per_s = 0;   // FMA = 2 FLOP
  double bf16_flop_per_s = 0;   // tensor cores, dense
  double fp16_flop_per_s = 0;
  std::string kind;    // "calibration" or "datasheet"
  std::string source;  // where they come from, for the report ("ktune calibrate on ... at ...")
  CeilingsOrigin origin = CeilingsOrigin::none;
  bool empty() const { return dram_bytes_per_s <= 0 && fp32_flop_per_s <= 0; }
};

// The ceilings a trace carries for its (first) traced GPU, nullopt when it carries none (a trace
// older than schema 5, or profiled on a GPU with neither calibration nor datasheet).
std::optional<Ceilings> trace_ceilings(const trace::TraceMetadata& metadata);
// As a trace carries them: `c` with its origin set to the trace.
Ceilings to_ceilings(const trace::TraceCeilings& c, CeilingsOrigin origin);

// The thresholds of the verdict; docs/analysis.md explains each. First principles, not fitted.
namespace threshold {
// A unit above this share of its peak bounds the kernel (Nsight Compute's speed-of-light reading:
// at 60 % a unit is busy enough that the rest of the kernel waits on it); with every unit below
// it the kernel is latency-bound.
inline constexpr double kBoundPct = 60.0;
// Below this duration a launch costs about as much as the kernel: a host launch call takes
// 2-5 us (AnalysisOptions::default_launch_overhead_ns assumes 4 us).
inline constexpr double kLaunchBoundNs = 5000.0;
// ... and a grid of at most one wave: more blocks would have made the kernel long enough to hide
// the launch.
inline constexpr double kLaunchBoundMaxWaves = 1.0;
// L2 hit rate below which DRAM traffic is mostly misses.
inline constexpr double kLowL2HitPct = 50.0;
// A kernel doing less than one FLOP per DRAM byte streams its data (copy, elementwise, reduction):
// its misses are compulsory, so a low L2 hit rate is no locality problem.
inline constexpr double kReuseFlopPerByte = 1.0;
// What good tiling reaches on a kernel that reuses data; the locality opportunity's target.
inline constexpr double kGoodL2HitPct = 80.0;
// Theoretical occupancy below this leaves too few warps to hide memory latency (Little's law on
// Hopper: ~600-cycle DRAM latency over 4 schedulers needs about half the 64 warps).
inline constexpr double kLowOccupancyPct = 50.0;
// Opportunities estimated to save less than this share of the kernel's time are not listed.
inline constexpr double kMinGain = 0.02;
// A stall reason holding at least this share of the warps' cycles names the kernel's limiter
// (the top reason of a kernel that waits on one thing holds 40-80 %; below a quarter the
// cycles are spread over several reasons and none explains the kernel alone).
inline constexpr double kStallCauseShare = 0.25;
// Below this tensor-pipe activity no tensor math is assumed unless tensor ops were counted: on the
// H100, kernels with no MMA at all (a bf16 copy, a layer norm) keep the pipe 0.5-4 % busy and
// issue tensor-pipe instructions (their bf16 conversions), which the pipe-based FLOP estimate
// turned into 42 TFLOP/s for a copy.
inline constexpr double kTensorMathPct = 10.0;
// The stall reasons the report lists per kernel.
inline constexpr std::size_t kTopStalls = 3;
// A verdict whose deciding throughput lies within this many points of kBoundPct is "near the
// line": ktune's kernel replay and Nsight Compute differ by a few points there (cache state,
// clock), so the verdict is given with the one across the line instead of flipping between them.
inline constexpr double kNearLinePts = 5.0;
}  // namespace threshold

// issue: the schedulers issue nearly every cycle, yet not math (a kernel doing no FLOP whose
// instruction issue is the busiest unit: address arithmetic, conversions, loads and stores).
// not_measured: the throughput pair that decides a verdict (SM and memory speed of light) was not
// collected; no verdict is guessed from what was.
enum class Bottleneck { memory, compute, latency, locality, launch, issue, not_measured };
const char* to_string(Bottleneck b);  // "memory-bound", ..., "issue-bound", "not measured"

// The `ktune profile` flag whose counter set holds the throughput pair a verdict needs (the first
// set of trace::metric::metric_sets() with both): "--metrics roofline".
std::string verdict_metrics_flag();

// A verdict decided by a throughput within threshold::kNearLinePts of kBoundPct: which side, its
// value, and the verdict the other side of the line gives.
struct NearLine {
  std::string side;  // "SM" or "memory"
  double pct = 0;
  Bottleneck other = Bottleneck::not_measured;
};

// What the warps wait on, read from the dominant stall reason (Nsight Compute's warp-state
// reasons, grouped by the fix they call for). docs/analysis.md has the table.
enum class StallCause {
  none,               // no stall counters, or no reason holds kStallCauseShare
  memory_latency,     // long_scoreboard: global/local memory results (L1TEX)
  synchronisation,    // barrier, membar: __syncthreads, memory fences
  compute_pipe,       // math_pipe_throttle, gmma: a math pipe (or the tensor cores) is busy
  shared_memory,      // mio_throttle, short_scoreboard: shared memory and the MIO queue
  memory_queue,       // lg_throttle, tex_throttle: the global-memory / texture instruction queue
  dependency,         // wait: fixed-latency dependencies between instructions
  instruction_fetch,  // no_instruction, branch_resolving, imc_miss: code fetch and branches
  issue,              // selected, not_selected, dispatch_stall: the scheduler is the limit
  other,              // drain, sleeping, misc
};
const char* to_string(StallCause c);  // "memory latency", "synchronisation", ...
// The cause a stall reason ("long_scoreboard", as in trace::metric::kStallReasons) belongs to.
StallCause stall_cause_of(std::string_view reason);

// One warp-state reason: warps in that state per issued instruction (the metric's value) and its
// share of all warp cycles (value / sum over every reason, "selected" included, as Nsight
// Compute's warp-state chart reads: the sum is the warp cycles per issued instruction).
struct StallShare {
  std::string reason;  // Nsight Compute's name: "long_scoreboard", "barrier", ...
  double warps_per_issue = 0;
  double share = 0;  // 0..1
};

struct Opportunity {
  std::string action;     // one line: what to change
  std::string trigger;    // "metric=value" that raised it
  double estimated_gain;  // share of the kernel's time it could save, 0..1, within `bound`
  // The most any change of its kind can save given what was measured (docs/analysis.md): a
  // latency fix stops where the busiest unit saturates, removing work from the bounding unit
  // stops where the other unit bounds.
  double bound = 1;
};

// A roofline point: FLOP/s at arithmetic intensity against this GPU's ceilings.
struct RooflinePoint {
  std::string precision;  // the roof it is read against: "fp32", "fp16", "bf16" (tensor), ""
  double peak_flop_per_s = 0;
  double ridge_flop_per_byte = 0;      // peak / DRAM bandwidth
  double attainable_flop_per_s = 0;    // min(peak, intensity x bandwidth)
  double fraction_of_roof = 0;         // achieved / attainable (1: on the roof)
  bool flop_from_tensor_pipe = false;  // tensor FLOP estimated from the pipe's utilisation
};

// The launches of one kernel with one launch shape, their counters summed per metric.
struct KernelCounters {
  std::string name;  // demangled
  LaunchShape shape;
  std::uint32_t device_id = 0;
  trace::KernelRecord first;  // the first profiled launch: its attributes (local memory, grid)
  std::size_t launches = 0;
  std::uint64_t activity_ns = 0;  // summed KernelRecord durations
  // Every launch of this kernel with this shape, profiled or not: the time the shape owns.
  std::size_t shape_launches = 0;
  std::int64_t shape_total_ns = 0;
  struct Sum {
    double total = 0;
    std::size_t launches = 0;  // that reported it
  };
  std::map<std::string, Sum, std::less<>> values;
  // The metric's mean over the launches that reported it; nullopt when none did.
  std::optional<double> mean(std::string_view metric) const;
};

struct KernelDerivation {
  std::string name;  // full demangled name
  LaunchShape shape;
  std::uint32_t device_id = 0;
  std::size_t launches = 0;  // profiled launches aggregated
  double duration_ns = 0;    // mean per profiled launch (counter tier, else activity tier)
  // Every launch of the kernel with this shape, profiled or not, and their GPU time: with shapes
  // of one kernel profiled apart, the analysis reads the one that owns the most time.
  std::size_t shape_launches = 0;
  std::int64_t shape_total_ns = 0;
  std::optional<double> flop;  // per launch, all precisions (tensor estimate included)
  std::optional<double> fp32_flop, fp16_flop, fp64_flop, tensor_flop;
  std::optional<double> flop_per_s;
  std::optional<double> dram_bytes;  // per launch, read + write
  std::optional<double> dram_bytes_per_s;
  std::optional<double> arithmetic_intensity;  // FLOP per DRAM byte
  std::optional<double> sm_pct, memory_pct, dram_pct, tensor_pct, l2_hit_pct;
  // sm_pct is Nsight Compute's SM speed-of-light (sm__throughput, elapsed cycles), not the
  // issue-activity stand-in (active cycles) a profile without it is read by.
  bool sm_pct_is_speed_of_light = false;
  // The tensor pipe did math: tensor ops were counted, or the pipe was at least kTensorMathPct
  // busy.
  bool tensor_math = false;
  std::optional<double> achieved_occupancy_pct;
  std::optional<Occupancy> theoretical;             // needs the device's arch (trace identity)
  std::optional<double> waves_per_sm;               // grid blocks / (blocks per SM x SM count)
  std::uint32_t local_memory_per_thread_bytes = 0;  // spills and local arrays (compiler's count)
  std::optional<double> local_memory_bytes;         // per launch, local traffic (memory set)
  std::optional<RooflinePoint> roofline;
  // Every collected stall reason, largest share first; empty without the stalls set.
  std::vector<StallShare> stalls;
  std::optional<double> warp_cycles_per_issue;  // the sum of the reasons
  StallCause stall_cause = StallCause::none;    // the top reason's, when it holds enough
  // The library the kernel belongs to ("cuBLAS", "cuDNN", "CUTLASS", "flash-attention", ...):
  // its code is not the user's, so the advice is another algorithm, never a source edit. "":
  // the user's own kernel (or one ktune does not recognise).
  std::string library;
  // `ktune tune --library cublaslt ...` for the GEMM problem whose calls launched this kernel
  // (ktune profile --gemm-shapes), "" when none is known.
  std::string tune_command;
  Bottleneck bottleneck = Bottleneck::not_measured;
  std::optional<NearLine> near_line;  // the verdict sits within kNearLinePts of the 60 % line
  // With no verdict: the `ktune profile` flag that collects what it needs; "" otherwise.
  std::string measure_with;
  std::string root_cause;                  // two sentences
  std::string key_issue;                   // a few words for a table
  std::vector<Opportunity> opportunities;  // at most three, largest estimated gain first
  std::vector<std::string> unknown;        // what could not be concluded, and the missing metric
  std::map<std::string, double, std::less<>> metrics;  // every collected metric, mean per launch
};

// What the derivation needs of the GPU: its arch's limits and SM count (from the trace's
// identity block); empty when unknown.
struct DeviceFacts {
  std::optional<SmLimits> limits;
  int sm_count = 0;
};

struct CounterAnalysis {
  Ceilings ceilings;
  std::size_t profiled_launches = 0;
  std::size_t unmatched_launches = 0;  // counter values whose correlation id has no kernel
  // By the time their shape owns (shape_total_ns), descending: a kernel's first derivation is
  // the shape that owns most of its time.
  std::vector<KernelDerivation> kernels;
  bool empty() const { return kernels.empty(); }
  // The derivation of `name` whose shape owns the most GPU time; nullptr when not profiled.
  const KernelDerivation* owning(std::string_view name) const;
};

// Derives one kernel's numbers, verdict, root cause and opportunities.
KernelDerivation derive(const KernelCounters& counters, const Ceilings& ceilings,
                        const DeviceFacts& device);

// Joins the source's counter values to their launches, groups them by (name, launch shape) and
// derives each group. A source without counters gives an empty analysis. The time each shape owns
// is counted over `timed` (the report's steady state), the whole source when null.
CounterAnalysis analyze_counters(TraceSource& source, const Ceilings& ceilings,
                                 TraceSource* timed = nullptr);

// Gives each library kernel whose GEMM problem the trace recorded (--gemm-shapes) the command
// that tunes it: the problem with the most GPU time among those whose calls launched it.
struct GemmCalls;
void attach_gemm_problems(CounterAnalysis& counters, const GemmCalls& gemm);

// The device facts of `device_id` from trace metadata (identity block), empty when not recorded.
DeviceFacts device_facts(const trace::TraceMetadata& metadata, std::uint32_t device_id);

}  // namespace ktune::analyze
