#pragma once
// Which kernel launches the counter tier profiles. Plain host logic (no CUPTI), so the sampling
// rules are tested on machines without a GPU; the tracer asks once per launch, in launch order.
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ktune/trace/options.hpp"

namespace ktune::trace {

class LaunchSelector {
 public:
  // Throws ktune::Error with one sentence when kernel_regex is not a valid ECMAScript regex.
  explicit LaunchSelector(CounterSelection selection);

  // Whether this launch of `mangled_name` is profiled; counts it either way. Not thread-safe.
  bool select(std::string_view mangled_name);
  // Time spent collecting counters for one selected launch; counts against time_box_s.
  void spent(double seconds) { spent_s_ += seconds; }
  double spent_s() const { return spent_s_; }
  // True once nothing more can be selected (time box spent); the caller may stop asking.
  bool exhausted() const { return selection_.time_box_s > 0 && spent_s_ >= selection_.time_box_s; }
  std::uint64_t profiled_launches() const { return profiled_launches_; }
  std::uint64_t profiled_kernels() const { return profiled_kernels_; }

 private:
  struct Kernel {
    bool matches = false;
    std::uint64_t seen = 0;      // matching launches so far
    std::uint64_t profiled = 0;  // of them, profiled
  };
  CounterSelection selection_;
  std::regex regex_;
  // Looked up by string_view: a launch of a kernel already seen allocates nothing.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Kernel, NameHash, std::equal_to<>> kernels_;
  double spent_s_ = 0;
  std::uint64_t profiled_launches_ = 0, profiled_kernels_ = 0;
};

}  // namespace ktune::trace
