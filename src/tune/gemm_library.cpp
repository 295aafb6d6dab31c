#include "ktune/tune/gemm_library.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "ktune/bench/runner.hpp"
#include "ktune/bench/verify.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/core/version.hpp"
#include "ktune/cuda/check.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/cuda/resources.hpp"

namespace ktune::tune {

bench::GemmProblem library_problem(const std::string& op,
                                   const std::map<std::string, std::int64_t>& shape,
                                   const std::string& dtype) {
  for (const char* dim : {"m", "n", "k"})
    if (!shape.contains(dim))
      throw Error(
          fmt::format("--shape lacks {}; give --shape m=M,n=N,k=K[,batch=B] (BLAS sizes: D is m x "
                      "n, k the reduction).",
                      dim));
  static constexpr const char* kStorage[] = {"lda",      "ldb",      "ldc",      "ldd",
                                             "stride_a", "stride_b", "stride_c", "stride_d"};
  for (const auto& [name, v] : shape)
    if (name != "m" && name != "n" && name != "k" && name != "batch" &&
        std::find(std::begin(kStorage), std::end(kStorage), name) == std::end(kStorage))
      throw Error(
          fmt::format("--shape names '{}'; a cuBLASLt GEMM takes m, n, k and batch, and for "
                      "storage that is not packed lda, ldb, ldc, ldd, stride_a .. stride_d (e.g. "
                      "m=4096,n=2048,k=4096,batch=8,lda=12288).",
                      name));
  for (const char* dim : {"m", "n", "k", "batch"})
    if (const auto it = shape.find(dim); it != shape.end() && it->second <= 0)
      throw Error(
          fmt::format("--shape {}={} needs a positive integer size (only the batch "
                      "strides may be 0); write e.g. --shape m=4096,n=2048,k=4096.",
                      dim, it->second));
  const std::int64_t batch = shape.contains("batch") ? shape.at("batch") : 1;
  bench::GemmProblem p = bench::gemm_problem_of_key(
      op, dtype.empty() ? "f16" : dtype,
      std::vector<std::int64_t>{shape.at("m"), shape.at("n"), shape.at("k"), batch},
      "--op/--shape/--dtype");
  std::int64_t* fields[] = {&p.lda,      &p.ldb,      &p.ldc,      &p.ldd,
                            &p.stride_a, &p.stride_b, &p.stride_c, &p.stride_d};
  for (std::size_t i = 0; i < std::size(kStorage); ++i)
    if (const auto it = shape.find(kStorage[i]); it != shape.end()) *fields[i] = it->second;
  bench::validate(p, "--shape");
  return p;
}

std::uint32_t split_k_reductions(const bench::GemmProblem& p) {
  constexpr std::uint32_t kComputeType = 2;  // CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
  return dtype_bytes(p.dtype) == 2 ? kComputeType : ~0u;
}

std::vector<bench::LtAlgoConfig> enumerate_configs(std::span<const bench::LtAlgoCaps> caps,
                                                   std::size_t limit, std::uint64_t seed,
                                                   std::uint32_t reductions) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<bench::LtAlgoConfig>> per_algo;
  for (const auto& c : caps) {
    std::vector<bench::LtAlgoConfig> list;
    const std::vector<std::uint32_t> tiles =
        c.tiles.empty() ? std::vector<std::uint32_t>{0} : c.tiles;
    const std::vector<std::uint32_t> stages =
        c.stages.empty() ? std::vector<std::uint32_t>{0} : c.stages;
    // Split-K only where the algorithm supports it, each with every reduction scheme it offers.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> splits{{1, 0}};
    if (c.splitk)
      for (std::uint32_t s : {2u, 4u, 8u})
        for (std::uint32_t bit = 1; bit <= 4; bit <<= 1)
          if (c.reduction_mask & reductions & bit) splits.emplace_back(s, bit);
    const std::uint32_t swizzles = c.swizzle ? 2 : 1;
    const std::uint32_t customs = static_cast<std::uint32_t>(std::clamp(c.custom_max, 0, 3)) + 1;
    for (auto t : tiles)
      for (auto st : stages)
        for (auto [s, r] : splits)
          for (std::uint32_t w = 0; w < swizzles; ++w)
            for (std::uint32_t u = 0; u < customs; ++u) {
              bench::LtAlgoConfig cfg;
              cfg.algo_id = c.algo_id;
              cfg.tile = t;
              cfg.stages = st;
              cfg.splitk = s;
              cfg.reduction = r;
              cfg.swizzle = w;
              cfg.custom = u;
              cfg.source = "enumerated";
              list.push_back(cfg);
            }
    std::shuffle(list.begin(), list.end(), rng);
    per_algo.push_back(std::move(list));
  }
  std::vector<bench::LtAlgoConfig> out;
  for (std::size_t round = 0; out.size() < limit; ++round) {
    bool any = false;
    for (const auto& list : per_algo)
      if (round < list.size() && out.size() < limit) {
        out.push_back(list[round]);
        any = true;
      }
    if (!any) break;
  }
  return out;
}

