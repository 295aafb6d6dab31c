#include "ktune/store/bucket.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/json.hpp"

namespace ktune::store {
namespace {

const DimRule kExact{};

constexpr EnumName<BucketKind> kKindNames[] = {
    {BucketKind::exact, "exact"},
    {BucketKind::pow2, "pow2"},
    {BucketKind::multiple, "multiple"},
    {BucketKind::ranges, "ranges"},
};

const char* kind_name(BucketKind k) {
  return name_of(kKindNames, k);
}

}  // namespace

void validate(const BucketPolicy& policy, const std::string& where) {
  for (std::size_t d = 0; d < policy.dims.size(); ++d) {
    const DimRule& r = policy.dims[d];
    if (r.kind == BucketKind::multiple && r.multiple <= 0)
      throw Error(
          fmt::format("{}: bucket rule of dimension {} is 'multiple' but its multiple is "
                      "{}; give a positive \"multiple\".",
                      where, d, r.multiple));
    if (r.kind == BucketKind::ranges) {
      if (r.bounds.empty())
        throw Error(
            fmt::format("{}: bucket rule of dimension {} is 'ranges' with no bounds; give "
                        "ascending positive \"bounds\".",
                        where, d));
      for (std::size_t i = 0; i < r.bounds.size(); ++i)
        if (r.bounds[i] <= 0 || (i > 0 && r.bounds[i] <= r.bounds[i - 1]))
          throw Error(
              fmt::format("{}: bucket bounds of dimension {} must be positive and "
                          "strictly ascending, but bound {} is {}.",
                          where, d, i, r.bounds[i]));
    }
  }
}

void validate_shape(std::span<const std::int64_t> shape, const std::string& where) {
  if (shape.empty())
    throw Error(fmt::format("{}: the shape is empty; give at least one dimension.", where));
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] <= 0)
      throw Error(fmt::format("{}: dimension {} of shape {} is {}; sizes must be positive.", where,
                              d, shape_name(shape), shape[d]));
}

const DimRule& rule_for(const BucketPolicy& policy, std::size_t dim) {
  if (policy.dims.empty()) return kExact;
  if (policy.dims.size() == 1) return policy.dims[0];
  return dim < policy.dims.size() ? policy.dims[dim] : kExact;
}

DimRange bucket_dim(const DimRule& rule, std::int64_t size) {
  switch (rule.kind) {
    case BucketKind::exact:
      return {size, size};
    case BucketKind::pow2: {
      // Above 2^62 the next power of two does not fit: those sizes share the open top bucket.
      constexpr std::int64_t kTop = std::int64_t{1} << 62;
      if (size > kTop) return {kTop + 1, kUnbounded};
      std::int64_t hi = 1;
      while (hi < size) hi <<= 1;
      return {hi == 1 ? 1 : hi / 2 + 1, hi};
    }
    case BucketKind::multiple: {
      // ceil(size / m) without size + m - 1, which overflows near the top of int64; a multiple
      // past the top is the open bucket above the last one that fits.
      const std::int64_t m = rule.multiple;
      const std::int64_t j = size <= 0 ? 0 : (size - 1) / m + 1;
      if (j > kUnbounded / m) return {(j - 1) * m + 1, kUnbounded};
      return {j * m - m + 1, j * m};
    }
    case BucketKind::ranges: {
      std::int64_t lo = 1;
      for (std::int64_t b : rule.bounds) {
        if (size <= b) return {lo, b};
        lo = b + 1;
      }
      return {lo, kUnbounded};
    }
  }
  return {size, size};
}

std::vector<DimRange> bucket_of(const BucketPolicy& policy, std::span<const std::int64_t> shape) {
  std::vector<DimRange> out(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) out[d] = bucket_dim(rule_for(policy, d), shape[d]);
  return out;
}

std::string bucket_name(std::span<const DimRange> ranges) {
  std::string out;
  for (std::size_t d = 0; d < ranges.size(); ++d) {
    if (d) out += 'x';
    const DimRange& r = ranges[d];
    if (r.lo == r.hi)
      out += std::to_string(r.lo);
    else if (r.hi == kUnbounded)
      out += fmt::format("{}-inf", r.lo);
    else
      out += fmt::format("{}-{}", r.lo, r.hi);
  }
  return out;
}

