// Launches exactly N tiny kernels (argv[1], default 20000) after 100 warm-up launches, then prints
// tiny_launches=<total> and tiny_us_per_launch=<host time per launch>. The tracer benchmark and
// the GPU test compare the trace's kernel count with tiny_launches.
//
// TINY_TOUCH_KB=K in the environment: before each launch the host also walks K KiB of memory, one
// cache line at a time, as a large host program (an interpreter) would evict the caches.
//
// --ab PAIRS (after N): then measures the tracer's cost inside this one process. PAIRS pairs of
// blocks of 2000 launches, one block of each pair inside cudaProfilerStart/Stop (captured when
// traced with --range profiler) and one outside, in ABBA order so a drift cancels. Prints
// ab_traced_launches (launches inside the capture windows), ab_off_us and ab_on_us (median
// µs/launch of the blocks) and ab_added_us with its quartiles (over pairs, on minus off).
//
// --blocks B (after N): the N launches are timed in blocks of B (each ending in a synchronize),
// for periodic capture windows, which the tracer opens on its own clock: tiny_us_per_launch is
// then the mean over all blocks, block_median_us the median block (95 % of blocks fall between
// windows at a 5 % duty cycle, so it is the cost there) and block_added_us the mean minus the
// median: what the windows add, amortized over every launch, measured inside one process.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

__global__ void tiny_add(float* x, float v) {
  x[threadIdx.x] += v;
}

namespace {

using Clock = std::chrono::steady_clock;

std::vector<unsigned char> g_touch;  // TINY_TOUCH_KB of memory walked before each launch

void touch() {
  for (std::size_t i = 0; i < g_touch.size(); i += 64) ++g_touch[i];
}

// Host µs per launch of `n` launches, the final synchronize included.
double timed_block(float* x, long n) {
  const auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    touch();
    tiny_add<<<1, 1024>>>(x, 1.0f);
  }
  cudaDeviceSynchronize();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * (v.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - lo) * (v[hi] - v[lo]);
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 20000;
  const int pairs = argc > 3 && std::strcmp(argv[2], "--ab") == 0 ? std::atoi(argv[3]) : 0;
  const long block = argc > 3 && std::strcmp(argv[2], "--blocks") == 0 ? std::atol(argv[3]) : 0;
  if (const char* kb = std::getenv("TINY_TOUCH_KB")) g_touch.assign(std::atol(kb) * 1024, 0);
  float* x = nullptr;
  if (cudaMalloc(&x, 1024 * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "tiny_loop: cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(x, 0, 1024 * sizeof(float));
  for (int i = 0; i < 100; ++i) tiny_add<<<1, 1024>>>(x, 1.0f);
  cudaDeviceSynchronize();
  if (block > 0) {
    std::vector<double> blocks;
    double total_us = 0;
    for (long done = 0; done < n; done += block) {
      const long b = std::min(block, n - done);
      blocks.push_back(timed_block(x, b));
      total_us += blocks.back() * b;
    }
    const double mean = total_us / n, median = quantile(blocks, 0.5);
    std::printf(
        "tiny_launches=%ld tiny_us_per_launch=%.3f blocks=%zu block_median_us=%.3f "
        "block_added_us=%.4f block_p99_us=%.3f",
        n + 100, mean, blocks.size(), median, mean - median, quantile(blocks, 0.99));
  } else {
    std::printf("tiny_launches=%ld tiny_us_per_launch=%.3f", n + 100, timed_block(x, n));
  }

  if (pairs > 0) {
    constexpr long kBlock = 2000;
    std::vector<double> off, on, added;
    for (int p = 0; p < pairs; ++p) {
      double t[2];  // [0] outside, [1] inside the capture window
      for (int k = 0; k < 2; ++k) {
        const bool inside = (k == 0) == (p % 2 == 1);  // off,on then on,off: ABBA
        if (inside) cudaProfilerStart();
        t[inside] = timed_block(x, kBlock);
        if (inside) cudaProfilerStop();
      }
      off.push_back(t[0]);
      on.push_back(t[1]);
      added.push_back(t[1] - t[0]);
    }
    std::printf(
        " ab_traced_launches=%ld ab_off_us=%.3f ab_on_us=%.3f ab_added_us=%.3f ab_added_q1=%.3f "
        "ab_added_q3=%.3f",
        pairs * kBlock, quantile(off, 0.5), quantile(on, 0.5), quantile(added, 0.5),
        quantile(added, 0.25), quantile(added, 0.75));
  }
  std::printf("\n");
  const cudaError_t err = cudaGetLastError();
  cudaFree(x);
  return err == cudaSuccess ? 0 : 1;
}
