#include "ktune/analyze/counters.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "ktune/analyze/analysis.hpp"
#include "ktune/analyze/gemm_calls.hpp"
#include "ktune/core/enum_names.hpp"
#include "ktune/trace/metrics.hpp"

namespace ktune::analyze {
namespace metric = trace::metric;
namespace {

// The value of a metric the derivation reads, or the sentence saying it was not collected.
struct Reader {
  const KernelCounters& counters;
  KernelDerivation& out;
  std::optional<double> get(std::string_view name) const { return counters.mean(name); }
  void cannot(std::string what, std::string_view missing) {
    std::string line = fmt::format("{}: {} was not collected", what, missing);
    if (std::find(out.unknown.begin(), out.unknown.end(), line) == out.unknown.end())
      out.unknown.push_back(std::move(line));
  }
};

std::optional<double> add(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return *a + *b;
}

// FMA = 2 FLOP; an add or a multiply, 1. Empty when none of the three counters was collected.
std::optional<double> flop_of(const Reader& r, std::string_view fma, std::string_view add_name,
                              std::string_view mul) {
  const auto f = r.get(fma);
  return add(f ? std::optional<double>(2 * *f) : std::nullopt, add(r.get(add_name), r.get(mul)));
}

std::string pct(double v) {
  return fmt::format("{:.1f}", v);
}
std::string si(double v) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::abs(v) >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}", v, units[i]);
}
std::string trigger(std::string_view name, double value) {
  return fmt::format("{}={:.4g}", name, value);
}

// Kernels whose code is a library's: the user picks among its algorithms, never edits its source.
// Matched on the demangled name, first match wins; `advice` is what the user can change.
struct Library {
  std::string_view needle;
  std::string_view name;
  std::string_view advice;
};
constexpr Library kLibraries[] = {
    {"flash", "flash-attention",
     "Choose another attention backend or its settings (torch.nn.attention.sdpa_kernel, head "
     "dimension and sequence padding); the kernel's code is the library's"},
    {"fmha", "fused attention (cuDNN/CUTLASS fMHA)",
     "Choose another attention backend (torch.nn.attention.sdpa_kernel) or cuDNN engine; the "
     "kernel's code is the library's"},
    {"cudnn", "cuDNN",
     "Choose another cuDNN engine (torch.backends.cudnn.benchmark = True times them and keeps "
     "the fastest); the kernel's code is the library's"},
    {"cutlass", "CUTLASS",
     "Choose another CUTLASS configuration (tile shape, stages, split-K) for this problem"},
    {"xmma", "cuBLAS/cuDNN (xmma)",
     "Choose another cuBLASLt algorithm or cuDNN engine for this problem; the kernel's code is "
     "the library's"},
};

std::string library_of(std::string_view name) {
  std::string lower(name);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const Library& l : kLibraries)
    if (lower.find(l.needle) != std::string::npos) return std::string(l.name);
  if (is_cublaslt_kernel(name)) return "cuBLAS";
  return {};
}

std::string_view library_advice(std::string_view library) {
  for (const Library& l : kLibraries)
    if (l.name == library) return l.advice;
  return "Choose another cuBLASLt algorithm (tile, stages, split-K) for this GEMM problem; record "
         "it with ktune profile --gemm-shapes to get the ktune tune command";
}

// Warps in each state per issued instruction, largest first, with its share of the sum.
void read_stalls(KernelDerivation& d, const Reader& r) {
  double sum = 0;
  for (std::string_view reason : metric::kStallReasons) {
    const auto v = r.get(fmt::format("{}{}{}", metric::kStallPrefix, reason, metric::kStallSuffix));
    if (!v || *v < 0) continue;
    d.stalls.push_back({std::string(reason), *v, 0});
    sum += *v;
  }
  if (d.stalls.empty() || sum <= 0) {
    d.stalls.clear();
    return;
  }
  d.warp_cycles_per_issue = sum;
  for (StallShare& s : d.stalls) s.share = s.warps_per_issue / sum;
  std::stable_sort(d.stalls.begin(), d.stalls.end(),
                   [](const StallShare& a, const StallShare& b) { return a.share > b.share; });
  // "selected" is the issuing warp itself, not a stall: the cause is the top reason besides it.
  // An issue-bound kernel shows it through not_selected and dispatch_stall, and through the
  // issue activity the verdict reads.
  for (const StallShare& s : d.stalls) {
    if (s.reason == "selected") continue;
    if (s.share >= threshold::kStallCauseShare) d.stall_cause = stall_cause_of(s.reason);
    break;
  }
}

const StallShare* top_stall(const KernelDerivation& d) {
  for (const StallShare& s : d.stalls)
    if (s.reason != "selected") return &s;
  return nullptr;
}

std::string stall_list(const KernelDerivation& d, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < d.stalls.size() && i < n; ++i)
    out += fmt::format("{}{} {:.0f}%", i ? ", " : "", d.stalls[i].reason, 100 * d.stalls[i].share);
  return out;
}

