#include "ktune/bench/runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "constant_fill.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/cuda/nvml.hpp"

namespace ktune::bench {

using cuda::driver;

cuda::CompiledProgram compile_launch(const KernelLaunch& launch, const std::string& arch) {
  return cuda::compile_cached(launch.source, launch.program_name, compile_options(launch, arch));
}

// ---------------------------------------------------------------------------------------------
LoadedKernel::LoadedKernel(const cuda::CompiledProgram& program, const KernelLaunch& launch)
    : module_(program.cubin), launch_(launch) {
  const auto it = program.lowered_names.find(launch.kernel_name);
  fn_ = module_.function(it != program.lowered_names.end() ? it->second : launch.kernel_name);
  if (launch.dynamic_shared_bytes > 48 * 1024)
    KTUNE_CU(driver().cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(launch.dynamic_shared_bytes)));
}

int LoadedKernel::registers_per_thread() const {
  int v = 0;
  KTUNE_CU(driver().cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, fn_));
  return v;
}

std::optional<std::string> LoadedKernel::resource_problem() const {
  const auto& d = driver();
  CUdevice dev = 0;
  KTUNE_CU(d.cuCtxGetDevice(&dev));
  const auto dev_attr = [&](CUdevice_attribute a) {
    int v = 0;
    KTUNE_CU(d.cuDeviceGetAttribute(&v, a, dev));
    return v;
  };
  const auto fn_attr = [&](CUfunction_attribute a) {
    int v = 0;
    KTUNE_CU(d.cuFuncGetAttribute(&v, a, fn_));
    return v;
  };
  const auto& g = launch_;
  const long long threads = 1LL * g.block[0] * g.block[1] * g.block[2];
  const int max_threads = fn_attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);  // after registers
  if (threads < 1 || threads > max_threads)
    return fmt::format("{} threads per block; this kernel allows at most {} ({} registers/thread)",
                       threads, max_threads, fn_attr(CU_FUNC_ATTRIBUTE_NUM_REGS));
  const long long smem = fn_attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) + g.dynamic_shared_bytes;
  const int smem_max = dev_attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  if (smem > smem_max)
    return fmt::format("{} bytes of shared memory per block; the device allows {}", smem, smem_max);
  if (g.grid[0] < 1 || g.grid[1] < 1 || g.grid[2] < 1 || g.grid[1] > 65535 || g.grid[2] > 65535)
    return fmt::format("grid {}x{}x{} is outside the device limits", g.grid[0], g.grid[1],
                       g.grid[2]);
  for (int i = 0; i < 3; ++i)
    if (g.grid[i] % g.cluster[i] != 0)
      return fmt::format("grid {}x{}x{} is not a multiple of cluster {}x{}x{}", g.grid[0],
                         g.grid[1], g.grid[2], g.cluster[0], g.cluster[1], g.cluster[2]);
  int blocks = 0;
  KTUNE_CU(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn_, static_cast<int>(threads),
                                                         g.dynamic_shared_bytes));
  if (blocks < 1) return std::string("not even one block fits on a multiprocessor");
  return std::nullopt;
}

void LoadedKernel::launch(CUstream s, void** params) const {
  const auto& g = launch_;
  if (!g.uses_cluster()) {
    KTUNE_CU(driver().cuLaunchKernel(fn_, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1],
                                     g.block[2], g.dynamic_shared_bytes, s, params, nullptr));
    return;
  }
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = g.cluster[0];
  attr.value.clusterDim.y = g.cluster[1];
  attr.value.clusterDim.z = g.cluster[2];
  CUlaunchConfig cfg{};
  cfg.gridDimX = g.grid[0];
  cfg.gridDimY = g.grid[1];
  cfg.gridDimZ = g.grid[2];
  cfg.blockDimX = g.block[0];
  cfg.blockDimY = g.block[1];
  cfg.blockDimZ = g.block[2];
  cfg.sharedMemBytes = g.dynamic_shared_bytes;
  cfg.hStream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  KTUNE_CU(driver().cuLaunchKernelEx(&cfg, fn_, params, nullptr));
}

