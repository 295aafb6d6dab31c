#include "ktune/bench/pipeline.hpp"

#include <algorithm>
#include <map>
#include <thread>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ktune/bench/compile_pool.hpp"
#include "ktune/bench/runner.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/cuda/nvml.hpp"

namespace ktune::bench {

using cuda::driver;

std::optional<std::string> launch_problem(const DeviceLimits& d, const KernelLaunch& g) {
  const long long threads = 1LL * g.block[0] * g.block[1] * g.block[2];
  if (threads < 1 || threads > d.max_threads_per_block)
    return fmt::format("{} threads per block; the device allows at most {}", threads,
                       d.max_threads_per_block);
  if (g.dynamic_shared_bytes > unsigned(d.max_shared_bytes_per_block_optin))
    return fmt::format("{} bytes of dynamic shared memory per block; the device allows {}",
                       g.dynamic_shared_bytes, d.max_shared_bytes_per_block_optin);
  if (g.grid[0] < 1 || g.grid[1] < 1 || g.grid[2] < 1 || g.grid[1] > unsigned(d.max_grid_y) ||
      g.grid[2] > unsigned(d.max_grid_z))
    return fmt::format("grid {}x{}x{} is outside the device limits", g.grid[0], g.grid[1],
                       g.grid[2]);
  for (int i = 0; i < 3; ++i)
    if (g.cluster[i] == 0 || g.grid[i] % g.cluster[i] != 0)
      return fmt::format("grid {}x{}x{} is not a multiple of cluster {}x{}x{}", g.grid[0],
                         g.grid[1], g.grid[2], g.cluster[0], g.cluster[1], g.cluster[2]);
  return std::nullopt;
}

std::optional<std::string> resource_problem(const KernelAttributes& k, const DeviceLimits& d,
                                            const KernelLaunch& g) {
  if (auto why = launch_problem(d, g)) return why;
  const long long threads = 1LL * g.block[0] * g.block[1] * g.block[2];
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
  return std::nullopt;
}

bool log_shows_resource_limit(const std::string& log) {
  // ptxas's words when a kernel outgrows a hardware limit rather than being wrong C++.
  for (const char* phrase : {"too much shared data", "too much local data", "too many resources",
                             "uses too much", "Entry function uses too many registers"})
    if (log.find(phrase) != std::string::npos) return true;
  return false;
}

std::optional<std::string> parameter_problem(const std::vector<std::size_t>& param_bytes,
                                             const std::vector<KernelArg>& args,
                                             bool& constants_passed) {
  const auto size_of = [](const KernelArg& a) {
    return a.kind == KernelArg::Kind::scalar ? cuda::dtype_bytes(a.dtype) : sizeof(CUdeviceptr);
  };
  std::vector<const KernelArg*> without;
  for (const auto& a : args)
    if (a.kind != KernelArg::Kind::constant_memory) without.push_back(&a);
  std::vector<const KernelArg*> passed;
  if (param_bytes.size() == args.size()) {
    constants_passed = true;
    for (const auto& a : args) passed.push_back(&a);
  } else if (param_bytes.size() == without.size()) {
    constants_passed = false;
    passed = without;
  } else {
    return fmt::format(
        "the kernel takes {} parameters but the spec lists {} arguments ({} in constant memory); "
        "make KernelSpecification.Arguments match the kernel's parameters",
        param_bytes.size(), args.size(), args.size() - without.size());
  }
  for (std::size_t i = 0; i < passed.size(); ++i)
    if (param_bytes[i] != size_of(*passed[i]) &&
        !(passed[i]->kind == KernelArg::Kind::scalar &&
          scalar_type_for(passed[i]->dtype, param_bytes[i])))
      return fmt::format(
          "argument '{}' ({} {}) is {} bytes but the kernel's parameter {} is {} bytes; fix its "
          "Type or MemoryType in the spec",
          passed[i]->name, cuda::to_string(passed[i]->dtype),
          passed[i]->kind == KernelArg::Kind::scalar ? "scalar" : "pointer", size_of(*passed[i]), i,
          param_bytes[i]);
  return std::nullopt;
}

bool is_contender(double screen_median_ns, std::optional<double> best_ns, double margin) {
  return !best_ns || screen_median_ns <= *best_ns * (1 + margin);
}

StopSettings PipelineSettings::tuning_full() {
  StopSettings s = StopSettings::full();
  // Contenders are many early on, and a search needs their order, not quotable figures: 10+
  // samples, 10 ms of GPU time and 1 % noise. Measured on the H100 (logs/2026-11-23-h100-tune.md):
  // the GEMV session ran 14 -> 24 evaluations/s with the same winner as at 50 ms. A mean known to
  // 0.3 % also ends it: on the H100 (logs/2026-11-25-h100-gpu.md) the GEMV's and hotspot's wider
  // samples otherwise ran every such candidate to the 2 s timeout, half of the sessions' time.
  s.min_gpu_time_s = 0.01;
  s.max_relative_stddev = 0.01;
  s.max_relative_error = 0.003;
  s.timeout_s = 2;
  return s;
}

// -----------------------------------------------------------------------------------------------
namespace {

// With `best_ns` a screen, then the full rule; fills out.status, detail (unless ok), full and the
// measurement's times.
void measure_verified(Sampler& sampler, const PipelineSettings& settings,
                      std::optional<double> best_ns, CandidateOutcome& out) {
  Measurement& m = out.measurement;
  if (best_ns) {  // a screen first: most candidates of a search are clearly slower
    StopRule screen(settings.screen, best_ns);
    m.wall_time_s = run_until_stopped(sampler, screen);
    record_samples(m, screen);
    if (m.time_ns.count > 0 &&
        !is_contender(m.time_ns.median, best_ns, settings.contender_margin)) {
      out.status = Status::slower;
      out.detail = fmt::format(
          "slower: screen median {:.2f} us is {:.1f} % above the best {:.2f} us",
          m.time_ns.median / 1e3, 100 * (m.time_ns.median / *best_ns - 1), *best_ns / 1e3);
      return;
    }
  }
  StopRule full(settings.full);
  m.wall_time_s += run_until_stopped(sampler, full);
  record_samples(m, full);
  if (m.time_ns.count == 0) {
    out.status = Status::timeout;
    out.detail = fmt::format(
        "no unthrottled sample before the full rule's timeout ({} dropped under {})",
        m.dropped_throttled,
        fmt::join(cuda::throttle_reason_names(m.throttle_seen & cuda::throttle::kSlowdownMask),
                  ", "));
    return;
  }
  out.status = Status::ok;
  out.full = true;
}

}  // namespace

CandidateOutcome run_candidate(Candidate& candidate, const PipelineSettings& settings,
                               std::optional<double> best_ns, Measurement header) {
  try {
    if (auto ended = candidate.ready()) return std::move(*ended);
    const Verification v = candidate.verify();
    if (v.checked && !v.passed) return CandidateOutcome::failed(Status::wrong_result, v.detail);
    CandidateOutcome out;
    out.measurement = std::move(header);
    if (v.checked) {
      out.measurement.verification = v;
      out.detail = "verified: " + v.detail;
    } else {
      out.detail = v.detail;
    }
    measure_verified(candidate.sampler(), settings, best_ns, out);
    return out;
  } catch (const NoGpuError&) {
    throw;
  } catch (const Error& e) {
    // A faulting kernel leaves a sticky error: every later call returns it. Ask once, quietly.
    const CUresult sticky = driver().cuCtxSynchronize();
    return CandidateOutcome::failed(Status::launch_failed, e.what(), cuda::context_is_lost(sticky));
  }
}

struct CandidatePipeline::Impl {
  PipelineSettings settings;
  cuda::PrimaryContext ctx;
  DeviceIdentity device;
  DeviceLimits limits;
  cuda::Stream stream;
  std::unique_ptr<cuda::L2Flusher> flusher;
  std::unique_ptr<Workspace> ws;
  std::optional<cuda::CompiledProgram> reference_program;
  std::unique_ptr<LoadedKernel> reference;
  bool reference_constants = false;
  std::vector<cuda::DType> reference_types;  // each argument's, as the reference takes it
  std::optional<Outputs> reference_outputs;  // computed once: the inputs are the same every time
  // Verdicts of binaries that passed, by binary and launch: a configuration measured again (a
  // gate's runs) is not verified again on the same inputs. Copying a 1 GiB output to the host and
  // comparing it cost more than a gate run's 0.2 s of GPU time.
  std::map<std::string, Verification> verified;
  std::unique_ptr<CompilePool> pool;

