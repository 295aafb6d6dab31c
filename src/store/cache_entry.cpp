#include "ktune/store/cache_entry.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/json.hpp"

namespace ktune::store {

namespace {
constexpr EnumName<Match> kMatchNames[] = {
    {Match::exact, "exact"},
    {Match::nearest, "nearest"},
    {Match::default_config, "default"},
    {Match::none, "none"},
};
}  // namespace

const char* to_string(Match m) {
  return name_of(kMatchNames, m);
}

std::string stale_reason(const CacheKey& key, const Environment& env) {
  if (!env.toolkit.empty() && key.toolkit != env.toolkit)
    return fmt::format("tuned with toolkit {}, this is {}", key.toolkit, env.toolkit);
  if (key.driver_major != 0 && env.driver_major != 0 && key.driver_major != env.driver_major)
    return fmt::format("tuned under driver {}, this is {}", key.driver_major, env.driver_major);
  return {};
}

void validate(const CacheEntry& e, const std::string& where) {
  auto need = [&](const std::string& value, const char* field) {
    if (value.empty())
      throw Error(
          fmt::format("{}: the cache entry has no \"{}\"; every entry needs one.", where, field));
  };
  need(e.key.op, "op");
  need(e.key.dtype, "dtype");
  need(e.key.arch, "arch");
  need(e.key.device_name, "device_name");
  need(e.key.toolkit, "toolkit");
  validate_shape(e.shape, where);
  if (e.key.driver_major < 0)
    throw Error(fmt::format("{}: \"driver_major\" is {}; use 0 when the driver does not matter.",
                            where, e.key.driver_major));
  if (!e.config.is_object())
    throw Error(fmt::format("{}: \"config\" must be a JSON object of parameter values, not {}.",
                            where, e.config.type_name()));
  if (!std::isfinite(e.median_ns) || e.median_ns <= 0)
    throw Error(fmt::format("{}: \"median_ns\" is {}; a measured time must be positive.", where,
                            e.median_ns));
  if (!std::isfinite(e.noise_ns) || e.noise_ns < 0)
    throw Error(
        fmt::format("{}: \"noise_ns\" is {}; the noise must be zero or more.", where, e.noise_ns));
  if (e.samples < 1)
    throw Error(fmt::format("{}: \"samples\" is {}; a result needs at least one sample.", where,
                            e.samples));
  if (!std::isfinite(e.throughput) || e.throughput < 0)
    throw Error(
        fmt::format("{}: \"throughput\" is {}; it must be zero or more.", where, e.throughput));
  if (e.verification != "passed" && e.verification != "failed" && e.verification != "skipped")
    throw Error(fmt::format("{}: \"verification\" is '{}'; use passed, failed or skipped.", where,
                            e.verification));
}

void validate(const OpSpec& s, const std::string& where) {
  if (s.op.empty()) throw Error(fmt::format("{}: the op spec has no \"op\" name.", where));
  validate(s.buckets, where + " (op " + s.op + ")");
  if (s.default_config && !s.default_config->is_object())
    throw Error(fmt::format("{}: the default config of op {} must be a JSON object.", where, s.op));
}

void to_json(nlohmann::json& j, const CacheKey& k) {
  j = {{"op", k.op},
       {"dtype", k.dtype},
       {"bucket", k.bucket},
       {"arch", k.arch},
       {"device_name", k.device_name},
       {"toolkit", k.toolkit},
       {"driver_major", k.driver_major}};
}

void to_json(nlohmann::json& j, const CacheEntry& e) {
  j = e.key;
  j["shape"] = e.shape;
  j["config"] = e.config;
  j["median_ns"] = e.median_ns;
  j["noise_ns"] = e.noise_ns;
  j["samples"] = e.samples;
  j["throughput"] = e.throughput;
  j["throughput_unit"] = e.throughput_unit;
  j["verification"] = e.verification;
  j["provenance"] = {{"ktune_version", e.provenance.ktune_version},
                     {"ktune_commit", e.provenance.ktune_commit},
                     {"host", e.provenance.host},
                     {"created_at", e.provenance.created_at},
                     {"strategy", e.provenance.strategy},
                     {"budget", e.provenance.budget}};
  if (e.invalidated_at) {
    j["invalidated_at"] = *e.invalidated_at;
    j["invalid_reason"] = e.invalid_reason.value_or("");
  }
}

namespace {

const nlohmann::json& member(const nlohmann::json& j, const char* name) {
  if (!j.contains(name) || j[name].is_null())
    throw Error(fmt::format("the field \"{}\" is missing; add it.", name));
  return j[name];
}

std::string quoted(const char* name) {
  return fmt::format("the field \"{}\"", name);
}

std::string string_field(const nlohmann::json& j, const char* name) {
  return json_string(member(j, name), quoted(name));
}

double number_field(const nlohmann::json& j, const char* name) {
  return json_number(member(j, name), quoted(name));
}

std::int64_t integer_field(const nlohmann::json& j, const char* name, std::int64_t min,
                           std::int64_t max) {
  return json_integer(member(j, name), quoted(name), min, max);
}

}  // namespace

void from_json(const nlohmann::json& j, CacheEntry& e) {
  if (!j.is_object()) throw Error("a cache entry must be a JSON object.");
  e.key.op = string_field(j, "op");
  e.key.dtype = string_field(j, "dtype");
  e.key.bucket = json_optional_string(j, "bucket");  // recomputed from the shape on put
  e.key.arch = string_field(j, "arch");
  e.key.device_name = string_field(j, "device_name");
  e.key.toolkit = string_field(j, "toolkit");
  e.key.driver_major =
      static_cast<int>(integer_field(j, "driver_major", 0, std::numeric_limits<int>::max()));
  const auto& shape = member(j, "shape");
  if (!shape.is_array()) throw Error("the field \"shape\" must be an array of sizes.");
  e.shape.clear();
  for (std::size_t i = 0; i < shape.size(); ++i)
    e.shape.push_back(json_integer(shape[i], fmt::format("the field \"shape\"[{}]", i), 1,
                                   std::numeric_limits<std::int64_t>::max()));
  e.config = member(j, "config");
  e.median_ns = number_field(j, "median_ns");
  e.noise_ns = number_field(j, "noise_ns");
  e.samples = integer_field(j, "samples", 1, std::numeric_limits<std::int64_t>::max());
  e.throughput = number_field(j, "throughput");
  e.throughput_unit = string_field(j, "throughput_unit");
  e.verification = string_field(j, "verification");
  const auto& p = member(j, "provenance");
  if (!p.is_object()) throw Error("the field \"provenance\" must be an object.");
  try {
    e.provenance.ktune_version = json_optional_string(p, "ktune_version");
    e.provenance.ktune_commit = json_optional_string(p, "ktune_commit");
    e.provenance.host = json_optional_string(p, "host");
    e.provenance.created_at = json_optional_string(p, "created_at");
    e.provenance.strategy = json_optional_string(p, "strategy");
  } catch (const Error& err) {
    throw Error(fmt::format("in \"provenance\", {}", err.what()));
  }
  e.provenance.budget =
      p.contains("budget") && !p["budget"].is_null() ? p["budget"] : nlohmann::json::object();
  if (j.contains("invalidated_at") && !j["invalidated_at"].is_null()) {
    e.invalidated_at = string_field(j, "invalidated_at");
    e.invalid_reason = json_optional_string(j, "invalid_reason");
  }
}

void to_json(nlohmann::json& j, const OpSpec& s) {
  j = {{"op", s.op}, {"buckets", s.buckets}};
  j["default_config"] = s.default_config ? *s.default_config : nlohmann::json();
}

void from_json(const nlohmann::json& j, OpSpec& s) {
  if (!j.is_object()) throw Error("an op spec must be a JSON object.");
  s.op = string_field(j, "op");
  s.buckets = j.contains("buckets") ? j["buckets"].get<BucketPolicy>() : BucketPolicy{};
  if (j.contains("default_config") && !j["default_config"].is_null())
    s.default_config = j["default_config"];
  else
    s.default_config.reset();
}

void to_json(nlohmann::json& j, const LookupResult& r) {
  j = {{"match", to_string(r.match)},
       {"bucket", r.bucket},
       {"config", r.config},
       {"stale", r.stale}};
  if (r.stale) j["stale_reason"] = r.stale_reason;
  j["entry"] = r.entry ? nlohmann::json(*r.entry) : nlohmann::json();
}

}  // namespace ktune::store

