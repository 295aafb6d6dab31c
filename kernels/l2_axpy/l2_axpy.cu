// z = a * x + y over 1 Mi floats (12 MiB in all): resident in an H100's 50 MB L2, so cold (L2
// flushed) and hot (back-to-back) timings must differ. Tunable: BLOCK threads, VEC floats/access.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
    l2_axpy(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z,
            float a, int n) {
  const int i = (blockIdx.x * BLOCK + threadIdx.x) * VEC;
  if (VEC == 4 && i + 3 < n) {
    const float4 xv = reinterpret_cast<const float4*>(x)[i / 4];
    const float4 yv = reinterpret_cast<const float4*>(y)[i / 4];
    reinterpret_cast<float4*>(z)[i / 4] =
        make_float4(a * xv.x + yv.x, a * xv.y + yv.y, a * xv.z + yv.z, a * xv.w + yv.w);
  } else {
    for (int j = i; j < i + VEC && j < n; ++j) z[j] = a * x[j] + y[j];
  }
}