void place_on_roofline(KernelDerivation& d, const Ceilings& c) {
  if (c.dram_bytes_per_s <= 0 || !d.flop || !d.dram_bytes || *d.dram_bytes <= 0) return;
  RooflinePoint p;
  const double fp32 = d.fp32_flop.value_or(0) + d.fp64_flop.value_or(0);
  const double fp16 = d.fp16_flop.value_or(0);
  const double tensor = d.tensor_flop.value_or(0);
  if (tensor > 0 && tensor >= fp32 && tensor >= fp16) {
    p.precision = "bf16";
    p.peak_flop_per_s = std::max(c.bf16_flop_per_s, c.fp16_flop_per_s);
    p.flop_from_tensor_pipe = true;
  } else {
    // Scalar half precision has no calibrated roof of its own; it is read against FP32's.
    p.precision = fp16 > fp32 ? "fp16" : "fp32";
    p.peak_flop_per_s = c.fp32_flop_per_s;
  }
  if (p.peak_flop_per_s <= 0) return;
  p.ridge_flop_per_byte = p.peak_flop_per_s / c.dram_bytes_per_s;
  const double intensity = *d.flop / *d.dram_bytes;
  p.attainable_flop_per_s = std::min(p.peak_flop_per_s, intensity * c.dram_bytes_per_s);
  // A kernel with no FLOPs (a copy) sits on the memory roof by its bandwidth alone.
  p.fraction_of_roof = *d.flop > 0 && p.attainable_flop_per_s > 0
                           ? d.flop_per_s.value_or(0) / p.attainable_flop_per_s
                           : d.dram_bytes_per_s.value_or(0) / c.dram_bytes_per_s;
  d.roofline = p;
}

void decide(KernelDerivation& d, Reader& r) {
  using namespace threshold;
  const bool tiny = d.duration_ns > 0 && d.duration_ns < kLaunchBoundNs;
  if (tiny && (!d.waves_per_sm || *d.waves_per_sm <= kLaunchBoundMaxWaves)) {
    d.bottleneck = Bottleneck::launch;
    if (!d.waves_per_sm)
      r.cannot("launch-bound from duration alone (the grid's waves need the GPU's SM count)",
               "the trace identity block");
    return;
  }
  // Nsight Compute's rule on its speed-of-light pair, over the elapsed cycles: both units below
  // kBoundPct of their peak is latency, else the busier one bounds. Without the pair there is no
  // verdict: issue activity and the tensor pipe count only the SMs' active cycles and read high on
  // a kernel whose SMs idle part of the time, DRAM alone misses an L1- or L2-bound kernel, and a
  // stall reason says what warps wait on, not whether a unit is saturated. Each once turned a
  // memory-bound launch into "latency-bound" depending on the set collected.
  const std::optional<double> compute =
      d.sm_pct_is_speed_of_light ? d.sm_pct : std::optional<double>();
  const std::optional<double> memory = d.memory_pct;
  if (!compute || !memory) {
    d.bottleneck = Bottleneck::not_measured;
    d.measure_with = verdict_metrics_flag();
    if (!compute) r.cannot("no verdict without SM throughput", metric::kSmThroughputPct);
    if (!memory) r.cannot("no verdict without memory throughput", metric::kMemoryThroughputPct);
    return;
  }
  // Counted FLOP of zero (a copy, a conversion): whatever keeps the SM busy, it is not math. A
  // busy tensor pipe is math even where no ceiling turned it into FLOP.
  const bool no_math = d.flop && *d.flop <= 0 && !d.tensor_math;
  const double busiest = std::max(*compute, *memory);
  const bool compute_side = *compute >= *memory;
  const Bottleneck bound_by =
      compute_side ? (no_math ? Bottleneck::issue : Bottleneck::compute) : Bottleneck::memory;
  if (std::abs(busiest - kBoundPct) < kNearLinePts)
    d.near_line = NearLine{compute_side ? "SM" : "memory", busiest,
                           busiest < kBoundPct ? bound_by : Bottleneck::latency};
  if (busiest < kBoundPct) {
    d.bottleneck = Bottleneck::latency;
    return;
  }
  d.bottleneck = bound_by;
  if (compute_side) return;
  // Locality: DRAM is the busy unit, the data is reused, yet L2 misses most of it.
  if (!d.l2_hit_pct) {
    r.cannot("cannot tell a locality problem from plain memory-bound", metric::kL2HitRatePct);
  } else if (!d.arithmetic_intensity) {
    r.cannot("cannot tell a locality problem from plain memory-bound (no FLOP count)",
             metric::kFp32Fma);
  } else if (*d.l2_hit_pct < kLowL2HitPct && *d.arithmetic_intensity >= kReuseFlopPerByte &&
             d.dram_pct.value_or(0) >= d.memory_pct.value_or(0) * 0.9) {
    d.bottleneck = Bottleneck::locality;
    if (d.near_line) d.near_line->other = Bottleneck::latency;
  }
}

// What the dominant stall reason means, in a clause; "" without one.
std::string stall_clause(const KernelDerivation& d) {
  const StallShare* top = top_stall(d);
  if (!top) return {};
  const char* meaning = "";
  switch (stall_cause_of(top->reason)) {
    case StallCause::memory_latency:
      meaning = "waiting for global or local memory results";
      break;
    case StallCause::synchronisation:
      meaning = "waiting at barriers or memory fences for the other warps";
      break;
    case StallCause::compute_pipe:
      meaning = "waiting for a busy math pipe";
      break;
    case StallCause::shared_memory:
      meaning = "waiting on shared memory and the MIO queue";
      break;
    case StallCause::memory_queue:
      meaning = "waiting for room in the memory instruction queue";
      break;
    case StallCause::dependency:
      meaning = "waiting on fixed-latency dependencies between instructions";
      break;
    case StallCause::instruction_fetch:
      meaning = "waiting for instructions to be fetched or branches resolved";
      break;
    case StallCause::issue:
      meaning = "eligible but not picked: the scheduler issues as fast as it can";
      break;
    case StallCause::other:
    case StallCause::none:
      meaning = "in other states";
      break;
  }
  return fmt::format("Warps spend {:.0f}% of their cycles on {} ({}); top stalls: {}.",
                     100 * top->share, top->reason, meaning, stall_list(d, threshold::kTopStalls));
}

