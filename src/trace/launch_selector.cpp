#include "launch_selector.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/trace/ktrace.hpp"

namespace ktune::trace {

LaunchSelector::LaunchSelector(CounterSelection selection) : selection_(std::move(selection)) {
  if (selection_.every == 0) selection_.every = 1;
  try {
    pattern_ = NamePattern(selection_.kernel_regex);
  } catch (const Error& e) {
    throw Error(
        fmt::format("--kernel '{}' is not a valid regular expression ({}); fix it, e.g. "
                    "--kernel 'gemm|nvjet'.",
                    selection_.kernel_regex, e.what()));
  }
}

bool LaunchSelector::Kernel::new_shape(std::uint64_t threads) const {
  if (threads == 0) return false;
  return std::all_of(shapes.begin(), shapes.end(), [&](std::uint64_t p) {
    return threads >= kShapeGrowth * p || threads * kShapeGrowth <= p;
  });
}

bool LaunchSelector::select(std::string_view mangled_name, LaunchSize size) {
  if (exhausted()) return false;
  auto it = kernels_.find(mangled_name);
  if (it == kernels_.end()) {
    it = kernels_.emplace(std::string(mangled_name), Kernel{}).first;
    // Matched once per distinct kernel: the demangled form lets users write C++ names.
    it->second.matches = selection_.kernel_regex.empty() || pattern_.search(it->first) ||
                         pattern_.search(demangle(it->first));
  }
  Kernel& k = it->second;
  if (!k.matches) return false;
  const std::uint64_t index = k.seen++;
  const std::uint64_t threads = size.threads();
  const bool distinct = k.profiled == 0 || k.new_shape(threads);
  const bool scheduled = index >= selection_.launch_skip &&
                         (index - selection_.launch_skip) % selection_.every == 0 &&
                         (selection_.launch_count == 0 || k.profiled < selection_.launch_count);
  const bool new_shape = k.profiled > 0 && distinct && k.shapes.size() < selection_.launch_shapes;
  if (!scheduled && !new_shape) return false;
  if (k.profiled == 0) {
    if (selection_.max_kernels > 0 && profiled_kernels_ >= selection_.max_kernels) return false;
    ++profiled_kernels_;
  }
  if (distinct && k.shapes.size() < selection_.launch_shapes) k.shapes.push_back(threads);
  ++k.profiled;
  ++profiled_launches_;
  return true;
}

}  // namespace ktune::trace
