#pragma once
// Which kernel launches the counter tier profiles. Plain host logic (no CUPTI), so the sampling
// rules are tested on machines without a GPU; the tracer asks once per launch, in launch order.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ktune/trace/options.hpp"
#include "name_pattern.hpp"

namespace ktune::trace {

// A launch's size as its launch call gives it; 0: not known (a launch call the tracer cannot read).
struct LaunchSize {
  std::uint64_t blocks = 0;             // grid x * y * z
  std::uint64_t threads_per_block = 0;  // block x * y * z
  std::uint64_t threads() const { return blocks * threads_per_block; }
};

// A later launch whose threads differ by at least this factor from every profiled launch of its
// kernel, larger or smaller, is a new shape worth its own counters (a copy measured at grid 8192
// while its 131072-block launches own the time, or a softmax first launched on the full batch and
// then, for most of its time, on a quarter of it); smaller steps (a sequence growing by one) are
// not.
inline constexpr std::uint64_t kShapeGrowth = 2;

class LaunchSelector {
 public:
  // Throws ktune::Error with one sentence when kernel_regex is not a pattern NamePattern reads.
  explicit LaunchSelector(CounterSelection selection);

  // Whether this launch of `mangled_name` is profiled; counts it either way. Not thread-safe.
  // Beyond the skip/every/count rules, a launch of a kernel already profiled whose `size` is a new
  // shape (kShapeGrowth) is profiled too, up to `launch_shapes` shapes per kernel: the tracer
  // cannot know which shape will own the time, so it keeps the counters of each and the analysis
  // reads the one that does.
  bool select(std::string_view mangled_name, LaunchSize size = {});
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
    // Threads of each profiled shape (at most launch_shapes; 0: a launch of unknown size).
    std::vector<std::uint64_t> shapes;
    bool new_shape(std::uint64_t threads) const;
  };
  CounterSelection selection_;
  NamePattern pattern_;  // never std::regex: kernel names are the traced program's input
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
