// Launches exactly N tiny kernels (argv[1], default 20000) after 100 warm-up launches, then prints
// tiny_launches=<total> and tiny_us_per_launch=<host time per launch>. The tracer benchmark and
// the GPU test compare the trace's kernel count with tiny_launches.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

__global__ void tiny_add(float* x, float v) { x[threadIdx.x] += v; }

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 20000;
  float* x = nullptr;
  if (cudaMalloc(&x, 1024 * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "tiny_loop: cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(x, 0, 1024 * sizeof(float));
  for (int i = 0; i < 100; ++i) tiny_add<<<1, 1024>>>(x, 1.0f);
  cudaDeviceSynchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) tiny_add<<<1, 1024>>>(x, 1.0f);
  cudaDeviceSynchronize();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  const cudaError_t err = cudaGetLastError();
  cudaFree(x);
  std::printf("tiny_launches=%ld tiny_us_per_launch=%.3f\n", n + 100, us / n);
  return err == cudaSuccess ? 0 : 1;
}