// ---------------------------------------------------------------------------------------------
namespace {
std::vector<std::byte> encode_scalar(double value, cuda::DType t) {
  std::vector<std::byte> out(cuda::dtype_bytes(t));
  const auto put = [&](auto v) { std::memcpy(out.data(), &v, sizeof v); };
  switch (t) {
    case cuda::DType::f64:
      put(value);
      break;
    case cuda::DType::f32:
      put(static_cast<float>(value));
      break;
    case cuda::DType::i64:
      put(static_cast<std::int64_t>(std::llround(value)));
      break;
    case cuda::DType::i32:
      put(static_cast<std::int32_t>(std::llround(value)));
      break;
    case cuda::DType::i16:
      put(static_cast<std::int16_t>(std::llround(value)));
      break;
    case cuda::DType::i8:
      put(static_cast<std::int8_t>(std::llround(value)));
      break;
    case cuda::DType::u8:
      put(static_cast<std::uint8_t>(std::llround(value)));
      break;
    case cuda::DType::f16:
    case cuda::DType::bf16: {
      // Round-to-nearest via float: exact for the small constants specs use.
      const float f = static_cast<float>(value);
      std::uint32_t bits;
      std::memcpy(&bits, &f, 4);
      std::uint16_t h;
      if (t == cuda::DType::bf16) {
        h = static_cast<std::uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
      } else {
        const std::uint32_t sign = (bits >> 16) & 0x8000;
        const int exp = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
        const std::uint32_t mant = bits & 0x7FFFFF;
        if (exp <= 0)
          h = static_cast<std::uint16_t>(sign);  // flush tiny values to zero
        else if (exp >= 31)
          h = static_cast<std::uint16_t>(sign | 0x7C00);
        else
          h = static_cast<std::uint16_t>(sign | (exp << 10) | ((mant + 0x1000) >> 13));
      }
      put(h);
      break;
    }
  }
  return out;
}

// Every write the harness makes to device memory goes on its stream. That stream is non-blocking,
// so a blocking host-to-device copy (legacy stream) does not order with it, and from pageable
// memory it returns once the data is staged, not written: a constant fill of an output then landed
// after the poison and the kernel, and verification saw the fill value ("got 0") in the tail.
void fill_constant(CUdeviceptr dst, const std::vector<std::byte>& element, std::size_t count,
                   CUstream s) {
  const auto& d = driver();
  const detail::ConstantFill f = detail::plan_constant_fill(element, count);
  switch (f.kind) {
    case detail::ConstantFill::Kind::none:
      return;
    case detail::ConstantFill::Kind::memset8:
      KTUNE_CU(d.cuMemsetD8Async(dst, static_cast<unsigned char>(f.value), f.units, s));
      return;
    case detail::ConstantFill::Kind::memset32:
      KTUNE_CU(d.cuMemsetD32Async(dst, f.value, f.units, s));
      return;
    case detail::ConstantFill::Kind::copy:
      // From pageable memory the Async copy stages `f.host` before it returns, so it may go; the
      // device write itself stays ordered on `s`.
      KTUNE_CU(d.cuMemcpyHtoDAsync(dst, f.host.data(), f.host.size(), s));
      return;
  }
}
}  // namespace

Workspace::Workspace(const std::vector<KernelArg>& args, std::uint64_t seed)
    : args_(args), seed_(seed) {
  buffers_.reserve(args_.size());
  scalars_.reserve(args_.size());
  for (const auto& a : args_) {
    if (a.kind == KernelArg::Kind::scalar) {
      buffers_.emplace_back();
      scalars_.push_back(encode_scalar(a.value, a.dtype));
    } else {
      buffers_.emplace_back(std::max<std::size_t>(a.bytes(), 1));
      const CUdeviceptr p = buffers_.back().get();
      std::vector<std::byte> storage(sizeof p);
      std::memcpy(storage.data(), &p, sizeof p);
      scalars_.push_back(std::move(storage));
    }
  }
  for (std::size_t i = 0; i < args_.size(); ++i)
    if (args_[i].kind != KernelArg::Kind::constant_memory)
      param_ptrs_.push_back(scalars_[i].data());
}