// ------------------------------------------------------------------------------- candidates
namespace {

// The fields a session sees, in one list: the ConfigMap, the space's parameters and the lookup
// of a proposal all iterate it.
struct Field {
  const char* name;
  std::int64_t (*get)(const bench::LtAlgoConfig&);
};
const Field kFields[] = {
    {"algo_id", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.algo_id}; }},
    {"tile", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.tile}; }},
    {"stages", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.stages}; }},
    {"splitk", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.splitk}; }},
    {"reduction", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.reduction}; }},
    {"swizzle", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.swizzle}; }},
    {"custom", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.custom}; }},
    {"inner_shape", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.inner_shape}; }},
    {"cluster_shape", [](const bench::LtAlgoConfig& c) { return std::int64_t{c.cluster_shape}; }},
};

std::vector<std::int64_t> field_values(const bench::LtAlgoConfig& c) {
  std::vector<std::int64_t> v;
  for (const auto& f : kFields) v.push_back(f.get(c));
  return v;
}

}  // namespace

ConfigMap library_config(const bench::LtAlgoConfig& c) {
  ConfigMap m;
  for (const auto& f : kFields) m[f.name] = Value(f.get(c));
  return m;
}

void to_json(nlohmann::json& j, const LibraryCandidates& c) {
  j = {{"schema_version", kLibraryCandidatesSchemaVersion},
       {"cublaslt_version", c.cublaslt_version},
       {"heuristic", c.heuristic},
       {"offered", c.offered},
       {"rejected", c.rejected},
       {"configs", c.configs}};
}

void from_json(const nlohmann::json& j, LibraryCandidates& c) {
  try {
    if (j.at("schema_version").get<int>() != kLibraryCandidatesSchemaVersion)
      throw Error(fmt::format("schema_version {} is not {}", j.at("schema_version").dump(),
                              kLibraryCandidatesSchemaVersion));
    c.cublaslt_version = j.at("cublaslt_version").get<std::string>();
    c.heuristic = j.at("heuristic").get<std::size_t>();
    c.offered = j.at("offered").get<std::size_t>();
    c.rejected = j.at("rejected").get<std::size_t>();
    c.configs.clear();
    for (const auto& x : j.at("configs")) c.configs.push_back(x.get<bench::LtAlgoConfig>());
    if (c.heuristic > c.configs.size()) throw Error("more heuristic candidates than candidates");
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("a cuBLASLt candidate list is malformed ({})", e.what()));
  }
}

