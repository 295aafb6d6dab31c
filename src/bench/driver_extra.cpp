#include "driver_extra.hpp"

#include <dlfcn.h>

#include "ktune/core/error.hpp"
#include "ktune/cuda/driver.hpp"

#define KTUNE_BENCH_STR(x) #x
#define KTUNE_BENCH_XSTR(x) KTUNE_BENCH_STR(x)

namespace ktune::bench::detail {

const DriverExtra& driver_extra() {
  static const DriverExtra extra = [] {
    cuda::driver();  // loads libcuda.so.1 (RTLD_GLOBAL) or throws NoGpuError
    DriverExtra e;
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    // cuda.h maps cuModuleGetGlobal to its versioned symbol; stringify the mapped name.
    if (lib)
      e.cuModuleGetGlobal = reinterpret_cast<decltype(e.cuModuleGetGlobal)>(
          ::dlsym(lib, KTUNE_BENCH_XSTR(cuModuleGetGlobal)));
    return e;
  }();
  if (!extra.cuModuleGetGlobal)
    throw Error(
        "the NVIDIA driver lacks cuModuleGetGlobal; install a driver that supports CUDA 12 or "
        "newer.");
  return extra;
}

}  // namespace ktune::bench::detail
