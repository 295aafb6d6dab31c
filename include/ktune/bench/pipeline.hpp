#pragma once
// The one candidate pipeline: compile (ahead, on worker threads, through the on-disk binary cache),
// check resources (before compiling where the launch alone decides, after with the kernel's
// attributes), check the kernel's parameters against the arguments, verify against the reference,
// screen against the best so far, measure. `ktune bench`, tuning sessions and the benchmarks all
// go through it; a library's algorithm (tune/gemm_library.hpp) is a Candidate of the same
// sequence (run_candidate). Every failure ends as a Status with one sentence; nothing a candidate
// does is thrown, except a missing GPU. The decisions are plain functions, tested without a GPU.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/bench/interleave.hpp"
#include "ktune/bench/measurement.hpp"
#include "ktune/bench/outcome.hpp"
#include "ktune/bench/problem.hpp"
#include "ktune/bench/stop_rule.hpp"
#include "ktune/core/identity.hpp"

namespace ktune::bench {

// What the driver says about one compiled kernel (cuFuncGetAttribute).
struct KernelAttributes {
  int max_threads_per_block = 0;  // already lowered by the kernel's register use
  int registers_per_thread = 0;
  int static_shared_bytes = 0;
};

// This device's per-block limits (cuDeviceGetAttribute).
struct DeviceLimits {
  int max_threads_per_block = 1024;
  int max_registers_per_block = 65536;
  int max_shared_bytes_per_block_optin = 232448;  // H100: 227 KiB
  int max_grid_y = 65535, max_grid_z = 65535;
};

// Why `launch` cannot run on this device whatever its code (threads per block, dynamic shared
// memory, grid), or nullopt: decided before compiling.
std::optional<std::string> launch_problem(const DeviceLimits& device, const KernelLaunch& launch);
// Why `launch` cannot run with these compiled attributes on this device, or nullopt. Includes
// launch_problem().
std::optional<std::string> resource_problem(const KernelAttributes& kernel,
                                            const DeviceLimits& device, const KernelLaunch& launch);
// True when a compiler log says a resource limit was hit (static shared memory, registers, stack)
// rather than the source being wrong.
bool log_shows_resource_limit(const std::string& compile_log);

// The kernel's parameters (sizes in bytes, in order) against the arguments: nullopt when they fit,
// else one sentence naming the argument. `constants_passed` is set to whether constant-memory
// arguments are also passed as parameters (the kernel declares one for each).
std::optional<std::string> parameter_problem(const std::vector<std::size_t>& param_bytes,
                                             const std::vector<KernelArg>& args,
                                             bool& constants_passed);

// After the screen: is a candidate worth a full measurement? Yes when nothing was measured yet or
// its screen median is within `margin` (0.03 = 3 %) of the best full median.
bool is_contender(double screen_median_ns, std::optional<double> best_ns, double margin);

struct PipelineSettings {
  StopSettings screen = StopSettings::screen();
  StopSettings full = StopSettings::full();
  double contender_margin = 0.03;  // fully measure screens within 3 % of the best
  TimingMode mode = TimingMode::cold;
  unsigned compile_threads = 0;  // 0: every hardware thread
  std::uint64_t seed = 1;        // input fill (an argument's RandomSeed wins)
  // The full rule for tuning: the harness default, but shorter (many contenders early on).
  static StopSettings tuning_full();
};

// One candidate as the pipeline runs it, whatever made it runnable: a kernel NVRTC compiled, or a
// library's algorithm. run_candidate holds the sequence; a candidate supplies its steps.
class Candidate {
 public:
  virtual ~Candidate() = default;
  // Makes it runnable (compiled and loaded, or looked up; its resources checked): nullopt, or
  // the outcome that ends it.
  virtual std::optional<CandidateOutcome> ready() = 0;
  // Runs it on poisoned outputs and compares them with the reference's. Not `checked` when there
  // is no reference; its detail then says so.
  virtual Verification verify() = 0;
  // Its timed runs, once verified.
  virtual Sampler& sampler() = 0;
};

// The sequence every candidate goes through: ready, verify (a wrong result ends it), then with
// `best_ns` a screen (a candidate clearly slower than the best ends as Status::slower with the
// screen's statistics), then the full rule (Status::ok, or timeout when every sample was
// throttled). A ktune::Error on the way ends it as launch_failed, context_lost when the GPU
// context is gone (a NoGpuError propagates). `header`: the measurement's description (kernel,
// config, mode, work), kept in the outcome of a candidate that was verified.
CandidateOutcome run_candidate(Candidate& candidate, const PipelineSettings& settings,
                               std::optional<double> best_ns, Measurement header = {});

// Measures candidates of one problem on one device. Every candidate shares the base problem's
// argument buffers (allocated and filled once) and its reference (compiled once).
class CandidatePipeline {
 public:
  // Needs a GPU (NoGpuError otherwise). ktune::Error when the reference does not compile.
  CandidatePipeline(const Problem& base, PipelineSettings settings = {}, int device = 0);
  ~CandidatePipeline();
  CandidatePipeline(const CandidatePipeline&) = delete;
  CandidatePipeline& operator=(const CandidatePipeline&) = delete;

  // Starts compiling `launch` on a worker thread (at most compile_threads at once).
  void prefetch(const KernelLaunch& launch);
  // Of `launches` (prefetched), the position of one that can run without waiting for NVRTC: one
  // the device refuses before compiling, else the first whose compilation has finished (waiting
  // until one has).
  std::size_t first_ready(const std::vector<KernelLaunch>& launches);
  // Compiles (or takes the prefetched binary), checks, verifies and measures `p` (its launch, name,
  // config and work counts; the arguments are the base problem's). With `best_ns`, a screen first:
  // a candidate clearly slower than it ends as Status::slower with the screen's statistics.
  CandidateOutcome run(const Problem& p, std::optional<double> best_ns = std::nullopt);
  // A and B (both verified first) measured alternately in one process. ktune::Error when either
  // cannot run, naming which.
  InterleavedResult compare(const Problem& a, const Problem& b, const StopSettings& stop);

  const DeviceIdentity& device() const;
  const DeviceLimits& limits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune::bench
