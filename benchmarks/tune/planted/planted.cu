// A scaled copy with planted faults, for the GPU tier: FAULT=1 writes far out of bounds (illegal
// address, the context is lost), FAULT=2 traps, FAULT=3 never finishes. A tuning session over this
// space must record each as that candidate's outcome and still finish its budget.
extern "C" __global__ void planted(float* out, const float* in, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * BLOCK + threadIdx.x;
#if FAULT == 1
  if (i == 0) out[1LL << 40] = 1.0f;
#elif FAULT == 2
  if (i == 0) __trap();
#elif FAULT == 3
  if (i == 0)  // clock64() is an opaque read, so the compiler cannot drop the endless loop
    while (clock64() >= 0) {
    }
#endif
  if (i < n) out[i] = in[i] * SCALE;
}
