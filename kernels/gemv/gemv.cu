// y = A x in fp16 with fp32 accumulation; A is row-major n x k, y has n elements. A memory-bound
// kernel: the tunables decide how many bytes of A each SM keeps in flight. (-D from ktune):
//   TPR        threads per row (8..256); a row's partial sums are reduced by warp shuffles,
//              then through shared memory when a row spans several warps
//   RPB        rows per block (block = TPR x RPB threads)
//   VEC        halves per load: 2 (4 B), 4 (8 B) or 8 (16 B)
//   UNROLL     loads of A issued per thread before any arithmetic
//   X_SHARED   1: x is staged in shared memory once per block (k * 2 bytes of dynamic smem)
//   LOAD_HINT  0 plain loads of A, 1 read-only path (ld.global.nc), 2 streaming (evict-first)
// Needs k % VEC == 0 and 16-byte aligned rows (k % 8 == 0 when X_SHARED).
#include <cuda_fp16.h>

#ifndef TPR
#define TPR 32
#endif
#ifndef RPB
#define RPB 4
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef X_SHARED
#define X_SHARED 0
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 2
#endif

template <int N>
struct HalfVec;
template <>
struct HalfVec<2> {
  typedef unsigned int type;
};
template <>
struct HalfVec<4> {
  typedef uint2 type;
};
template <>
struct HalfVec<8> {
  typedef uint4 type;
};
typedef HalfVec<VEC>::type V;

__device__ __forceinline__ V load_a(const V* p) {
#if LOAD_HINT == 1
  return __ldg(p);
#elif LOAD_HINT == 2
  return __ldcs(p);
#else
  return *p;
#endif
}

__device__ __forceinline__ float dot2(unsigned int a, unsigned int b, float acc) {
  const float2 fa = __half22float2(*reinterpret_cast<const __half2*>(&a));
  const float2 fb = __half22float2(*reinterpret_cast<const __half2*>(&b));
  return fmaf(fa.y, fb.y, fmaf(fa.x, fb.x, acc));
}
__device__ __forceinline__ float dot(unsigned int a, unsigned int b, float acc) {
  return dot2(a, b, acc);
}
__device__ __forceinline__ float dot(uint2 a, uint2 b, float acc) {
  return dot2(a.y, b.y, dot2(a.x, b.x, acc));
}
__device__ __forceinline__ float dot(uint4 a, uint4 b, float acc) {
  return dot2(a.w, b.w, dot2(a.z, b.z, dot2(a.y, b.y, dot2(a.x, b.x, acc))));
}

// Threads a block: TPR lanes for each of the RPB rows it computes.
#define GEMV_THREADS (TPR * RPB)

extern "C" __global__ void __launch_bounds__(GEMV_THREADS)
    gemv_f16(const __half* __restrict__ A, const __half* __restrict__ x, __half* __restrict__ y,
             int n, int k) {
  const int lane = threadIdx.x;  // position within the row's threads
  const int row = blockIdx.x * RPB + threadIdx.y;
#if X_SHARED
  extern __shared__ __align__(16) unsigned char smem[];
  __half* xs = reinterpret_cast<__half*>(smem);
  for (int i = (threadIdx.y * TPR + lane) * 8; i < k; i += TPR * RPB * 8)
    *reinterpret_cast<uint4*>(xs + i) = __ldg(reinterpret_cast<const uint4*>(x + i));
  __syncthreads();
  const V* xv = reinterpret_cast<const V*>(xs);
#else
  const V* xv = reinterpret_cast<const V*>(x);
#endif
  float acc = 0.f;
  if (row < n) {
    const V* a = reinterpret_cast<const V*>(A + (size_t)row * k);
    const int kv = k / VEC;  // vectors per row
    int i = lane;
    for (; i + (UNROLL - 1) * TPR < kv; i += UNROLL * TPR) {
      V av[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) av[u] = load_a(a + i + u * TPR);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
#if X_SHARED
        const V xu = xv[i + u * TPR];
#else
        const V xu = __ldg(xv + i + u * TPR);
#endif
        acc = dot(av[u], xu, acc);
      }
    }
    for (; i < kv; i += TPR) {
#if X_SHARED
      acc = dot(load_a(a + i), xv[i], acc);
#else
      acc = dot(load_a(a + i), __ldg(xv + i), acc);
#endif
    }
  }
  // Lanes of one row are contiguous within a warp (threadIdx.x varies fastest).
#pragma unroll
  for (int o = (TPR < 32 ? TPR : 32) / 2; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
#if TPR > 32
  __shared__ float partial[RPB][TPR / 32];
  if (lane % 32 == 0) partial[threadIdx.y][lane / 32] = acc;
  __syncthreads();
  if (lane == 0) {
    acc = 0.f;
#pragma unroll
    for (int w = 0; w < TPR / 32; ++w) acc += partial[threadIdx.y][w];
  }
#endif
  if (lane == 0 && row < n) y[row] = __float2half(acc);
}
