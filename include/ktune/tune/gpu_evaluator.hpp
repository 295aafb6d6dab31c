#pragma once
// The GPU side of a tuning session (tune::Evaluator): compiles candidates with NVRTC on worker
// threads ahead of measurement (through the on-disk binary cache), rejects a configuration whose
// compiled kernel exceeds the device's threads, registers or shared memory before launching it,
// verifies it against the spec's reference, screens it with the short stop rule against the best so
// far and measures only contenders with the full rule. The decisions are plain functions, tested
// without a GPU.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/bench/measurement.hpp"
#include "ktune/bench/problem.hpp"
#include "ktune/bench/stop_rule.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/store/cache_entry.hpp"
#include "ktune/tune/session.hpp"
#include "ktune/tune/spec.hpp"

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

// Why `launch` cannot run with these attributes on this device (one phrase), or nullopt.
std::optional<std::string> resource_problem(const KernelAttributes& kernel,
                                            const DeviceLimits& device, const KernelLaunch& launch);

// After the screen: is a candidate worth a full measurement? Yes when nothing was measured yet or
// its screen median is within `margin` (0.03 = 3 %) of the best full median.
bool is_contender(double screen_median_ns, std::optional<double> best_ns, double margin);

// A driver error after which the context is unusable (illegal address, launch failure, ...): the
// process must stop, since every later call returns the same error.
bool context_is_lost(int cu_result);

struct EvaluatorSettings {
  StopSettings screen = StopSettings::screen();
  StopSettings full = tuning_full();
  double contender_margin = 0.03;  // fully measure screens within 3 % of the best
  TimingMode mode = TimingMode::cold;
  unsigned compile_threads = 0;  // 0: hardware threads, at most 16
  std::uint64_t seed = 1;        // input fill
  // The full rule for tuning: the harness default, but shorter (many contenders early on).
  static StopSettings tuning_full();
};

// Evaluates configurations of one spec (and shape) on one device. Construction needs a GPU
// (NoGpuError otherwise); the reference kernel is compiled once and the argument buffers are
// allocated once and shared by every candidate.
class GpuEvaluator : public tune::Evaluator {
 public:
  GpuEvaluator(const tune::ProblemSpec& spec, std::map<std::string, std::int64_t> shape,
               EvaluatorSettings settings = {}, int device = 0);
  ~GpuEvaluator() override;
  void prepare(const std::vector<tune::ConfigMap>& upcoming) override;
  tune::CandidateResult evaluate(const tune::ConfigMap& config,
                                 std::optional<double> best_ns) override;
  const DeviceIdentity& device() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The cache entry for a session's winner: key from the spec's ktune extension (op, dtype), the
// shape (shape variables in declared order, else ProblemSize) and `env`; provenance from the
// session. ktune::Error when the session has no verified winner.
store::CacheEntry winner_entry(const tune::ProblemSpec& spec, const tune::SessionSummary& session,
                               const store::Environment& env, const HostIdentity& host);

// The op's bucket policy from the spec's shape variables (store form), for Store::put_op.
store::OpSpec op_spec(const tune::ProblemSpec& spec);

}  // namespace ktune::bench
