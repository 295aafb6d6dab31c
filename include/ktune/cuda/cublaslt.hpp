#pragma once
// cuBLASLt (linked from the toolkit): checked calls and an owned handle.
#include <cublasLt.h>

#include "ktune/cuda/check.hpp"

namespace ktune::cuda {

inline void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_call_failed(file, line, call, cublasLtGetStatusName(s), s);
}
inline bool warn_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) warn_call_failed(file, line, call, cublasLtGetStatusName(s), s);
  return s == CUBLAS_STATUS_SUCCESS;
}

}  // namespace ktune::cuda

#define KTUNE_CUBLAS(call) ::ktune::cuda::check_cublas((call), #call, __FILE__, __LINE__)
#define KTUNE_CUBLAS_WARN(call) ::ktune::cuda::warn_cublas((call), #call, __FILE__, __LINE__)
