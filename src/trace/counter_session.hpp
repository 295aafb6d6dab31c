#pragma once
// The counter tier's bookkeeping over CUPTI's range profiler: what is paid once per process
// (initializing the profiler), once per chip (the counter configuration, which fixes the replay
// passes), once per context (the profiler object and its counter data), and per profiled launch
// (arming before the launch, collecting after it). The CUPTI calls sit behind RangeProfilerApi,
// which the tracer implements (counter_profiler.cpp); CPU tests drive a CounterSession with a fake
// and count what each launch pays. Plain host code, not thread-safe: the caller serializes.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ktune/trace/ktrace.hpp"

namespace ktune::trace {

class RangeProfilerApi {
 public:
  using Context = const void*;  // a CUcontext
  virtual ~RangeProfilerApi() = default;
  // Each returns "" on success, else why not: a sentence fragment that turns the tier off.
  virtual std::string initialize() = 0;
  // The device a context runs on and its chip's name ("GH100").
  virtual std::string device_of(Context ctx, std::uint32_t& device, std::string& chip) = 0;
  // Builds and keeps the metrics' configuration for `chip`; its replay passes (0: unknown).
  virtual std::string configure(const std::string& chip, Context ctx, std::size_t& passes) = 0;
  // The range profiler on `ctx`, with `chip`'s configuration and a counter data image of its own.
  virtual std::string enable(Context ctx, const std::string& chip) = 0;
  // Before a launch: fresh counter data, the configuration, start.
  virtual std::string arm(Context ctx) = 0;
  // After it: stop, decode, evaluate one value per metric in order. `ran` is false when the
  // launch ran no kernel the profiler saw (then `values` is left alone).
  virtual std::string collect(Context ctx, std::vector<double>& values, bool& ran) = 0;
};

class CounterSession {
 public:
  using Say = std::function<void(const std::string&)>;
  // `metrics` as resolve_metrics returns them, in the order collect() evaluates them.
  CounterSession(RangeProfilerApi& api, std::vector<std::string> metrics, Say say);

  // Before a selected launch on `ctx`: sets up what this process, chip and context still lack,
  // then arms. False: not profiled (the tier is off, or this context could not be set up).
  bool begin(RangeProfilerApi::Context ctx);
  // After the launch begin() armed: its values as records of `correlation_id`, and the duration
  // the counters measured (0: not measured). Empty when it ran no kernel or collecting failed.
  std::vector<CounterRecord> end(RangeProfilerApi::Context ctx, std::uint32_t correlation_id,
                                 std::uint64_t& duration_ns);

  bool off() const { return off_; }
  // Where the time went, in seconds: one-time set-up (process, chips, contexts); per launch,
  // arming, the launch with its replay passes, and collecting; the first launch whole.
  struct Times {
    double setup_s = 0, arm_s = 0, first_arm_s = 0, replay_s = 0, collect_s = 0, first_s = 0;
  };
  const Times& times() const { return times_; }
  std::uint64_t collected() const { return collected_; }   // launches whose values came back
  double last_launch_s() const { return last_launch_s_; }  // arming to collected, the last one
  std::size_t metric_count() const { return metrics_.size(); }
  // The most replay passes any chip's configuration takes; 0 before the first (or unknown).
  std::size_t passes() const;

 private:
  using Clock = std::chrono::steady_clock;
  void turn_off(const std::string& why);
  bool open(RangeProfilerApi::Context ctx);  // the one-time parts, as far as they are missing

  RangeProfilerApi& api_;
  std::vector<std::string> metrics_;
  Say say_;
  bool off_ = false, initialized_ = false;
  std::map<std::string, std::size_t> chips_;  // configured chips and their passes
  struct ContextState {
    bool ready = false;  // false: its set-up failed
    std::uint32_t device = 0;
  };
  std::map<RangeProfilerApi::Context, ContextState> contexts_;
  Times times_;
  Clock::time_point started_, armed_;
  std::uint64_t collected_ = 0, armed_launches_ = 0;
  double last_launch_s_ = 0;
};

}  // namespace ktune::trace
