#pragma once
// The counter tier inside the injected tracer: CUPTI's range profiler in kernel replay with one
// range per selected launch. The launch callback starts a range as the launch is entered and, as
// it returns (the replay passes have run inside it), stops, decodes and evaluates the metrics into
// CounterRecords carrying the launch's correlation id. Unselected launches cost one lookup in the
// LaunchSelector. Any failure to set up (counters held by another profiler, no permission, a GPU
// the profiler does not support, an unknown metric) prints one sentence and turns the tier off;
// the activity tier runs on.
#include <cupti.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ktune/trace/ktrace.hpp"
#include "ktune/trace/options.hpp"

namespace ktune::trace {

// Where a profiled launch ran. CUPTI gives a replayed kernel's activity record no timestamps
// (start_ns = end_ns = 0), so the tracer places it at the launch call (CUPTI's clock, the same as
// every record's) with the duration gpu__time_duration.sum measured, when the set has it.
struct ProfiledLaunch {
  std::uint32_t correlation_id = 0;
  std::uint64_t enter_ns = 0;     // CUPTI timestamp as the launch call was entered
  std::uint64_t duration_ns = 0;  // 0: not measured
};

class CounterProfiler {
 public:
  using Sink = std::function<void(std::vector<CounterRecord>&&, const ProfiledLaunch&)>;
  using Say = std::function<void(const std::string&)>;
  // `metrics` as resolve_metrics returns them. Throws ktune::Error for a bad --kernel regex.
  CounterProfiler(std::vector<std::string> metrics, const CounterSelection& selection, Sink sink,
                  Say say);
  ~CounterProfiler();

  // The launch callbacks the tracer must enable (runtime and driver API ids).
  static std::vector<std::uint32_t> launch_callbacks(CUpti_CallbackDomain domain);
  // Called for every enabled launch callback, enter and exit; never throws. A launch entered
  // while `capturing` is false is not considered for profiling. The launch's grid and block come
  // from its parameters (launch_size), so the selector can pick larger shapes as they appear.
  void on_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                 bool capturing) noexcept;
  // One line for the exit summary: launches and kernels profiled, seconds spent.
  std::string summary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune::trace