  Impl(const Problem& base, PipelineSettings st, int ordinal) : settings(st), ctx(ordinal) {
    device = cuda::capture_device(ordinal);
    limits.max_threads_per_block = ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    limits.max_registers_per_block = ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    limits.max_shared_bytes_per_block_optin =
        ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    limits.max_grid_y = ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
    limits.max_grid_z = ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
    flusher = std::make_unique<cuda::L2Flusher>(static_cast<std::size_t>(device.l2_bytes));
    const unsigned threads = settings.compile_threads
                                 ? settings.compile_threads
                                 : std::max(1u, std::thread::hardware_concurrency());
    pool = std::make_unique<CompilePool>(device.arch(), threads);
    ws = std::make_unique<Workspace>(base.args, settings.seed);
    ws->fill(stream.get());
    if (base.reference) {
      Compiled c = compile_now(*base.reference, device.arch());
      if (!c.program)
        throw Error(
            fmt::format("the reference kernel of {} does not compile ({}); fix the spec's "
                        "reference.",
                        base.name, c.error));
      reference_program = std::move(c.program);
      reference = std::make_unique<LoadedKernel>(*reference_program, *base.reference);
      if (auto why = parameter_problem(reference->param_bytes(), base.args, reference_constants))
        throw Error(fmt::format("the reference kernel of {}: {}.", base.name, *why));
      ws->pass_scalars_as(reference->param_bytes(), reference_constants);
      for (const auto& a : ws->args()) reference_types.push_back(a.dtype);
    }
  }