std::string shape_name(std::span<const std::int64_t> shape) {
  return fmt::format("{}", fmt::join(shape, "x"));
}

std::vector<std::int64_t> shape_of(const BucketPolicy& policy, std::span<const NamedSize> sizes,
                                   const std::string& op, std::string_view flag) {
  std::vector<std::string> names;
  for (const DimRule& r : policy.dims)
    if (!r.name.empty()) names.push_back(r.name);
  std::vector<std::int64_t> shape;
  if (names.empty()) {
    for (const NamedSize& s : sizes) shape.push_back(s.value);
  } else {
    std::vector<std::string> example;
    for (const auto& n : names) example.push_back(n + "=4096");
    const auto fail = [&](const std::string& what) {
      return Error(fmt::format("{} {}; op {} has the dimensions {}: write e.g. {} {}.", flag, what,
                               op, fmt::join(names, ", "), flag, fmt::join(example, ",")));
    };
    for (const NamedSize& s : sizes)
      if (std::find(names.begin(), names.end(), s.name) == names.end())
        throw fail(fmt::format("names '{}'", s.name));
    for (const auto& n : names) {
      const auto it =
          std::find_if(sizes.begin(), sizes.end(), [&](const NamedSize& s) { return s.name == n; });
      if (it == sizes.end()) throw fail(fmt::format("gives no size for '{}'", n));
      shape.push_back(it->value);
    }
  }
  validate_shape(shape, std::string(flag));
  return shape;
}

double shape_distance(std::span<const std::int64_t> a, std::span<const std::int64_t> b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    d += std::fabs(std::log2(static_cast<double>(a[i])) - std::log2(static_cast<double>(b[i])));
  return d;
}

void to_json(nlohmann::json& j, const BucketPolicy& p) {
  j = nlohmann::json{{"dims", nlohmann::json::array()}};
  for (const DimRule& r : p.dims) {
    nlohmann::json d{{"kind", kind_name(r.kind)}};
    if (r.kind == BucketKind::multiple) d["multiple"] = r.multiple;
    if (r.kind == BucketKind::ranges) d["bounds"] = r.bounds;
    if (!r.name.empty()) d["name"] = r.name;
    j["dims"].push_back(std::move(d));
  }
}

void from_json(const nlohmann::json& j, BucketPolicy& p) {
  p.dims.clear();
  if (!j.is_object() || !j.contains("dims") || !j["dims"].is_array())
    throw Error("a bucket policy must be an object with a \"dims\" array of rules.");
  for (const auto& d : j["dims"]) {
    DimRule r;
    if (!d.is_object()) throw Error("each bucket rule in \"dims\" must be an object.");
    const std::string kind = json_optional_string(d, "kind");
    if (kind == "exact")
      r.kind = BucketKind::exact;
    else if (kind == "pow2")
      r.kind = BucketKind::pow2;
    else if (kind == "multiple") {
      r.kind = BucketKind::multiple;
      if (!d.contains("multiple"))
        throw Error("a 'multiple' bucket rule needs an integer \"multiple\".");
      r.multiple = json_integer(d["multiple"], "a 'multiple' bucket rule's \"multiple\"", 1);
    } else if (kind == "ranges") {
      r.kind = BucketKind::ranges;
      if (!d.contains("bounds") || !d["bounds"].is_array())
        throw Error("a 'ranges' bucket rule needs a \"bounds\" array of integers.");
      for (const auto& b : d["bounds"])
        r.bounds.push_back(json_integer(b, "each of a 'ranges' bucket rule's \"bounds\"", 1));
    } else {
      throw Error(
          fmt::format("unknown bucket rule kind '{}'; use exact, pow2, multiple or ranges.", kind));
    }
    r.name = json_optional_string(d, "name");
    p.dims.push_back(std::move(r));
  }
}

}  // namespace ktune::store
