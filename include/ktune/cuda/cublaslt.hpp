#pragma once
// cuBLASLt, loaded on first use from the toolkit (it is large: linking it made every ktune start,
// `ktune profile` included, pay ~90 ms and ~200 MB to map it). Checked calls and the API table.
#include <cublasLt.h>

#include "ktune/cuda/check.hpp"

// clang-format off
#define KTUNE_CUBLASLT_FUNCTIONS(X) \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusName) \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul) \
  X(cublasLtMatmulAlgoGetIds) X(cublasLtMatmulAlgoInit) X(cublasLtMatmulAlgoCheck) \
  X(cublasLtMatmulAlgoCapGetAttribute) X(cublasLtMatmulAlgoConfigSetAttribute) \
  X(cublasLtMatmulAlgoConfigGetAttribute) X(cublasLtGetVersion)
// clang-format on

namespace ktune::cuda {

struct CublasLtApi {
#define KTUNE_CUBLASLT_MEMBER(fn) decltype(&::fn) fn = nullptr;
  KTUNE_CUBLASLT_FUNCTIONS(KTUNE_CUBLASLT_MEMBER)
#undef KTUNE_CUBLASLT_MEMBER
};

// Loads libcublasLt once; ktune::Error with one sentence if the toolkit's library is missing.
const CublasLtApi& cublaslt();

void check_cublas(cublasStatus_t s, const char* call, const char* file, int line);
bool warn_cublas(cublasStatus_t s, const char* call, const char* file, int line);

}  // namespace ktune::cuda

#define KTUNE_CUBLAS(call) ::ktune::cuda::check_cublas((call), #call, __FILE__, __LINE__)
#define KTUNE_CUBLAS_WARN(call) ::ktune::cuda::warn_cublas((call), #call, __FILE__, __LINE__)
