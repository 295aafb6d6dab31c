#pragma once
// The GPU pieces of the candidate pipeline (pipeline.hpp): a loaded kernel, the argument buffers,
// verification against a reference, the sampler that times a kernel in each TimingMode and the
// one that times a library call.
// Everything above this (stop rule, statistics, comparison, JSON) is plain C++.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/bench/measurement.hpp"
#include "ktune/bench/problem.hpp"
#include "ktune/bench/stop_rule.hpp"
#include "ktune/cuda/device_utils.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::bench {

// A compiled kernel loaded into the current context, with its launch geometry.
class LoadedKernel {
 public:
  LoadedKernel(const cuda::CompiledProgram& program, const KernelLaunch& launch);
  // The size in bytes of each of the kernel's parameters, in order (cuFuncGetParamInfo).
  std::vector<std::size_t> param_bytes() const;
  void launch(CUstream s, void** params) const;
  CUmodule module() const { return module_.get(); }
  CUfunction function() const { return fn_; }
  const KernelLaunch& geometry() const { return launch_; }

 private:
  cuda::Module module_;
  CUfunction fn_ = nullptr;
  KernelLaunch launch_;
};

// Compiles `launch` with compile_cached for `arch` ("sm_90"); throws cuda::CompileError.
cuda::CompiledProgram compile_launch(const KernelLaunch& launch, const std::string& arch);

// The argument buffers of one Problem (shared by its candidate and reference runs).
struct BoundKernel;

class Workspace {
 public:
  // `seed` seeds each random fill unless the argument has its own.
  Workspace(const std::vector<KernelArg>& args, std::uint64_t seed = 1);
  // Random, constant or given fills of every non-output buffer (outputs too: kernels may
  // read-modify-write).
  void fill(CUstream s);
  void poison_outputs(CUstream s);
  // Copies constant-memory arguments into `k`'s module's __constant__ symbols of the same name.
  // A kernel that also takes them as parameters needs no such symbol (it may read only its
  // pointer, as the benchmark hub's dedispersion does); one that does not must declare it.
  void bind_constants(const BoundKernel& k, CUstream s) const;
  // Kernel parameters: every argument, or all but the constant-memory ones (a kernel that reads
  // them only through their __constant__ symbols does not declare them).
  void** params(bool with_constants) {
    return with_constants ? all_params_.data() : param_ptrs_.data();
  }
  // Re-encodes each scalar as the kernel's parameter of its position takes it (scalar_type_for),
  // for `param_bytes` that parameter_problem() accepted with `with_constants`.
  void pass_scalars_as(const std::vector<std::size_t>& param_bytes, bool with_constants);
  std::vector<std::byte> download(std::size_t arg_index) const;
  const std::vector<KernelArg>& args() const { return args_; }

 private:
  std::vector<KernelArg> args_;          // scalars at the widths of the last kernel's parameters
  std::vector<cuda::DType> spec_types_;  // each argument's type as the problem gave it
  std::uint64_t seed_;
  std::vector<cuda::DeviceBuffer> buffers_;      // one per buffer or constant-memory argument
  std::vector<std::vector<std::byte>> scalars_;  // parameter storage per argument
  std::vector<std::vector<std::byte>> staged_;   // Fill::values arguments, encoded once
  std::vector<void*> param_ptrs_, all_params_;
};

// A loaded kernel with the parameters it takes from a Workspace.
struct BoundKernel {
  const LoadedKernel& kernel;
  bool constants_passed = false;  // constant-memory arguments are also parameters
  void launch(Workspace& ws, CUstream s) const { kernel.launch(s, ws.params(constants_passed)); }
};

// Each output argument's bytes after one run (empty for the other arguments).
using Outputs = std::vector<std::vector<std::byte>>;
// Fills the inputs afresh (the fills are seeded: the same every time), poisons the outputs, runs
// `k` once and downloads its outputs.
Outputs run_for_outputs(Workspace& ws, const BoundKernel& k, CUstream s);

// Runs `reference` and `candidate` once each as above and compares every output. Fills
// `Verification` with the first failure or the agreement.
Verification verify(Workspace& ws, const BoundKernel& reference, const BoundKernel& candidate,
                    CUstream s);
// The same against the reference's outputs from an earlier run_for_outputs on this workspace.
Verification verify(Workspace& ws, const Outputs& reference, const BoundKernel& candidate,
                    CUstream s);

// Launches per hot or graph sample, from one launch's time as the event timer gives it (ms): a
// batch lasts about 200 us (1 to 400 launches).
std::size_t batch_for(double one_launch_ms);

// Times a library call (cuBLASLt) as the harness times a kernel cold: L2 flushed before each
// sample, CUDA events around one call, the SM clock and throttle state read with each sample (the
// stop rule keeps power-capped samples and drops thermal and hardware slowdowns, as for kernels).
class CallSampler : public Sampler {
 public:
  CallSampler(std::function<void()> call, CUstream s, cuda::L2Flusher& flusher,
              std::string pci_bus_id);
  void warmup() override;
  Sample sample() override;

 private:
  std::function<void()> call_;
  CUstream stream_;
  cuda::L2Flusher& flusher_;
  std::string pci_;
  cuda::Event start_, stop_;
};

// Times one loaded kernel in one mode; one Sample per sample() call.
class KernelSampler : public Sampler {
 public:
  // launches_per_sample 0: chosen after warm-up so a hot/graph batch lasts about 200 us.
  KernelSampler(const BoundKernel& kernel, Workspace& ws, CUstream s, TimingMode mode,
                cuda::L2Flusher* flusher, std::string pci_bus_id,
                std::size_t launches_per_sample = 0);
  void warmup() override;
  Sample sample() override;
  std::size_t launches_per_sample() const { return batch_; }

 private:
  void capture_graph();
  BoundKernel kernel_;
  Workspace& ws_;
  CUstream stream_;
  TimingMode mode_;
  cuda::L2Flusher* flusher_;
  std::string pci_;
  std::size_t batch_;
  cuda::Event start_, stop_;
  cuda::GraphExec graph_;
};

}  // namespace ktune::bench
