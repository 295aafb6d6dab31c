// The router's host cost, and a C++ program that calls cuBLASLt and cuBLAS directly (no PyTorch):
// a loop of tiny GEMMs, each asked for as PyTorch asks (a heuristic query for one algorithm, then
// the matmul), or through cuBLAS's legacy cublasSgemm_v2 (TF32 math mode, as PyTorch's fp32
// matmuls), so the loop is bound by the host. scripts/gpu-route.sh runs it without ktune, with the
// router preloaded and nothing to route (pass-through), and with a winner for its problem (routed:
// the query is answered from the table), alternating, and reports the host time per call of each.
//
//   route_host_cost [--api lt|lt-query|sgemm] [--calls N] [--size S]
// prints {"api", "calls", "size", "host_ns_per_call", "checksum"}: the median over batches of 256
// calls of the host time per call, each batch submitted to an idle stream (fewer launches than the
// queue holds, so no call waits for the GPU), and a checksum of the last output (routed and plain
// runs must agree). lt-query times the heuristic query alone: PyTorch's own per-call cost
// that a routed call skips.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "route_host_cost: %s failed\n", what);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string api = "lt";
  long calls = 20000;
  int size = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--api"))
      api = argv[i + 1];
    else if (!std::strcmp(argv[i], "--calls"))
      calls = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--size"))
      size = std::atoi(argv[i + 1]);
  }
  const bool lt = api != "sgemm";
  const std::size_t n = static_cast<std::size_t>(size) * size;
  const std::size_t bytes = n * (lt ? 2 : 4);
  void *a = nullptr, *b = nullptr, *d = nullptr, *ws = nullptr;
  const std::size_t ws_bytes = 32u << 20;
  check(cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&b, bytes) == cudaSuccess &&
            cudaMalloc(&d, bytes) == cudaSuccess && cudaMalloc(&ws, ws_bytes) == cudaSuccess,
        "cudaMalloc");
  // Inputs that are not zero: a small repeating pattern (bf16 or fp32).
  {
    std::vector<unsigned char> host(bytes);
    for (std::size_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(static_cast<int>(i % 7) - 3) / 8.0f;
      if (lt) {
        const __nv_bfloat16 h = __float2bfloat16(v);
        std::memcpy(&host[i * 2], &h, 2);
      } else {
        std::memcpy(&host[i * 4], &v, 4);
      }
    }
    cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b, host.data(), bytes, cudaMemcpyHostToDevice);
  }
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  const float alpha = 1, beta = 0;

  // Batches of calls into an idle stream; the median batch's time per call.
  constexpr long kBatch = 256;
  std::vector<double> per_call_ns;
  const auto timed = [&](const auto& one) {
    for (long done = 0; done < calls; done += kBatch) {
      cudaStreamSynchronize(stream);
      const auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < kBatch; ++i) one();
      const auto t1 = std::chrono::steady_clock::now();
      per_call_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch);
    }
  };
  if (lt) {
    cublasLtHandle_t h = nullptr;
    check(cublasLtCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasLtCreate");
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t t = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, size, size, size);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, size, size, size);
    cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, size, size, size);
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulPreferenceCreate(&pref);
    const std::uint64_t max_ws = ws_bytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                                         sizeof max_ws);
    const auto one = [&](bool run) {
      cublasLtMatmulHeuristicResult_t r{};
      int returned = 0;
      check(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 1, &r, &returned) ==
                    CUBLAS_STATUS_SUCCESS &&
                returned == 1,
            "cublasLtMatmulAlgoGetHeuristic");
      if (run)
        check(cublasLtMatmul(h, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &r.algo, ws,
                             r.workspaceSize, stream) == CUBLAS_STATUS_SUCCESS,
              "cublasLtMatmul");
    };
    const bool run = api != "lt-query";
    for (int i = 0; i < 200; ++i) one(run);  // warm-up: the router's field trial ends here
    timed([&] { one(run); });
  } else {
    cublasHandle_t h = nullptr;
    check(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    cublasSetStream(h, stream);
    cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
    const auto one = [&] {
      check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, size, size, size, &alpha,
                        static_cast<const float*>(a), size, static_cast<const float*>(b), size,
                        &beta, static_cast<float*>(d), size) == CUBLAS_STATUS_SUCCESS,
            "cublasSgemm");
    };
    for (int i = 0; i < 200; ++i) one();
    timed(one);
  }
  check(cudaStreamSynchronize(stream) == cudaSuccess, "the GEMMs");
  std::vector<unsigned char> out(bytes);
  cudaMemcpy(out.data(), d, bytes, cudaMemcpyDeviceToHost);
  double checksum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float v = 0;
    if (lt) {
      __nv_bfloat16 h;
      std::memcpy(&h, &out[i * 2], 2);
      v = __bfloat162float(h);
    } else {
      std::memcpy(&v, &out[i * 4], 4);
    }
    checksum += v * static_cast<double>(i % 13 + 1);
  }
  std::sort(per_call_ns.begin(), per_call_ns.end());
  const double ns = per_call_ns[per_call_ns.size() / 2];
  std::printf(
      "{\"api\": \"%s\", \"calls\": %ld, \"size\": %d, \"host_ns_per_call\": %.1f, "
      "\"checksum\": %.6g}\n",
      api.c_str(), calls, size, ns, checksum);
  return 0;
}
