#include "ktune/tune/kt_cache.hpp"

#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/compressed.hpp"
#include "ktune/core/error.hpp"
#include "ktune/tune/t4.hpp"

namespace ktune::tune {

std::optional<Status> status_from_kt_failure(std::string_view s) {
  if (s == "CompilationFailedConfig") return Status::compile_failed;
  if (s == "RuntimeFailedConfig") return Status::launch_failed;
  if (s == "InvalidConfig") return Status::resources_exceeded;
  return std::nullopt;
}

namespace {

// Python's str() of a tune_params value, as Kernel Tuner joins it into a cache key.
std::string python_str(const Value& v) {
  return v.kind() == Value::Kind::string ? v.as_string() : v.repr();
}

}  // namespace

KtCache parse_kt_cache(const nlohmann::json& j, const std::string& source) {
  KtCache out;
  out.source = source;
  auto fail = [&](const std::string& field, const std::string& problem) {
    return Error(fmt::format("{}: field {}: {}", source, field, problem));
  };
  if (!j.is_object()) throw fail("(top level)", "not an object; is this a Kernel Tuner cache?");
  if (auto d = j.find("device_name"); d != j.end() && d->is_string()) out.device_name = *d;
  if (auto k = j.find("kernel_name"); k != j.end() && k->is_string()) out.kernel_name = *k;
  const auto tp = j.find("tune_params");
  if (tp == j.end() || !tp->is_object() || tp->empty())
    throw fail("tune_params", "missing or not an object of parameter value lists");
  std::vector<std::string> names;
  if (auto keys = j.find("tune_params_keys"); keys != j.end()) {
    if (!keys->is_array()) throw fail("tune_params_keys", "not a list of parameter names");
    for (const auto& k : *keys) {
      if (!k.is_string() || !tp->contains(k.get<std::string>()))
        throw fail("tune_params_keys", fmt::format("{} is not a name in tune_params", k.dump()));
      names.push_back(k.get<std::string>());
    }
  } else {
    for (const auto& [name, _] : tp->items()) names.push_back(name);
  }
  // Per parameter: its values, and Python's spelling of each for reading keys.
  std::vector<std::map<std::string, std::uint32_t>> spelled(names.size());
  for (std::size_t p = 0; p < names.size(); ++p) {
    Parameter param;
    param.name = names[p];
    const auto& vs = (*tp)[names[p]];
    if (!vs.is_array() || vs.empty())
      throw fail("tune_params." + names[p], "not a non-empty list of values");
    for (const auto& v : vs) {
      Value value;
      try {
        value = v.get<Value>();
      } catch (const Error& e) {
        throw fail("tune_params." + names[p], e.what());
      }
      spelled[p].emplace(python_str(value), static_cast<std::uint32_t>(param.values.size()));
      param.values.push_back(std::move(value));
    }
    out.parameters.push_back(std::move(param));
  }
  const auto cache = j.find("cache");
  if (cache == j.end() || !cache->is_object())
    throw fail("cache", "missing or not an object of records keyed by configuration");
  out.records.reserve(cache->size());
  for (const auto& [key, rec] : cache->items()) {
    const std::string where = "cache[\"" + key + "\"]";
    if (!rec.is_object()) throw fail(where, "not an object");
    KtRecord r;
    r.configuration.resize(names.size());
    // The key's comma-joined values, for records that lack their own parameter fields.
    std::vector<std::string> parts;
    for (std::size_t start = 0;;) {
      const std::size_t comma = key.find(',', start);
      parts.push_back(key.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    for (std::size_t p = 0; p < names.size(); ++p) {
      const auto& values = out.parameters[p].values;
      std::optional<std::uint32_t> idx;
      if (auto f = rec.find(names[p]); f != rec.end()) {
        try {
          const Value v = f->get<Value>();
          for (std::uint32_t k = 0; k < values.size() && !idx; ++k)
            if (values[k] == v) idx = k;
        } catch (const Error&) {
        }
      } else if (parts.size() == names.size()) {
        if (auto s = spelled[p].find(parts[p]); s != spelled[p].end()) idx = s->second;
      }
      if (!idx)
        throw fail(where + "." + names[p],
                   "missing, or not one of the values tune_params lists for it");
      r.configuration[p] = *idx;
    }
    if (const auto c = rec.find("compile_time"); c != rec.end() && c->is_number() &&
                                                 std::isfinite(c->get<double>()) &&
                                                 c->get<double>() >= 0)
      r.compile_ns = c->get<double>() * 1e6;  // milliseconds, as its times
    const auto t = rec.find("time");
    if (t != rec.end() && t->is_string()) {
      r.detail = t->get<std::string>();
      r.status = status_from_kt_failure(r.detail).value_or(Status::launch_failed);
    } else if (t != rec.end() && t->is_number() && std::isfinite(t->get<double>()) &&
               t->get<double>() > 0) {
      r.time_ns = t->get<double>() * 1e6;  // Kernel Tuner records milliseconds
    } else {
      r.status = Status::launch_failed;
      r.detail = "no numeric time recorded";
    }
    out.records.push_back(std::move(r));
  }
  return out;
}

KtCache read_kt_cache(const std::filesystem::path& path) {
  const std::string text = read_maybe_compressed(path, "a T4 or cache file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format(
        "{}: not valid JSON at byte {}; is it a Kernel Tuner cache (.json or .json.gz)?",
        path.string(), e.byte));
  }
  return parse_kt_cache(j, path.string());
}

}  // namespace ktune::tune
