#pragma once
// The tuning cache's data: key, entry, op spec, the environment entries are judged against, and
// the answers of the store's cache calls. Plain data with JSON forms (the pack format uses them).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/store/bucket.hpp"

namespace ktune::store {

// What a tuned config is valid for. driver_major 0: the driver does not matter for this op.
struct CacheKey {
  std::string op;           // "gemm", "vector_scale"
  std::string dtype;        // "f16" or several joined by ',' ("f16,f16,f32")
  std::string bucket;       // bucket_name() of the shape under the op's policy
  std::string arch;         // "sm_90"
  std::string device_name;  // "NVIDIA H100 80GB HBM3"
  std::string toolkit;      // NVRTC "13.0"
  int driver_major = 0;     // 580
  bool operator==(const CacheKey&) const = default;
};

// Where a result came from.
struct Provenance {
  std::string ktune_version, ktune_commit, host;
  std::string created_at;                            // ISO-8601 UTC
  std::string strategy;                              // "random", "genetic", "import", ...
  nlohmann::json budget = nlohmann::json::object();  // {"evaluations": 200, "seconds": 60}
};

struct CacheEntry {
  CacheKey key;
  std::vector<std::int64_t> shape;                   // the shape that was measured
  nlohmann::json config = nlohmann::json::object();  // parameter name -> value
  double median_ns = 0;                              // median GPU time of one run
  double noise_ns = 0;       // its spread (e.g. half the p5..p95 width); >= 0
  std::int64_t samples = 0;  // measurements behind the median
  double throughput = 0;     // in throughput_unit, e.g. 1.2e14 "flop/s"
  std::string throughput_unit = "flop/s";
  std::string verification = "passed";  // passed | failed | skipped
  Provenance provenance;
  std::optional<std::string> invalidated_at, invalid_reason;  // set: never handed out
};

// An op's declaration: how its shapes bucket, and the config used when nothing was tuned.
struct OpSpec {
  std::string op;
  BucketPolicy buckets;
  std::optional<nlohmann::json> default_config;
};

// The caller's GPU and software: entries from another toolkit or driver major are stale here.
struct Environment {
  std::string arch, device_name, toolkit;
  int driver_major = 0;  // 0: unknown, driver never makes an entry stale
};

// Empty (or nullopt) fields match everything.
struct EntryFilter {
  std::string op, dtype, arch, device_name, toolkit;
  bool include_invalidated = false;
  std::optional<Environment> stale_relative_to;  // set: only entries stale relative to it
};

struct PutResult {
  bool winner = false;  // the entry is now the stored winner of its key
  std::string reason;   // one phrase: "new key", "faster beyond noise (...)", "not faster ..."
  std::string bucket;   // the bucket it was filed under
  std::optional<double> previous_median_ns;
};

enum class Match { exact, nearest, default_config, none };
const char* to_string(Match m);  // "exact", "nearest", "default", "none"

struct LookupQuery {
  std::string op, dtype;
  std::vector<std::int64_t> shape;
  Environment env;
};

struct LookupResult {
  Match match = Match::none;
  std::string bucket;               // the query shape's bucket
  nlohmann::json config;            // null when match == none
  std::optional<CacheEntry> entry;  // the entry behind an exact or nearest answer
  bool stale = false;               // the entry was tuned under another toolkit or driver
  std::string stale_reason;
};

// Why an entry is stale in `env`, or "" when it is current there.
std::string stale_reason(const CacheKey& key, const Environment& env);

// Whether a lookup may hand `e` out: one whose output failed verification is kept as data (a
// record of what was tried) but never served, by the store or the runtime.
bool servable(const CacheEntry& e);

// The one ranking rule, shared by the store and the runtime index. Among servable entries of one
// op, dtype and arch that are not invalidated: an entry in `bucket` on env's device (current before
// stale, newest first) is exact; else the entry of the same rank nearest to `shape`
// (shape_distance, then same device, then current, then newest). index -1 with Match::none when
// nothing fits.
struct Choice {
  Match match = Match::none;
  std::ptrdiff_t index = -1;
};
Choice choose_entry(std::span<const CacheEntry> candidates, const std::string& bucket,
                    std::span<const std::int64_t> shape, const Environment& env);

// Checks an entry a writer offers; throws ktune::Error naming `where` and the bad field.
void validate(const CacheEntry& entry, const std::string& where);
void validate(const OpSpec& spec, const std::string& where);

void to_json(nlohmann::json& j, const CacheKey& k);
void to_json(nlohmann::json& j, const CacheEntry& e);
void from_json(const nlohmann::json& j, CacheEntry& e);  // Error naming the missing/bad field
void to_json(nlohmann::json& j, const OpSpec& s);
void from_json(const nlohmann::json& j, OpSpec& s);
void to_json(nlohmann::json& j, const LookupResult& r);

}  // namespace ktune::store