void Workspace::fill(CUstream s) {
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const auto& a = args_[i];
    if (a.kind == KernelArg::Kind::scalar) continue;
    if (a.fill == KernelArg::Fill::random) {
      cuda::fill_random(buffers_[i].get(), a.count, a.dtype, seed_ * 1000003 + i, s);
    } else {
      fill_constant(buffers_[i].get(), encode_scalar(a.value, a.dtype), a.count, s);
    }
  }
}

void Workspace::poison_outputs(CUstream s) {
  for (std::size_t i = 0; i < args_.size(); ++i)
    if (args_[i].output && args_[i].kind == KernelArg::Kind::buffer)
      cuda::poison(buffers_[i].get(), args_[i].bytes(), s);
}

void Workspace::bind_constants(CUmodule m, CUstream s) const {
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const auto& a = args_[i];
    if (a.kind != KernelArg::Kind::constant_memory) continue;
    CUdeviceptr sym = 0;
    std::size_t sym_bytes = 0;
    const CUresult r = driver().cuModuleGetGlobal(&sym, &sym_bytes, m, a.name.c_str());
    if (r != CUDA_SUCCESS)
      throw Error(fmt::format(
          "constant-memory argument '{}' has no __constant__ symbol of that name in the kernel "
          "({}); declare it as extern \"C\" __constant__ or fix the argument's name.",
          a.name, cuda::result_name(r)));
    if (sym_bytes < a.bytes())
      throw Error(fmt::format(
          "constant-memory argument '{}' needs {} bytes but the kernel's __constant__ symbol has "
          "{}; fix the argument's size or the declaration.",
          a.name, a.bytes(), sym_bytes));
    // Device to device on `s`: ordered after this argument's fill and before the next launch.
    if (a.bytes() > 0) KTUNE_CU(driver().cuMemcpyDtoDAsync(sym, buffers_[i].get(), a.bytes(), s));
  }
}

std::vector<std::byte> Workspace::download(std::size_t i) const {
  // Waits for every stream of the context (the harness's is non-blocking, so the legacy-stream copy
  // below does not order with it); a device-to-host copy returns only once it has completed.
  KTUNE_CU(driver().cuCtxSynchronize());
  std::vector<std::byte> host(args_.at(i).bytes());
  if (!host.empty()) KTUNE_CU(driver().cuMemcpyDtoH(host.data(), buffers_[i].get(), host.size()));
  return host;
}

// ---------------------------------------------------------------------------------------------
Verification verify(Workspace& ws, const LoadedKernel& reference, const LoadedKernel& candidate,
                    CUstream s) {
  const auto run = [&](const LoadedKernel& k) {
    ws.fill(s);
    ws.poison_outputs(s);
    ws.bind_constants(k.module(), s);
    k.launch(s, ws.params());
    KTUNE_CU(driver().cuStreamSynchronize(s));
    std::vector<std::vector<std::byte>> outs;
    for (std::size_t i = 0; i < ws.args().size(); ++i)
      outs.push_back(ws.args()[i].output ? ws.download(i) : std::vector<std::byte>{});
    return outs;
  };
  const auto ref = run(reference);
  const auto cand = run(candidate);
  Verification v;
  v.checked = true;
  v.passed = true;
  std::vector<std::string> agreed;
  for (std::size_t i = 0; i < ws.args().size(); ++i) {
    const KernelArg& a = ws.args()[i];
    if (!a.output) continue;
    const CompareResult c = compare_outputs(
        ref[i], cand[i], a.dtype, a.tolerance.value_or(default_tolerance(a.dtype)), a.name);
    if (!c.ok) {
      v.passed = false;
      v.detail = c.detail;
      return v;
    }
    agreed.push_back(c.detail);
  }
  v.detail = agreed.empty() ? "the spec declares no output to compare"
                            : fmt::format("{}", fmt::join(agreed, "; "));
  return v;
}

