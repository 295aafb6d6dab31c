#include "ktune/calibrate/calibrate.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/cuda/cublaslt.hpp"
#include "ktune/cuda/device_utils.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/cuda/nvml.hpp"
#include "ktune/cuda/nvrtc.hpp"
#include "ktune/cuda/resources.hpp"

namespace ktune::calibrate {
namespace {

using cuda::driver;

// 16-byte vector copy (grid-stride) and a many-chain FMA loop: the two kernels whose rates bound
// memory-bound and FP32-bound code.
constexpr const char* kKernels = R"(
extern "C" __global__ void ktune_copy16(const int4* __restrict__ src, int4* __restrict__ dst,
                                        unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
#define CHAINS 16
extern "C" __global__ void ktune_fma(float* out, float a, float b, int iters) {
  float x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) x[c] = threadIdx.x + c;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = fmaf(x[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += x[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)";
constexpr int kFmaChains = 16;

struct Timed {
  Summary time_ms;
  int sm_clock_mhz = 0;
  std::size_t throttled = 0;
};

// Warm-up, then `samples` runs each between two events (L2 flushed before each, outside the
// events), with the SM clock and throttle reasons read after each run.
template <class Launch>
Timed time_runs(const Options& o, CUstream s, cuda::L2Flusher& flusher, const std::string& pci,
                Launch&& launch) {
  cuda::Event start, stop;
  for (int i = 0; i < o.warmup; ++i) launch();
  KTUNE_CU(driver().cuStreamSynchronize(s));
  std::vector<double> ms, clocks;
  Timed t;
  const cuda::Nvml* nvml = cuda::Nvml::get();
  for (int i = 0; i < o.samples; ++i) {
    flusher.flush(s);
    start.record(s);
    launch();
    stop.record(s);
    ms.push_back(cuda::elapsed_ms(start, stop));
    if (nvml) {
      if (auto c = nvml->sample(pci)) {
        clocks.push_back(c->sm_mhz);
        if (c->throttle_reasons & cuda::throttle::kSlowdownMask) ++t.throttled;
      }
    }
  }
  t.time_ms = summarize(ms);
  t.sm_clock_mhz = static_cast<int>(summarize(clocks).median);
  return t;
}

Ceiling make_ceiling(std::string name, std::string unit, double work, std::string method,
                     const Timed& t) {
  Ceiling c;
  c.name = std::move(name);
  c.unit = std::move(unit);
  c.work = work;
  c.method = std::move(method);
  c.time_ms = t.time_ms;
  c.value = t.time_ms.median > 0 ? work / (t.time_ms.median * 1e-3) : 0;
  c.sm_clock_mhz = t.sm_clock_mhz;
  c.throttled_samples = t.throttled;
  return c;
}

class Calibrator {
 public:
  Calibrator(const Options& o, const std::function<void(const std::string&)>& progress)
      : o_(o),
        progress_(progress),
        ctx_(o.device),
        dev_(cuda::capture_device(o.device)),
        flusher_(static_cast<std::size_t>(dev_.l2_bytes)) {
    module_ = cuda::Module(compile_kernels(dev_.arch()).cubin);
  }

  Result run() {
    Result r;
    r.ceilings.push_back(dram());
    r.ceilings.push_back(fp32());
    r.ceilings.push_back(tensor(CUDA_R_16BF, cuda::DType::bf16, "bf16_tensor"));
    r.ceilings.push_back(tensor(CUDA_R_16F, cuda::DType::f16, "fp16_tensor"));
    r.identity = cuda::capture_identity();
    return r;
  }

 private:
  void step(const std::string& what) {
    if (progress_) progress_(what);
  }

  // Best of the driver's device-to-device copy and a 16-byte-vector copy kernel: the ceiling is
  // what the memory system can do, whichever path gets there.
  Ceiling dram() {
    step("DRAM bandwidth");
    std::size_t free_bytes = 0, total = 0;
    KTUNE_CU(driver().cuMemGetInfo(&free_bytes, &total));
    const std::size_t bytes = std::min(o_.copy_bytes, free_bytes / 3) / 16 * 16;
    cuda::DeviceBuffer src(bytes), dst(bytes);
    cuda::fill_random(src.get(), bytes / 4, cuda::DType::f32, 1, stream_.get());
    const double moved = 2.0 * static_cast<double>(bytes);

    const Timed memcpy_t = time_runs(o_, stream_.get(), flusher_, dev_.pci_bus_id, [&] {
      KTUNE_CU(driver().cuMemcpyDtoDAsync(dst.get(), src.get(), bytes, stream_.get()));
    });
    CUfunction copy = module_.function("ktune_copy16");
    CUdeviceptr s_ptr = src.get(), d_ptr = dst.get();
    unsigned long long n = bytes / 16;
    void* args[] = {&s_ptr, &d_ptr, &n};
    const unsigned blocks = static_cast<unsigned>(dev_.sm_count * 8);
    const Timed kernel_t = time_runs(o_, stream_.get(), flusher_, dev_.pci_bus_id, [&] {
      KTUNE_CU(
          driver().cuLaunchKernel(copy, blocks, 1, 1, 512, 1, 1, 0, stream_.get(), args, nullptr));
    });
    const double gib = static_cast<double>(bytes) / (1 << 30);
    Ceiling a = make_ceiling("dram_bandwidth", "bytes/s", moved,
                             fmt::format("cuMemcpyDtoD {:.2f} GiB", gib), memcpy_t);
    Ceiling b = make_ceiling("dram_bandwidth", "bytes/s", moved,
                             fmt::format("16-byte copy kernel {:.2f} GiB", gib), kernel_t);
    return a.value >= b.value ? a : b;
  }

  Ceiling fp32() {
    step("FP32 FMA rate");
    const unsigned blocks = static_cast<unsigned>(dev_.sm_count * 4), threads = 256;
    cuda::DeviceBuffer out(std::size_t{blocks} * threads * sizeof(float));
    CUfunction fma = module_.function("ktune_fma");
    CUdeviceptr o = out.get();
    float a = 0.9999f, b = 1e-4f;
    int iters = 16384;
    void* args[] = {&o, &a, &b, &iters};
    const Timed t = time_runs(o_, stream_.get(), flusher_, dev_.pci_bus_id, [&] {
      KTUNE_CU(driver().cuLaunchKernel(fma, blocks, 1, 1, threads, 1, 1, 0, stream_.get(), args,
                                       nullptr));
    });
    const double flop = 2.0 * blocks * threads * static_cast<double>(iters) * kFmaChains;
    return make_ceiling("fp32_fma", "FLOP/s", flop,
                        fmt::format("{} chains x {} FMA per thread, {}x{} threads", kFmaChains,
                                    iters, blocks, threads),
                        t);
  }

  // D = A^T B in the given 16-bit type with fp32 accumulation, the layout cuBLAS is fastest in;
  // the best of cuBLASLt's top heuristics, on random inputs.
  Ceiling tensor(cudaDataType_t type, cuda::DType dtype, const std::string& name) {
    step(name == "bf16_tensor" ? "bf16 tensor-core rate" : "fp16 tensor-core rate");
    const std::uint64_t n = static_cast<std::uint64_t>(o_.gemm_size);
    const std::size_t elems = n * n, bytes = elems * 2;
    cuda::DeviceBuffer A(bytes), B(bytes), D(bytes);
    cuda::fill_random(A.get(), elems, dtype, 11, stream_.get());
    cuda::fill_random(B.get(), elems, dtype, 12, stream_.get());
    const std::size_t workspace_bytes = 64u << 20;
    cuda::DeviceBuffer workspace(workspace_bytes);

    const cuda::CublasLtApi& lt = cuda::cublaslt();
    cublasLtHandle_t handle = nullptr;
    KTUNE_CUBLAS(lt.cublasLtCreate(&handle));
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    struct Cleanup {
      std::function<void()> f;
      ~Cleanup() { f(); }
    } cleanup{[&] {
      if (pref) KTUNE_CUBLAS_WARN(lt.cublasLtMatmulPreferenceDestroy(pref));
      if (ld) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(ld));
      if (lb) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(lb));
      if (la) KTUNE_CUBLAS_WARN(lt.cublasLtMatrixLayoutDestroy(la));
      if (op) KTUNE_CUBLAS_WARN(lt.cublasLtMatmulDescDestroy(op));
      KTUNE_CUBLAS_WARN(lt.cublasLtDestroy(handle));
    }};
    KTUNE_CUBLAS(lt.cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    KTUNE_CUBLAS(
        lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
    KTUNE_CUBLAS(
        lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
    KTUNE_CUBLAS(lt.cublasLtMatrixLayoutCreate(&la, type, n, n, n));
    KTUNE_CUBLAS(lt.cublasLtMatrixLayoutCreate(&lb, type, n, n, n));
    KTUNE_CUBLAS(lt.cublasLtMatrixLayoutCreate(&ld, type, n, n, n));
    KTUNE_CUBLAS(lt.cublasLtMatmulPreferenceCreate(&pref));
    KTUNE_CUBLAS(lt.cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes));
    cublasLtMatmulHeuristicResult_t heuristics[4] = {};
    int returned = 0;
    KTUNE_CUBLAS(lt.cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, ld, ld, pref, 4, heuristics,
                                                   &returned));
    if (returned == 0)
      throw Error(
          fmt::format("cuBLASLt offers no algorithm for a {}^3 {} GEMM on this GPU.", n, name));

    const float alpha = 1.0f, beta = 0.0f;
    auto gemm = [&](const cublasLtMatmulAlgo_t& algo) {
      KTUNE_CUBLAS(lt.cublasLtMatmul(
          handle, op, &alpha, reinterpret_cast<void*>(A.get()), la,
          reinterpret_cast<void*>(B.get()), lb, &beta, reinterpret_cast<void*>(D.get()), ld,
          reinterpret_cast<void*>(D.get()), ld, &algo, reinterpret_cast<void*>(workspace.get()),
          workspace_bytes, stream_.get()));
    };
    // Screen each candidate algorithm briefly, then measure the fastest fully.
    Options screen = o_;
    screen.warmup = 2;
    screen.samples = 5;
    int best = 0;
    double best_ms = std::numeric_limits<double>::infinity();
    for (int i = 0; i < returned; ++i) {
      const Timed t = time_runs(screen, stream_.get(), flusher_, dev_.pci_bus_id,
                                [&] { gemm(heuristics[i].algo); });
      if (t.time_ms.median < best_ms) best_ms = t.time_ms.median, best = i;
    }
    const Timed t = time_runs(o_, stream_.get(), flusher_, dev_.pci_bus_id,
                              [&] { gemm(heuristics[best].algo); });
    const double flop =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    return make_ceiling(
        name, "FLOP/s", flop,
        fmt::format("cuBLASLt {}^3 TN fp32-accumulate, heuristic {} of {}", n, best + 1, returned),
        t);
  }

  const Options& o_;
  const std::function<void(const std::string&)>& progress_;
  cuda::PrimaryContext ctx_;
  DeviceIdentity dev_;
  cuda::Stream stream_;
  cuda::L2Flusher flusher_;
  cuda::Module module_;
};

}  // namespace

cuda::CompiledProgram compile_kernels(const std::string& arch) {
  cuda::CompileOptions co;
  co.arch = arch;
  return cuda::compile_cached(kKernels, "ktune_calibrate.cu", co);
}

const Ceiling* Result::find(const std::string& name) const {
  auto it = std::find_if(ceilings.begin(), ceilings.end(),
                         [&](const Ceiling& c) { return c.name == name; });
  return it == ceilings.end() ? nullptr : &*it;
}

Result run(const Options& options, const std::function<void(const std::string&)>& progress) {
  return Calibrator(options, progress).run();
}

void to_json(nlohmann::json& j, const Ceiling& c) {
  j = {{"name", c.name},
       {"unit", c.unit},
       {"value", c.value},
       {"work", c.work},
       {"method", c.method},
       {"time_ms", c.time_ms},
       {"sm_clock_mhz", c.sm_clock_mhz},
       {"throttled_samples", c.throttled_samples}};
}

void to_json(nlohmann::json& j, const Result& r) {
  j = {{"schema_version", kSchemaVersion}, {"identity", r.identity}, {"ceilings", r.ceilings}};
}

}  // namespace ktune::calibrate
