#include "ktune/cuda/driver.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

#define KTUNE_STR(x) #x
#define KTUNE_XSTR(x) KTUNE_STR(x)

namespace ktune::cuda {
namespace {

struct Loaded {
  DriverApi api;
  std::string error;  // empty when api is usable
};

Loaded load() {
  Loaded out;
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    out.error =
        "no NVIDIA driver found (libcuda.so.1 could not be loaded); run this command on a "
        "machine with an NVIDIA GPU and its driver installed.";
    return out;
  }
  std::string missing;
#define KTUNE_DRIVER_LOAD(fn)                                                        \
  out.api.fn = reinterpret_cast<decltype(out.api.fn)>(::dlsym(lib, KTUNE_XSTR(fn))); \
  if (!out.api.fn) missing += std::string(missing.empty() ? "" : ", ") + KTUNE_XSTR(fn);
  KTUNE_DRIVER_FUNCTIONS(KTUNE_DRIVER_LOAD)
#undef KTUNE_DRIVER_LOAD
  if (!missing.empty()) {
    out.error = fmt::format(
        "the NVIDIA driver is too old for ktune (libcuda.so.1 lacks {}); "
        "install a driver that supports CUDA 12 or newer.",
        missing);
    return out;
  }
  const CUresult r = out.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    out.api.cuGetErrorName(r, &name);
    out.error = fmt::format(
        "no usable NVIDIA GPU found (cuInit returned {}); run this command on a "
        "machine with an NVIDIA GPU, and check nvidia-smi and CUDA_VISIBLE_DEVICES.",
        name ? name : "an unknown error");
  }
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw NoGpuError(l.error);
  return l.api;
}

bool gpu_available() {
  if (!loaded().error.empty()) return false;
  int count = 0;
  return loaded().api.cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0;
}

const char* result_name(CUresult r) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  if (l.api.cuGetErrorName && l.api.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUDA_ERROR_UNKNOWN_CODE";
}

bool context_is_lost(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

}  // namespace ktune::cuda
