#include "ktune/tune/gemm_library.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "ktune/bench/runner.hpp"
#include "ktune/bench/verify.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/half.hpp"
#include "ktune/core/version.hpp"
#include "ktune/cuda/check.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/cuda/resources.hpp"

namespace ktune::tune {

std::vector<bench::LtAlgoConfig> enumerate_configs(std::span<const bench::LtAlgoCaps> caps,
                                                   std::size_t limit, std::uint64_t seed) {
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
          if (c.reduction_mask & bit) splits.emplace_back(s, bit);
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

void to_json(nlohmann::json& j, const LibrarySearchResult& r) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& c : r.candidates)
    candidates.push_back({{"config", c.config},
                          {"status", c.status},
                          {"screen_median_ns", c.screen_median_ns},
                          {"detail", c.detail}});
  j = {{"schema_version", kLibrarySearchSchemaVersion},
       {"library", "cublaslt"},
       {"cublaslt_version", r.cublaslt_version},
       {"shape",
        {{"m", r.shape.m},
         {"n", r.shape.n},
         {"k", r.shape.k},
         {"layout", "TN"},
         {"dtype", cuda::to_string(r.shape.dtype)},
         {"bias", r.shape.bias}}},
       {"winner", r.winner},
       {"winner_time", r.winner_time},
       {"default_time", r.default_time},
       {"speedup_vs_default", r.winner_time.time_ns.median > 0
                                  ? r.default_time.time_ns.median / r.winner_time.time_ns.median
                                  : 0.0},
       {"seconds", r.seconds},
       {"power_capped_samples", r.power_capped_samples},
       {"candidates", candidates}};
}

namespace {

std::vector<std::byte> download(CUdeviceptr p, std::size_t bytes) {
  std::vector<std::byte> host(bytes);
  KTUNE_CU(cuda::driver().cuMemcpyDtoH(host.data(), p, bytes));
  return host;
}

}  // namespace

