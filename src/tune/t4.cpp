#include "ktune/tune/t4.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <streambuf>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/compressed.hpp"
#include "ktune/core/error.hpp"

namespace ktune::tune {

namespace {

// The T4 word for each status. A screened-out ("slower") candidate ran correctly: "correct".
constexpr std::pair<Status, const char*> kT4Invalidity[] = {
    {Status::ok, "correct"},
    {Status::compile_failed, "compile"},
    {Status::launch_failed, "runtime"},
    {Status::resources_exceeded, "constraints"},
    {Status::wrong_result, "correctness"},
    {Status::slower, "correct"},
    {Status::timeout, "timeout"},
};

// Nanoseconds per unit of the file's metadata.timeunit (T4 spells it "miliseconds" too).
double ns_per_unit(const std::string& unit, const std::string& source) {
  if (unit.empty() || unit == "miliseconds" || unit == "milliseconds" || unit == "ms") return 1e6;
  if (unit == "seconds" || unit == "s") return 1e9;
  if (unit == "microseconds" || unit == "us") return 1e3;
  if (unit == "nanoseconds" || unit == "ns") return 1.0;
  throw Error(
      fmt::format("{}: field metadata.timeunit: '{}' is not a known unit (seconds, "
                  "milliseconds, microseconds, nanoseconds).",
                  source, unit));
}

}  // namespace

const char* to_t4_invalidity(Status s) {
  for (const auto& [status, word] : kT4Invalidity)
    if (status == s) return word;
  return "?";
}

std::optional<Status> status_from_t4_invalidity(std::string_view s) {
  for (const auto& [status, word] : kT4Invalidity)
    if (s == word) return status;  // the first match: "correct" is ok
  return std::nullopt;
}

namespace {

// One element of "results" (the i-th), times multiplied by `scale` to nanoseconds.
T4Record parse_t4_record(const nlohmann::json& r, std::size_t i, const std::string& source,
                         double scale) {
  auto fail = [&](const std::string& field, const std::string& problem) -> Error {
    return Error(fmt::format("{}: field results[{}]{}{}: {}", source, i, field.empty() ? "" : ".",
                             field, problem));
  };
  if (!r.is_object()) throw fail("", "must be an object");
  T4Record rec;
  auto c = r.find("configuration");
  if (c == r.end() || !c->is_object())
    throw fail("configuration", "missing or not an object of parameter values");
  for (const auto& [name, v] : c->items()) {
    try {
      rec.configuration[name] = v.get<Value>();
    } catch (const Error& e) {
      throw fail("configuration." + name, e.what());
    }
  }
  std::string invalidity = "correct";
  if (auto inv = r.find("invalidity"); inv != r.end() && inv->is_string())
    invalidity = inv->get<std::string>();
  if (auto st = status_from_t4_invalidity(invalidity)) {
    rec.status = *st;
  } else {
    rec.status = Status::launch_failed;
    rec.detail = fmt::format("unknown invalidity '{}'", invalidity);
  }
  if (auto corr = r.find("correctness"); rec.status == Status::ok && corr != r.end() &&
                                         corr->is_number() && corr->get<double>() == 0) {
    rec.status = Status::wrong_result;
  }
  // ktune's own word, where a ktune session wrote the file: it tells a screened-out run apart.
  if (auto word = r.find("status"); word != r.end() && word->is_string())
    if (auto st = status_from_string(word->get<std::string>())) rec.status = *st;
  // The time: the "time" measurement, else the mean of times.runtimes.
  std::optional<double> t;
  bool non_numeric = false;
  if (auto ms = r.find("measurements"); ms != r.end() && ms->is_array()) {
    for (const auto& m : *ms) {
      // A measurement named by anything but the string "time" is another measurement.
      if (!m.is_object() || !m.contains("name") || m["name"] != "time") continue;
      auto v = m.find("value");
      if (v != m.end() && v->is_number())
        t = v->get<double>();
      else
        non_numeric = true;
    }
  }
  if (!t && !non_numeric) {
    if (auto times = r.find("times"); times != r.end() && times->is_object()) {
      if (auto rt = times->find("runtimes"); rt != times->end() && rt->is_array() && !rt->empty()) {
        double sum = 0;
        bool ok = true;
        for (const auto& x : *rt) ok = ok && x.is_number() && (sum += x.get<double>(), true);
        if (ok) t = sum / static_cast<double>(rt->size());
      }
    }
  }
  if (auto times = r.find("times"); times != r.end() && times->is_object())
    if (auto c = times->find("compilation"); c != times->end() && c->is_number() &&
                                             std::isfinite(c->get<double>()) &&
                                             c->get<double>() >= 0)
      rec.compile_ns = c->get<double>() * scale;
  if (has_time(rec.status)) {
    if (!t || !std::isfinite(*t) || *t <= 0) {
      rec.status = Status::launch_failed;
      rec.detail = "no numeric time recorded";
    } else {
      rec.time_ns = *t * scale;
    }
  }
  return rec;
}

std::string time_unit_of(const nlohmann::json& metadata) {
  if (!metadata.is_object()) return "";
  if (auto u = metadata.find("timeunit"); u != metadata.end() && u->is_string())
    return u->get<std::string>();
  return "";
}

}  // namespace

T4File parse_t4(const nlohmann::json& j, const std::string& source) {
  T4File file;
  file.source = source;
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    throw Error(
        fmt::format("{}: field results: missing or not a list; is this a T4 file?", source));
  if (auto m = j.find("metadata"); m != j.end()) file.time_unit = time_unit_of(*m);
  const double scale = ns_per_unit(file.time_unit, source);
  const auto& results = j["results"];
  file.results.reserve(results.size());
  for (std::size_t i = 0; i < results.size(); ++i)
    file.results.push_back(parse_t4_record(results[i], i, source, scale));
  return file;
}

double for_each_t4_record(const std::filesystem::path& path,
                          const std::function<void(T4Record&&, std::size_t)>& visit) {
  const std::string source = path.string();
  CompressedStreamBuf buf(path, "a T4 or cache file");
  std::istream in(&buf);
  std::string top_key;
  bool saw_results = false;
  std::size_t next = 0;
  double scale = ns_per_unit("", source);
  const double assumed = scale;
  auto not_a_list = [&] {
    return Error(
        fmt::format("{}: field results: missing or not a list; is this a T4 file?", source));
  };
  using Event = nlohmann::json::parse_event_t;
  // Depth 1 is the top-level object's fields; depth 2 the elements of "results". Each record is
  // handed on when its object closes and then discarded, so the tree never grows past one record.
  auto callback = [&](int depth, Event event, nlohmann::json& parsed) -> bool {
    if (depth == 1 && event == Event::key) {
      top_key = parsed.get<std::string>();
      if (top_key == "cache" || top_key == "tune_params" || top_key == "tune_params_keys")
        throw NotT4(fmt::format("{} is a Kernel Tuner cache file, not T4.", source));
      if (top_key == "results") saw_results = true;
      // Only the records and the metadata are read: any other field's value is parsed and
      // dropped as it goes, never held.
      return top_key == "results" || top_key == "metadata";
    }
    if (depth == 1 &&
        (event == Event::object_end || event == Event::array_end || event == Event::value))
      buf.file().record_boundary();
    if (top_key != "results") {
      if (depth == 1 && event == Event::object_end && top_key == "metadata")
        scale = ns_per_unit(time_unit_of(parsed), source);
      return true;
    }
    if (depth == 1 && (event == Event::object_start || event == Event::value)) throw not_a_list();
    if (depth == 2 &&
        (event == Event::object_end || event == Event::array_end || event == Event::value)) {
      visit(parse_t4_record(parsed, next, source, scale), next);
      ++next;
      buf.file().record_boundary();
      return false;
    }
    return true;
  };
  try {
    const nlohmann::json rest = nlohmann::json::parse(in, callback);  // the small top level
    (void)rest;
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{}: not valid JSON at byte {}; is it a T4 file (.json or .json.gz)?",
                            source, e.byte));
  } catch (const nlohmann::json::exception& e) {  // a number out of range, say
    throw Error(fmt::format("{}: not a readable T4 file ({}); is it a T4 file (.json or .json.gz)?",
                            source, e.what()));
  }
  if (!saw_results) throw not_a_list();
  return scale / assumed;
}