  CandidateOutcome run(const Problem& p, std::optional<double> best_ns);
  // The loaded, checked candidate, or the outcome that ends it.
  std::variant<std::unique_ptr<LoadedKernel>, CandidateOutcome> load(const Problem& p,
                                                                     bool& constants_passed);
  double compile_s = 0;  // of the last load()
  class KernelCandidate;
};

CandidatePipeline::CandidatePipeline(const Problem& base, PipelineSettings settings, int device)
    : impl_(std::make_unique<Impl>(base, settings, device)) {}

CandidatePipeline::~CandidatePipeline() = default;

const DeviceIdentity& CandidatePipeline::device() const {
  return impl_->device;
}

const DeviceLimits& CandidatePipeline::limits() const {
  return impl_->limits;
}

void CandidatePipeline::prefetch(const KernelLaunch& launch) {
  if (!launch_problem(impl_->limits, launch)) impl_->pool->enqueue(launch);
}

std::size_t CandidatePipeline::first_ready(const std::vector<KernelLaunch>& launches) {
  for (std::size_t i = 0; i < launches.size(); ++i)
    if (launch_problem(impl_->limits, launches[i])) return i;
  return impl_->pool->first_done(launches);
}

CandidateOutcome CandidatePipeline::run(const Problem& p, std::optional<double> best_ns) {
  impl_->compile_s = 0;
  CandidateOutcome o = impl_->run(p, best_ns);
  o.compile_s = impl_->compile_s;
  return o;
}

std::variant<std::unique_ptr<LoadedKernel>, CandidateOutcome> CandidatePipeline::Impl::load(
    const Problem& p, bool& constants_passed) {
  if (auto why = launch_problem(limits, p.launch))
    return CandidateOutcome::failed(Status::resources_exceeded, *why);
  Compiled compiled = pool->take(p.launch);
  compile_s = compiled.compile_s;
  if (!compiled.program)
    return CandidateOutcome::failed(
        compiled.resource ? Status::resources_exceeded : Status::compile_failed, compiled.error);
  // Loading keeps its own copy of the cubin, so the compiled program may go.
  auto kernel = std::make_unique<LoadedKernel>(*compiled.program, p.launch);
  if (auto why = parameter_problem(kernel->param_bytes(), ws->args(), constants_passed))
    return CandidateOutcome::failed(Status::launch_failed, *why);
  // Scalars take the widths of this kernel's parameters; the reference runs with the same.
  ws->pass_scalars_as(kernel->param_bytes(), constants_passed);
  if (reference)
    for (std::size_t i = 0; i < ws->args().size(); ++i)
      if (ws->args()[i].dtype != reference_types[i])
        return CandidateOutcome::failed(
            Status::launch_failed,
            fmt::format("the kernel takes argument '{}' as {}, the reference kernel as "
                        "{}; give both the same parameter types",
                        ws->args()[i].name, to_string(ws->args()[i].dtype),
                        to_string(reference_types[i])));
  KernelAttributes attrs;
  const auto attr = [&](CUfunction_attribute a) {
    int v = 0;
    KTUNE_CU(driver().cuFuncGetAttribute(&v, a, kernel->function()));
    return v;
  };
  attrs.max_threads_per_block = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  attrs.registers_per_thread = attr(CU_FUNC_ATTRIBUTE_NUM_REGS);
  attrs.static_shared_bytes = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  if (auto why = resource_problem(attrs, limits, p.launch))
    return CandidateOutcome::failed(Status::resources_exceeded, *why);
  int blocks = 0;
  KTUNE_CU(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, kernel->function(),
      static_cast<int>(p.launch.block[0] * p.launch.block[1] * p.launch.block[2]),
      p.launch.dynamic_shared_bytes));
  if (blocks < 1)
    return CandidateOutcome::failed(Status::resources_exceeded, "not even one block fits on an SM");
  return kernel;
}

