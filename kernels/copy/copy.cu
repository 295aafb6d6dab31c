// Vectorised float copy, the harness's bandwidth probe. Tunable (passed as -D by ktune):
//   BLOCK      threads per block
//   VEC        floats per access: 1, 2 or 4 (16-byte float4)
//   ITEMS      accesses per thread, all issued before any store (bytes in flight)
//   SKIP_TAIL  1 plants a bug: the last element is never written. The harness must reject it.
// Not tunable (set through the spec's CompilerOptions by scripts/gpu-gate.sh):
//   GATE_EXTRA_PCT  plants a slowdown of about this many percent (0..25): 2x that share of the
//                   blocks also read a far tile (not in L2) and discard it, adding that share of
//                   half the kernel's DRAM traffic. The output is unchanged.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SKIP_TAIL
#define SKIP_TAIL 0
#endif
#ifndef GATE_EXTRA_PCT
#define GATE_EXTRA_PCT 0
#endif

template <int N>
struct VecOf;
template <>
struct VecOf<1> {
  typedef float type;
};
template <>
struct VecOf<2> {
  typedef float2 type;
};
template <>
struct VecOf<4> {
  typedef float4 type;
};

extern "C" __global__ void __launch_bounds__(BLOCK)
    copy_f32(const float* __restrict__ in, float* __restrict__ out, long long n) {
  typedef typename VecOf<VEC>::type V;
#if SKIP_TAIL
  n -= 1;
#endif
  const long long per_block = (long long)BLOCK * VEC * ITEMS;
  const long long base = blockIdx.x * per_block;
  const V* vin = reinterpret_cast<const V*>(in + base);
  V* vout = reinterpret_cast<V*>(out + base);
  if (base + per_block <= n) {  // a full tile: vector accesses only
    V v[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] = vin[i * BLOCK + threadIdx.x];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) vout[i * BLOCK + threadIdx.x] = v[i];
#if GATE_EXTRA_PCT > 0
    if (blockIdx.x % 50 < GATE_EXTRA_PCT) {
      // Half the grid away: that tile left L2 long ago. Kept alive by a store no run takes (n > 0).
      const long long far = ((blockIdx.x + gridDim.x / 2) % gridDim.x) * per_block;
      if (far + per_block <= n) {
        const float* fin = in + far;
        float acc = 0;
#pragma unroll
        for (int i = 0; i < ITEMS * VEC; ++i) acc += __ldcg(fin + i * BLOCK + threadIdx.x);
        if (n < 0) out[0] = acc;
      }
    }
#endif
  } else {  // the last, partial tile: element by element
    for (long long i = base + threadIdx.x; i < n; i += BLOCK) out[i] = in[i];
  }
}
