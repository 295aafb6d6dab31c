#include "ktune/bench/runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "constant_fill.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/half.hpp"
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

std::vector<std::size_t> LoadedKernel::param_bytes() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0;; ++i) {
    std::size_t offset = 0, bytes = 0;
    if (driver().cuFuncGetParamInfo(fn_, i, &offset, &bytes) != CUDA_SUCCESS)
      break;  // past the end
    out.push_back(bytes);
  }
  return out;
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
    case cuda::DType::u64:
      put(static_cast<std::uint64_t>(std::llround(value)));
      break;
    case cuda::DType::u32:
      put(static_cast<std::uint32_t>(std::llround(value)));
      break;
    case cuda::DType::u16:
      put(static_cast<std::uint16_t>(std::llround(value)));
      break;
    case cuda::DType::u8:
      put(static_cast<std::uint8_t>(std::llround(value)));
      break;
    case cuda::DType::f16:
      put(float_to_half(static_cast<float>(value)));
      break;
    case cuda::DType::bf16:
      put(float_to_bfloat16(static_cast<float>(value)));
      break;
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
  for (const auto& a : args_) spec_types_.push_back(a.dtype);
  buffers_.reserve(args_.size());
  scalars_.reserve(args_.size());
  staged_.resize(args_.size());
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const KernelArg& a = args_[i];
    if (a.kind == KernelArg::Kind::scalar || a.fill != KernelArg::Fill::values) continue;
    if (!a.values || a.values->size() != a.count)
      throw Error(
          fmt::format("argument '{}' is filled with given values but has {} of its {} "
                      "elements.",
                      a.name, a.values ? a.values->size() : 0, a.count));
    staged_[i].reserve(a.bytes());
    for (const double v : *a.values) {
      const std::vector<std::byte> element = encode_scalar(v, a.dtype);
      staged_[i].insert(staged_[i].end(), element.begin(), element.end());
    }
  }
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
  for (std::size_t i = 0; i < args_.size(); ++i) {
    all_params_.push_back(scalars_[i].data());
    if (args_[i].kind != KernelArg::Kind::constant_memory)
      param_ptrs_.push_back(scalars_[i].data());
  }
}

void Workspace::pass_scalars_as(const std::vector<std::size_t>& param_bytes, bool with_constants) {
  std::size_t param = 0;
  for (std::size_t i = 0; i < args_.size() && param < param_bytes.size(); ++i) {
    KernelArg& a = args_[i];
    if (a.kind == KernelArg::Kind::constant_memory && !with_constants) continue;
    const std::size_t bytes = param_bytes[param++];
    if (a.kind != KernelArg::Kind::scalar || cuda::dtype_bytes(a.dtype) == bytes) continue;
    const auto t = scalar_type_for(spec_types_[i], bytes);  // from the spec's: bf16 stays bf16
    if (!t) continue;                                       // parameter_problem() refuses it
    a.dtype = *t;
    scalars_[i] = encode_scalar(a.value, a.dtype);
    all_params_[i] = scalars_[i].data();
  }
  param_ptrs_.clear();
  for (std::size_t i = 0; i < args_.size(); ++i)
    if (args_[i].kind != KernelArg::Kind::constant_memory)
      param_ptrs_.push_back(scalars_[i].data());
}