// A spec's kernel as run_candidate runs it: compiled (or taken from the pool) and loaded, verified
// against the reference's outputs (a verdict kept per binary and launch), timed on the workspace.
class CandidatePipeline::Impl::KernelCandidate final : public Candidate {
 public:
  KernelCandidate(Impl& pipeline, const Problem& p) : i_(pipeline), p_(p) {}

  std::optional<CandidateOutcome> ready() override {
    auto loaded = i_.load(p_, constants_passed_);
    if (auto* o = std::get_if<CandidateOutcome>(&loaded)) return std::move(*o);
    kernel_ = std::move(std::get<std::unique_ptr<LoadedKernel>>(loaded));
    bound_.emplace(BoundKernel{*kernel_, constants_passed_});
    return std::nullopt;
  }

  Verification verify() override {
    if (!i_.reference) {
      Verification none;
      none.detail = "not verified: the spec declares no reference";
      return none;
    }
    const KernelLaunch& l = p_.launch;
    const std::string key = fmt::format(
        "{} {} {} {} {}", cuda::compile_cache_key(l.source, compile_options(l, i_.device.arch())),
        fmt::join(l.grid, ","), fmt::join(l.block, ","), fmt::join(l.cluster, ","),
        l.dynamic_shared_bytes);
    if (auto it = i_.verified.find(key); it != i_.verified.end()) return it->second;
    const CUstream s = i_.stream.get();
    if (!i_.reference_outputs)
      i_.reference_outputs =
          run_for_outputs(*i_.ws, BoundKernel{*i_.reference, i_.reference_constants}, s);
    const Verification v = bench::verify(*i_.ws, *i_.reference_outputs, *bound_, s);
    if (v.passed) i_.verified.emplace(key, v);
    return v;
  }

  Sampler& sampler() override {
    i_.ws->bind_constants(*bound_, i_.stream.get());
    sampler_.emplace(*bound_, *i_.ws, i_.stream.get(), i_.settings.mode, i_.flusher.get(),
                     i_.device.pci_bus_id);
    return *sampler_;
  }

  // Of the sampler, once measured: hot and graph modes batch launches.
  std::optional<std::size_t> launches_per_sample() const {
    if (!sampler_) return std::nullopt;
    return sampler_->launches_per_sample();
  }

 private:
  Impl& i_;
  const Problem& p_;
  bool constants_passed_ = false;
  std::unique_ptr<LoadedKernel> kernel_;
  std::optional<BoundKernel> bound_;
  std::optional<KernelSampler> sampler_;
};

CandidateOutcome CandidatePipeline::Impl::run(const Problem& p, std::optional<double> best_ns) {
  Measurement header;
  header.kernel = p.name;
  header.config = p.config;
  header.flop = p.flop;
  header.bytes = p.bytes;
  header.mode = settings.mode;
  KernelCandidate candidate(*this, p);
  CandidateOutcome out = run_candidate(candidate, settings, best_ns, std::move(header));
  const auto n = candidate.launches_per_sample();
  if (n && (has_time(out.status) || out.status == Status::timeout))
    out.measurement.launches_per_sample = *n;
  return out;
}

InterleavedResult CandidatePipeline::compare(const Problem& a, const Problem& b,
                                             const StopSettings& stop) {
  Impl& i = *impl_;
  const auto prepare = [&](const Problem& p, const char* which, bool& constants_passed) {
    auto loaded = i.load(p, constants_passed);
    if (auto* o = std::get_if<CandidateOutcome>(&loaded))
      throw Error(fmt::format("configuration {} cannot be compared: {}", which, o->detail));
    auto kernel = std::move(std::get<std::unique_ptr<LoadedKernel>>(loaded));
    if (i.reference) {
      const Verification v = verify(*i.ws, BoundKernel{*i.reference, i.reference_constants},
                                    BoundKernel{*kernel, constants_passed}, i.stream.get());
      if (!v.passed)
        throw Error(fmt::format("configuration {} cannot be compared: {}", which, v.detail));
    }
    return kernel;
  };
  bool ca = false, cb = false;
  const auto ka = prepare(a, "A", ca);
  const auto kb = prepare(b, "B", cb);
  // Both read the same buffers; constant-memory symbols are per module, so bind both.
  const BoundKernel bound_a{*ka, ca}, bound_b{*kb, cb};
  i.ws->bind_constants(bound_a, i.stream.get());
  i.ws->bind_constants(bound_b, i.stream.get());
  KernelSampler sa(bound_a, *i.ws, i.stream.get(), i.settings.mode, i.flusher.get(),
                   i.device.pci_bus_id);
  KernelSampler sb(bound_b, *i.ws, i.stream.get(), i.settings.mode, i.flusher.get(),
                   i.device.pci_bus_id);
  return interleave(sa, sb, stop);
}

}  // namespace ktune::bench
