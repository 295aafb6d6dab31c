#pragma once
// Library selection for GEMMs: searches cuBLASLt's algorithms and their configurations for one
// problem (the heuristic's candidates, then algorithm ids enumerated over tile, stages, split-K,
// reduction scheme, swizzle and custom option), verifies each candidate's output against the
// reference, times them with the bench harness and returns the winner for the cache (op "gemm",
// or "gemm_bias" with the bias epilogue; shape m, n, k). The enumeration is plain C++; the search
// needs a GPU.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/bench/cublaslt_gemm.hpp"
#include "ktune/bench/measurement.hpp"
#include "ktune/bench/stop_rule.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/store/cache_entry.hpp"

namespace ktune::tune {

inline constexpr int kLibrarySearchSchemaVersion = 1;

struct LibrarySearchOptions {
  std::size_t budget = 120;                     // candidates measured, heuristic ones included
  int heuristics = 16;                          // cuBLASLt heuristic candidates asked for first
  std::size_t finalists = 4;                    // fastest screened candidates measured fully
  std::size_t max_workspace_bytes = 32u << 20;  // PyTorch's cuBLASLt workspace on Hopper
  std::uint64_t seed = 1;
  bench::StopSettings screen = bench::StopSettings::screen();
  // The harness's full rule, with a 3 s timeout: a power-capped GEMM's noise stays above the
  // 0.5 % bound (H100: every finalist ran into the 15 s default), and 3 s is thousands of samples.
  bench::StopSettings full = [] {
    bench::StopSettings s = bench::StopSettings::full();
    s.timeout_s = 3;
    return s;
  }();
};

// Enumerated configurations of the given algorithm ids, at most `limit`, taken in turn from each
// id's shuffled list (seeded) so that every algorithm gets a share of a small budget.
std::vector<bench::LtAlgoConfig> enumerate_configs(std::span<const bench::LtAlgoCaps> caps,
                                                   std::size_t limit, std::uint64_t seed);

// One candidate's fate: "ok", "rejected" (cublasLtMatmulAlgoCheck said no), "failed" (the call
// failed), "wrong" (its output disagreed with the reference).
struct LibraryCandidate {
  bench::LtAlgoConfig config;
  std::string status;
  double screen_median_ns = 0;
  std::string detail;
};

struct LibrarySearchResult {
  bench::LtGemmShape shape;
  std::string cublaslt_version;
  std::vector<LibraryCandidate> candidates;
  bench::LtAlgoConfig winner;
  bench::Measurement winner_time;   // full measurement, cold
  bench::Measurement default_time;  // cuBLASLt's own first choice (what PyTorch runs), full
  double seconds = 0;
  std::size_t power_capped_samples = 0;  // kept, though NVML flagged the software power cap
};

void to_json(nlohmann::json& j, const LibrarySearchResult& r);

// Searches on device `ordinal`; `progress` receives one line per stage. ktune::Error when no
// candidate passes.
LibrarySearchResult search_cublaslt(const bench::LtGemmShape& shape,
                                    const LibrarySearchOptions& options, int ordinal,
                                    const std::function<void(const std::string&)>& progress);

// The cache entry of a search's winner: op "gemm" ("gemm_bias" with the bias epilogue), dtype as
// the cache names it ("f16", "bf16"), shape {m, n, k}, config the winner's LtAlgoConfig plus its
// layout and cuBLASLt version.
store::CacheEntry library_winner_entry(const LibrarySearchResult& r, const store::Environment& env,
                                       const HostIdentity& host, std::size_t budget);
std::string gemm_op_name(bool bias);

}  // namespace ktune::tune
