// Range profiler calls follow CUDA 13's cupti_range_profiler.h and cupti_profiler_host.h: the
// host object (libnvperf_host) turns metric names into a config image once per chip; the range
// profiler object is enabled once per context and reused, with a one-range counter data image
// that is re-initialised for each profiled launch.
#include "counter_profiler.hpp"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "counter_config.hpp"
#include "decode.hpp"
#include "ktune/cuda/cupti.hpp"
#include "ktune/trace/metrics.hpp"
#include "launch_selector.hpp"

namespace ktune::trace {
namespace {

// Set-up failures that mean "not here, not now" rather than a ktune bug, with the fix for each.
std::string why_unavailable(CUptiResult r) {
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
      r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)
    return "this user may not read GPU performance counters (run as root, or have the admin "
           "set the driver option NVreg_RestrictProfilingToAdminUsers=0)";
  if (r == CUPTI_ERROR_HARDWARE_BUSY || r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return fmt::format("the GPU's counters are held by another profiler ({})",
                       cuda::cupti_result_name(r));
  if (r == CUPTI_ERROR_NOT_SUPPORTED || r == CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED ||
      r == CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED || r == CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED)
    return fmt::format("this GPU or its mode does not support the range profiler ({})",
                       cuda::cupti_result_name(r));
  return fmt::format("the range profiler failed to start ({})", cuda::cupti_result_name(r));
}

using Clock = std::chrono::steady_clock;

}  // namespace

struct CounterProfiler::Impl {
  std::vector<std::string> metrics;
  std::vector<const char*> metric_ptrs;
  LaunchSelector selector;
  Sink sink;
  Say say;

  // A chip's configuration, built once and shared by its contexts; empty after a failure.
  using Chip = CounterConfig;
  struct Context {
    CUpti_RangeProfiler_Object* profiler = nullptr;
    Chip* chip = nullptr;
    std::vector<std::uint8_t> counter_data;
    std::uint32_t device_id = 0;
  };
  std::mutex mu;  // one profiled launch at a time: ranges must not interleave
  std::map<std::string, Chip> chips;
  // The most replay passes any chip's config takes ("?" before the first profiled launch).
  std::string passes() const {
    std::size_t most = 0;
    for (const auto& [name, chip] : chips) most = std::max(most, chip.passes);
    return most ? std::to_string(most) : "?";
  }
  std::map<CUcontext, Context> contexts;
  bool initialized = false;
  std::atomic<bool> off{false};  // read unlocked by every launch callback
  double setup_s = 0;
  // Where collecting goes, summed over launches: arming (counter data, config, start), the
  // launch with its replay passes, and stopping with decoding; and the first launch whole.
  double arm_s = 0, replay_s = 0, decode_s = 0, first_s = 0;
  double set_config_s = 0, start_s = 0;  // the parts of arm_s that may hold a one-time cost
  std::uint64_t collected = 0;           // launches whose values reached the trace

  Impl(std::vector<std::string> m, const CounterSelection& s, Sink k, Say y)
      : metrics(std::move(m)), selector(s), sink(std::move(k)), say(std::move(y)) {
    for (const auto& name : metrics) metric_ptrs.push_back(name.c_str());
  }

  // Turns the tier off with one sentence; the activity tier runs on.
  void turn_off(const std::string& why) {
    if (off.exchange(true)) return;
    say("hardware counters are off for the rest of this run: " + why +
        "; the activity trace is recorded as usual.");
  }

  bool check(CUptiResult r, const char* what) {
    if (r == CUPTI_SUCCESS) return true;
    turn_off(fmt::format("{} failed ({})", what, cuda::cupti_result_name(r)));
    return false;
  }