// ---------------------------------------------------------------------------------------------
KernelSampler::KernelSampler(const LoadedKernel& kernel, Workspace& ws, CUstream s, TimingMode mode,
                             cuda::L2Flusher* flusher, std::string pci_bus_id,
                             std::size_t launches_per_sample)
    : kernel_(kernel),
      ws_(ws),
      stream_(s),
      mode_(mode),
      flusher_(flusher),
      pci_(std::move(pci_bus_id)),
      batch_(mode == TimingMode::cold ? 1 : launches_per_sample) {}

void KernelSampler::warmup() {
  if (mode_ == TimingMode::cold && flusher_) flusher_->flush(stream_);
  kernel_.launch(stream_, ws_.params());
  KTUNE_CU(driver().cuStreamSynchronize(stream_));
}

void KernelSampler::capture_graph() {
  const auto& d = driver();
  KTUNE_CU(d.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  try {
    for (std::size_t i = 0; i < batch_; ++i) kernel_.launch(stream_, ws_.params());
  } catch (...) {
    CUgraph g = nullptr;
    d.cuStreamEndCapture(stream_, &g);
    if (g) d.cuGraphDestroy(g);
    throw;
  }
  CUgraph graph = nullptr;
  KTUNE_CU(d.cuStreamEndCapture(stream_, &graph));
  CUgraphExec exec = nullptr;
  const CUresult r = d.cuGraphInstantiate(&exec, graph, 0);
  KTUNE_CU_WARN(d.cuGraphDestroy(graph));
  KTUNE_CU(r);
  graph_ = cuda::GraphExec(exec);
}

Sample KernelSampler::sample() {
  if (batch_ == 0) {  // size the batch from one timed launch so it lasts ~200 us
    start_.record(stream_);
    kernel_.launch(stream_, ws_.params());
    stop_.record(stream_);
    const double one_ns = std::max(1e3 * cuda::elapsed_ms(start_, stop_), 500.0);
    batch_ = static_cast<std::size_t>(std::clamp(std::ceil(200e3 / one_ns), 1.0, 1000.0));
  }
  if (mode_ == TimingMode::graph && !graph_.get()) capture_graph();
  if (mode_ == TimingMode::cold && flusher_) flusher_->flush(stream_);
  start_.record(stream_);
  if (mode_ == TimingMode::graph)
    graph_.launch(stream_);
  else
    for (std::size_t i = 0; i < batch_; ++i) kernel_.launch(stream_, ws_.params());
  stop_.record(stream_);
  Sample s;
  s.time_ns = 1e6 * cuda::elapsed_ms(start_, stop_) / static_cast<double>(batch_);
  if (const cuda::Nvml* nvml = cuda::Nvml::get(); nvml && !pci_.empty())
    if (const auto c = nvml->sample(pci_)) {
      s.sm_clock_mhz = c->sm_mhz;
      s.throttle_reasons = c->throttle_reasons;
    }
  return s;
}

// ---------------------------------------------------------------------------------------------
std::string_view status_name(BenchOutcome::Status s) {
  switch (s) {
    case BenchOutcome::Status::ok:
      return "ok";
    case BenchOutcome::Status::compile_error:
      return "compile_error";
    case BenchOutcome::Status::resources_exceeded:
      return "resources_exceeded";
    case BenchOutcome::Status::launch_error:
      return "launch_error";
    case BenchOutcome::Status::wrong_result:
      return "wrong_result";
  }
  return "ok";
}

struct Bench::Prepared {
  std::unique_ptr<LoadedKernel> kernel;
  std::unique_ptr<Workspace> ws;
};

Bench::Bench(int device) : ctx_(device) {
  device_ = cuda::capture_device(device);
  flusher_ = std::make_unique<cuda::L2Flusher>(static_cast<std::size_t>(device_.l2_bytes));
}

Bench::~Bench() = default;

namespace {
std::string first_lines(const std::string& log, int n) {
  std::size_t pos = 0;
  for (int i = 0; i < n && pos != std::string::npos; ++i) pos = log.find('\n', pos + 1);
  return log.substr(0, pos);
}
}  // namespace

std::unique_ptr<Bench::Prepared> Bench::prepare(const Problem& p, BenchOutcome& out) {
  using S = BenchOutcome::Status;
  out.measurement.kernel = p.name;
  out.measurement.config = p.config;
  out.measurement.flop = p.flop;
  out.measurement.bytes = p.bytes;
  auto prep = std::make_unique<Prepared>();
  std::unique_ptr<LoadedKernel> reference;
  try {
    prep->kernel = std::make_unique<LoadedKernel>(compile_launch(p.launch, arch()), p.launch);
    if (p.reference)
      reference =
          std::make_unique<LoadedKernel>(compile_launch(*p.reference, arch()), *p.reference);
  } catch (const cuda::CompileError& e) {
    out.status = S::compile_error;
    out.reason = fmt::format("{}: {}", e.what(), first_lines(e.log(), 5));
    return nullptr;
  }
  if (auto why = prep->kernel->resource_problem()) {
    out.status = S::resources_exceeded;
    out.reason = *why;
    return nullptr;
  }
  try {
    prep->ws = std::make_unique<Workspace>(p.args);
    prep->ws->fill(stream());
    prep->ws->bind_constants(prep->kernel->module(), stream());
    if (reference) {
      out.measurement.verification = verify(*prep->ws, *reference, *prep->kernel, stream());
      prep->ws->bind_constants(prep->kernel->module(), stream());
      if (!out.measurement.verification.passed) {
        out.status = S::wrong_result;
        out.reason = out.measurement.verification.detail;
        return nullptr;
      }
    }
  } catch (const NoGpuError&) {
    throw;
  } catch (const Error& e) {
    out.status = S::launch_error;
    out.reason = e.what();
    return nullptr;
  }
  return prep;
}

BenchOutcome Bench::run(const Problem& p, TimingMode mode, const StopSettings& stop,
                        std::optional<double> best_median_ns) {
  BenchOutcome out;
  out.measurement.mode = mode;
  auto prep = prepare(p, out);
  if (!prep) return out;
  try {
    KernelSampler sampler(*prep->kernel, *prep->ws, stream(), mode, flusher_.get(),
                          device_.pci_bus_id);
    StopRule rule(stop, best_median_ns);
    out.measurement.wall_time_s = run_until_stopped(sampler, rule);
    record_samples(out.measurement, rule);
    out.measurement.launches_per_sample = sampler.launches_per_sample();
  } catch (const NoGpuError&) {
    throw;
  } catch (const Error& e) {
    out.status = BenchOutcome::Status::launch_error;
    out.reason = e.what();
  }
  return out;
}

InterleavedResult Bench::compare(const Problem& a, const Problem& b, TimingMode mode,
                                 const StopSettings& stop) {
  BenchOutcome oa, ob;
  auto pa = prepare(a, oa);
  if (!pa) throw Error(fmt::format("configuration A cannot be compared: {}", oa.reason));
  auto pb = prepare(b, ob);
  if (!pb) throw Error(fmt::format("configuration B cannot be compared: {}", ob.reason));
  KernelSampler sa(*pa->kernel, *pa->ws, stream(), mode, flusher_.get(), device_.pci_bus_id);
  KernelSampler sb(*pb->kernel, *pb->ws, stream(), mode, flusher_.get(), device_.pci_bus_id);
  return interleave(sa, sb, stop);
}

}  // namespace ktune::bench
