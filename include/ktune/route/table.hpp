#pragma once
// The GEMM router's host side: which winners a program's cuBLAS and cuBLASLt calls may run. A
// call is routed only when its whole descriptor (layout, sizes, leading dimensions, batch strides,
// element, compute and scale types, epilogue, column-major order, host alpha and beta, 256-byte
// aligned pointers as the search's buffers are) is the problem a winner was tuned on; every other
// call passes through untouched. Plain C++: libktune_route.so (route/interpose.cpp) matches calls
// with it inside the program, `ktune run` writes the table from the store, and tests build both
// without a GPU.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/bench/cublaslt_gemm.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/store/cache_entry.hpp"
#include "ktune/trace/gemm_call.h"

namespace ktune::route {

// The file `ktune run` hands the router (KTUNE_ROUTE_TABLE): schema_version 1.
inline constexpr int kTableSchemaVersion = 1;

struct Winner {
  bench::GemmProblem problem;  // resolved: every ld and stride spelled out
  bench::LtAlgoConfig config;
  // cuBLASLt's own first choice (heuristic rank 1) won or tied: the call keeps its algorithm, and
  // the router only answers the heuristic query from the table.
  bool kept = false;
  // A field trial in an earlier run (ktune run) found it faster inside the program: it is routed
  // from the first call, so a CUDA graph captured early gets it too.
  bool confirmed = false;
  double median_ns = 0, noise_ns = 0;
  double default_median_ns = 0;  // cuBLASLt's own choice in the same session; 0: not measured
  std::string op, dtype;         // the cache key, for names and for writing verdicts back
  std::vector<std::int64_t> shape;
  std::string cublaslt_version;  // that the algorithm was found under
};

// The library search's problem of a call, or nullopt with `why` set when no winner can serve it
// (types that differ or are not f16, bf16, f32; another order; device-side alpha; unaligned;
// an epilogue or compute type the search does not run).
std::optional<bench::GemmProblem> problem_of(const ktune_gemm_call& call, std::string* why);

class RouteTable {
 public:
  RouteTable() = default;
  // The cuBLASLt winners among `entries` that the router may serve: verified, not invalidated,
  // with a problem it can rebuild (the problem the search stored, else the key's packed one).
  static RouteTable from_entries(const std::vector<store::CacheEntry>& entries);
  // ktune::Error naming `where`, the field and the fix when the JSON is not a table of this schema.
  static RouteTable from_json(const nlohmann::json& j, const std::string& where);
  nlohmann::json to_json() const;

  // The winner tuned on exactly `p` (resolved), or null.
  const Winner* find(const bench::GemmProblem& p) const;
  // False when no winner has an output of m x n: the router's cheap first test on every call.
  // `routable`: only winners that are not kept (a call of a kept winner runs its own algorithm).
  bool may_hold(std::int64_t m, std::int64_t n, bool routable = false) const;
  const std::vector<Winner>& winners() const { return winners_; }
  bool empty() const { return winners_.empty(); }

 private:
  void add(Winner w);
  std::vector<Winner> winners_;
  std::unordered_map<std::string, std::size_t> index_;  // problem key -> winners_[i]
  std::vector<std::uint64_t> sizes_, routable_sizes_;   // (m, n) hashes, sorted
};

// A problem's identity for the table: every field of the resolved problem.
std::string problem_key(const bench::GemmProblem& p);

}  // namespace ktune::route