LibrarySpace::LibrarySpace(const LibraryCandidates& candidates) : candidates_(candidates) {
  if (candidates.configs.empty())
    throw Error(
        "cuBLASLt offers no algorithm for this GEMM on this GPU, so there is nothing to tune.");
  std::vector<Parameter> params;
  for (std::size_t f = 0; f < std::size(kFields); ++f) {
    std::set<std::int64_t> values;
    for (const auto& c : candidates.configs) values.insert(kFields[f].get(c));
    Parameter p;
    p.name = kFields[f].name;
    p.type = "int";
    for (std::int64_t v : values) p.values.push_back(Value(v));
    params.push_back(std::move(p));
  }
  space_ = std::make_unique<SearchSpace>(std::move(params), std::vector<Constraint>{});
  std::vector<std::uint32_t> flat;
  std::vector<Configuration> configs;
  for (const auto& c : candidates.configs) {
    Configuration conf;
    const auto values = field_values(c);
    for (std::size_t f = 0; f < values.size(); ++f) {
      const auto& pv = space_->parameters()[f].values;
      const auto it = std::find(pv.begin(), pv.end(), Value(values[f]));
      conf.push_back(static_cast<std::uint32_t>(it - pv.begin()));
    }
    flat.insert(flat.end(), conf.begin(), conf.end());
    configs.push_back(std::move(conf));
  }
  index_ = std::make_unique<IndexedSpace>(IndexedSpace::from_flat(*space_, std::move(flat)));
  for (std::size_t i = 0; i < candidates.heuristic; ++i)
    if (const auto pos = index_->find(configs[i])) heuristic_.push_back(*pos);
}

const bench::LtAlgoConfig* LibrarySpace::find(const ConfigMap& config) const {
  for (const auto& c : candidates_.configs)
    if (library_config(c) == config) return &c;
  return nullptr;
}

// ------------------------------------------------------------------------------- GPU side
namespace {

std::vector<std::byte> download(CUdeviceptr p, std::size_t bytes) {
  std::vector<std::byte> host(bytes);
  KTUNE_CU(cuda::driver().cuMemcpyDtoH(host.data(), p, bytes));
  return host;
}

std::size_t bytes_of(const bench::StoredMatrix& s, std::int64_t batch, std::size_t elem) {
  return static_cast<std::size_t>(s.elements(batch)) * elem;
}

}  // namespace

struct LibraryEvaluator::Impl {
  LibrarySearchOptions options;
  cuda::PrimaryContext ctx;
  DeviceIdentity device;
  bench::LtGemm gemm;
  cuda::Stream stream;
  cuda::DeviceBuffer a, b, d, bias, workspace;
  cuda::L2Flusher flusher;
  LibraryCandidates candidates;
  std::vector<std::byte> reference;  // D of the first heuristic choice