  Chip* chip_for(std::uint32_t device, CUcontext ctx) {
    CUpti_Device_GetChipName_Params name{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    name.deviceIndex = device;
    if (!check(cuptiDeviceGetChipName(&name), "cuptiDeviceGetChipName")) return nullptr;
    auto [it, fresh] = chips.try_emplace(name.pChipName);
    Chip& chip = it->second;
    if (!fresh) return chip.image.empty() ? nullptr : &chip;
    CUpti_Profiler_GetCounterAvailability_Params avail{
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = ctx;
    std::vector<std::uint8_t> availability;
    if (cuptiProfilerGetCounterAvailability(&avail) == CUPTI_SUCCESS) {
      availability.resize(avail.counterAvailabilityImageSize);
      avail.pCounterAvailabilityImage = availability.data();
      if (cuptiProfilerGetCounterAvailability(&avail) != CUPTI_SUCCESS) availability.clear();
    }
    if (std::string why = build_counter_config(name.pChipName, availability, metric_ptrs, chip);
        !why.empty()) {
      turn_off(why);
      return nullptr;
    }
    return &chip;
  }

  Context* context_for(CUcontext ctx) {
    if (auto it = contexts.find(ctx); it != contexts.end())
      return it->second.profiler ? &it->second : nullptr;
    Context& c = contexts[ctx];  // an entry without a profiler marks a context that failed
    const auto t0 = Clock::now();
    if (!initialized) {
      CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
      if (const CUptiResult r = cuptiProfilerInitialize(&init); r != CUPTI_SUCCESS) {
        turn_off(why_unavailable(r));
        return nullptr;
      }
      initialized = true;
    }
    if (!check(cuptiGetDeviceId(ctx, &c.device_id), "cuptiGetDeviceId")) return nullptr;
    Chip* chip = chip_for(c.device_id, ctx);
    if (!chip) return nullptr;
    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = ctx;
    if (const CUptiResult r = cuptiRangeProfilerEnable(&enable); r != CUPTI_SUCCESS) {
      turn_off(why_unavailable(r));
      return nullptr;
    }
    CUpti_RangeProfiler_GetCounterDataSize_Params size{
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    size.pRangeProfilerObject = enable.pRangeProfilerObject;
    size.pMetricNames = metric_ptrs.data();
    size.numMetrics = metric_ptrs.size();
    size.maxNumOfRanges = 1;
    size.maxNumRangeTreeNodes = 1;
    if (!check(cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize"))
      return nullptr;
    c.counter_data.resize(size.counterDataSize);
    c.chip = chip;
    c.profiler = enable.pRangeProfilerObject;
    setup_s += std::chrono::duration<double>(Clock::now() - t0).count();
    return &c;
  }

  // Fresh counter data and the config, before each profiled launch.
  bool arm(Context& c) {
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    init.pRangeProfilerObject = c.profiler;
    init.counterDataSize = c.counter_data.size();
    init.pCounterData = c.counter_data.data();
    if (!check(cuptiRangeProfilerCounterDataImageInitialize(&init),
               "cuptiRangeProfilerCounterDataImageInitialize"))
      return false;
    CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    set.pRangeProfilerObject = c.profiler;
    set.configSize = c.chip->image.size();
    set.pConfig = c.chip->image.data();
    set.counterDataImageSize = c.counter_data.size();
    set.pCounterDataImage = c.counter_data.data();
    set.range = CUPTI_AutoRange;
    set.replayMode = CUPTI_KernelReplay;
    set.maxRangesPerPass = 1;
    set.numNestingLevels = 1;
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 1;
    const auto t0 = Clock::now();
    if (!check(cuptiRangeProfilerSetConfig(&set), "cuptiRangeProfilerSetConfig")) return false;
    const auto t1 = Clock::now();
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = c.profiler;
    // Another process profiling the GPU shows up here, at the first start.
    if (const CUptiResult r = cuptiRangeProfilerStart(&start); r != CUPTI_SUCCESS) {
      turn_off(why_unavailable(r));
      return false;
    }
    set_config_s += std::chrono::duration<double>(t1 - t0).count();
    start_s += std::chrono::duration<double>(Clock::now() - t1).count();
    return true;
  }

  void collect(Context& c, ProfiledLaunch launch) {
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = c.profiler;
    if (!check(cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop")) return;
    CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    decode.pRangeProfilerObject = c.profiler;
    if (!check(cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData")) return;
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = c.counter_data.data();
    info.counterDataImageSize = c.counter_data.size();
    if (!check(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo"))
      return;
    if (info.numTotalRanges == 0) return;  // the launch ran no kernel the profiler saw
    std::vector<double> values(metric_ptrs.size());
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    eval.pHostObject = c.chip->host;
    eval.pCounterDataImage = c.counter_data.data();
    eval.counterDataImageSize = c.counter_data.size();
    eval.rangeIndex = 0;
    eval.ppMetricNames = metric_ptrs.data();
    eval.numMetrics = metric_ptrs.size();
    eval.pMetricValues = values.data();
    if (!check(cuptiProfilerHostEvaluateToGpuValues(&eval), "cuptiProfilerHostEvaluateToGpuValues"))
      return;
    std::vector<CounterRecord> out;
    out.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      out.push_back({c.device_id, launch.correlation_id, metrics[i], values[i]});
      if (metrics[i] == metric::kDuration && values[i] > 0)
        launch.duration_ns = static_cast<std::uint64_t>(values[i]);
    }
    ++collected;
    sink(std::move(out), launch);
  }
};

// The launch being profiled on this thread (its start time), so its exit callback finishes it.
thread_local bool t_profiling = false;
thread_local Clock::time_point t_started, t_armed;
thread_local std::uint64_t t_enter_ns = 0;
thread_local int t_depth = 0;  // a runtime launch may reach the driver's launch callback too

CounterProfiler::CounterProfiler(std::vector<std::string> metrics,
                                 const CounterSelection& selection, Sink sink, Say say)
    : impl_(
          std::make_unique<Impl>(std::move(metrics), selection, std::move(sink), std::move(say))) {}

CounterProfiler::~CounterProfiler() = default;

std::vector<std::uint32_t> CounterProfiler::launch_callbacks(CUpti_CallbackDomain domain) {
  std::vector<std::uint32_t> out;
  const std::uint32_t end = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                                ? std::uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}
                                : std::uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE};
  for (std::uint32_t cbid = 1; cbid < end; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) continue;
    const std::string_view n(name);
    // Kernel launches only: not graphs, host functions or occupancy queries.
    const bool launch = n.find("Launch") != std::string_view::npos &&
                        (n.find("Kernel") != std::string_view::npos || n == "cuLaunchGrid" ||
                         n == "cuLaunchGridAsync");
    if (launch && n.find("Graph") == std::string_view::npos &&
        n.find("Occupancy") == std::string_view::npos && n.find("Host") == std::string_view::npos)
      out.push_back(cbid);
  }
  return out;
}

void CounterProfiler::on_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const CUpti_CallbackData* info, bool capturing) noexcept {
  try {
    Impl& m = *impl_;
    if (info->callbackSite == CUPTI_API_ENTER) {
      if (t_depth++ > 0 || !capturing || m.off || !info->context) return;
      std::unique_lock lock(m.mu);
      const char* symbol = info->symbolName;
      if (!symbol || !m.selector.select(symbol, launch_size(domain, cbid, info->functionParams)))
        return;
      Impl::Context* c = m.context_for(info->context);
      if (!c) return;
      t_started = Clock::now();
      if (cuptiGetTimestamp(&t_enter_ns) != CUPTI_SUCCESS) t_enter_ns = 0;
      if (!m.arm(*c)) return;
      t_armed = Clock::now();
      m.arm_s += std::chrono::duration<double>(t_armed - t_started).count();
      t_profiling = true;
      lock.release();  // held until this launch's exit callback, on this thread
      return;
    }
    if (--t_depth > 0 || !t_profiling) return;
    t_profiling = false;
    std::unique_lock lock(m.mu, std::adopt_lock);
    const auto launched = Clock::now();
    m.replay_s += std::chrono::duration<double>(launched - t_armed).count();
    auto it = m.contexts.find(info->context);
    if (it != m.contexts.end() && it->second.profiler)
      m.collect(it->second, {info->correlationId, t_enter_ns, 0});
    const auto done = Clock::now();
    m.decode_s += std::chrono::duration<double>(done - launched).count();
    const double spent = std::chrono::duration<double>(done - t_started).count();
    if (m.first_s == 0) m.first_s = spent;
    m.selector.spent(spent);
  } catch (...) {
  }
}

std::string CounterProfiler::summary() const {
  std::lock_guard lock(impl_->mu);
  const Impl& m = *impl_;
  return fmt::format(
      "hardware counters: {} launches of {} kernels profiled, {:.3f} s collecting ({:.3f} s "
      "set-up; arming {:.3f} s (set-config {:.3f} s, start {:.3f} s), launches with their replays "
      "{:.3f} s, decoding {:.3f} s; the first launch {:.3f} s), {} metrics each in {} replay "
      "passes",
      m.collected, m.selector.profiled_kernels(), m.selector.spent_s(), m.setup_s, m.arm_s,
      m.set_config_s, m.start_s, m.replay_s, m.decode_s, m.first_s, m.metrics.size(), m.passes());
}

}  // namespace ktune::trace
