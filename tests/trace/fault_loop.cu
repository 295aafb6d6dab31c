// A CUDA program that ends badly, for the tracer's fault tests (tests/trace/profile_cli_test.cpp).
// fault_loop N HOW: launches N tiny kernels, synchronizes, sleeps 1.5 s so the tracer's periodic
// flush (the test sets KTUNE_TRACE_FLUSH_MS=100) commits them, prints "flushed pid=<pid>", then:
//   segv   writes through a null pointer       abort  calls abort()
//   hang   sleeps until killed                 loop   launches kernels until a signal ends it
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

__global__ void tiny_add(float* x, float v) {
  x[threadIdx.x] += v;
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1000;
  const char* how = argc > 2 ? argv[2] : "segv";
  float* x = nullptr;
  if (cudaMalloc(&x, 1024 * sizeof(float)) != cudaSuccess) return 2;
  for (long i = 0; i < n; ++i) tiny_add<<<1, 1024>>>(x, 1.0f);
  cudaDeviceSynchronize();
  ::usleep(1500 * 1000);
  std::printf("flushed pid=%d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  if (std::strcmp(how, "segv") == 0) {
    volatile int* null = nullptr;
    *null = 1;
  } else if (std::strcmp(how, "abort") == 0) {
    std::abort();
  } else if (std::strcmp(how, "hang") == 0) {
    for (;;) ::pause();
  } else {
    for (;;) {
      for (int i = 0; i < 100; ++i) tiny_add<<<1, 1024>>>(x, 1.0f);
      cudaDeviceSynchronize();
    }
  }
  return 0;
}
