#pragma once
// One GEMM call as the router (libktune_route.so) sees it where the program calls cuBLAS or
// cuBLASLt: the whole descriptor in cuBLAS's own enum values, plain C so the router and the tracer,
// two libraries built apart and loaded into one program, agree on it. The router fills one per call
// and, while a tracer has registered an observer (ktune profile --gemm-shapes), hands it over
// before the call launches its kernels; the tracer turns it into a GemmCallRecord
// (trace/ktrace.hpp).
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Where the call came in.
enum ktune_gemm_entry {
  KTUNE_GEMM_LT_MATMUL = 0,        // cublasLtMatmul
  KTUNE_GEMM_GEMM_EX = 1,          // cublasGemmEx
  KTUNE_GEMM_GEMM_STRIDED_EX = 2,  // cublasGemmStridedBatchedEx
  KTUNE_GEMM_SGEMM = 3,            // cublasSgemm_v2
  KTUNE_GEMM_SGEMM_STRIDED = 4,    // cublasSgemmStridedBatched
  KTUNE_GEMM_HGEMM = 5,            // cublasHgemm
  KTUNE_GEMM_HGEMM_STRIDED = 6,    // cublasHgemmStridedBatched
  KTUNE_GEMM_GEMM_BATCHED_EX = 7,  // cublasGemmBatchedEx (arrays of pointers)
  KTUNE_GEMM_ENTRY_COUNT = 8
};

// What the router did with the call.
enum ktune_gemm_route {
  KTUNE_ROUTE_PASSED = 0,  // no winner for its exact descriptor: the program's own call ran
  KTUNE_ROUTE_ROUTED = 1,  // a tuned winner ran
  KTUNE_ROUTE_KEPT = 2,    // the winner is cuBLAS's own choice (tuned so, or demoted in the field)
  KTUNE_ROUTE_TRIAL = 3    // winner and default are being compared in the program (field trial)
};

struct ktune_gemm_call {
  int32_t entry;  // ktune_gemm_entry
  int32_t route;  // ktune_gemm_route
  // Column-major, as cuBLAS takes it: D (m x n) = op(A) (m x k) op(B) (k x n).
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd;
  int64_t stride_a, stride_b, stride_c, stride_d;  // elements between batches; 0: none
  int32_t a_type, b_type, c_type, d_type;          // cudaDataType_t
  int32_t compute_type;                            // cublasComputeType_t, TF32 math mode applied
  int32_t scale_type;                              // cudaDataType_t
  int32_t transa, transb;                          // cublasOperation_t
  int32_t epilogue;                                // cublasLtEpilogue_t (1: none)
  int32_t order;         // 0: every matrix column-major; else not a layout ktune tunes
  int32_t pointer_mode;  // 0: alpha and beta on the host
  int32_t aligned;       // 1: every pointer (or the preference) 16-byte aligned
  // The algorithm the call ran with (cuBLASLt's config attributes); -1 where none was given.
  int32_t algo_id, tile, stages, splits, reduction;
  const char* why;  // for a passed call the router had a winner of its size for: why not routed
};

typedef void (*ktune_gemm_observer)(const struct ktune_gemm_call* call);

#ifdef __cplusplus
}
#endif
