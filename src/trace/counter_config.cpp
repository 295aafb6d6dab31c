#include "counter_config.hpp"

#include <utility>

#include <fmt/format.h>

#include "ktune/cuda/cupti.hpp"

namespace ktune::trace {

CounterConfig::CounterConfig(CounterConfig&& o) noexcept
    : host(std::exchange(o.host, nullptr)), image(std::move(o.image)), passes(o.passes) {}

CounterConfig& CounterConfig::operator=(CounterConfig&& o) noexcept {
  std::swap(host, o.host);
  image = std::move(o.image);
  passes = o.passes;
  return *this;
}

CounterConfig::~CounterConfig() {
  if (!host) return;
  CUpti_Profiler_Host_Deinitialize_Params done{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  done.pHostObject = host;
  cuptiProfilerHostDeinitialize(&done);
}

std::string build_counter_config(const std::string& chip,
                                 const std::vector<std::uint8_t>& availability,
                                 const std::vector<const char*>& metrics, CounterConfig& out) {
  auto failed = [](const char* call, CUptiResult r) {
    return fmt::format("{} failed ({})", call, cuda::cupti_result_name(r));
  };
  CounterConfig c;
  CUpti_Profiler_Host_Initialize_Params init{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = chip.c_str();
  init.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
  if (const CUptiResult r = cuptiProfilerHostInitialize(&init); r != CUPTI_SUCCESS)
    return failed("cuptiProfilerHostInitialize", r);
  c.host = init.pHostObject;
  // Name the metric the chip does not know, rather than failing the whole list.
  for (const char* m : metrics) {
    CUpti_Profiler_Host_GetMetricProperties_Params props{
        CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
    props.pHostObject = c.host;
    props.pMetricName = m;
    if (cuptiProfilerHostGetMetricProperties(&props) != CUPTI_SUCCESS)
      return fmt::format("metric '{}' is not known on {} (list them with ncu --query-metrics)", m,
                         chip);
  }
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = c.host;
  add.ppMetricNames = const_cast<const char**>(metrics.data());
  add.numMetrics = metrics.size();
  if (const CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add); r != CUPTI_SUCCESS)
    return failed("cuptiProfilerHostConfigAddMetrics", r);
  CUpti_Profiler_Host_GetConfigImageSize_Params size{
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = c.host;
  if (const CUptiResult r = cuptiProfilerHostGetConfigImageSize(&size); r != CUPTI_SUCCESS)
    return failed("cuptiProfilerHostGetConfigImageSize", r);
  c.image.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = c.host;
  image.configImageSize = c.image.size();
  image.pConfigImage = c.image.data();
  if (const CUptiResult r = cuptiProfilerHostGetConfigImage(&image); r != CUPTI_SUCCESS)
    return failed("cuptiProfilerHostGetConfigImage", r);
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = c.image.size();
  passes.pConfigImage = c.image.data();
  // Unknown passes (0) do not stop the collection; the summary then prints "?".
  if (cuptiProfilerHostGetNumOfPasses(&passes) == CUPTI_SUCCESS) c.passes = passes.numOfPasses;
  out = std::move(c);
  return "";
}

}  // namespace ktune::trace