std::string occupancy_clause(const KernelDerivation& d) {
  if (d.theoretical && d.theoretical->occupancy_pct < threshold::kLowOccupancyPct)
    return fmt::format(
        "Theoretical occupancy is {}% ({} block(s) per SM, limited by {}), too few "
        "warps to hide memory and pipeline latency.",
        pct(d.theoretical->occupancy_pct), d.theoretical->blocks_per_sm,
        to_string(d.theoretical->limiter));
  if (d.waves_per_sm && *d.waves_per_sm < 1)
    return fmt::format("The grid fills {:.0f}% of one wave, so most SMs idle.",
                       100 * *d.waves_per_sm);
  if (d.achieved_occupancy_pct && d.theoretical &&
      *d.achieved_occupancy_pct < 0.8 * d.theoretical->occupancy_pct)
    return fmt::format(
        "Achieved occupancy ({}%) is well below the theoretical {}%: uneven "
        "blocks or a tail leave warps slots empty.",
        pct(*d.achieved_occupancy_pct), pct(d.theoretical->occupancy_pct));
  if (d.stalls.empty())
    return "Warps stall on dependencies (--metrics stalls tells which) rather than waiting on a "
           "busy unit.";
  return {};
}

std::string percent_or_unknown(const std::optional<double>& v) {
  return v ? pct(*v) + "%" : std::string("not collected");
}

void explain(KernelDerivation& d, const Ceilings& c) {
  const std::string intensity =
      d.arithmetic_intensity ? fmt::format("{:.3g} FLOP per DRAM byte", *d.arithmetic_intensity)
                             : std::string("an unknown FLOP per byte");
  const std::string ridge =
      d.roofline ? fmt::format(" (the ridge point is {:.3g})", d.roofline->ridge_flop_per_byte)
                 : "";
  const std::optional<double> memory_side =
      d.dram_pct || d.memory_pct
          ? std::optional<double>(std::max(d.dram_pct.value_or(0), d.memory_pct.value_or(0)))
          : std::nullopt;
  const StallShare* top = top_stall(d);
  const std::string stalls = stall_clause(d);
  const std::string top_cause =
      d.stall_cause != StallCause::none && top
          ? fmt::format("{} ({} {:.0f}%)", to_string(d.stall_cause), top->reason, 100 * top->share)
          : "";
  const auto with_stalls = [&](std::string text) {
    return stalls.empty() ? text : text + " " + stalls;
  };
  switch (d.bottleneck) {
    case Bottleneck::launch:
      d.key_issue = "launch overhead";
      d.root_cause = fmt::format(
          "Each launch runs {:.2f} us on {} blocks, about what the host spends launching it. "
          "Fusing it with its neighbours or capturing the sequence in a CUDA graph saves more "
          "than tuning its code.",
          d.duration_ns / 1000,
          static_cast<double>(d.shape.grid.x) * d.shape.grid.y * d.shape.grid.z);
      break;
    case Bottleneck::memory:
      d.key_issue =
          d.stall_cause == StallCause::shared_memory || d.stall_cause == StallCause::memory_queue
              ? top_cause
              : "DRAM bandwidth";
      d.root_cause = with_stalls(fmt::format(
          "Memory throughput is at {}% of peak{}, with {}{}. The kernel waits on data: only "
          "moving fewer bytes (fusion, narrower types, reuse) makes it much faster.",
          pct(memory_side.value_or(0)),
          d.dram_bytes_per_s && c.dram_bytes_per_s > 0
              ? fmt::format(" ({}B/s of the calibrated {}B/s)", si(*d.dram_bytes_per_s),
                            si(c.dram_bytes_per_s))
              : "",
          intensity, ridge));
      break;
    case Bottleneck::locality:
      d.key_issue = "L2 misses";
      d.root_cause = with_stalls(fmt::format(
          "DRAM is the busy unit at {}% of peak while L2 hits only {}% of accesses, although "
          "the kernel reuses its data ({}). Tiling or an access order that keeps the working set "
          "in L2 or shared memory would turn DRAM traffic into hits.",
          pct(d.dram_pct.value_or(0)), pct(d.l2_hit_pct.value_or(0)), intensity));
      break;
    case Bottleneck::compute:
      d.key_issue = d.tensor_pct && *d.tensor_pct >= threshold::kBoundPct ? "tensor pipe"
                    : !top_cause.empty()                                  ? top_cause
                                                                          : "SM throughput";
      d.root_cause = with_stalls(fmt::format(
          "The SM is at {} of peak (tensor pipe {}), with {}{}. Math throughput bounds it: "
          "fewer or cheaper instructions (tensor cores, lower precision) is what speeds it up.",
          percent_or_unknown(d.sm_pct), percent_or_unknown(d.tensor_pct), intensity, ridge));
      break;
    case Bottleneck::issue:
      d.key_issue = "instruction issue";
      d.root_cause = with_stalls(fmt::format(
          "Instruction issue is at {} of peak {} (memory {}): the schedulers are busy with "
          "address arithmetic, conversions, loads and stores. Fewer instructions per byte (wider "
          "loads and stores, less index math) is what speeds it up.",
          percent_or_unknown(d.sm_pct),
          d.flop && *d.flop <= 0 ? "while the kernel does no floating-point math"
                                 : "and no math pipe is what the warps wait on",
          percent_or_unknown(memory_side)));
      break;
    case Bottleneck::latency: {
      d.key_issue = d.theoretical && d.theoretical->occupancy_pct < threshold::kLowOccupancyPct
                        ? fmt::format("occupancy ({})", to_string(d.theoretical->limiter))
                    : d.waves_per_sm && *d.waves_per_sm < 1 ? "small grid"
                    : !top_cause.empty()                    ? top_cause
                                                            : "latency";
      const std::string lead = fmt::format(
          "Neither the SM ({}) nor memory ({}) reaches {:.0f}% of peak, so the kernel is "
          "latency-bound.",
          percent_or_unknown(d.sm_pct), percent_or_unknown(memory_side), threshold::kBoundPct);
      std::string occupancy = occupancy_clause(d);
      d.root_cause = with_stalls(occupancy.empty() ? lead : lead + " " + occupancy);
      break;
    }
    case Bottleneck::not_measured:
      d.key_issue = top_cause.empty() ? "not measured" : "not measured; stalls: " + top_cause;
      d.root_cause = with_stalls(fmt::format(
          "A verdict needs the SM and memory throughput of the launch (Nsight Compute's speed of "
          "light), which this profile did not collect: profile with {} to measure them.",
          d.measure_with));
      break;
  }
  if (d.near_line)
    d.root_cause += fmt::format(
        " The {} throughput ({}%) is within {:.0f} points of the {:.0f}% line, where a profiler "
        "measuring another cache state reads a few points apart: it may as well be {}.",
        d.near_line->side, pct(d.near_line->pct), threshold::kNearLinePts, threshold::kBoundPct,
        to_string(d.near_line->other));
}