T4File read_t4(const std::filesystem::path& path) {
  T4File file;
  file.source = path.string();
  const double rescale = for_each_t4_record(
      path, [&](T4Record&& r, std::size_t) { file.results.push_back(std::move(r)); });
  if (rescale != 1.0)
    for (auto& r : file.results) r.time_ns *= rescale;
  return file;
}

nlohmann::json t4_result_json(const T4Record& r, const std::string& timestamp) {
  nlohmann::json j;
  j["timestamp"] = timestamp;
  j["configuration"] = nlohmann::json::object();
  for (const auto& [name, v] : r.configuration) j["configuration"][name] = v;
  j["invalidity"] = to_t4_invalidity(r.status);
  j["correctness"] = has_time(r.status) ? 1 : 0;
  j["status"] = to_string(r.status);  // ktune's word: T4's "correct" covers ok and slower
  nlohmann::json m;
  m["name"] = "time";
  if (has_time(r.status))
    m["value"] = r.time_ns / 1e6;
  else
    m["value"] = to_string(r.status);  // T4 marks a failure with a non-numeric time
  m["unit"] = "ms";
  j["measurements"] = nlohmann::json::array({m});
  j["objectives"] = nlohmann::json::array({"time"});
  if (r.compile_ns) j["times"] = {{"compilation", *r.compile_ns / 1e6}};
  if (!r.detail.empty()) j["detail"] = r.detail;
  return j;
}

}  // namespace ktune::tune
