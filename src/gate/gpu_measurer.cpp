#include "ktune/gate/gpu_measurer.hpp"

#include <cctype>

#include <fmt/format.h>

#include "ktune/bench/pipeline.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/subprocess.hpp"
#include "ktune/core/version.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/tune/spec_problem.hpp"

namespace ktune::gate {

struct GpuMeasurer::Prepared {
  bench::Problem problem;
  nlohmann::json config;
  std::unique_ptr<bench::CandidatePipeline> pipeline;
};

GpuMeasurer::GpuMeasurer(const Suite& suite, int device, store::Store* store)
    : suite_(suite), device_(device), store_(store) {}

GpuMeasurer::~GpuMeasurer() = default;

GpuMeasurer::Prepared& GpuMeasurer::prepare(const SuiteBenchmark& b) {
  auto& slot = prepared_[b.name];
  if (slot) return *slot;
  const tune::ProblemSpec spec = tune::ProblemSpec::load(b.spec);
  std::string config_text = b.config;
  if (b.cached_winner) {
    if (!store_)
      throw Error(fmt::format("benchmark \"{}\": config = \"cached\" needs a store.", b.name));
    const store::Environment env = runtime::detect_environment(device_);
    store::LookupQuery q;
    q.op = spec.ktune.op.empty() ? spec.name : spec.ktune.op;
    q.dtype = spec.ktune.dtype;
    q.env = env;
    // The shape as the tuner keys its winners: shape variables in declared order, else ProblemSize.
    const auto constants = spec.constants(b.shape);
    if (!spec.ktune.shape.empty())
      for (const auto& v : spec.ktune.shape) q.shape.push_back(constants.find(v.name)->as_int());
    else
      for (const auto& x : spec.kernel.problem_size)
        q.shape.push_back(x.evaluate(constants).as_int());
    const store::LookupResult found = store_->lookup(q);
    if (found.match == store::Match::none || !found.config.is_object())
      throw Error(
          fmt::format("benchmark \"{}\": the store {} holds no cached winner of op \"{}\" for "
                      "this GPU; run ktune tune first, or pin a config in the suite.",
                      b.name, store_->describe(), q.op));
    for (const auto& [k, v] : found.config.items())
      config_text += fmt::format("{}{}={}", config_text.empty() ? "" : ",", k,
                                 v.is_string() ? v.get<std::string>() : v.dump());
  }
  auto p = std::make_unique<Prepared>();
  p->problem = tune::make_problem(spec, tune::parse_config(spec, config_text), b.shape);
  // The suite's extra NVRTC options stand for a compiler change: they go into every build, and
  // into the toolkit the baselines are keyed by (environment()).
  for (const auto& o : suite_.nvrtc_options) p->problem.launch.flags.push_back(o);
  p->config = p->problem.config;
  bench::PipelineSettings settings;
  settings.mode = b.mode;
  settings.full = bench::StopSettings::distribution();
  settings.full.apply_overrides(suite_.stop);
  p->pipeline = std::make_unique<bench::CandidatePipeline>(p->problem, settings, device_);
  slot = std::move(p);
  return *slot;
}

RunSamples GpuMeasurer::run(const SuiteBenchmark& b) {
  if (b.is_program()) {
    std::string out;
    try {
      out = run_program(b.command, b.timeout_s);
    } catch (const Error& e) {
      throw Error(fmt::format("benchmark \"{}\": {}", b.name, e.what()));
    }
    nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    if (j.is_discarded())
      throw Error(
          fmt::format("benchmark \"{}\": {} printed no JSON; make it print its results as "
                      "JSON on stdout.",
                      b.name, b.command.front()));
    return {program_samples(j, b.format, b.select, fmt::format("benchmark \"{}\"", b.name)),
            program_clock_mhz(j, b.format)};
  }
  Prepared& p = prepare(b);
  const bench::CandidateOutcome o = p.pipeline->run(p.problem);
  if (o.status == bench::Status::timeout && o.measurement.dropped_throttled > 0)
    throw ThrottledRun(fmt::format("benchmark \"{}\": {}", b.name, o.detail));
  if (o.status != bench::Status::ok)
    throw Error(
        fmt::format("benchmark \"{}\": {}: {}", b.name, bench::to_string(o.status), o.detail));
  return {o.measurement.samples_ns, o.measurement.sm_clock_mhz_median};
}

nlohmann::json GpuMeasurer::config(const SuiteBenchmark& b) {
  if (b.is_program()) return nullptr;
  return prepare(b).config;
}

store::GateEnvironment GpuMeasurer::environment() {
  const Identity id = cuda::capture_identity();
  const DeviceIdentity& d = id.devices.at(static_cast<std::size_t>(device_));
  store::GateEnvironment e;
  e.device_name = d.name;
  e.arch = d.arch();
  e.driver = id.software.driver_version;
  e.toolkit = id.software.toolkit();
  for (const auto& o : suite_.nvrtc_options) e.toolkit += " " + o;
  e.ktune_build = fmt::format("{}+{}", version(), git_commit());
  return e;
}

std::string run_program(const std::vector<std::string>& argv, double timeout_s) {
  subprocess::Options o;
  o.timeout_s = timeout_s;
  o.stderr_tail_bytes = 400;
  const subprocess::Result r = subprocess::run(argv, o);
  if (!r.exit.ok()) {
    std::string err = (r.err_truncated ? "..." : "") + r.err_tail;
    while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
    const bool timed_out = r.exit.how == subprocess::Exit::How::timed_out;
    throw Error(fmt::format("{} {}{}; {}", argv.front(), r.exit.describe(),
                            err.empty() ? "" : ": " + err,
                            timed_out ? "raise the benchmark's timeout_s in the suite if it needs "
                                        "longer, or run it by hand to see where it hangs."
                                      : "run it by hand to see why."));
  }
  return r.out;
}

}  // namespace ktune::gate