LibrarySearchResult search_cublaslt(const bench::LtGemmShape& shape_in,
                                    const LibrarySearchOptions& o, int ordinal,
                                    const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  cuda::PrimaryContext ctx(ordinal);
  const DeviceIdentity dev = cuda::capture_device(ordinal);
  bench::LtGemm gemm(shape_in);
  const bench::LtGemmShape& shape = gemm.shape();
  LibrarySearchResult result;
  result.shape = shape;
  result.cublaslt_version = bench::cublaslt_version();

  const std::size_t elem = cuda::dtype_bytes(shape.dtype);
  const auto m = static_cast<std::size_t>(shape.m), n = static_cast<std::size_t>(shape.n),
             k = static_cast<std::size_t>(shape.k);
  cuda::Stream stream;
  cuda::DeviceBuffer a(static_cast<std::size_t>(shape.lda) * m * elem),
      b(static_cast<std::size_t>(shape.ldb) * n * elem),
      d(static_cast<std::size_t>(shape.ldd) * n * elem), bias(m * elem),
      workspace(std::max<std::size_t>(o.max_workspace_bytes, 256));
  cuda::fill_random(a.get(), a.bytes() / elem, shape.dtype, 11, stream.get());
  cuda::fill_random(b.get(), b.bytes() / elem, shape.dtype, 12, stream.get());
  cuda::fill_random(bias.get(), m, shape.dtype, 13, stream.get());
  cuda::L2Flusher flusher(
      static_cast<std::size_t>(ctx.attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)));

  auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    gemm.run(algo, reinterpret_cast<const void*>(a.get()), reinterpret_cast<const void*>(b.get()),
             reinterpret_cast<void*>(d.get()), reinterpret_cast<const void*>(bias.get()),
             reinterpret_cast<void*>(workspace.get()), workspace.bytes(), stream.get());
  };
  auto output_of = [&](const cublasLtMatmulAlgo_t& algo) {
    cuda::poison(d.get(), d.bytes(), stream.get());
    run(algo);
    stream.synchronize();
    return download(d.get(), d.bytes());
  };

  // Candidates: cuBLASLt's heuristic first (rank 1 is what PyTorch runs), then enumerated ones.
  std::vector<bench::LtAlgoConfig> configs = gemm.heuristics(o.heuristics, o.max_workspace_bytes);
  if (configs.empty())
    throw Error(fmt::format("cuBLASLt offers no algorithm for a {}x{}x{} {} GEMM on this GPU.",
                            shape.m, shape.n, shape.k, cuda::to_string(shape.dtype)));
  const auto caps = gemm.algo_caps();
  const std::size_t room = o.budget > configs.size() ? o.budget - configs.size() : 0;
  for (auto& c : enumerate_configs(caps, room, o.seed)) configs.push_back(std::move(c));
  progress(fmt::format("{} candidates: {} from the heuristic, {} enumerated over {} algorithm ids",
                       configs.size(), std::min<std::size_t>(o.heuristics, configs.size()),
                       configs.size() > static_cast<std::size_t>(o.heuristics)
                           ? configs.size() - static_cast<std::size_t>(o.heuristics)
                           : 0,
                       caps.size()));

  // The reference: the heuristic's first choice, itself checked on sampled elements against a
  // float64 dot product on the host.
  const cublasLtMatmulAlgo_t default_algo = gemm.prepare(configs.front());
  const std::vector<std::byte> reference = output_of(default_algo);
  {
    const auto ha = download(a.get(), a.bytes()), hb = download(b.get(), b.bytes()),
               hbias = download(bias.get(), bias.bytes());
    std::mt19937_64 rng(o.seed);
    const bench::Tolerance tol = bench::default_tolerance(shape.dtype);
    for (int s = 0; s < 256; ++s) {
      const std::size_t i = rng() % m, j = rng() % n;
      double want = shape.bias ? bench::decode_element(&hbias[i * elem], shape.dtype) : 0.0;
      for (std::size_t p = 0; p < k; ++p)
        want += bench::decode_element(&ha[(i * shape.lda + p) * elem], shape.dtype) *
                bench::decode_element(&hb[(j * shape.ldb + p) * elem], shape.dtype);
      const double got = bench::decode_element(&reference[(j * shape.ldd + i) * elem], shape.dtype);
      // k-long sums of products in [-1, 1): the tolerance grows with sqrt(k).
      if (!(std::abs(got - want) <= tol.abs * std::sqrt(double(k)) + tol.rel * std::abs(want)))
        throw Error(
            fmt::format("cuBLASLt's default algorithm computes element ({}, {}) as {} "
                        "where {} is expected; the reference itself is wrong, so nothing "
                        "was tuned.",
                        i, j, got, want));
    }
  }

  double best_ns = INFINITY;
  for (auto& cfg : configs) {
    LibraryCandidate cand;
    cand.config = cfg;
    const auto checked = gemm.check(cfg);
    if (!checked || checked->workspace_bytes > workspace.bytes()) {
      cand.status = "rejected";
      cand.detail =
          checked ? "needs more workspace than allowed" : "cublasLtMatmulAlgoCheck failed";
      result.candidates.push_back(std::move(cand));
      continue;
    }
    cand.config = *checked;
    cand.config.source = cfg.source;
    cand.config.heuristic_rank = cfg.heuristic_rank;
    try {
      const cublasLtMatmulAlgo_t algo = gemm.prepare(cand.config);
      const auto out = output_of(algo);
      const auto cmp = bench::compare_outputs(reference, out, shape.dtype,
                                              bench::default_tolerance(shape.dtype), "D");
      if (!cmp.ok) {
        cand.status = "wrong";
        cand.detail = cmp.detail;
        result.candidates.push_back(std::move(cand));
        continue;
      }
      bench::StopRule rule(o.screen,
                           std::isfinite(best_ns) ? std::optional(best_ns) : std::nullopt);
      bench::CallSampler sampler([&] { run(algo); }, stream.get(), flusher, dev.pci_bus_id);
      bench::run_until_stopped(sampler, rule);
      result.power_capped_samples += rule.power_capped();
      if (rule.times_ns().empty())
        throw Error("every sample was taken while the GPU was throttled");
      bench::Measurement meas;
      bench::record_samples(meas, rule);
      cand.screen_median_ns = meas.time_ns.median;
      cand.status = "ok";
      best_ns = std::min(best_ns, cand.screen_median_ns);
    } catch (const Error& e) {
      cand.status = "failed";
      cand.detail = e.what();
    }
    result.candidates.push_back(std::move(cand));
  }

  std::vector<const LibraryCandidate*> ok;
  for (const auto& c : result.candidates)
    if (c.status == "ok") ok.push_back(&c);
  if (ok.empty())
    throw Error(
        "no cuBLASLt candidate ran and verified for this GEMM; see the candidates' "
        "statuses with --json.");
  std::sort(ok.begin(), ok.end(),
            [](auto* x, auto* y) { return x->screen_median_ns < y->screen_median_ns; });
  progress(fmt::format("{} of {} candidates verified; measuring the {} fastest and the default",
                       ok.size(), result.candidates.size(), std::min(o.finalists, ok.size())));

  auto measure_full = [&](const bench::LtAlgoConfig& cfg) {
    const cublasLtMatmulAlgo_t algo = gemm.prepare(cfg);
    bench::StopRule rule(o.full);
    bench::CallSampler sampler([&] { run(algo); }, stream.get(), flusher, dev.pci_bus_id);
    bench::Measurement meas;
    meas.kernel = "cublasLtMatmul";
    meas.config = cfg;
    meas.wall_time_s = bench::run_until_stopped(sampler, rule);
    result.power_capped_samples += rule.power_capped();
    if (rule.times_ns().empty())
      throw Error(
          "every sample of the final measurement was taken while the GPU was throttled "
          "(thermal or hardware slowdown); let it cool and tune again.");
    bench::record_samples(meas, rule);
    meas.flop = 2.0 * double(m) * double(n) * double(k);
    meas.verification = {true, true, "agrees with cuBLASLt's default algorithm"};
    return meas;
  };
  result.default_time = measure_full(configs.front());
  result.winner = configs.front();
  result.winner_time = result.default_time;
  for (std::size_t i = 0; i < std::min(o.finalists, ok.size()); ++i) {
    bench::Measurement meas = measure_full(ok[i]->config);
    if (meas.time_ns.median < result.winner_time.time_ns.median) {
      result.winner = ok[i]->config;
      result.winner_time = std::move(meas);
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

std::string gemm_op_name(bool bias) {
  return bias ? "gemm_bias" : "gemm";
}

store::CacheEntry library_winner_entry(const LibrarySearchResult& r, const store::Environment& env,
                                       const HostIdentity& host, std::size_t budget) {
  store::CacheEntry e;
  e.key.op = gemm_op_name(r.shape.bias);
  e.key.dtype = r.shape.dtype == cuda::DType::bf16 ? "bf16" : "f16";
  e.key.arch = env.arch;
  e.key.device_name = env.device_name;
  e.key.toolkit = env.toolkit;
  e.key.driver_major = env.driver_major;
  e.shape = {r.shape.m, r.shape.n, r.shape.k};
  e.config = r.winner;
  e.config["layout"] = "TN";
  e.config["cublaslt_version"] = r.cublaslt_version;
  const Summary& t = r.winner_time.time_ns;
  e.median_ns = t.median;
  e.noise_ns = (t.p95 - t.p5) / 2;
  e.samples = static_cast<std::int64_t>(r.winner_time.samples_ns.size());
  e.throughput = r.winner_time.flop_per_s();
  e.throughput_unit = "flop/s";
  e.verification = "passed";
  e.provenance.ktune_version = version();
  e.provenance.ktune_commit = git_commit();
  e.provenance.host = host.hostname;
  e.provenance.created_at = utc_now_iso8601();
  e.provenance.strategy = "cublaslt-search";
  e.provenance.budget = {{"evaluations", budget},
                         {"evaluated", r.candidates.size()},
                         {"default_median_ns", r.default_time.time_ns.median}};
  return e;
}

}  // namespace ktune::tune