// What a change can save at most, given the measured pair (docs/analysis.md, "the gain model").
struct Bounds {
  double busiest = 0;     // % of peak of the busier of SM and memory
  double latency = 1;     // a latency fix: until the busiest unit saturates, 1 - busiest / 100
  double work = 1;        // less work for the bounding unit: until the other bounds, 1 - other / it
  double memory_pct = 0;  // the memory side, 0 when not collected
  double sm_pct = 0;
};

Bounds bounds_of(const KernelDerivation& d) {
  Bounds b;
  b.sm_pct = d.sm_pct_is_speed_of_light ? d.sm_pct.value_or(0) : 0;
  b.memory_pct = d.memory_pct.value_or(0);
  b.busiest = std::max(b.sm_pct, b.memory_pct);
  b.latency = std::clamp(1 - b.busiest / 100, 0.0, 1.0);
  if (b.busiest > 0)
    b.work = std::clamp(1 - std::min(b.sm_pct, b.memory_pct) / b.busiest, 0.0, 1.0);
  return b;
}

// Adds a change with its estimate, capped by its bound.
void add(std::vector<Opportunity>& all, std::string action, std::string trigger, double gain,
         double bound) {
  bound = std::clamp(bound, 0.0, 1.0);
  all.push_back({std::move(action), std::move(trigger), std::clamp(gain, 0.0, bound), bound});
}

// The one thing a user can change about a library's kernel: which algorithm runs. Its gain is
// what the bounding unit leaves below a practical 90 % (no tuned kernel runs a unit at its peak).
void library_opportunity(const KernelDerivation& d, const Bounds& b,
                         std::vector<Opportunity>& all) {
  if (b.busiest <= 0) return;
  add(all, std::string(library_advice(d.library)),
      fmt::format("library={} busiest_unit={:.3g}%", d.library, b.busiest), 1 - b.busiest / 90,
      b.latency);
}

// The source change the dominant stall reason calls for, on the user's own kernels. Its gain:
// the reason's share of warp cycles, within what the busiest unit leaves idle.
void stall_opportunities(const KernelDerivation& d, const Bounds& b,
                         std::vector<Opportunity>& all) {
  const StallShare* top = top_stall(d);
  if (d.bottleneck == Bottleneck::issue) {
    // What-if: half the instructions; the memory side then bounds the time.
    const double after = b.sm_pct > 0 ? std::max(0.5, b.memory_pct / b.sm_pct) : 1;
    add(all,
        "Fewer instructions per element: wider (128-bit) loads and stores, less index "
        "arithmetic and fewer conversions per value",
        trigger(metric::kSmThroughputPct, b.sm_pct), 1 - after, b.work);
  }
  if (!top || d.stall_cause == StallCause::none) return;
  const bool memory_queue =
      d.bottleneck == Bottleneck::memory &&
      (d.stall_cause == StallCause::shared_memory || d.stall_cause == StallCause::memory_queue);
  if (d.bottleneck != Bottleneck::latency && !memory_queue) return;
  const char* action = nullptr;
  switch (d.stall_cause) {
    case StallCause::memory_latency:
      action =
          "Keep more memory requests in flight: more independent loads per thread (unroll, "
          "vectorise), more resident warps, or prefetch into shared memory (cp.async, TMA)";
      break;
    case StallCause::synchronisation:
      action =
          "Wait less at barriers: balance the work between __syncthreads, use smaller blocks, "
          "or warp-level sync (__syncwarp, shuffles) where a block-wide barrier is not needed";
      break;
    case StallCause::compute_pipe:
      action =
          "Spread the math over other pipes or cheaper instructions (tensor cores, fewer "
          "conversions, lower precision)";
      break;
    case StallCause::shared_memory:
      action =
          "Fewer shared-memory instructions: wider (128-bit) shared loads, no bank conflicts, "
          "warp shuffles instead of shared-memory round trips";
      break;
    case StallCause::memory_queue:
      action = "Fewer, wider global-memory instructions (128-bit vector loads and stores)";
      break;
    case StallCause::dependency:
      action =
          "More independent instructions between dependent ones (unroll, interleave "
          "independent work)";
      break;
    case StallCause::instruction_fetch:
      action =
          "A smaller, straighter hot loop: less unrolling or inlining, fewer divergent branches";
      break;
    case StallCause::issue:
    case StallCause::other:
    case StallCause::none:
      return;  // issue-bound has its own; the rest name no change
  }
  // A queue that is full is the bounding unit's work; a wait is latency.
  add(all, action, fmt::format("{}={:.3g}", top->reason, top->share),
      top->share * (memory_queue ? 1 : b.latency), memory_queue ? b.work : b.latency);
}