namespace ktune::store {

bool servable(const CacheEntry& e) {
  return e.verification != "failed";
}

Choice choose_entry(std::span<const CacheEntry> candidates, const std::string& bucket,
                    std::span<const std::int64_t> shape, const Environment& env) {
  Choice best;
  // Lexicographic rank, smaller is better; created_at compared separately (newest wins ties).
  struct Rank {
    double distance;
    int other_device;
    int stale;
  };
  Rank best_rank{};
  auto better = [&](const Rank& r, std::size_t i) {
    if (best.index < 0) return true;
    if (r.distance != best_rank.distance) return r.distance < best_rank.distance;
    if (r.other_device != best_rank.other_device) return r.other_device < best_rank.other_device;
    if (r.stale != best_rank.stale) return r.stale < best_rank.stale;
    return candidates[i].provenance.created_at >
           candidates[static_cast<std::size_t>(best.index)].provenance.created_at;
  };
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const CacheEntry& e = candidates[i];
    if (!servable(e) || e.key.bucket != bucket || e.key.device_name != env.device_name) continue;
    const Rank r{0, 0, stale_reason(e.key, env).empty() ? 0 : 1};
    if (better(r, i)) best = {Match::exact, static_cast<std::ptrdiff_t>(i)}, best_rank = r;
  }
  if (best.index >= 0) return best;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const CacheEntry& e = candidates[i];
    if (!servable(e) || e.shape.size() != shape.size()) continue;
    const Rank r{shape_distance(e.shape, shape), e.key.device_name == env.device_name ? 0 : 1,
                 stale_reason(e.key, env).empty() ? 0 : 1};
    if (better(r, i)) best = {Match::nearest, static_cast<std::ptrdiff_t>(i)}, best_rank = r;
  }
  return best;
}

}  // namespace ktune::store
