#include "ktune/tune/t4.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <streambuf>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

// Bounds on what one file may inflate to. Real T4 and cache JSON compresses 10 to 50 times; a
// 2 MB file that inflated to 2 GiB took 4.2 GB to read. Past kMaxInflatedBytes a file must also
// keep to kMaxRatio, and no stretch between two records may pass kMaxPieceBytes (what the JSON
// parser can be made to hold while streaming), nor a file read whole kMaxWholeBytes.
constexpr std::uint64_t kMaxInflatedBytes = std::uint64_t{256} << 20;
constexpr std::uint64_t kMaxRatio = 200;
constexpr std::uint64_t kMaxPieceBytes = std::uint64_t{64} << 20;
constexpr std::uint64_t kMaxWholeBytes = std::uint64_t{512} << 20;

// A gzip/zlib or plain file read through zlib (gzread passes plain files through), with the
// bounds above enforced as bytes come out.
class Inflater {
 public:
  explicit Inflater(const std::filesystem::path& path) : path_(path.string()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw Error(
          fmt::format("cannot read {}: it is not a regular file; give the path of a T4 "
                      "or cache file.",
                      path_));
    compressed_ = std::filesystem::file_size(path, ec);
    file_ = gzopen(path.c_str(), "rb");
    if (!file_)
      throw Error(fmt::format("cannot open {}; check the path and that it is readable.", path_));
    gzbuffer(file_, 1 << 17);
  }
  ~Inflater() { gzclose(file_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Up to `size` bytes into `buf`; 0 at the end.
  std::size_t read(char* buf, unsigned size) {
    const int n = gzread(file_, buf, size);
    if (n < 0) {
      int code = 0;
      throw Error(fmt::format("{}: cannot decompress ({}); the file is damaged or truncated.",
                              path_, gzerror(file_, &code)));
    }
    inflated_ += static_cast<std::uint64_t>(n);
    piece_ += static_cast<std::uint64_t>(n);
    if (inflated_ > kMaxInflatedBytes &&
        inflated_ > kMaxRatio * std::max<std::uint64_t>(compressed_, 1))
      throw Error(fmt::format(
          "{}: inflates to more than {} times its {} bytes, far past what T4 or cache JSON "
          "compresses; ktune does not read it (a damaged or hostile file).",
          path_, kMaxRatio, compressed_));
    if (piece_ > (whole_ ? kMaxWholeBytes : kMaxPieceBytes))
      throw Error(fmt::format(
          "{}: holds more than {} MiB {}; ktune does not read it (a damaged or hostile file).",
          path_, (whole_ ? kMaxWholeBytes : kMaxPieceBytes) >> 20,
          whole_ ? "in all" : "between two of its records"));
    return static_cast<std::size_t>(n);
  }
  // A record ended: what came before it is no longer held.
  void record_boundary() { piece_ = 0; }
  // The whole file is held at once (no records to stream).
  void whole() { whole_ = true; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  std::uint64_t compressed_ = 0, inflated_ = 0, piece_ = 0;
  bool whole_ = false;
};

}  // namespace

std::string read_maybe_compressed(const std::filesystem::path& path) {
  Inflater in(path);
  in.whole();
  std::string out;
  char buf[1 << 16];
  while (const std::size_t n = in.read(buf, sizeof buf)) out.append(buf, n);
  return out;
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

// A read-only std::streambuf over a gzip/zlib or plain file, so the JSON parser can stream it.
class GzStreamBuf : public std::streambuf {
 public:
  explicit GzStreamBuf(const std::filesystem::path& path) : in_(path) {}
  Inflater& inflater() { return in_; }

 protected:
  int_type underflow() override {
    const std::size_t n = in_.read(buf_, sizeof buf_);
    if (n == 0) return traits_type::eof();
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(buf_[0]);
  }

 private:
  Inflater in_;
  char buf_[1 << 16];
};

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
  GzStreamBuf buf(path);
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
      buf.inflater().record_boundary();
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
      buf.inflater().record_boundary();
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
  if (!r.detail.empty()) j["detail"] = r.detail;
  return j;
}

}  // namespace ktune::tune