void find_opportunities(KernelDerivation& d, const Ceilings& c) {
  using namespace threshold;
  std::vector<Opportunity> all;
  const Bounds b = bounds_of(d);
  // A library's kernel: its code is not the user's to edit. What the user controls is which of
  // the library's algorithms runs, and the fusion around it.
  const bool own_code = d.library.empty();

  if (d.bottleneck == Bottleneck::launch) {
    // Fusing removes one launch's host cost: the launch overhead the analysis assumes where a
    // trace has no host call to measure it by (4 us, within the 2-5 us of kLaunchBoundNs).
    const auto overhead = static_cast<double>(AnalysisOptions{}.default_launch_overhead_ns);
    add(all, "Fuse with neighbouring kernels or launch the sequence as a CUDA graph",
        trigger(metric::kDuration, d.duration_ns), overhead / (overhead + d.duration_ns), 1);
  }
  // Without the throughput pair nothing bounds a gain: none is estimated.
  if (d.bottleneck == Bottleneck::not_measured || d.bottleneck == Bottleneck::launch) {
    d.opportunities = std::move(all);
    return;
  }
  if (!own_code) {
    library_opportunity(d, b, all);
  } else if (d.waves_per_sm && *d.waves_per_sm < 1) {
    add(all, "Launch more, smaller blocks (or split the work, e.g. split-K) to fill every SM",
        trigger("waves_per_sm", *d.waves_per_sm), 1 - *d.waves_per_sm, b.latency);
  } else if (d.waves_per_sm && *d.waves_per_sm >= 1 && *d.waves_per_sm < 4) {
    // The last, partial wave runs with idle SMs; it matters while waves are few.
    const double waves = *d.waves_per_sm;
    add(all, "Resize the grid or the blocks so the last wave is full (tail effect)",
        trigger("waves_per_sm", waves), 1 - waves / std::ceil(waves), b.latency);
  }
  if (own_code && d.theoretical && d.theoretical->occupancy_pct < kLowOccupancyPct &&
      (d.bottleneck == Bottleneck::latency || d.bottleneck == Bottleneck::locality)) {
    const Occupancy& o = *d.theoretical;
    // Capping registers on a kernel that already spills trades occupancy for more spills.
    const bool spills = d.local_memory_per_thread_bytes > 0;
    std::string how =
        o.limiter == OccupancyLimiter::registers && spills
            ? fmt::format(
                  "keep fewer values live ({} registers per thread and it spills "
                  "already, so a register cap would spill more)",
                  d.shape.registers_per_thread)
        : o.limiter == OccupancyLimiter::registers
            ? fmt::format("cap registers ({} per thread now: __launch_bounds__ or -maxrregcount)",
                          d.shape.registers_per_thread)
        : o.limiter == OccupancyLimiter::shared_memory
            ? fmt::format("use less shared memory per block ({} bytes now)",
                          d.shape.shared_mem_bytes)
            : "use larger blocks";
    add(all, "Raise theoretical occupancy: " + how,
        fmt::format("theoretical_occupancy={:.4g}% (limited by {})", o.occupancy_pct,
                    to_string(o.limiter)),
        (1 - o.occupancy_pct / 100) * b.latency, b.latency);
  }
  if (own_code && d.achieved_occupancy_pct && d.theoretical && d.theoretical->occupancy_pct > 0 &&
      *d.achieved_occupancy_pct < 0.8 * d.theoretical->occupancy_pct &&
      d.bottleneck == Bottleneck::latency && d.waves_per_sm && *d.waves_per_sm >= 1)
    add(all, "Balance work across blocks so achieved occupancy nears the theoretical",
        trigger(metric::kAchievedOccupancyPct, *d.achieved_occupancy_pct),
        (1 - *d.achieved_occupancy_pct / d.theoretical->occupancy_pct) * b.latency, b.latency);
  if (d.bottleneck == Bottleneck::memory) {
    // What-if: half the bytes (fp32 -> bf16 storage, or fusing away one pass of two); the SM
    // side then bounds the time.
    const double after = std::max(0.5, b.memory_pct > 0 ? b.sm_pct / b.memory_pct : 0.5);
    add(all, "Move fewer bytes: fuse with the producer or consumer, or store narrower types",
        trigger(metric::kMemoryThroughputPct, b.memory_pct), 1 - after, b.work);
    const double dram = d.dram_pct.value_or(b.memory_pct);
    if (dram < 90 && own_code)
      add(all, "Coalesce and vectorise accesses to reach the DRAM roof",
          trigger(metric::kDramThroughputPct, dram), 1 - dram / 90, b.work);
  }
  if (own_code && d.bottleneck == Bottleneck::locality && d.l2_hit_pct) {
    // If L2 hit kGoodL2HitPct, DRAM traffic (and the time it bounds) would shrink by this much.
    const double miss = 1 - *d.l2_hit_pct / 100, target_miss = 1 - kGoodL2HitPct / 100;
    const double gain =
        miss > target_miss ? (1 - target_miss / miss) * d.dram_pct.value_or(0) / 100 : 0;
    add(all, "Tile for reuse (shared memory, thread-block swizzle) so L2 serves the re-reads",
        trigger(metric::kL2HitRatePct, *d.l2_hit_pct), gain, b.work);
  }
  if (own_code && d.bottleneck == Bottleneck::compute) {
    const double fp32 = d.fp32_flop.value_or(0);
    const double tensor_pct = d.tensor_pct.value_or(0);
    const double tensor_peak = std::max(c.bf16_flop_per_s, c.fp16_flop_per_s);
    if (fp32 > d.tensor_flop.value_or(0) && tensor_pct < 10 && c.fp32_flop_per_s > 0 &&
        tensor_peak > c.fp32_flop_per_s)
      add(all, "Move the math to tensor cores (TF32/BF16 MMA)",
          trigger(metric::kFp32Fma,
                  d.metrics.count(metric::kFp32Fma) ? d.metrics.find(metric::kFp32Fma)->second : 0),
          1 - c.fp32_flop_per_s / tensor_peak, b.work);
    if (d.roofline && d.roofline->fraction_of_roof < 0.9)
      add(all,
          "Close the gap to the compute roof: more work per instruction, fewer "
          "non-math instructions, pipelined loads",
          fmt::format("fraction_of_roof={:.3g}", d.roofline->fraction_of_roof),
          1 - d.roofline->fraction_of_roof / 0.9, b.work);
  }
  // Spills: each spilled byte is stored and loaded at least once per thread.
  const double threads = static_cast<double>(d.shape.grid.x) * d.shape.grid.y * d.shape.grid.z *
                         d.shape.block.x * d.shape.block.y * d.shape.block.z;
  const double spill_traffic =
      d.local_memory_bytes.value_or(2.0 * d.local_memory_per_thread_bytes * threads);
  if (own_code && spill_traffic > 0) {
    const double memory_side = d.dram_bytes.value_or(0) + spill_traffic;
    const double share = d.dram_bytes ? spill_traffic / memory_side : 0.25;
    add(all, "Remove register spills: fewer live values, or allow more registers",
        d.local_memory_bytes
            ? trigger("local_memory_bytes", *d.local_memory_bytes)
            : trigger("local_memory_per_thread_bytes", d.local_memory_per_thread_bytes),
        share * b.memory_pct / 100, d.bottleneck == Bottleneck::memory ? b.work : b.latency);
  }
  if (own_code) stall_opportunities(d, b, all);
  std::stable_sort(all.begin(), all.end(), [](const Opportunity& x, const Opportunity& y) {
    return x.estimated_gain > y.estimated_gain;
  });
  for (Opportunity& o : all) {
    if (d.opportunities.size() == 3 || o.estimated_gain < kMinGain) break;
    d.opportunities.push_back(std::move(o));
  }
}

}  // namespace

