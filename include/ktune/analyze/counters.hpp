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

// This GPU's ceilings as `ktune calibrate` measured them (store::CalibrationRecord); 0: unknown.
struct Ceilings {
  double dram_bytes_per_s = 0;  // read + write
  double fp32_flop_per_s = 0;   // FMA = 2 FLOP
  double bf16_flop_per_s = 0;   // tensor cores, dense
  double fp16_flop_per_s = 0;
  std::string source;  // where they come from, for the report ("calibrated on ... at ...")
  bool empty() const { return dram_bytes_per_s <= 0 && fp32_flop_per_s <= 0; }
};

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
}  // namespace threshold

enum class Bottleneck { memory, compute, latency, locality, launch, unknown };
const char* to_string(Bottleneck b);  // "memory-bound", ..., "launch-bound", "unknown"

struct Opportunity {
  std::string action;     // one line: what to change
  std::string trigger;    // "metric=value" that raised it
  double estimated_gain;  // share of the kernel's time it could save, 0..1
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
  std::size_t launches = 0;    // profiled launches aggregated
  double duration_ns = 0;      // mean per launch (counter tier, else activity tier)
  std::optional<double> flop;  // per launch, all precisions (tensor estimate included)
  std::optional<double> fp32_flop, fp16_flop, fp64_flop, tensor_flop;
  std::optional<double> flop_per_s;
  std::optional<double> dram_bytes;  // per launch, read + write
  std::optional<double> dram_bytes_per_s;
  std::optional<double> arithmetic_intensity;  // FLOP per DRAM byte
  std::optional<double> sm_pct, memory_pct, dram_pct, tensor_pct, l2_hit_pct;
  std::optional<double> achieved_occupancy_pct;
  std::optional<Occupancy> theoretical;             // needs the device's arch (trace identity)
  std::optional<double> waves_per_sm;               // grid blocks / (blocks per SM x SM count)
  std::uint32_t local_memory_per_thread_bytes = 0;  // spills and local arrays (compiler's count)
  std::optional<double> local_memory_bytes;         // per launch, local traffic (memory set)
  std::optional<RooflinePoint> roofline;
  Bottleneck bottleneck = Bottleneck::unknown;
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
  std::size_t unmatched_launches = 0;     // counter values whose correlation id has no kernel
  std::vector<KernelDerivation> kernels;  // by profiled time (duration x launches), descending
  bool empty() const { return kernels.empty(); }
};

// Derives one kernel's numbers, verdict, root cause and opportunities.
KernelDerivation derive(const KernelCounters& counters, const Ceilings& ceilings,
                        const DeviceFacts& device);

// Joins the source's counter values to their launches, groups them by (name, launch shape) and
// derives each group. A source without counters gives an empty analysis.
CounterAnalysis analyze_counters(TraceSource& source, const Ceilings& ceilings);

// The device facts of `device_id` from trace metadata (identity block), empty when not recorded.
DeviceFacts device_facts(const trace::TraceMetadata& metadata, std::uint32_t device_id);

}  // namespace ktune::analyze