  Impl(const bench::GemmProblem& p, const LibrarySearchOptions& o, int ordinal)
      : options(o),
        ctx(ordinal),
        device(cuda::capture_device(ordinal)),
        gemm(p),
        a(std::max<std::size_t>(bytes_of(bench::stored_a(gemm.problem()), p.batch, elem()), 1)),
        b(std::max<std::size_t>(bytes_of(bench::stored_b(gemm.problem()), p.batch, elem()), 1)),
        d(std::max<std::size_t>(bytes_of(bench::stored_d(gemm.problem()), p.batch, elem()), 1)),
        bias(static_cast<std::size_t>(p.m) * elem()),
        workspace(std::max<std::size_t>(o.max_workspace_bytes, 256)),
        flusher(static_cast<std::size_t>(ctx.attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE))) {
    const DType t = gemm.problem().dtype;
    cuda::fill_random(a.get(), a.bytes() / elem(), t, o.seed * 3 + 11, stream.get());
    cuda::fill_random(b.get(), b.bytes() / elem(), t, o.seed * 3 + 12, stream.get());
    cuda::fill_random(bias.get(), bias.bytes() / elem(), t, o.seed * 3 + 13, stream.get());
    find_candidates();
    reference = output_of(gemm.prepare(candidates.configs.front()));
    check_reference();
  }

  std::size_t elem() const { return dtype_bytes(gemm.problem().dtype); }

  void run(const cublasLtMatmulAlgo_t& algo) {
    bench::GemmBuffers buf;
    buf.a = reinterpret_cast<const void*>(a.get());
    buf.b = reinterpret_cast<const void*>(b.get());
    buf.d = reinterpret_cast<void*>(d.get());
    buf.bias = reinterpret_cast<const void*>(bias.get());
    gemm.run(algo, buf, reinterpret_cast<void*>(workspace.get()), workspace.bytes(), stream.get());
  }

  std::vector<std::byte> output_of(const cublasLtMatmulAlgo_t& algo) {
    cuda::poison(d.get(), d.bytes(), stream.get());
    run(algo);
    stream.synchronize();
    return download(d.get(), d.bytes());
  }

  // The heuristic's choices first (rank 1 is what PyTorch runs), then enumerated configurations,
  // each kept once and only when cuBLASLt accepts it within the workspace limit.
  void find_candidates() {
    candidates.cublaslt_version = bench::cublaslt_version();
    std::set<std::vector<std::int64_t>> seen;
    const auto offer = [&](const bench::LtAlgoConfig& cfg) {
      const auto checked = gemm.check(cfg);
      if (!checked || checked->workspace_bytes > workspace.bytes()) {
        ++candidates.rejected;
        return;
      }
      bench::LtAlgoConfig c = *checked;
      c.source = cfg.source;
      c.heuristic_rank = cfg.heuristic_rank;
      if (seen.insert(field_values(c)).second) candidates.configs.push_back(std::move(c));
    };
    for (const auto& c : gemm.heuristics(options.heuristics, options.max_workspace_bytes)) offer(c);
    candidates.heuristic = candidates.configs.size();
    if (candidates.configs.empty()) {
      const bench::GemmProblem& p = gemm.problem();
      throw Error(fmt::format(
          "cuBLASLt offers no algorithm for the {} {}x{}x{} (batch {}) {} GEMM on this GPU, so "
          "there is nothing to tune.",
          bench::gemm_layout(p), p.m, p.n, p.k, p.batch, bench::gemm_cache_dtype(p)));
    }
    const auto enumerated = enumerate_configs(gemm.algo_caps(), options.enumerated, options.seed,
                                              split_k_reductions(gemm.problem()));
    candidates.offered = enumerated.size();
    for (const auto& c : enumerated) offer(c);
  }

  // The reference itself is checked against float64 on sampled elements of every batch.
  void check_reference() {
    const bench::GemmProblem& p = gemm.problem();
    const auto ha = download(a.get(), a.bytes()), hb = download(b.get(), b.bytes()),
               hbias = download(bias.get(), bias.bytes());
    bench::GemmHostInputs in;
    in.a = ha;
    in.b = hb;
    in.bias = hbias;
    std::mt19937_64 rng(options.seed);
    const bench::StoredMatrix sd = bench::stored_d(p);
    for (int s = 0; s < 256; ++s) {
      const auto batch = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(p.batch));
      const auto i = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(p.m));
      const auto j = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(p.n));
      const bench::GemmElement want = bench::gemm_host_element(p, in, batch, i, j);
      const std::size_t at = static_cast<std::size_t>(batch * sd.stride + i + j * sd.ld) * elem();
      const double got = bench::decode_element(&reference[at], p.dtype);
      if (!bench::gemm_element_agrees(p, want, got))
        throw Error(fmt::format(
            "cuBLASLt's default algorithm computes element ({}, {}) of batch {} as {} where {} is "
            "expected; the reference itself is wrong, so nothing was tuned.",
            i, j, batch, got, want.linear));
    }
  }

  // The candidate a proposed configuration names: one found here, else (proposed from a record
  // of another process's discovery) rebuilt from its fields.
  bench::LtAlgoConfig config_of(const ConfigMap& config) const {
    const bench::LtAlgoConfig* known = nullptr;
    for (const auto& c : candidates.configs)
      if (library_config(c) == config) known = &c;
    if (known) return *known;
    bench::LtAlgoConfig cfg;
    cfg.algo_id = static_cast<int>(config.at("algo_id").as_int());
    cfg.tile = static_cast<std::uint32_t>(config.at("tile").as_int());
    cfg.stages = static_cast<std::uint32_t>(config.at("stages").as_int());
    cfg.splitk = static_cast<std::uint32_t>(config.at("splitk").as_int());
    cfg.reduction = static_cast<std::uint32_t>(config.at("reduction").as_int());
    cfg.swizzle = static_cast<std::uint32_t>(config.at("swizzle").as_int());
    cfg.custom = static_cast<std::uint32_t>(config.at("custom").as_int());
    cfg.inner_shape = static_cast<std::uint32_t>(config.at("inner_shape").as_int());
    cfg.cluster_shape = static_cast<std::uint32_t>(config.at("cluster_shape").as_int());
    return cfg;
  }

  class AlgoCandidate;
};

