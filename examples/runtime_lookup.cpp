// runtime_lookup PACK.json: an application's view of ktune. Loads a tuning pack once, asks for
// the tuned block size of a vector scale of n elements on this GPU, and (with a GPU) JIT-compiles
// that variant, launches it and checks the result. Without a GPU it prints the answer for an H100.
#include <cstdio>
#include <vector>

#include "ktune/cuda/driver.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/runtime/jit_launcher.hpp"
#include "ktune/runtime/tuned_configs.hpp"

static const char* kScale = R"(
extern "C" __global__ void __launch_bounds__(BLOCK) scale(float* x, float a, unsigned n) {
  unsigned i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) x[i] *= a;
})";

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: runtime_lookup PACK.json\n");
    return 2;
  }
  try {
    const bool gpu = ktune::cuda::gpu_available();
    const ktune::store::Environment env =
        gpu ? ktune::runtime::detect_environment(0)
            : ktune::store::Environment{"sm_90", "NVIDIA H100 80GB HBM3", "13.0", 0};
    const auto configs = ktune::runtime::TunedConfigs::from_pack_file(argv[1], env);
    const unsigned n = 1u << 20;
    const std::vector<std::int64_t> shape{n};
    const auto answer = configs.lookup("vector_scale", "f32", shape);
    if (!answer.config) {
      std::printf("no config for vector_scale f32 %u on %s\n", n, env.arch.c_str());
      return 1;
    }
    std::printf("vector_scale f32 n=%u on %s: %s (%s%s)\n", n, env.device_name.c_str(),
                answer.config->dump().c_str(), ktune::store::to_string(answer.match),
                answer.stale ? ", stale: re-tune" : "");
    if (!gpu) {
      std::printf("launch skipped: no GPU\n");
      return 0;
    }
    ktune::cuda::PrimaryContext ctx(0);
    ktune::runtime::JitLauncher launcher(kScale, "scale", env.arch);
    std::vector<float> host(n, 1.5f);
    ktune::cuda::DeviceBuffer buf(n * sizeof(float));
    KTUNE_CU(ktune::cuda::driver().cuMemcpyHtoD(buf.get(), host.data(), n * sizeof(float)));
    ktune::cuda::Stream stream;
    const unsigned block = (*answer.config)["block"].get<unsigned>();
    CUdeviceptr p = buf.get();
    float a = 2.0f;
    unsigned count = n;
    void* args[] = {&p, &a, &count};
    launcher.launch(*answer.config, {(n + block - 1) / block}, {block}, stream.get(), args);
    stream.synchronize();
    KTUNE_CU(ktune::cuda::driver().cuMemcpyDtoH(host.data(), buf.get(), n * sizeof(float)));
    for (float v : host)
      if (v != 3.0f) {
        std::printf("launch with block %u: WRONG result %g\n", block, v);
        return 1;
      }
    std::printf("launched block %u: result checked (%u elements)\n", block, n);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime_lookup: %s\n", e.what());
    return 1;
  }
}
