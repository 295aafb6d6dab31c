#pragma once
// The CUDA driver API, loaded at run time from libcuda.so.1 so that the ktune binary starts on a
// machine with no driver. driver() loads it once, calls cuInit, and throws ktune::NoGpuError with
// one sentence when there is no driver or no GPU.
#include <cuda.h>
#include <cudaProfiler.h>

#include "ktune/cuda/check.hpp"

// Every driver entry point ktune uses. cuda.h maps many names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2); X(fn) sees the mapped name, so member and symbol always agree.
// clang-format off
#define KTUNE_DRIVER_FUNCTIONS(X) \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetUuid) \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetPCIBusId) X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice) \
  X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8Async) X(cuMemsetD32Async) \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute) \
  X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuStreamBeginCapture) \
  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy) \
  X(cuGraphDestroy) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuMemcpyDtoDAsync) X(cuModuleGetGlobal) \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuStreamWaitEvent) X(cuCtxPushCurrent) \
  X(cuCtxPopCurrent) X(cuProfilerStart) X(cuProfilerStop) X(cuFuncGetParamInfo) \
  X(cuEventQuery) X(cuStreamIsCapturing)
// clang-format on

namespace ktune::cuda {

struct DriverApi {
#define KTUNE_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  KTUNE_DRIVER_FUNCTIONS(KTUNE_DRIVER_MEMBER)
#undef KTUNE_DRIVER_MEMBER
};

// Loaded and initialised driver; NoGpuError if libcuda.so.1 is missing or cuInit finds no GPU.
const DriverApi& driver();

// True when a driver and at least one GPU are present; never throws.
bool gpu_available();

// Name of a CUresult ("CUDA_ERROR_OUT_OF_MEMORY"), usable before or without a loaded driver.
const char* result_name(CUresult r);

// A driver error after which the context is unusable (illegal address, launch failure, ...): every
// later call in this process returns the same error.
bool context_is_lost(CUresult r);

inline void check_cu(CUresult r, const char* call, const char* file, int line) {
  if (r != CUDA_SUCCESS) throw_call_failed(file, line, call, result_name(r), r);
}
inline bool warn_cu(CUresult r, const char* call, const char* file, int line) {
  if (r != CUDA_SUCCESS) warn_call_failed(file, line, call, result_name(r), r);
  return r == CUDA_SUCCESS;
}
// For a call that frees something: quiet when the context is lost, which took it along (a tuner
// goes on in a fresh process after a candidate's illegal address; the error was reported there).
inline bool warn_release(CUresult r, const char* call, const char* file, int line) {
  return context_is_lost(r) || warn_cu(r, call, file, line);
}

}  // namespace ktune::cuda

#define KTUNE_CU(call) ::ktune::cuda::check_cu((call), #call, __FILE__, __LINE__)
#define KTUNE_CU_RELEASE(call) ::ktune::cuda::warn_release((call), #call, __FILE__, __LINE__)