void Workspace::fill(CUstream s) {
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const auto& a = args_[i];
    if (a.kind == KernelArg::Kind::scalar) continue;
    if (a.fill == KernelArg::Fill::random) {
      const std::uint64_t seed = a.seed ? *a.seed : seed_ * 1000003 + i;
      cuda::fill_random(buffers_[i].get(), a.count, a.dtype, seed, s);
    } else if (a.fill == KernelArg::Fill::values) {
      // From pageable memory the Async copy stages the bytes before it returns; ordered on `s`.
      if (!staged_[i].empty())
        KTUNE_CU(
            driver().cuMemcpyHtoDAsync(buffers_[i].get(), staged_[i].data(), staged_[i].size(), s));
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

void Workspace::bind_constants(const BoundKernel& k, CUstream s) const {
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const auto& a = args_[i];
    if (a.kind != KernelArg::Kind::constant_memory) continue;
    CUdeviceptr sym = 0;
    std::size_t sym_bytes = 0;
    const CUresult r =
        driver().cuModuleGetGlobal(&sym, &sym_bytes, k.kernel.module(), a.name.c_str());
    if (r == CUDA_ERROR_NOT_FOUND && k.constants_passed) continue;  // its parameter carries it
    if (r != CUDA_SUCCESS)
      throw Error(fmt::format(
          "constant-memory argument '{}' has no __constant__ symbol of that name in the kernel "
          "({}) and the kernel does not take it as a parameter; declare it as __constant__ or "
          "as a parameter, or fix the argument's name.",
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
Outputs run_for_outputs(Workspace& ws, const BoundKernel& k, CUstream s) {
  ws.fill(s);
  ws.poison_outputs(s);
  ws.bind_constants(k, s);
  k.launch(ws, s);
  KTUNE_CU(driver().cuStreamSynchronize(s));
  Outputs outs;
  for (std::size_t i = 0; i < ws.args().size(); ++i)
    outs.push_back(ws.args()[i].output ? ws.download(i) : std::vector<std::byte>{});
  return outs;
}

Verification verify(Workspace& ws, const BoundKernel& reference, const BoundKernel& candidate,
                    CUstream s) {
  return verify(ws, run_for_outputs(ws, reference, s), candidate, s);
}

Verification verify(Workspace& ws, const Outputs& ref, const BoundKernel& candidate, CUstream s) {
  const Outputs cand = run_for_outputs(ws, candidate, s);
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
std::size_t batch_for(double one_launch_ms) {
  // Below 0.5 us the event timer measures launch overhead more than the kernel: count it as 0.5.
  const double one_us = std::max(1e3 * one_launch_ms, 0.5);
  return static_cast<std::size_t>(std::max(std::ceil(200 / one_us), 1.0));
}

CallSampler::CallSampler(std::function<void()> call, CUstream s, cuda::L2Flusher& flusher,
                         std::string pci_bus_id)
    : call_(std::move(call)), stream_(s), flusher_(flusher), pci_(std::move(pci_bus_id)) {}

void CallSampler::warmup() {
  call_();
  KTUNE_CU(driver().cuStreamSynchronize(stream_));
}

Sample CallSampler::sample() {
  flusher_.flush(stream_);
  start_.record(stream_);
  call_();
  stop_.record(stream_);
  Sample s;
  s.time_ns = 1e6 * cuda::elapsed_ms(start_, stop_);
  if (const cuda::Nvml* nvml = cuda::Nvml::get(); nvml && !pci_.empty())
    if (const auto c = nvml->sample(pci_)) {
      s.sm_clock_mhz = c->sm_mhz;
      s.throttle_reasons = c->throttle_reasons;
    }
  return s;
}

KernelSampler::KernelSampler(const BoundKernel& kernel, Workspace& ws, CUstream s, TimingMode mode,
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
  kernel_.launch(ws_, stream_);
  KTUNE_CU(driver().cuStreamSynchronize(stream_));
}

void KernelSampler::capture_graph() {
  const auto& d = driver();
  KTUNE_CU(d.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  try {
    for (std::size_t i = 0; i < batch_; ++i) kernel_.launch(ws_, stream_);
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
  KTUNE_CU_RELEASE(d.cuGraphDestroy(graph));
  KTUNE_CU(r);
  graph_ = cuda::GraphExec(exec);
}

Sample KernelSampler::sample() {
  if (batch_ == 0) {  // size the batch from one timed launch
    start_.record(stream_);
    kernel_.launch(ws_, stream_);
    stop_.record(stream_);
    batch_ = batch_for(cuda::elapsed_ms(start_, stop_));
  }
  if (mode_ == TimingMode::graph && !graph_.get()) capture_graph();
  if (mode_ == TimingMode::cold && flusher_) flusher_->flush(stream_);
  start_.record(stream_);
  if (mode_ == TimingMode::graph)
    graph_.launch(stream_);
  else
    for (std::size_t i = 0; i < batch_; ++i) kernel_.launch(ws_, stream_);
  stop_.record(stream_);
  Sample s;
  s.time_ns = 1e6 * cuda::elapsed_ms(start_, stop_) / static_cast<double>(batch_);
  s.launches = batch_;
  if (const cuda::Nvml* nvml = cuda::Nvml::get(); nvml && !pci_.empty())
    if (const auto c = nvml->sample(pci_)) {
      s.sm_clock_mhz = c->sm_mhz;
      s.throttle_reasons = c->throttle_reasons;
    }
  return s;
}

}  // namespace ktune::bench
