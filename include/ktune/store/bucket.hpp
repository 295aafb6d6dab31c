#pragma once
// Shape buckets: which shapes share one tuned config. An op's spec declares a rule per dimension;
// a bucket is one closed range per dimension, named "lo-hi" (or "v" when lo == hi) joined by 'x',
// so the name says which shapes it covers whatever rule made it ("2049-4096x128").
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/core/assignments.hpp"

namespace ktune::store {

enum class BucketKind {
  exact,     // every size its own bucket
  pow2,      // (2^(k-1), 2^k]
  multiple,  // padded up to a multiple of `multiple`: (m*(j-1), m*j]
  ranges,    // explicit ascending upper bounds; above the last: (last, inf)
};

struct DimRule {
  BucketKind kind = BucketKind::exact;
  std::int64_t multiple = 0;         // kind == multiple
  std::vector<std::int64_t> bounds;  // kind == ranges, strictly ascending, positive
  std::string name;                  // the spec's shape variable ("n"); empty: unnamed
};

// One rule per dimension; a single rule applies to every dimension; none means exact.
struct BucketPolicy {
  std::vector<DimRule> dims;
};

constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();

struct DimRange {
  std::int64_t lo = 0, hi = 0;  // hi == kUnbounded above the last explicit range
  bool operator==(const DimRange&) const = default;
};

// Throws ktune::Error naming `where` when a rule is malformed (bad multiple, unsorted bounds).
void validate(const BucketPolicy& policy, const std::string& where);
// Throws ktune::Error when a shape is empty or has a non-positive dimension.
void validate_shape(std::span<const std::int64_t> shape, const std::string& where);

DimRange bucket_dim(const DimRule& rule, std::int64_t size);
const DimRule& rule_for(const BucketPolicy& policy, std::size_t dim);  // exact if none declared
std::vector<DimRange> bucket_of(const BucketPolicy& policy, std::span<const std::int64_t> shape);
std::string bucket_name(std::span<const DimRange> ranges);
std::string shape_name(std::span<const std::int64_t> shape);  // "4096x4096x1024"

// The shape `sizes` (parse_named_sizes) gives an op: in the order of the dimension names its policy
// declares, or in the order written when it names none. Throws ktune::Error naming `flag`, the op
// and its dimension names when a size is missing or unknown.
std::vector<std::int64_t> shape_of(const BucketPolicy& policy, std::span<const NamedSize> sizes,
                                   const std::string& op, std::string_view flag);

// How far apart two shapes of the same rank are: sum over dimensions of |log2(a) - log2(b)|.
double shape_distance(std::span<const std::int64_t> a, std::span<const std::int64_t> b);

// JSON: {"dims": [{"kind": "pow2", "name": "n"}, {"kind": "multiple", "multiple": 128},
//                 {"kind": "ranges", "bounds": [256, 1024]}]} ("name" only when set)
void to_json(nlohmann::json& j, const BucketPolicy& p);
void from_json(const nlohmann::json& j, BucketPolicy& p);  // Error on unknown kinds or fields

}  // namespace ktune::store
