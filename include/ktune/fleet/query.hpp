#pragma once
// The fleet's questions: which kernels own the fleet's GPU time (with p50/p95 from merged
// sketches, and which of them a known spec could tune), and how each kernel's p50 moved between
// two builds.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/analyze/kernel_name.hpp"
#include "ktune/store/fleet.hpp"

namespace ktune::fleet {

// top 3, diff 2: each kernel row carries "display_name", its middle form (docs/report.md).
inline constexpr int kTopSchemaVersion = 3;
inline constexpr int kDiffSchemaVersion = 2;

// A tuning spec ktune knows (the built-in kernels/ and any --specs folder): which kernel it tunes.
struct KnownSpec {
  std::string path, kernel_name, op, dtype;
};
// Every T1 file (*.json) directly in each folder or one level below; files that are not specs
// are passed over.
std::vector<KnownSpec> spec_catalog(const std::vector<std::filesystem::path>& dirs);

struct TopRow {
  std::string kernel;
  std::int64_t calls = 0, total_ns = 0, min_ns = 0, max_ns = 0, runs = 0;
  double share = 0;  // of the filtered fleet's kernel time
  double p50_ns = 0, p95_ns = 0, p99_ns = 0;
  std::optional<KnownSpec> spec;  // a known spec tunes this kernel
  bool tuned = false;             // the cache holds a winner of that spec's op on the kernel's arch
  std::string grid, block;        // its launch shape with the most GPU time ("x,y,z"; backlog rows)
};

// A GEMM problem the fleet ran (ingested --gemm-shapes traces): its cache key, the problem, and
// what it cost on one arch; tuned when the cache holds a winner of its key for that arch.
struct GemmTopRow {
  store::FleetGemmTotal total;
  double share = 0;  // of the filtered fleet's kernel time
  bool tuned = false;
  std::string tune_command;
};

struct TopReport {
  store::FleetFilter filter;
  std::int64_t total_ns = 0, calls = 0;
  std::size_t kernels = 0;  // distinct kernels under the filter
  std::vector<TopRow> rows;
  std::vector<TopRow> backlog;           // rows with a spec and no winner, in fleet-time order
  std::vector<GemmTopRow> gemms;         // every GEMM problem, most GPU time first
  std::vector<GemmTopRow> gemm_backlog;  // those with no winner
};

// `limit` rows (0: all). Backlog looks at every kernel, not only the shown ones.
TopReport top(store::Store& store, const store::FleetFilter& filter, std::size_t limit,
              const std::vector<KnownSpec>& specs);

struct DiffRow {
  std::string kernel;
  std::int64_t calls_a = 0, calls_b = 0;
  double p50_a_ns = 0, p50_b_ns = 0;  // 0: the kernel did not run in that build
  std::optional<double> change;       // p50_b / p50_a - 1 when both ran
};

struct DiffReport {
  std::string build_a, build_b;
  std::vector<DiffRow> rows;  // largest |change| first, then kernels of only one build
};

DiffReport diff(store::Store& store, const std::string& build_a, const std::string& build_b,
                store::FleetFilter filter = {});

// The kernel names a listing shows, distinct over its rows (and backlog) in the middle style.
analyze::NameTable display_names(const TopReport& r,
                                 analyze::NameStyle style = analyze::NameStyle::middle);
analyze::NameTable display_names(const DiffReport& r,
                                 analyze::NameStyle style = analyze::NameStyle::middle);

nlohmann::json to_json(const TopReport& r);   // schema_version kTopSchemaVersion
nlohmann::json to_json(const DiffReport& r);  // schema_version kDiffSchemaVersion

}  // namespace ktune::fleet
