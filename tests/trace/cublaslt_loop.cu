// A program that runs cuBLASLt matmuls, for the tracer's --gemm-shapes test on the GPU: `iters`
// bf16 GEMMs in NN layout (m=512, n=256, k=384), then one TN GEMM with the bias epilogue. Plain
// cuBLASLt, as any program would call it; exits non-zero on any failed call.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                    \
  do {                                                              \
    if ((x) != 0) {                                                 \
      std::fprintf(stderr, "%s failed at line %d\n", #x, __LINE__); \
      return 1;                                                     \
    }                                                               \
  } while (0)

int run(cublasLtHandle_t lt, bool trans_a, bool bias, int iters, void* a, void* b, void* d,
        void* bias_ptr, void* ws, size_t ws_bytes) {
  const int m = 512, n = 256, k = 384;
  cublasLtMatmulDesc_t op;
  CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  if (bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bt = CUDA_R_16BF;
    CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                         sizeof bias_ptr));
  }
  cublasLtMatrixLayout_t la, lb, ld;
  CHECK(trans_a ? cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, k)
                : cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, m, k, m));
  CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, k));
  CHECK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m));
  cublasLtMatmulPreference_t pref;
  CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t h{};
  int found = 0;
  CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &h, &found));
  if (found != 1) return 1;
  const float alpha = 1, beta = 0;
  for (int i = 0; i < iters; ++i)
    CHECK(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &h.algo, ws, ws_bytes,
                         nullptr));
  return 0;
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 3;
  void *a, *b, *d, *bias, *ws;
  const size_t ws_bytes = 32u << 20;
  CHECK(cudaMalloc(&a, 512 * 384 * 2));
  CHECK(cudaMalloc(&b, 384 * 256 * 2));
  CHECK(cudaMalloc(&d, 512 * 256 * 2));
  CHECK(cudaMalloc(&bias, 512 * 2));
  CHECK(cudaMalloc(&ws, ws_bytes));
  CHECK(cudaMemset(a, 0x3c, 512 * 384 * 2));  // 1.something in bf16: no zeros
  CHECK(cudaMemset(b, 0x3c, 384 * 256 * 2));
  CHECK(cudaMemset(bias, 0, 512 * 2));
  cublasLtHandle_t lt;
  CHECK(cublasLtCreate(&lt));
  CHECK(run(lt, false, false, iters, a, b, d, bias, ws, ws_bytes));
  CHECK(run(lt, true, true, 1, a, b, d, bias, ws, ws_bytes));
  CHECK(cudaDeviceSynchronize());
  std::printf("ran %d GEMMs\n", iters + 1);
  return 0;
}