// A cuBLASLt algorithm as the pipeline's run_candidate runs it: checked and looked up, verified
// against the reference (cuBLASLt's first heuristic choice), timed as calls.
class LibraryEvaluator::Impl::AlgoCandidate final : public bench::Candidate {
 public:
  AlgoCandidate(Impl& lib, const bench::LtAlgoConfig& config) : lib_(lib), config_(config) {}

  std::optional<CandidateOutcome> ready() override {
    const auto checked = lib_.gemm.check(config_);
    if (!checked)
      return CandidateOutcome::failed(
          Status::launch_failed,
          "cublasLtMatmulAlgoCheck refuses this configuration for the problem");
    if (checked->workspace_bytes > lib_.workspace.bytes())
      return CandidateOutcome::failed(
          Status::resources_exceeded,
          fmt::format("needs {} bytes of workspace, over the {} allowed", checked->workspace_bytes,
                      lib_.workspace.bytes()));
    algo_ = lib_.gemm.prepare(config_);
    return std::nullopt;
  }

  bench::Verification verify() override {
    const auto out = lib_.output_of(algo_);
    const bench::GemmProblem& p = lib_.gemm.problem();
    const bench::GemmTolerance tol = bench::gemm_tolerance(p);
    const auto cmp = bench::compare_outputs(lib_.reference, out, p.dtype,
                                            {tol.bound(static_cast<double>(p.k), 0), tol.rel}, "D");
    bench::Verification v;
    v.checked = true;
    v.passed = cmp.ok;
    v.detail = cmp.ok ? fmt::format("agrees with cuBLASLt's first heuristic choice ({} elements)",
                                    cmp.elements)
                      : cmp.detail;
    return v;
  }

  bench::Sampler& sampler() override {
    sampler_.emplace([this] { lib_.run(algo_); }, lib_.stream.get(), lib_.flusher,
                     lib_.device.pci_bus_id);
    return *sampler_;
  }

 private:
  Impl& lib_;
  const bench::LtAlgoConfig& config_;
  cublasLtMatmulAlgo_t algo_{};
  std::optional<bench::CallSampler> sampler_;
};

LibraryEvaluator::LibraryEvaluator(const bench::GemmProblem& problem,
                                   const LibrarySearchOptions& options, int ordinal)
    : impl_(std::make_unique<Impl>(problem, options, ordinal)) {}

LibraryEvaluator::~LibraryEvaluator() = default;

nlohmann::json LibraryEvaluator::describe() {
  return impl_->candidates;
}

CandidateOutcome LibraryEvaluator::evaluate(const ConfigMap& config,
                                            std::optional<double> best_ns) {
  const bench::LtAlgoConfig config_found = impl_->config_of(config);
  Impl::AlgoCandidate candidate(*impl_, config_found);
  return bench::run_candidate(candidate, impl_->options.pipeline, best_ns);
}

// ------------------------------------------------------------------------------- host side
LibraryCandidates library_candidates(Evaluator& gpu, const std::filesystem::path& dir,
                                     bool resume) {
  const std::filesystem::path file = dir / "candidates.json";
  if (resume && std::filesystem::exists(file)) {
    try {
      return nlohmann::json::parse(read_file(file)).get<LibraryCandidates>();
    } catch (const std::exception& e) {
      throw Error(
          fmt::format("{}: {}; start a new session in another folder.", file.string(), e.what()));
    }
  }
  LibraryCandidates c = gpu.describe().get<LibraryCandidates>();
  std::filesystem::create_directories(dir);
  write_file_atomic(file, nlohmann::json(c).dump(1) + "\n");
  return c;
}

