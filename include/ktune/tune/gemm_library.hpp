#pragma once
// Library selection for GEMMs: cuBLASLt's algorithms for one problem (bench/gemm_problem.hpp: any
// layout, strided batch, epilogue, element and compute type), searched by a tuning session like a
// spec's configurations. The GPU side (LibraryEvaluator, in the isolated measuring process) finds
// the candidates -- cuBLASLt's heuristic, best first, then algorithm ids enumerated over tile,
// stages, split-K, reduction scheme, swizzle and custom option, each accepted by
// cublasLtMatmulAlgoCheck -- and measures each through the candidate pipeline's stages (verify
// against the reference, screen, full rule) with the one status type. The host side makes the
// session's space from the candidates (LibrarySpace), so results.jsonl, T4, resume, strategies,
// crash isolation and the summary are the session's own.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/bench/cublaslt_gemm.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/bench/pipeline.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/store/cache_entry.hpp"
#include "ktune/tune/session.hpp"

namespace ktune::tune {

inline constexpr int kLibraryCandidatesSchemaVersion = 1;

struct LibrarySearchOptions {
  int heuristics = 16;                          // cuBLASLt heuristic candidates asked for first
  std::size_t enumerated = 1024;                // enumerated configurations offered at most
  std::size_t max_workspace_bytes = 32u << 20;  // PyTorch's cuBLASLt workspace on Hopper
  std::uint64_t seed = 1;                       // the enumeration's shuffle and the input fill
  bench::PipelineSettings pipeline = [] {
    bench::PipelineSettings s;
    s.full = bench::PipelineSettings::tuning_full();
    return s;
  }();
};

// The problem `ktune tune --library cublaslt --op OP --shape m=..,n=..,k=..[,batch=..] --dtype D`
// names, with packed layouts (as gemm_tune_command writes it); ktune::Error naming the flag and the
// fix.
bench::GemmProblem library_problem(const std::string& op,
                                   const std::map<std::string, std::int64_t>& shape,
                                   const std::string& dtype);

// Enumerated configurations of the given algorithm ids, at most `limit`, taken in turn from each
// id's shuffled list (seeded) so that every algorithm gets a share of a small budget. Split-K
// configurations use the reduction schemes in `reductions` (CUBLASLT_REDUCTION_SCHEME_* bits) that
// the algorithm supports.
// The split-K reduction schemes enumerate_configs may offer for `p`: for 16-bit outputs only the
// one in the compute type, since partial sums reduced in f16 or bf16 lose what the f32
// accumulation kept and such candidates fail verification; every scheme otherwise.
std::uint32_t split_k_reductions(const bench::GemmProblem& p);

std::vector<bench::LtAlgoConfig> enumerate_configs(std::span<const bench::LtAlgoCaps> caps,
                                                   std::size_t limit, std::uint64_t seed,
                                                   std::uint32_t reductions = ~0u);

// What the GPU side found to choose among: every configuration cublasLtMatmulAlgoCheck accepted
// within the workspace limit, heuristic ones first in rank order, no two with the same fields.
struct LibraryCandidates {
  std::string cublaslt_version;
  std::vector<bench::LtAlgoConfig> configs;
  std::size_t heuristic = 0;  // of configs, from the heuristic (the first ones)
  std::size_t offered = 0;    // enumerated configurations checked
  std::size_t rejected = 0;   // of the heuristic's and those, refused or over the workspace
};
// {"schema_version", "cublaslt_version", "heuristic", "offered", "rejected", "configs": [...]}
void to_json(nlohmann::json& j, const LibraryCandidates& c);
// ktune::Error naming the field when the JSON is not what to_json writes.
void from_json(const nlohmann::json& j, LibraryCandidates& c);

// A candidate as a session proposes it: its configuration fields by name (algo_id, tile, stages,
// splitk, reduction, swizzle, custom, inner_shape, cluster_shape).
ConfigMap library_config(const bench::LtAlgoConfig& c);

// The session's space over the candidates: one parameter per configuration field (the values the
// candidates take), and the candidates as its explicit set.
class LibrarySpace {
 public:
  explicit LibrarySpace(const LibraryCandidates& candidates);
  const IndexedSpace& index() const { return *index_; }
  // The heuristic's candidates' positions, best first: a session proposes them first, and the
  // first one (what PyTorch runs) is the default every winner is measured against.
  const std::vector<std::size_t>& heuristic_positions() const { return heuristic_; }
  // The candidate a proposed configuration is (its blob and workspace), or nullptr.
  const bench::LtAlgoConfig* find(const ConfigMap& config) const;

 private:
  const LibraryCandidates& candidates_;
  std::unique_ptr<SearchSpace> space_;
  std::unique_ptr<IndexedSpace> index_;
  std::vector<std::size_t> heuristic_;
};

// The GPU side of a library search on device `ordinal`: builds the problem's buffers (random
// inputs), finds the candidates, computes the reference (cuBLASLt's first heuristic choice, itself
// checked against float64 on sampled elements; ktune::Error when it disagrees), then measures
// configurations. A configuration that breaks the context comes back `fatal`.
class LibraryEvaluator : public Evaluator {
 public:
  LibraryEvaluator(const bench::GemmProblem& problem, const LibrarySearchOptions& options,
                   int ordinal);
  ~LibraryEvaluator() override;
  nlohmann::json describe() override;  // the LibraryCandidates
  std::size_t next_ready(const std::vector<ConfigMap>&) override { return 0; }  // none compiles
  CandidateOutcome evaluate(const ConfigMap& config, std::optional<double> best_ns) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The candidates of a library search whose session lives in `dir`: those it recorded there
// (candidates.json) when resuming, so a resumed search chooses among the same set; else the GPU
// side's answer (gpu.describe()), recorded there. ktune::Error naming the file when it is damaged.
LibraryCandidates library_candidates(Evaluator& gpu, const std::filesystem::path& dir, bool resume);

// The session target of a library search: source "cuBLASLt <version>", the problem's cache op and
// shape, the heuristic's candidates proposed first.
SearchTarget library_target(const bench::GemmProblem& problem, const LibraryCandidates& candidates,
                            const LibrarySpace& space);

// The record a library search caches: the session's best, unless cuBLASLt's default (heuristic
// rank 1, what PyTorch runs) is slower by no more than the larger spread (noise_ns) of the two.
// Running another algorithm costs every routed call host time (ktune.torch), so a gain the
// measurement cannot tell from noise is no gain; the default cached says "PyTorch's choice is
// the winner", and the router leaves those calls alone. nullptr when nothing was verified.
const SessionRecord* library_winner_record(const LibraryCandidates& candidates,
                                           const SessionSummary& session);

// The cache entry of library_winner_record: op, dtype and shape from the problem's cache key,
// config the winning candidate's LtAlgoConfig plus "layout" and "cublaslt_version", provenance
// with the default's (heuristic rank 1) median. ktune::Error when the session has no verified
// winner.
store::CacheEntry library_winner_entry(const bench::GemmProblem& problem,
                                       const LibraryCandidates& candidates,
                                       const SessionSummary& session, const store::Environment& env,
                                       const HostIdentity& host);

// The default's record in a session (heuristic rank 1), when it was measured fully.
const SessionRecord* library_default_record(const LibraryCandidates& candidates,
                                            const SessionSummary& session);

}  // namespace ktune::tune