namespace {
constexpr EnumName<Bottleneck> kBottleneckNames[] = {
    {Bottleneck::memory, "memory-bound"},       {Bottleneck::compute, "compute-bound"},
    {Bottleneck::latency, "latency-bound"},     {Bottleneck::locality, "locality"},
    {Bottleneck::launch, "launch-bound"},       {Bottleneck::issue, "issue-bound"},
    {Bottleneck::not_measured, "not measured"},
};
constexpr EnumName<StallCause> kStallCauseNames[] = {
    {StallCause::none, "none"},
    {StallCause::memory_latency, "memory latency"},
    {StallCause::synchronisation, "synchronisation"},
    {StallCause::compute_pipe, "math pipe"},
    {StallCause::shared_memory, "shared memory/MIO"},
    {StallCause::memory_queue, "memory instruction queue"},
    {StallCause::dependency, "instruction dependencies"},
    {StallCause::instruction_fetch, "instruction fetch"},
    {StallCause::issue, "instruction issue"},
    {StallCause::other, "other"},
};
// Each of trace::metric::kStallReasons, with the cause it points at.
constexpr std::pair<std::string_view, StallCause> kStallCauses[] = {
    {"long_scoreboard", StallCause::memory_latency},
    {"barrier", StallCause::synchronisation},
    {"membar", StallCause::synchronisation},
    {"math_pipe_throttle", StallCause::compute_pipe},
    {"gmma", StallCause::compute_pipe},
    {"mio_throttle", StallCause::shared_memory},
    {"short_scoreboard", StallCause::shared_memory},
    {"lg_throttle", StallCause::memory_queue},
    {"tex_throttle", StallCause::memory_queue},
    {"wait", StallCause::dependency},
    {"no_instruction", StallCause::instruction_fetch},
    {"branch_resolving", StallCause::instruction_fetch},
    {"imc_miss", StallCause::instruction_fetch},
    {"selected", StallCause::issue},
    {"not_selected", StallCause::issue},
    {"dispatch_stall", StallCause::issue},
    {"drain", StallCause::other},
    {"sleeping", StallCause::other},
    {"misc", StallCause::other},
};
}  // namespace

constexpr EnumName<CeilingsOrigin> kCeilingsOriginNames[] = {
    {CeilingsOrigin::none, "none"},
    {CeilingsOrigin::trace, "trace"},
    {CeilingsOrigin::reading_store, "reading machine's store"},
};

const char* to_string(CeilingsOrigin o) {
  return name_of(kCeilingsOriginNames, o);
}

Ceilings to_ceilings(const trace::TraceCeilings& c, CeilingsOrigin origin) {
  Ceilings out;
  out.dram_bytes_per_s = c.dram_bytes_per_s;
  out.fp32_flop_per_s = c.fp32_flop_per_s;
  out.bf16_flop_per_s = c.bf16_flop_per_s;
  out.fp16_flop_per_s = c.fp16_flop_per_s;
  out.kind = c.kind;
  out.source = c.source;
  out.origin = origin;
  return out;
}

std::optional<Ceilings> trace_ceilings(const trace::TraceMetadata& metadata) {
  if (metadata.ceilings.empty()) return std::nullopt;
  // The first traced GPU's, as the counter analysis reads every kernel against one set.
  if (metadata.identity && !metadata.identity->devices.empty())
    for (const trace::TraceCeilings& c : metadata.ceilings)
      if (c.device_uuid == metadata.identity->devices.front().uuid)
        return to_ceilings(c, CeilingsOrigin::trace);
  return to_ceilings(metadata.ceilings.front(), CeilingsOrigin::trace);
}