SearchTarget library_target(const bench::GemmProblem& problem, const LibraryCandidates& candidates,
                            const LibrarySpace& space) {
  SearchTarget t;
  t.source = "cuBLASLt " + candidates.cublaslt_version;
  t.op = bench::gemm_cache_op(problem);
  t.shape = {{"m", problem.m}, {"n", problem.n}, {"k", problem.k}, {"batch", problem.batch}};
  t.space = &space.index();
  t.first = space.heuristic_positions();
  return t;
}

const SessionRecord* library_default_record(const LibraryCandidates& candidates,
                                            const SessionSummary& session) {
  if (candidates.heuristic == 0) return nullptr;
  const ConfigMap first = library_config(candidates.configs.front());
  for (const auto& r : session.records)
    if (r.config == first && r.result.status == Status::ok && r.result.full) return &r;
  return nullptr;
}

const SessionRecord* library_winner_record(const LibraryCandidates& candidates,
                                           const SessionSummary& session) {
  return kept_winner(session, library_default_record(candidates, session));
}

store::CacheEntry library_winner_entry(const bench::GemmProblem& problem,
                                       const LibraryCandidates& candidates,
                                       const SessionSummary& session, const store::Environment& env,
                                       const HostIdentity& host) {
  const SessionRecord* chosen = library_winner_record(candidates, session);
  if (!chosen)
    throw Error(fmt::format(
        "the search over cuBLASLt's algorithms for {} found no verified configuration, so nothing "
        "goes into the cache; see its results.jsonl for why candidates failed.",
        bench::gemm_tune_command(problem)));
  const SessionRecord& best = *chosen;
  const bench::LtAlgoConfig* winner = nullptr;
  for (const auto& c : candidates.configs)
    if (library_config(c) == best.config) winner = &c;
  if (!winner)
    throw Error(
        "internal: the session's best configuration is not one of the cuBLASLt candidates.");
  store::CacheEntry e;
  e.key.op = bench::gemm_cache_op(problem);
  e.key.dtype = bench::gemm_cache_dtype(problem);
  e.key.arch = env.arch;
  e.key.device_name = env.device_name;
  e.key.toolkit = env.toolkit;
  e.key.driver_major = env.driver_major;
  e.shape = bench::gemm_cache_shape(problem);
  e.config = *winner;
  e.config["layout"] = bench::gemm_layout(problem);
  e.config["problem"] = bench::resolved(problem);  // the exact descriptor the router matches
  // How the times were taken, so a reader can tell them from times taken otherwise.
  e.config["measurement"] = {{"l2", "flushed before each sample (cold)"},
                             {"timing", "eager launches, CUDA events"},
                             {"clocks", "as found, not locked"}};
  e.config["cublaslt_version"] = candidates.cublaslt_version;
  e.median_ns = best.result.time_ns();
  e.noise_ns = best.result.noise_ns();
  e.samples = static_cast<std::int64_t>(best.result.samples());
  e.throughput = bench::gemm_flop(problem) / (e.median_ns * 1e-9);
  e.throughput_unit = "flop/s";
  e.verification = "passed";
  e.provenance.ktune_version = version();
  e.provenance.ktune_commit = git_commit();
  e.provenance.host = host.hostname;
  e.provenance.created_at = utc_now_iso8601();
  e.provenance.strategy = "cublaslt/" + session.strategy;
  e.provenance.budget = {{"evaluations", session.budget},
                         {"evaluated", session.evaluations},
                         {"candidates", candidates.configs.size()},
                         {"seed", session.seed}};
  if (const SessionRecord* d = library_default_record(candidates, session))
    e.provenance.budget["default_median_ns"] = d->result.time_ns();
  return e;
}

}  // namespace ktune::tune
