#pragma once
// The router inside the program (libktune_route.so): the table of winners, a plan per winner (its
// algorithm, its field trial, its counts), and the counts of every call seen. The interposed
// cuBLAS and cuBLASLt entry points (route/interpose.cpp) ask it what to do with each call; the
// stats it reports are what `ktune run` prints and writes back.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/route/field_trial.hpp"
#include "ktune/route/table.hpp"
#include "ktune/trace/gemm_call.h"

namespace ktune::route {

// The stats file `ktune run` reads (KTUNE_ROUTE_STATS/route.<pid>.json): schema_version 1.
inline constexpr int kStatsSchemaVersion = 1;

// One winner's state in this process. `verdict` is read without a lock on every call; the rest
// changes under `mu` while the trial runs.
struct Plan {
  const Winner* winner = nullptr;
  std::atomic<int> verdict{static_cast<int>(Verdict::trying)};
  std::mutex mu;
  FieldTrial trial;
  std::atomic<std::uint64_t> routed{0}, kept{0}, trial_calls{0};
};

class Router {
 public:
  // Kept winners serve at once; routed ones start their field trial (or serve at once with
  // field_trial false).
  Router(RouteTable table, bool field_trial);

  const RouteTable& table() const { return table_; }
  Plan& plan(const Winner& w) {
    return *plans_[static_cast<std::size_t>(&w - &table_.winners()[0])];
  }

  // A call seen at `entry`; passed ones (no winner of its exact descriptor) with why, when the
  // router had a winner of its output size (a near miss worth reporting).
  void count(int entry) { seen_[entry].fetch_add(1, std::memory_order_relaxed); }
  void passed(int entry) { passed_[entry].fetch_add(1, std::memory_order_relaxed); }
  void near_miss(const std::string& why);

  nlohmann::json stats_json() const;

 private:
  RouteTable table_;
  bool field_trial_;
  std::vector<std::unique_ptr<Plan>> plans_;
  std::array<std::atomic<std::uint64_t>, KTUNE_GEMM_ENTRY_COUNT> seen_{}, passed_{};
  mutable std::mutex miss_mu_;
  std::map<std::string, std::uint64_t> near_misses_;
};

// The name of an entry point ("cublasLtMatmul", "cublasGemmEx", ...).
const char* entry_name(int entry);

}  // namespace ktune::route
