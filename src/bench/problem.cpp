#include "ktune/bench/problem.hpp"

namespace ktune::bench {

cuda::CompileOptions compile_options(const KernelLaunch& launch, const std::string& arch) {
  cuda::CompileOptions o;
  o.arch = arch;
  o.flags = launch.flags;
  o.name_expressions = {launch.kernel_name};
  o.headers = launch.headers;
  return o;
}

}  // namespace ktune::bench
