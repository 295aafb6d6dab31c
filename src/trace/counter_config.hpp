#pragma once
// A metric list's counter configuration for one chip, built by CUPTI's host library
// (libnvperf_host): the config image the range profiler replays and the number of replay passes
// it takes. It needs the chip's name only, no GPU and no driver, so the pass count of every
// metric set is checked on CPU machines with the chip's own scheduler
// (tests/trace/counter_passes_test.cpp); the tracer builds the same configuration once per chip.
#include <cupti_profiler_host.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ktune::trace {

struct CounterConfig {
  CUpti_Profiler_Host_Object* host = nullptr;  // evaluates the collected values; owned
  std::vector<std::uint8_t> image;             // what cuptiRangeProfilerSetConfig takes
  std::size_t passes = 0;                      // replay passes per profiled launch

  CounterConfig() = default;
  CounterConfig(CounterConfig&& o) noexcept;
  CounterConfig& operator=(CounterConfig&& o) noexcept;
  ~CounterConfig();
};

// Builds `metrics`' configuration for `chip` ("GH100"); `availability` is the GPU's counter
// availability image when a context is at hand (empty: the chip's full list). Returns "" on
// success, else what failed, naming the call or the metric the chip does not know.
std::string build_counter_config(const std::string& chip,
                                 const std::vector<std::uint8_t>& availability,
                                 const std::vector<const char*>& metrics, CounterConfig& out);

}  // namespace ktune::trace
