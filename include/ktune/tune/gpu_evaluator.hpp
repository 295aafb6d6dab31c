#pragma once
// The GPU side of a tuning session: binds each configuration of a spec to a bench::Problem and runs
// it through the candidate pipeline (bench/pipeline.hpp). Plus what a session's winner becomes in
// the cache.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ktune/bench/pipeline.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/store/cache_entry.hpp"
#include "ktune/tune/session.hpp"

namespace ktune::tune {

// Evaluates configurations of one spec (and shape) on one device, in this process. A candidate
// that breaks the GPU context comes back with `fatal` set: this evaluator can measure nothing
// after it, so sessions run it in a child process (IsolatedEvaluator) that is restarted.
class GpuEvaluator : public Evaluator {
 public:
  // Needs a GPU (NoGpuError otherwise). `spec` must outlive the evaluator.
  GpuEvaluator(const ProblemSpec& spec, std::map<std::string, std::int64_t> shape,
               bench::PipelineSettings settings = {}, int device = 0);
  void prepare(const std::vector<ConfigMap>& upcoming) override;
  std::size_t next_ready(const std::vector<ConfigMap>& candidates) override;
  CandidateOutcome evaluate(const ConfigMap& config, std::optional<double> best_ns) override;
  const DeviceIdentity& device() const { return pipeline_.device(); }

 private:
  // A configuration's launch, built once per candidate (make_problem reads the kernel file and its
  // headers) and kept until it is evaluated; nullopt when the spec gives it no launchable
  // geometry, which evaluate() records as that candidate's outcome.
  const std::optional<bench::KernelLaunch>& launch_of(const ConfigMap& config);

  const ProblemSpec& spec_;
  std::map<std::string, std::int64_t> shape_;
  bench::CandidatePipeline pipeline_;
  std::map<ConfigMap, std::optional<bench::KernelLaunch>> launches_;
};

// The shape a spec's winner is cached under: its shape variables in declared order, else its
// ProblemSize; a spec with neither tunes one fixed problem, cached as its GlobalSize when that
// reads no parameter, else as [1].
std::vector<std::int64_t> cache_shape(const ProblemSpec& spec, const MapScope& constants);

// The cache entry for a session's winner: key from the spec's op and dtype (their defaults when
// the spec has no ktune section), cache_shape() and `env`; provenance from the session.
// ktune::Error when the session has no verified winner.
store::CacheEntry winner_entry(const ProblemSpec& spec, const SessionSummary& session,
                               const store::Environment& env, const HostIdentity& host);

// The op's bucket policy from the spec's shape variables (store form), for Store::put_op.
store::OpSpec op_spec(const ProblemSpec& spec);

}  // namespace ktune::tune
