#pragma once
// The GPU side of the harness: compiles and loads a Problem, owns its argument buffers, launches it
// (cuLaunchKernelEx when it has clusters), verifies it against its reference and times it in each
// TimingMode. Everything above this (stop rule, statistics, comparison, JSON) is plain C++.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/bench/interleave.hpp"
#include "ktune/bench/measurement.hpp"
#include "ktune/bench/problem.hpp"
#include "ktune/bench/stop_rule.hpp"
#include "ktune/cuda/device_utils.hpp"
#include "ktune/cuda/nvrtc.hpp"
#include "ktune/cuda/resources.hpp"

namespace ktune::bench {

// A compiled kernel loaded into the current context, with its launch geometry.
class LoadedKernel {
 public:
  LoadedKernel(const cuda::CompiledProgram& program, const KernelLaunch& launch);
  // Why this launch cannot run on this device (threads, registers, shared memory), or empty.
  std::optional<std::string> resource_problem() const;
  void launch(CUstream s, void** params) const;
  CUmodule module() const { return module_.get(); }
  CUfunction function() const { return fn_; }
  const KernelLaunch& geometry() const { return launch_; }
  int registers_per_thread() const;

 private:
  cuda::Module module_;
  CUfunction fn_ = nullptr;
  KernelLaunch launch_;
};

// Compiles `launch` with compile_cached for the arch of `ctx`; throws cuda::CompileError.
cuda::CompiledProgram compile_launch(const KernelLaunch& launch, const std::string& arch);

// The argument buffers of one Problem (shared by its candidate and reference runs).
class Workspace {
 public:
  Workspace(const std::vector<KernelArg>& args, std::uint64_t seed = 1);
  // Random or constant fills of every non-output buffer (outputs too: kernels may
  // read-modify-write).
  void fill(CUstream s);
  void poison_outputs(CUstream s);
  // Copies constant-memory arguments into the module's __constant__ symbols of the same name.
  void bind_constants(CUmodule m, CUstream s) const;
  void** params() { return param_ptrs_.data(); }
  std::vector<std::byte> download(std::size_t arg_index) const;
  const std::vector<KernelArg>& args() const { return args_; }

 private:
  std::vector<KernelArg> args_;
  std::uint64_t seed_;
  std::vector<cuda::DeviceBuffer> buffers_;      // one per buffer or constant-memory argument
  std::vector<std::vector<std::byte>> scalars_;  // parameter storage per argument
  std::vector<void*> param_ptrs_;
};

// Poisons outputs, runs `reference` and `candidate` once each on freshly filled inputs, and
// compares every output. Fills `Verification` with the first failure or the agreement.
Verification verify(Workspace& ws, const LoadedKernel& reference, const LoadedKernel& candidate,
                    CUstream s);

// Times one loaded kernel in one mode; one Sample per sample() call.
class KernelSampler : public Sampler {
 public:
  // launches_per_sample 0: chosen after warm-up so a hot/graph batch lasts about 200 us.
  KernelSampler(const LoadedKernel& kernel, Workspace& ws, CUstream s, TimingMode mode,
                cuda::L2Flusher* flusher, std::string pci_bus_id,
                std::size_t launches_per_sample = 0);
  void warmup() override;
  Sample sample() override;
  std::size_t launches_per_sample() const { return batch_; }

 private:
  void capture_graph();
  const LoadedKernel& kernel_;
  Workspace& ws_;
  CUstream stream_;
  TimingMode mode_;
  cuda::L2Flusher* flusher_;
  std::string pci_;
  std::size_t batch_;
  cuda::Event start_, stop_;
  cuda::GraphExec graph_;
};

// The whole measurement of one Problem on the current device: compile, load, check resources,
// verify, time. A failure at any step is returned as data (BenchOutcome), never thrown, except
// for a missing GPU.
struct BenchOutcome {
  enum class Status { ok, compile_error, resources_exceeded, launch_error, wrong_result };
  Status status = Status::ok;
  std::string reason;  // one sentence when status != ok
  Measurement measurement;
};
std::string_view status_name(BenchOutcome::Status s);

class Bench {
 public:
  explicit Bench(int device = 0);
  ~Bench();
  // Measures `p` in `mode` until `stop` says so. best_median_ns feeds the screen's early exit.
  BenchOutcome run(const Problem& p, TimingMode mode, const StopSettings& stop,
                   std::optional<double> best_median_ns = std::nullopt);
  // A and B measured alternately (A B A B ...) in one process, for decisions where drift matters.
  InterleavedResult compare(const Problem& a, const Problem& b, TimingMode mode,
                            const StopSettings& stop);
  const DeviceIdentity& device() const { return device_; }
  std::string arch() const { return device_.arch(); }
  CUstream stream() const { return stream_.get(); }

 private:
  struct Prepared;
  std::unique_ptr<Prepared> prepare(const Problem& p, BenchOutcome& out);
  cuda::PrimaryContext ctx_;
  DeviceIdentity device_;
  cuda::Stream stream_;
  std::unique_ptr<cuda::L2Flusher> flusher_;
};

}  // namespace ktune::bench
