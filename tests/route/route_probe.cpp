// A program that asks cuBLASLt's heuristic for four GEMMs and runs each, as PyTorch does, then
// prints the router's stats (or {"router": false} when it is not loaded). No GPU is needed:
// descriptors are host objects, and the query itself fails without one, which the router passes
// back unchanged. route_preload_tests runs it with and without libktune_route.so preloaded.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cublasLt.h>

namespace {

// D (m x n) = A^T (m x k) B (k x n) in bf16, fp32 compute: nn.Linear's form (layout TN).
cublasStatus_t ask(std::uint64_t m, std::uint64_t n, std::uint64_t k, std::int64_t lda) {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t t = CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, k, m, lda);
  cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, k, n, k);
  cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, m, n, m);
  cublasLtMatmulPreferenceCreate(&pref);
  const std::uint64_t ws = 32u << 20;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof ws);
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(nullptr, op, a, b, d, d, pref, 1, &result, &returned);
  // Then the matmul, as a program would (it fails here too: no GPU, no handle).
  const float one = 1, zero = 0;
  cublasLtMatmul(nullptr, op, &one, nullptr, a, nullptr, b, &zero, nullptr, d, nullptr, d,
                 returned ? &result.algo : nullptr, nullptr, 0, nullptr);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(d);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatmulDescDestroy(op);
  return s;
}

}  // namespace

int main() {
  const cublasStatus_t exact = ask(2816, 4096, 1024, 1024);  // the table's winner
  const cublasStatus_t wider = ask(2816, 4096, 1024, 3072);  // same sizes, another lda
  const cublasStatus_t other = ask(512, 512, 512, 512);      // no winner of its size
  const cublasStatus_t again = ask(2816, 4096, 1024, 3072);  // the near miss, remembered
  std::printf("{\"statuses\": [%d, %d, %d, %d], ", exact, wider, other, again);
  using Stats = char* (*)();
  auto stats = reinterpret_cast<Stats>(::dlsym(RTLD_DEFAULT, "ktune_route_stats_json"));
  if (!stats) {
    std::printf("\"router\": false}\n");
    return 0;
  }
  char* text = stats();
  std::printf("\"router\": %s}\n", text ? text : "null");
  std::free(text);
  return 0;
}
