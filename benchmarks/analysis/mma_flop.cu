// Warp-level tensor-core GEMMs (WMMA, which compiles to mma.sync / HMMA) of a known size, to check
// the unit of the counters ktune takes mma.sync FLOP from (benchmarks/analysis/mma_flop.sh):
// each kernel does exactly 2*M*N*K tensor FLOP. One warp per 16x16 tile of C.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdio>

using namespace nvcuda;

template <typename T>
__global__ void wmma_gemm(const T* a, const T* b, float* c, int m, int n, int k) {
  const int tile_m = blockIdx.y, tile_n = blockIdx.x;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::load_matrix_sync(fa, a + tile_m * 16 * k + kk, k);
    wmma::load_matrix_sync(fb, b + tile_n * 16 * k + kk, k);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + tile_m * 16 * n + tile_n * 16, fc, n, wmma::mem_row_major);
}

template <typename T>
void run(const char* what, int m, int n, int k) {
  T *a, *b;
  float* c;
  cudaMalloc(&a, sizeof(T) * m * k);
  cudaMalloc(&b, sizeof(T) * n * k);
  cudaMalloc(&c, sizeof(float) * m * n);
  cudaMemset(a, 0, sizeof(T) * m * k);
  cudaMemset(b, 0, sizeof(T) * n * k);
  wmma_gemm<T><<<dim3(n / 16, m / 16), 32>>>(a, b, c, m, n, k);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s m=%d n=%d k=%d flop=%.0f %s\n", what, m, n, k, 2.0 * m * n * k,
              e == cudaSuccess ? "ok" : cudaGetErrorString(e));
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

int main() {
  run<__half>("fp16", 1024, 1024, 1024);
  run<__nv_bfloat16>("bf16", 512, 1024, 2048);
  return 0;
}
