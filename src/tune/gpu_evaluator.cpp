#include "ktune/tune/gpu_evaluator.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/version.hpp"
#include "ktune/tune/spec_problem.hpp"

namespace ktune::tune {

GpuEvaluator::GpuEvaluator(const ProblemSpec& spec, std::map<std::string, std::int64_t> shape,
                           bench::PipelineSettings settings, int device)
    : spec_(spec),
      shape_(std::move(shape)),
      // The arguments do not depend on the configuration: one workspace serves every candidate.
      pipeline_(make_problem(spec, default_config(spec), shape_), settings, device) {}

const std::optional<bench::KernelLaunch>& GpuEvaluator::launch_of(const ConfigMap& config) {
  auto it = launches_.find(config);
  if (it == launches_.end()) {
    std::optional<bench::KernelLaunch> launch;
    try {
      launch = make_problem(spec_, config, shape_).launch;
    } catch (const Error&) {  // evaluate() says why
    }
    it = launches_.emplace(config, std::move(launch)).first;
  }
  return it->second;
}

void GpuEvaluator::prepare(const std::vector<ConfigMap>& upcoming) {
  for (const auto& c : upcoming)
    if (const auto& launch = launch_of(c)) pipeline_.prefetch(*launch);
}

std::size_t GpuEvaluator::next_ready(const std::vector<ConfigMap>& candidates) {
  std::vector<bench::KernelLaunch> launches;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& launch = launch_of(candidates[i]);
    if (!launch) return i;  // nothing to compile: evaluate() records why at once
    launches.push_back(*launch);
  }
  return pipeline_.first_ready(launches);
}

CandidateOutcome GpuEvaluator::evaluate(const ConfigMap& config, std::optional<double> best_ns) {
  launches_.erase(config);
  bench::Problem p;
  try {
    p = make_problem(spec_, config, shape_);
  } catch (const Error& e) {  // this configuration's geometry or sizes cannot be launched
    CandidateOutcome r;
    r.status = Status::resources_exceeded;
    r.detail = e.what();
    return r;
  }
  return pipeline_.run(p, best_ns);
}

// -----------------------------------------------------------------------------------------------
store::OpSpec op_spec(const ProblemSpec& spec) {
  store::OpSpec op;
  op.op = spec.ktune.op.empty() ? spec.name : spec.ktune.op;
  for (const auto& v : spec.ktune.shape) op.buckets.dims.push_back(v.bucket);
  nlohmann::json defaults = nlohmann::json::object();
  for (const auto& [k, v] : default_config(spec)) defaults[k] = v;
  op.default_config = defaults;
  return op;
}

std::vector<std::int64_t> cache_shape(const ProblemSpec& spec, const MapScope& constants) {
  std::vector<std::int64_t> shape;
  if (!spec.ktune.shape.empty()) {
    for (const auto& v : spec.ktune.shape) shape.push_back(constants.find(v.name)->as_int());
    return shape;
  }
  if (!spec.kernel.problem_size.empty()) {
    for (const auto& x : spec.kernel.problem_size) shape.push_back(x.evaluate(constants).as_int());
    return shape;
  }
  // A spec with neither tunes one fixed problem: its extent is its GlobalSize where that reads no
  // parameter (the hub's GEMM: 4096 x 4096), else the one bucket [1].
  if (spec.kernel.global_size) {
    try {
      const Dim3Expression& g = *spec.kernel.global_size;
      for (const Expression* x : {&g.x, &g.y, &g.z}) {
        const std::int64_t v = x->evaluate(constants).as_int();
        if (v <= 0) throw Error("not a size");
        shape.push_back(v);
      }
      return shape;
    } catch (const Error&) {
      shape.clear();  // it depends on the configuration: not the problem's extent
    }
  }
  return {1};
}

store::CacheEntry winner_entry(const ProblemSpec& spec, const SessionSummary& session,
                               const store::Environment& env, const HostIdentity& host) {
  if (!session.best)
    throw Error(fmt::format(
        "the session over {} found no verified configuration, so nothing goes into the cache; "
        "look at its results.jsonl for why candidates failed.",
        spec.source));
  const SessionRecord& best = *session.best;
  store::CacheEntry e;
  e.key.op = spec.ktune.op.empty() ? spec.name : spec.ktune.op;
  e.key.dtype = spec.ktune.dtype;
  e.key.arch = env.arch;
  e.key.device_name = env.device_name;
  e.key.toolkit = env.toolkit;
  e.key.driver_major = env.driver_major;
  const MapScope constants = spec.constants(session.shape);
  e.shape = cache_shape(spec, constants);
  e.config = nlohmann::json::object();
  for (const auto& [k, v] : best.config) e.config[k] = v;
  e.median_ns = best.result.time_ns();
  e.noise_ns = best.result.noise_ns();
  e.samples = static_cast<std::int64_t>(best.result.samples());
  if (spec.ktune.flops) {
    e.throughput = spec.ktune.flops->evaluate(constants).as_double() / (e.median_ns * 1e-9);
    e.throughput_unit = "flop/s";
  } else if (spec.ktune.bytes) {
    e.throughput = spec.ktune.bytes->evaluate(constants).as_double() / (e.median_ns * 1e-9);
    e.throughput_unit = "bytes/s";
  }
  e.verification = spec.ktune.reference ? "passed" : "skipped";
  e.provenance.ktune_version = version();
  e.provenance.ktune_commit = git_commit();
  e.provenance.host = host.hostname;
  e.provenance.created_at = utc_now_iso8601();
  e.provenance.strategy = session.strategy;
  e.provenance.budget = {{"evaluations", session.budget},
                         {"seconds", session.time_limit_s},
                         {"evaluated", session.evaluations},
                         {"seed", session.seed}};
  return e;
}

}  // namespace ktune::tune
