// Range profiler calls follow CUDA 13's cupti_range_profiler.h and cupti_profiler_host.h: the
// host object (libnvperf_host) turns metric names into a config image once per chip; the range
// profiler object is enabled once per context and reused, with a one-range counter data image
// that is re-initialised for each profiled launch. CounterSession decides when each is called.
#include "counter_profiler.hpp"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <atomic>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "counter_config.hpp"
#include "counter_session.hpp"
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

std::string failed(const char* what, CUptiResult r) {
  return fmt::format("{} failed ({})", what, cuda::cupti_result_name(r));
}

// The range profiler's CUPTI calls, in the order CounterSession makes them.
class CuptiRangeProfiler final : public RangeProfilerApi {
 public:
  explicit CuptiRangeProfiler(const std::vector<std::string>& metrics) {
    for (const auto& name : metrics) metrics_.push_back(name.c_str());
  }

  std::string initialize() override {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    const CUptiResult r = cuptiProfilerInitialize(&init);
    return r == CUPTI_SUCCESS ? "" : why_unavailable(r);
  }

  std::string device_of(Context ctx, std::uint32_t& device, std::string& chip) override {
    auto* c = static_cast<CUcontext>(const_cast<void*>(ctx));
    if (const CUptiResult r = cuptiGetDeviceId(c, &device); r != CUPTI_SUCCESS)
      return failed("cuptiGetDeviceId", r);
    CUpti_Device_GetChipName_Params name{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    name.deviceIndex = device;
    if (const CUptiResult r = cuptiDeviceGetChipName(&name); r != CUPTI_SUCCESS)
      return failed("cuptiDeviceGetChipName", r);
    chip = name.pChipName;
    return "";
  }

  std::string configure(const std::string& chip, Context ctx, std::size_t& passes) override {
    CUpti_Profiler_GetCounterAvailability_Params avail{
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = static_cast<CUcontext>(const_cast<void*>(ctx));
    std::vector<std::uint8_t> availability;
    if (cuptiProfilerGetCounterAvailability(&avail) == CUPTI_SUCCESS) {
      availability.resize(avail.counterAvailabilityImageSize);
      avail.pCounterAvailabilityImage = availability.data();
      if (cuptiProfilerGetCounterAvailability(&avail) != CUPTI_SUCCESS) availability.clear();
    }
    CounterConfig& config = chips_[chip];
    if (std::string why = build_counter_config(chip, availability, metrics_, config); !why.empty())
      return why;
    passes = config.passes;
    return "";
  }

  std::string enable(Context ctx, const std::string& chip) override {
    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = static_cast<CUcontext>(const_cast<void*>(ctx));
    if (const CUptiResult r = cuptiRangeProfilerEnable(&enable); r != CUPTI_SUCCESS)
      return why_unavailable(r);
    CUpti_RangeProfiler_GetCounterDataSize_Params size{
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    size.pRangeProfilerObject = enable.pRangeProfilerObject;
    size.pMetricNames = metrics_.data();
    size.numMetrics = metrics_.size();
    size.maxNumOfRanges = 1;
    size.maxNumRangeTreeNodes = 1;
    if (const CUptiResult r = cuptiRangeProfilerGetCounterDataSize(&size); r != CUPTI_SUCCESS)
      return failed("cuptiRangeProfilerGetCounterDataSize", r);
    Profiled& p = contexts_[ctx];
    p.profiler = enable.pRangeProfilerObject;
    p.config = &chips_.at(chip);
    p.counter_data.resize(size.counterDataSize);
    return "";
  }

  std::string arm(Context ctx) override {
    Profiled& p = contexts_.at(ctx);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    init.pRangeProfilerObject = p.profiler;
    init.counterDataSize = p.counter_data.size();
    init.pCounterData = p.counter_data.data();
    if (const CUptiResult r = cuptiRangeProfilerCounterDataImageInitialize(&init);
        r != CUPTI_SUCCESS)
      return failed("cuptiRangeProfilerCounterDataImageInitialize", r);
    CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    set.pRangeProfilerObject = p.profiler;
    set.configSize = p.config->image.size();
    set.pConfig = p.config->image.data();
    set.counterDataImageSize = p.counter_data.size();
    set.pCounterDataImage = p.counter_data.data();
    set.range = CUPTI_AutoRange;
    set.replayMode = CUPTI_KernelReplay;
    set.maxRangesPerPass = 1;
    set.numNestingLevels = 1;
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 1;
    if (const CUptiResult r = cuptiRangeProfilerSetConfig(&set); r != CUPTI_SUCCESS)
      return failed("cuptiRangeProfilerSetConfig", r);
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = p.profiler;
    // Another process profiling the GPU shows up here, at the first start.
    if (const CUptiResult r = cuptiRangeProfilerStart(&start); r != CUPTI_SUCCESS)
      return why_unavailable(r);
    return "";
  }

  std::string collect(Context ctx, std::vector<double>& values, bool& ran) override {
    Profiled& p = contexts_.at(ctx);
    ran = false;
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = p.profiler;
    if (const CUptiResult r = cuptiRangeProfilerStop(&stop); r != CUPTI_SUCCESS)
      return failed("cuptiRangeProfilerStop", r);
    CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    decode.pRangeProfilerObject = p.profiler;
    if (const CUptiResult r = cuptiRangeProfilerDecodeData(&decode); r != CUPTI_SUCCESS)
      return failed("cuptiRangeProfilerDecodeData", r);
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = p.counter_data.data();
    info.counterDataImageSize = p.counter_data.size();
    if (const CUptiResult r = cuptiRangeProfilerGetCounterDataInfo(&info); r != CUPTI_SUCCESS)
      return failed("cuptiRangeProfilerGetCounterDataInfo", r);
    if (info.numTotalRanges == 0) return "";  // the launch ran no kernel the profiler saw
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    eval.pHostObject = p.config->host;
    eval.pCounterDataImage = p.counter_data.data();
    eval.counterDataImageSize = p.counter_data.size();
    eval.rangeIndex = 0;
    eval.ppMetricNames = metrics_.data();
    eval.numMetrics = metrics_.size();
    eval.pMetricValues = values.data();
    if (const CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&eval); r != CUPTI_SUCCESS)
      return failed("cuptiProfilerHostEvaluateToGpuValues", r);
    ran = true;
    return "";
  }

 private:
  struct Profiled {
    CUpti_RangeProfiler_Object* profiler = nullptr;
    const CounterConfig* config = nullptr;  // its chip's
    std::vector<std::uint8_t> counter_data;
  };
  std::vector<const char*> metrics_;  // views of the session's names, which outlive this
  std::map<std::string, CounterConfig> chips_;
  std::map<Context, Profiled> contexts_;
};

}  // namespace

struct CounterProfiler::Impl {
  std::vector<std::string> metrics;
  CuptiRangeProfiler api;
  CounterSession session;
  LaunchSelector selector;
  Sink sink;
  std::mutex mu;                 // one profiled launch at a time: ranges must not interleave
  std::atomic<bool> off{false};  // the session's, read unlocked by every launch callback

