#include "ktune/bench/evaluator.hpp"

#include <algorithm>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/bench/runner.hpp"
#include "ktune/bench/spec_problem.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/stats.hpp"
#include "ktune/core/version.hpp"
#include "ktune/cuda/identity.hpp"

namespace ktune::bench {

using cuda::driver;

std::optional<std::string> resource_problem(const KernelAttributes& k, const DeviceLimits& d,
                                            const KernelLaunch& g) {
  const long long threads = 1LL * g.block[0] * g.block[1] * g.block[2];
  if (threads < 1 || threads > d.max_threads_per_block)
    return fmt::format("{} threads per block; the device allows at most {}", threads,
                       d.max_threads_per_block);
  if (threads > k.max_threads_per_block)
    return fmt::format(
        "{} threads per block; with {} registers per thread this kernel allows at most {}", threads,
        k.registers_per_thread, k.max_threads_per_block);
  if (1LL * k.registers_per_thread * threads > d.max_registers_per_block)
    return fmt::format("{} registers per block ({} per thread); the device allows {}",
                       1LL * k.registers_per_thread * threads, k.registers_per_thread,
                       d.max_registers_per_block);
  const long long smem = 1LL * k.static_shared_bytes + g.dynamic_shared_bytes;
  if (smem > d.max_shared_bytes_per_block_optin)
    return fmt::format("{} bytes of shared memory per block; the device allows {}", smem,
                       d.max_shared_bytes_per_block_optin);
  if (g.grid[0] < 1 || g.grid[1] < 1 || g.grid[2] < 1 || g.grid[1] > unsigned(d.max_grid_y) ||
      g.grid[2] > unsigned(d.max_grid_z))
    return fmt::format("grid {}x{}x{} is outside the device limits", g.grid[0], g.grid[1],
                       g.grid[2]);
  return std::nullopt;
}

bool is_contender(double screen_median_ns, std::optional<double> best_ns, double margin) {
  return !best_ns || screen_median_ns <= *best_ns * (1 + margin);
}

bool context_is_lost(int r) {
  switch (static_cast<CUresult>(r)) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

StopSettings EvaluatorSettings::tuning_full() {
  StopSettings s = StopSettings::full();
  s.min_gpu_time_s = 0.05;  // contenders are many early on; 10+ samples and 50 ms of GPU time
  s.max_relative_stddev = 0.01;
  s.timeout_s = 2;
  return s;
}

// -----------------------------------------------------------------------------------------------
namespace {

std::string key_of(const tune::ConfigMap& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j.dump();
}

// A compilation's outcome, produced on a worker thread.
struct Compiled {
  std::optional<cuda::CompiledProgram> program;
  std::string error;  // one sentence plus the first lines of NVRTC's log
};

Compiled compile_now(const KernelLaunch& launch, const std::string& arch) {
  Compiled c;
  try {
    c.program = compile_launch(launch, arch);
  } catch (const cuda::CompileError& e) {
    std::string log = e.log();
    std::size_t pos = 0;
    for (int i = 0; i < 5 && pos != std::string::npos; ++i) pos = log.find('\n', pos + 1);
    c.error = fmt::format("{}: {}", e.what(), log.substr(0, pos));
  } catch (const std::exception& e) {
    c.error = e.what();
  }
  return c;
}

tune::CandidateResult failed(tune::Status s, std::string detail, bool fatal = false) {
  tune::CandidateResult r;
  r.status = s;
  r.detail = std::move(detail);
  r.fatal = fatal;
  return r;
}

}  // namespace

struct GpuEvaluator::Impl {
  const tune::ProblemSpec& spec;
  std::map<std::string, std::int64_t> shape;
  EvaluatorSettings settings;
  cuda::PrimaryContext ctx;
  DeviceIdentity device;
  std::string arch;
  DeviceLimits limits;
  cuda::Stream stream;
  std::unique_ptr<cuda::L2Flusher> flusher;
  std::unique_ptr<Workspace> ws;
  std::optional<cuda::CompiledProgram> reference_program;
  std::unique_ptr<LoadedKernel> reference;
  std::map<std::string, std::shared_future<Compiled>> pending;  // by config key
  unsigned threads = 1;

  Impl(const tune::ProblemSpec& s, std::map<std::string, std::int64_t> sh, EvaluatorSettings st,
       int ordinal)
      : spec(s), shape(std::move(sh)), settings(st), ctx(ordinal) {
    device = cuda::capture_device(ordinal);
    arch = device.arch();
    limits.max_threads_per_block = ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    limits.max_registers_per_block = ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    limits.max_shared_bytes_per_block_optin =
        ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    limits.max_grid_y = ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    limits.max_grid_z = ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    flusher = std::make_unique<cuda::L2Flusher>(static_cast<std::size_t>(device.l2_bytes));
    threads = settings.compile_threads ? settings.compile_threads
                                       : std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    // The arguments do not depend on the configuration: one workspace serves every candidate.
    const Problem base = make_problem(spec, default_config(spec), shape);
    ws = std::make_unique<Workspace>(base.args, settings.seed);
    ws->fill(stream.get());
    if (base.reference) {
      Compiled c = compile_now(*base.reference, arch);
      if (!c.program)
        throw Error(
            fmt::format("{}: the reference kernel does not compile ({}); fix ktune.reference "
                        "in the spec.",
                        spec.source, c.error));
      reference_program = std::move(c.program);
      reference = std::make_unique<LoadedKernel>(*reference_program, *base.reference);
    }
  }

  std::shared_future<Compiled> start(const KernelLaunch& launch) {
    return std::async(std::launch::async, [launch, a = arch] { return compile_now(launch, a); })
        .share();
  }

  tune::CandidateResult evaluate(const tune::ConfigMap& config, std::optional<double> best_ns);
};

GpuEvaluator::GpuEvaluator(const tune::ProblemSpec& spec, std::map<std::string, std::int64_t> shape,
                           EvaluatorSettings settings, int device)
    : impl_(std::make_unique<Impl>(spec, std::move(shape), settings, device)) {}

GpuEvaluator::~GpuEvaluator() = default;

const DeviceIdentity& GpuEvaluator::device() const {
  return impl_->device;
}

void GpuEvaluator::prepare(const std::vector<tune::ConfigMap>& upcoming) {
  // At most `threads` compilations run at once; measurement of earlier ones overlaps the rest.
  for (const auto& c : upcoming) {
    const std::string key = key_of(c);
    if (impl_->pending.count(key)) continue;
    for (;;) {
      std::shared_future<Compiled>* busy = nullptr;
      std::size_t running = 0;
      for (auto& [k, f] : impl_->pending)
        if (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
          ++running;
          busy = &f;
        }
      if (running < impl_->threads) break;
      busy->wait();
    }
    impl_->pending[key] = impl_->start(make_problem(impl_->spec, c, impl_->shape).launch);
  }
}

tune::CandidateResult GpuEvaluator::evaluate(const tune::ConfigMap& config,
                                             std::optional<double> best_ns) {
  return impl_->evaluate(config, best_ns);
}

tune::CandidateResult GpuEvaluator::Impl::evaluate(const tune::ConfigMap& config,
                                                   std::optional<double> best_ns) {
  using tune::Status;
  const Problem p = make_problem(spec, config, shape);
  Compiled compiled;
  if (auto it = pending.find(key_of(config)); it != pending.end()) {
    compiled = it->second.get();
    pending.erase(it);
  } else {
    compiled = compile_now(p.launch, arch);
  }
  if (!compiled.program) return failed(Status::CompileFailed, compiled.error);
  if (p.launch.dynamic_shared_bytes > unsigned(limits.max_shared_bytes_per_block_optin))
    return failed(
        Status::ResourcesExceeded,
        fmt::format("{} bytes of dynamic shared memory per block; the device allows {}",
                    p.launch.dynamic_shared_bytes, limits.max_shared_bytes_per_block_optin));
  const CUstream s = stream.get();
  try {
    LoadedKernel kernel(*compiled.program, p.launch);
    KernelAttributes attrs;
    const auto attr = [&](CUfunction_attribute a) {
      int v = 0;
      KTUNE_CU(driver().cuFuncGetAttribute(&v, a, kernel.function()));
      return v;
    };
    attrs.max_threads_per_block = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    attrs.registers_per_thread = attr(CU_FUNC_ATTRIBUTE_NUM_REGS);
    attrs.static_shared_bytes = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    if (auto why = resource_problem(attrs, limits, p.launch))
      return failed(Status::ResourcesExceeded, *why);
    int blocks = 0;
    KTUNE_CU(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, kernel.function(),
        static_cast<int>(p.launch.block[0] * p.launch.block[1] * p.launch.block[2]),
        p.launch.dynamic_shared_bytes));
    if (blocks < 1)
      return failed(Status::ResourcesExceeded, "not even one block fits on a multiprocessor");

    std::string verified = "not verified: the spec declares no reference";
    if (reference) {
      const Verification v = verify(*ws, *reference, kernel, s);
      if (!v.passed) return failed(Status::WrongResult, v.detail);
      verified = "verified: " + v.detail;
    }
    ws->bind_constants(kernel.module(), s);

    KernelSampler sampler(kernel, *ws, s, settings.mode, flusher.get(), device.pci_bus_id);
    StopRule screen(settings.screen, best_ns);
    run_until_stopped(sampler, screen);
    const Summary sm = summarize(screen.times_ns());
    tune::CandidateResult r;
    r.detail = verified;
    if (sm.count > 0 && !is_contender(sm.median, best_ns, settings.contender_margin)) {
      r.status = Status::Timeout;
      r.time_ns = sm.median;
      r.noise_ns = (sm.p95 - sm.p5) / 2;
      r.samples = sm.count;
      r.detail = fmt::format("slower: screen median {:.2f} us is {:.1f} % above the best {:.2f} us",
                             sm.median / 1e3, 100 * (sm.median / *best_ns - 1), *best_ns / 1e3);
      return r;
    }
    StopRule full(settings.full);
    run_until_stopped(sampler, full);
    const Summary fm = summarize(full.times_ns());
    if (fm.count == 0)
      return failed(Status::Timeout, "no unthrottled sample before the full rule's timeout");
    r.status = Status::Ok;
    r.full = true;
    r.time_ns = fm.median;
    r.noise_ns = (fm.p95 - fm.p5) / 2;
    r.samples = fm.count;
    return r;
  } catch (const NoGpuError&) {
    throw;
  } catch (const Error& e) {
    // A faulting kernel leaves a sticky error: every later call returns it. Ask once, quietly.
    const CUresult sticky = driver().cuCtxSynchronize();
    return failed(Status::LaunchFailed, e.what(), context_is_lost(sticky));
  }
}

// -----------------------------------------------------------------------------------------------
store::OpSpec op_spec(const tune::ProblemSpec& spec) {
  store::OpSpec op;
  op.op = spec.ktune.op.empty() ? spec.name : spec.ktune.op;
  for (const auto& v : spec.ktune.shape) {
    store::DimRule rule;
    switch (v.bucket.kind) {
      case tune::BucketPolicy::Kind::Exact:
        rule.kind = store::BucketKind::exact;
        break;
      case tune::BucketPolicy::Kind::Pow2:
        rule.kind = store::BucketKind::pow2;
        break;
      case tune::BucketPolicy::Kind::Multiple:
        rule.kind = store::BucketKind::multiple;
        rule.multiple = v.bucket.step;
        break;
    }
    op.buckets.dims.push_back(rule);
  }
  nlohmann::json defaults = nlohmann::json::object();
  for (const auto& [k, v] : default_config(spec)) defaults[k] = v;
  op.default_config = defaults;
  return op;
}

store::CacheEntry winner_entry(const tune::ProblemSpec& spec, const tune::SessionSummary& session,
                               const store::Environment& env, const HostIdentity& host) {
  if (!session.best)
    throw Error(fmt::format(
        "the session over {} found no verified configuration, so nothing goes into the cache; "
        "look at its results.jsonl for why candidates failed.",
        spec.source));
  const tune::SessionRecord& best = *session.best;
  store::CacheEntry e;
  e.key.op = spec.ktune.op.empty() ? spec.name : spec.ktune.op;
  e.key.dtype = spec.ktune.dtype;
  e.key.arch = env.arch;
  e.key.device_name = env.device_name;
  e.key.toolkit = env.toolkit;
  e.key.driver_major = env.driver_major;
  const tune::MapScope constants = spec.constants(session.shape);
  if (!spec.ktune.shape.empty()) {
    for (const auto& v : spec.ktune.shape) e.shape.push_back(constants.find(v.name)->as_int());
  } else {
    for (const auto& x : spec.kernel.problem_size)
      e.shape.push_back(x.evaluate(constants).as_int());
  }
  e.config = nlohmann::json::object();
  for (const auto& [k, v] : best.config) e.config[k] = v;
  e.median_ns = best.result.time_ns;
  e.noise_ns = best.result.noise_ns;
  e.samples = static_cast<std::int64_t>(best.result.samples);
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

}  // namespace ktune::bench