const char* to_string(StallCause c) {
  return name_of(kStallCauseNames, c);
}

StallCause stall_cause_of(std::string_view reason) {
  for (const auto& [name, cause] : kStallCauses)
    if (name == reason) return cause;
  return StallCause::other;
}

std::string verdict_metrics_flag() {
  for (const metric::MetricSet& set : metric::metric_sets()) {
    const auto has = [&](std::string_view m) {
      return std::find(set.metrics.begin(), set.metrics.end(), m) != set.metrics.end();
    };
    if (has(metric::kSmThroughputPct) && has(metric::kMemoryThroughputPct))
      return fmt::format("--metrics {}", set.name);
  }
  return fmt::format("--metrics {},{}", metric::kSmThroughputPct, metric::kMemoryThroughputPct);
}

const char* to_string(Bottleneck b) {
  return name_of(kBottleneckNames, b);
}

std::optional<double> KernelCounters::mean(std::string_view metric) const {
  const auto it = values.find(metric);
  if (it == values.end() || it->second.launches == 0) return std::nullopt;
  return it->second.total / static_cast<double>(it->second.launches);
}

KernelDerivation derive(const KernelCounters& counters, const Ceilings& ceilings,
                        const DeviceFacts& device) {
  KernelDerivation d;
  d.name = counters.name;
  d.shape = counters.shape;
  d.device_id = counters.device_id;
  d.launches = counters.launches;
  d.shape_launches = counters.shape_launches;
  d.shape_total_ns = counters.shape_total_ns;
  for (const auto& [name, sum] : counters.values)
    if (sum.launches > 0) d.metrics[name] = sum.total / static_cast<double>(sum.launches);
  Reader r{counters, d};

  if (const auto ns = r.get(metric::kDuration))
    d.duration_ns = *ns;
  else if (counters.launches > 0)
    d.duration_ns = static_cast<double>(counters.activity_ns) / counters.launches;
  const double seconds = d.duration_ns * 1e-9;

  // The verdict is judged on Nsight Compute's speed-of-light pair, which the roofline set
  // collects. A profile without it (the stalls set alone, an older trace) is read by issue
  // activity, counted over the SMs' active cycles only.
  d.sm_pct = r.get(metric::kSmThroughputPct);
  d.sm_pct_is_speed_of_light = d.sm_pct.has_value();
  if (!d.sm_pct) d.sm_pct = r.get(metric::kIssueActivePct);
  d.memory_pct = r.get(metric::kMemoryThroughputPct);
  d.dram_pct = r.get(metric::kDramThroughputPct);
  d.tensor_pct = r.get(metric::kTensorPipePct);
  d.l2_hit_pct = r.get(metric::kL2HitRatePct);
  d.achieved_occupancy_pct = r.get(metric::kAchievedOccupancyPct);

  d.dram_bytes = add(r.get(metric::kDramBytesRead), r.get(metric::kDramBytesWrite));
  if (!d.dram_bytes) r.cannot("no bytes/s or arithmetic intensity", metric::kDramBytesRead);
  d.fp32_flop = flop_of(r, metric::kFp32Fma, metric::kFp32Add, metric::kFp32Mul);
  d.fp64_flop = flop_of(r, metric::kFp64Fma, metric::kFp64Add, metric::kFp64Mul);
  d.fp16_flop = flop_of(r, metric::kFp16Fma, metric::kFp16Add, metric::kFp16Mul);
  const double tensor_peak = std::max(ceilings.bf16_flop_per_s, ceilings.fp16_flop_per_s);
  // Hopper's GMMA op counters are the tensor FLOP themselves (2*M*N*K on a GEMM, checked against
  // ncu on the H100); the all-paths counters of the compute set count HMMA too, in the same unit
  // (2*M*N*K on WMMA GEMMs, fp16 and bf16: benchmarks/analysis/mma_flop.sh,
  // logs/2026-11-26-gpu-mma-flop-h100.md); without either, a busy pipe's
  // utilisation times the calibrated peak estimates it.
  const auto gmma = add(r.get(metric::kTensorGmmaFp16Ops), r.get(metric::kTensorGmmaBf16Ops));
  const double all_path_ops = add(add(r.get(metric::kTensorFp16Ops), r.get(metric::kTensorBf16Ops)),
                                  add(r.get(metric::kTensorTf32Ops), r.get(metric::kTensorFp8Ops)))
                                  .value_or(0);
  d.tensor_math = (gmma && *gmma > 0) || all_path_ops > 0 ||
                  d.tensor_pct.value_or(0) >= threshold::kTensorMathPct;
  if (gmma && *gmma > 0)
    d.tensor_flop = gmma;
  else if (all_path_ops > 0)
    d.tensor_flop = all_path_ops;
  else if (d.tensor_math && d.tensor_pct && *d.tensor_pct > 0 && tensor_peak > 0)
    d.tensor_flop = *d.tensor_pct / 100 * tensor_peak * seconds;
  d.flop = add(add(d.fp32_flop, d.fp64_flop), add(d.fp16_flop, d.tensor_flop));
  if (!d.flop) r.cannot("no FLOP/s or arithmetic intensity", metric::kFp32Fma);
  if (seconds > 0) {
    if (d.flop) d.flop_per_s = *d.flop / seconds;
    if (d.dram_bytes) d.dram_bytes_per_s = *d.dram_bytes / seconds;
  }
  if (d.flop && d.dram_bytes && *d.dram_bytes > 0) d.arithmetic_intensity = *d.flop / *d.dram_bytes;

  const auto& s = d.shape;
  if (device.limits) {
    // In 64 bits and clamped: a damaged record's dimensions must not overflow int.
    const std::int64_t threads = std::int64_t{s.block.x} * s.block.y * s.block.z;
    d.theoretical = theoretical_occupancy(
        *device.limits,
        {static_cast<int>(std::clamp<std::int64_t>(threads, 0, INT32_MAX)),
         static_cast<int>(std::min<std::uint32_t>(s.registers_per_thread, INT32_MAX)),
         s.shared_mem_bytes});
    if (device.sm_count > 0 && d.theoretical->blocks_per_sm > 0)
      d.waves_per_sm = static_cast<double>(s.grid.x) * s.grid.y * s.grid.z /
                       (static_cast<double>(d.theoretical->blocks_per_sm) * device.sm_count);
  } else {
    r.cannot("no theoretical occupancy or waves", "the GPU's arch (trace identity block)");
  }
  d.local_memory_per_thread_bytes = counters.first.local_memory_per_thread_bytes;
  const auto local_sectors =
      add(r.get(metric::kLocalLoadSectors), r.get(metric::kLocalStoreSectors));
  if (local_sectors) d.local_memory_bytes = *local_sectors * 32;

  read_stalls(d, r);
  d.library = library_of(d.name);
  if (ceilings.empty()) r.cannot("no roofline position", "a calibration (ktune calibrate)");
  place_on_roofline(d, ceilings);
  decide(d, r);
  explain(d, ceilings);
  find_opportunities(d, ceilings);
  return d;
}