  Impl(std::vector<std::string> m, const CounterSelection& s, Sink k, Say y)
      : metrics(std::move(m)),
        api(metrics),
        session(api, metrics, std::move(y)),
        selector(s),
        sink(std::move(k)) {}
};

// The launch being profiled on this thread and its CUPTI enter time, for its exit callback.
thread_local bool t_profiling = false;
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
      if (cuptiGetTimestamp(&t_enter_ns) != CUPTI_SUCCESS) t_enter_ns = 0;
      const bool armed = m.session.begin(info->context);
      m.off = m.session.off();
      if (!armed) return;
      t_profiling = true;
      lock.release();  // held until this launch's exit callback, on this thread
      return;
    }
    if (--t_depth > 0 || !t_profiling) return;
    t_profiling = false;
    std::unique_lock lock(m.mu, std::adopt_lock);
    ProfiledLaunch launch{info->correlationId, t_enter_ns, 0};
    std::vector<CounterRecord> values =
        m.session.end(info->context, info->correlationId, launch.duration_ns);
    m.off = m.session.off();
    if (!values.empty()) m.sink(std::move(values), launch);
    m.selector.spent(m.session.last_launch_s());
  } catch (...) {
  }
}

std::string CounterProfiler::summary() const {
  std::lock_guard lock(impl_->mu);
  const Impl& m = *impl_;
  const CounterSession::Times& t = m.session.times();
  const std::size_t passes = m.session.passes();
  return fmt::format(
      "hardware counters: {} launches of {} kernels profiled, {:.3f} s collecting ({:.3f} s "
      "set-up; arming {:.3f} s (the first {:.3f} s), launches with their replays {:.3f} s, "
      "decoding {:.3f} s; the first launch {:.3f} s), {} metrics each in {} replay passes",
      m.session.collected(), m.selector.profiled_kernels(), m.selector.spent_s(), t.setup_s,
      t.arm_s, t.first_arm_s, t.replay_s, t.collect_s, t.first_s, m.session.metric_count(),
      passes ? std::to_string(passes) : "?");
}

}  // namespace ktune::trace