DeviceFacts device_facts(const trace::TraceMetadata& metadata, std::uint32_t device_id) {
  DeviceFacts f;
  if (!metadata.identity) return f;
  for (const DeviceIdentity& dev : metadata.identity->devices)
    if (dev.ordinal == static_cast<int>(device_id) && dev.cc_major > 0) {
      f.limits = sm_limits(dev.arch());
      f.sm_count = dev.sm_count;
    }
  return f;
}

CounterAnalysis analyze_counters(TraceSource& source, const Ceilings& ceilings,
                                 TraceSource* timed) {
  CounterAnalysis out;
  out.ceilings = ceilings;
  // Only profiled launches carry counters: few, so they are held by correlation id.
  std::unordered_map<std::uint32_t, std::vector<std::pair<std::string, double>>> by_launch;
  source.counters([&](const trace::CounterRecord& c) {
    by_launch[c.correlation_id].emplace_back(c.metric, c.value);
  });
  if (by_launch.empty()) return out;

  std::vector<KernelCounters> groups;
  source.kernels([&](const trace::KernelRecord& k) {
    const auto it = by_launch.find(k.correlation_id);
    if (it == by_launch.end()) return;
    const LaunchShape shape = launch_shape(k);
    const std::string& name = display_name(k);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const KernelCounters& x) {
      return x.device_id == k.device_id && x.shape == shape && x.name == name;
    });
    if (g == groups.end()) {
      groups.push_back({});
      g = groups.end() - 1;
      g->name = name;
      g->shape = shape;
      g->device_id = k.device_id;
      g->first = k;
    }
    ++g->launches;
    g->activity_ns += k.duration_ns();
    for (const auto& [metric_name, value] : it->second) {
      auto& sum = g->values[metric_name];
      sum.total += value;
      ++sum.launches;
    }
    ++out.profiled_launches;
    by_launch.erase(it);
  });
  out.unmatched_launches = by_launch.size();
  // The time each profiled shape owns: every launch of the kernel with that shape.
  std::unordered_map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t i = 0; i < groups.size(); ++i) by_name[groups[i].name].push_back(i);
  (timed ? *timed : source).kernels([&](const trace::KernelRecord& k) {
    const auto it = by_name.find(display_name(k));
    if (it == by_name.end()) return;
    const LaunchShape shape = launch_shape(k);
    for (std::size_t i : it->second)
      if (groups[i].device_id == k.device_id && groups[i].shape == shape) {
        ++groups[i].shape_launches;
        groups[i].shape_total_ns += static_cast<std::int64_t>(k.duration_ns());
        break;
      }
  });
  for (const KernelCounters& g : groups)
    out.kernels.push_back(derive(g, ceilings, device_facts(source.metadata(), g.device_id)));
  std::stable_sort(out.kernels.begin(), out.kernels.end(),
                   [](const KernelDerivation& a, const KernelDerivation& b) {
                     if (a.shape_total_ns != b.shape_total_ns)
                       return a.shape_total_ns > b.shape_total_ns;
                     return a.duration_ns * a.launches > b.duration_ns * b.launches;
                   });
  return out;
}

const KernelDerivation* CounterAnalysis::owning(std::string_view name) const {
  for (const KernelDerivation& k : kernels)  // sorted by the time their shape owns
    if (k.name == name) return &k;
  return nullptr;
}

void attach_gemm_problems(CounterAnalysis& counters, const GemmCalls& gemm) {
  for (KernelDerivation& d : counters.kernels) {
    if (d.library.empty()) continue;
    const GemmShape* best = nullptr;
    for (const GemmShape& s : gemm.shapes)
      if (!s.tune_command.empty() &&
          std::find(s.kernels.begin(), s.kernels.end(), d.name) != s.kernels.end() &&
          (!best || s.gpu_ns > best->gpu_ns))
        best = &s;
    if (!best) continue;
    d.tune_command = best->tune_command;
    for (Opportunity& o : d.opportunities)
      if (o.action == library_advice(d.library))
        o.action = fmt::format(
            "Choose another cuBLASLt algorithm for this GEMM ({}x{}x{}, batch {}, {}): {}",
            best->problem.m, best->problem.n, best->problem.k, best->problem.batch, best->dtype,
            d.tune_command);
  }
}

}  // namespace ktune::analyze
